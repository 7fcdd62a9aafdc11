"""No token lost or changed on the token path (public API only).

Each test reproduces a defect of the token stages as a user meets it: packed windows that
lose their tails, ids wrapped by a narrow dtype, truncation undone by rounding, and kept
columns that cost whole rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix
from arrowmix.exceptions import DroppedDataWarning
from arrowmix.stream import Stream, TableRowSource, from_iterable, from_row_source, merge_states


def _docs(n: int, max_len: int = 30, seed: int = 0) -> list[list[int]]:
    """``n`` documents of 1..max_len ids; token ``j`` of document ``k`` is ``100 k + j + 1``."""
    rng = np.random.default_rng(seed)
    return [(100 * k + 1 + np.arange(int(rng.integers(1, max_len + 1)))).tolist() for k in range(n)]


def _rows(docs: list[list[int]], **columns: Any) -> TableRowSource:
    table = pa.table({"input_ids": pa.array(docs, pa.list_(pa.int32())), **columns})
    return TableRowSource(table, chunk_rows=64)


def _dataset(docs: list[list[int]]) -> arrowmix.Dataset:
    return arrowmix.Dataset.from_arrow(
        pa.table({"input_ids": pa.array(docs, pa.list_(pa.int32()))})
    )


def _real_tokens(batch: dict[str, Any]) -> list[int]:
    ids = np.asarray(batch["input_ids"])
    keep = np.asarray(batch["segment_ids"] if "segment_ids" in batch else batch["attention_mask"])
    return [int(x) for x in ids[keep > 0]]


# ---------------------------------------------------------------- item 1: pack tails
def _pack_all(stream: Stream[dict[str, Any]]) -> tuple[list[int], list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tokens = [t for b in stream for t in np.asarray(b["input_ids"]).ravel().tolist()]
    return tokens, [w for w in caught if issubclass(w.category, DroppedDataWarning)]


@pytest.mark.parametrize("batch_size", [1, 4])
def test_pack_defaults_drop_only_the_epochs_last_partial_batch(batch_size: int) -> None:
    """With the default ``read_ahead`` over many windows, only the epoch's tail is lost.

    The delivered tokens are the corpus in stream order, cut only at its end; the
    dropped tokens (fewer than one batch) are counted in a ``DroppedDataWarning``.
    """
    docs = _docs(10_000)
    every = [t for d in docs for t in d]
    seq_len = 64
    s = from_row_source(_rows(docs), shuffle=None, infinite=False).pack(
        "input_ids", seq_len, batch_size=batch_size
    )
    got, dropped_warnings = _pack_all(s)
    dropped = len(every) - len(got)
    assert got == every[: len(got)], "packed tokens differ from the corpus in order"
    assert 0 <= dropped < batch_size * seq_len, (
        f"{dropped} of {len(every)} tokens dropped; only the epoch's last partial batch "
        f"(< {batch_size * seq_len} tokens) may be"
    )
    if dropped:
        assert dropped_warnings, "dropping the epoch's tail must warn (DroppedDataWarning)"
        assert any(str(dropped) in str(w.message) for w in dropped_warnings), (
            f"no DroppedDataWarning gives the count {dropped}: "
            f"{[str(w.message) for w in dropped_warnings]}"
        )


def test_pack_tail_drop_carries_window_tails_over_a_shuffled_index_stream() -> None:
    """Small windows over a shuffled dataset stream: all tokens once, but the last batch."""
    docs = _docs(300)
    every = Counter(t for d in docs for t in d)
    s = _dataset(docs).to_stream(seed=3, infinite=False).pack("input_ids", 16, read_ahead=7)
    got, _ = _pack_all(s)
    counts = Counter(got)
    assert not counts - every, "tokens delivered twice or invented"
    lost = sum((every - counts).values())
    assert lost < 16, f"{lost} tokens lost; at most the epoch's last partial row may be"


@pytest.mark.parametrize(("old", "new"), [(1, 2), (2, 3), (3, 2)])
def test_pack_tail_drop_elastic_resume_loses_at_most_the_last_batches(old: int, new: int) -> None:
    """Elastic resume of concat packing with ``tail="drop"``: no token twice, no window tail lost.

    Only the epoch's last partial batch of each new instance may be dropped: an old
    instance's drain ends where it stood, not at the stream's end, so its partial batch
    is yielded padded.
    """
    docs = _docs(240)
    rows = _rows(docs)
    every = Counter(t for d in docs for t in d)
    seq_len, batch_size = 12, 2

    def build(n: int, r: int) -> Stream[dict[str, Any]]:
        src = from_row_source(rows, seed=1, infinite=False, num_instances=n, instance_rank=r)
        return src.pack("input_ids", seq_len, batch_size=batch_size, read_ahead=6)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        olds = [build(old, r) for r in range(old)]
        seen = [t for s in olds for _ in range(3) for t in _real_tokens(next(s))]
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in olds])))
        rest = []
        for r in range(new):
            s = build(new, r)
            s.load_state_dict(merged)
            rest += [t for b in s for t in _real_tokens(b)]
    counts = Counter(seen + rest)
    assert not counts - every, f"tokens twice: {sorted((counts - every).elements())[:5]}"
    lost = sum((every - counts).values())
    bound = new * (seq_len * batch_size - 1)
    assert lost <= bound, f"{lost} tokens lost on {old} -> {new}; at most {bound} may be"


# ---------------------------------------------------------- item 5: ids never wrap
WIDE = [[1, 2, 40_000], [5, 39_999], [7]]


def _raises_naming_or_keeps(make: Any, expected: list[list[int]], largest: int = 40_000) -> None:
    """``make()`` yields batches; they keep the ids, or it raises naming column and id."""
    msg = ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)
            batches = list(make())
    except (ValueError, OverflowError, TypeError) as exc:
        msg = str(exc)
    if msg:
        assert "input_ids" in msg and str(largest) in msg, (
            f"the error must name the column and the largest id: {msg}"
        )
        return
    got = [t for b in batches for t in _real_tokens(b)]
    want = [t for d in expected for t in d]
    assert sorted(got) == sorted(want), f"token ids changed: {got} instead of {want}"


@pytest.mark.parametrize(("dtype", "largest"), [(np.int16, 40_000), (np.uint16, 70_000)])
def test_collate_narrow_dtype_over_dataset_never_wraps(dtype: Any, largest: int) -> None:
    ids = [[1, 2, largest], [5, largest - 1], [7]]
    ds = _dataset(ids)
    _raises_naming_or_keeps(
        lambda: (
            ds.to_stream(shuffle=None, infinite=False).batch(2, columnar=True).collate(dtype=dtype)
        ),
        ids,
        largest,
    )


def test_collate_narrow_dtype_behind_budget_bucket_never_wraps() -> None:
    ds = _dataset(WIDE)
    _raises_naming_or_keeps(
        lambda: (
            ds.to_stream(seed=0, infinite=False)
            .budget_bucket("input_ids", 8, 3, seed=0)
            .collate(dtype=np.int16)
        ),
        WIDE,
    )


@pytest.mark.parametrize("strategy", ["concat", "best_fit"])
def test_pack_narrow_dtype_never_wraps(strategy: str) -> None:
    ds = _dataset(WIDE)
    kwargs: dict[str, Any] = {"tail": "pad"} if strategy == "concat" else {}
    _raises_naming_or_keeps(
        lambda: ds.to_stream(shuffle=None, infinite=False).pack(
            "input_ids", 4, strategy=strategy, dtype=np.int16, **kwargs
        ),
        WIDE,
    )


def test_collate_narrow_dtype_over_row_dicts_names_column_and_id() -> None:
    rows = [{"input_ids": d} for d in WIDE]
    _raises_naming_or_keeps(lambda: from_iterable([rows]).collate(dtype=np.int16), WIDE)


def test_collate_narrow_dtype_keeps_ids_that_fit() -> None:
    """The check refuses only what does not fit: int16 carries ids up to 32767."""
    docs = [[1, 32_767], [5]]
    b = next(
        _dataset(docs)
        .to_stream(shuffle=None, infinite=False)
        .batch(2, columnar=True)
        .collate(dtype=np.int16)
    )
    assert b["input_ids"].dtype == np.int16
    assert b["input_ids"].tolist() == [[1, 32_767], [5, 0]]


# ------------------------------------------- item 7: rounding never undoes truncation
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("path", ["dataset", "lists"])
def test_collate_max_length_survives_pad_to_multiple_of(side: str, path: str) -> None:
    docs = [list(range(1, 10)), [20, 21], list(range(30, 36))]
    if path == "dataset":
        s = _dataset(docs).to_stream(shuffle=None, infinite=False).batch(3, columnar=True)
    else:
        s = from_iterable([docs])
    b = next(s.collate(max_length=5, pad_to_multiple_of=4, padding_side=side, labels="shift"))
    ids, mask = b["input_ids"], b["attention_mask"]
    assert ids.shape[1] % 4 == 0, f"width {ids.shape[1]} is not a multiple of 4"
    assert mask.sum(axis=1).tolist() == [5, 2, 5], f"real tokens per row: {mask.tolist()}"
    real = [ids[i][mask[i] > 0].tolist() for i in range(3)]
    assert real == [d[:5] for d in docs], f"kept tokens {real}"
    labels = b["labels"]
    assert (labels[mask == 0] == -100).all(), "labels on padding must be -100"


# --------------------------------------------- item 2: kept columns cost their column
_KEEP_SCRIPT = """
import json
import sys
import arrowmix
ds = arrowmix.Dataset.from_chunks(sys.argv[1])
s = ds.to_stream(seed=0, infinite=False).budget_bucket("input_ids", 64, 20, seed=0)
b = next(s.collate(keep=["source", "doc_id"]))
print(json.dumps({"pandas": "pandas" in sys.modules, "source": b["source"].tolist(),
                  "doc_id": b["doc_id"].tolist()}))
"""


def test_collate_keep_reads_only_the_kept_columns(tmp_path: Path) -> None:
    """Keeping a source column neither gathers whole rows nor imports pandas."""
    n = 60
    docs = _docs(n, max_len=16)
    source = [["web", "code"][i % 2] for i in range(n)]
    table = pa.table(
        {
            "input_ids": pa.array(docs, pa.list_(pa.int32())),
            "source": source,
            "doc_id": np.arange(n),
        }
    )
    arrowmix.write_chunks(table, tmp_path / "chunks")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", _KEEP_SCRIPT, str(tmp_path / "chunks")],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    ).stdout
    got = json.loads(out)
    assert not got["pandas"], "collate(keep=...) imported pandas"
    assert got["doc_id"], "the first batch is empty"
    assert got["source"] == [source[i] for i in got["doc_id"]], "kept columns out of row order"
