"""A map or filter that reads only ``input_columns`` asks the kernel for only their pages."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset import reader


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[pa.DataType]:
    seen: list[pa.DataType] = []
    real = reader.prefetch_rows

    def record(pieces: Any, **kw: Any) -> int:
        pieces = list(pieces)
        seen.extend(arr.type for arr, _, _ in pieces)
        return real(pieces, **kw)

    monkeypatch.setattr(reader, "prefetch_rows", record)
    return seen


@pytest.fixture
def corpus(tmp_path: Path) -> am.Dataset:
    n = 20_000
    table = pa.table({"input_ids": [[i, i + 1, i + 2] * 20 for i in range(n)], "n": list(range(n))})
    am.write_chunks(table, tmp_path / "c", rows_per_chunk=5_000)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def test_a_filter_on_input_columns_reads_ahead_only_those(
    corpus: am.Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _asked(monkeypatch)
    kept = corpus.filter(
        lambda n: [x % 2 == 0 for x in n],
        batched=True,
        input_columns=["n"],
        cache_file_name=str(tmp_path / "f.arrow"),
    )
    assert len(kept) == 10_000 and kept[1]["n"] == 2  # values as before
    assert seen and all(t == pa.int64() for t in seen)  # never the token lists


def test_a_map_of_the_whole_row_still_reads_every_column_ahead(
    corpus: am.Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _asked(monkeypatch)
    out = corpus.map(
        lambda b: {"k": [len(x) for x in b["input_ids"]]},
        batched=True,
        cache_file_name=str(tmp_path / "m.arrow"),
    )
    assert out[3]["k"] == 60
    assert any(pa.types.is_list(t) for t in seen)


def test_a_filter_over_a_rerun_map_reads_ahead_only_its_columns(
    corpus: am.Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def count(b: dict[str, Any]) -> dict[str, list[int]]:
        return {"k": [len(x) for x in b["input_ids"]]}

    corpus.map(count, batched=True)  # computed: reads the token lists
    seen = _asked(monkeypatch)
    # the rerun (a new open, as in a new process): its kept columns are referenced, not read
    again = am.Dataset.from_chunks(str(tmp_path / "c")).map(count, batched=True)
    kept = again.filter(lambda k: [x == 60 for x in k], batched=True, input_columns=["k"])
    # building the rerun's table asked for none of the corpus's token pages
    assert seen and not any(pa.types.is_list(t) for t in seen)
    assert len(kept) == 20_000 and kept[7]["input_ids"][:3] == [7, 8, 9]


def _offset_pages(ds: am.Dataset) -> np.ndarray:
    """An address in each page of the token lists' offsets, in the chunk files' mappings."""
    from arrowmix._dataset.state import state_of

    out = []
    for chunk in state_of(ds).table.column("input_ids").chunks:
        buf = chunk.buffers()[1]
        out.append(np.arange(buf.address, buf.address + buf.size, 4096))
    return np.concatenate(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore, posix_fadvise")
def test_a_cold_pass_over_input_columns_never_reads_the_other_columns(tmp_path: Path) -> None:
    from arrowmix._dataset.mapping.call import blocks
    from arrowmix._storage.pages import resident
    from tests.storage.page_tools import drop

    n, width = 200_000, 50  # 40 MB of token ids (0.8 MB of offsets), 1.6 MB of counts
    offsets = pa.array(range(0, (n + 1) * width, width), pa.int32())
    tokens = pa.ListArray.from_arrays(offsets, pa.array(range(n * width), pa.int32()))
    am.write_chunks(pa.table({"input_ids": tokens}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c")).map(
        lambda b: {"n": [len(x) for x in b["input_ids"]]}, batched=True
    )
    for f in tmp_path.joinpath("c").iterdir():
        drop(str(f))
    if resident(_offset_pages(ds)) > 0.5:
        pytest.skip("this file system keeps dropped pages (tmpfs)")
    base = resident(_offset_pages(ds))  # the pages an open maps stay (headers)
    read = 0
    for _, table in blocks(ds, 0, n, 1000, reads=["n"]):  # a filter's input, block by block
        read += sum(table.column("n").to_numpy())
    # not another page of the token lists was read, not even their offsets
    assert resident(_offset_pages(ds)) < base + 0.05
    assert read == n * width
