"""A map over Parquet read in place stores only what it derives; the rest is read in place.

The corpus is Parquet files written by pyarrow in the test; every value is compared with
pyarrow's own read of them (and with the function applied to it in Python).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._dataset.tables.joined import JoinedTable
from arrowmix.exceptions import ChunkFileError, StateError

N = 120


def corpus(n: int = N) -> pa.Table:
    i = np.arange(n)
    return pa.table({
        "text": [f"doc {k} " + "word " * int(k % 7) for k in i],
        "id": pa.array(i, pa.int64()),
        "lang": [["en", "fr", "de"][k % 3] for k in i],
    })  # fmt: skip


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    t = corpus()
    paths = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    pq.write_table(t.slice(0, 70), paths[0], row_group_size=25)
    pq.write_table(t.slice(70), paths[1], row_group_size=25)
    return paths


def opened(files: list[str], tmp_path: Path, **kwargs: object) -> am.Dataset:
    return am.Dataset.from_parquet(files, in_place=True, cache_dir=tmp_path / "cache", **kwargs)


def tokenize(batch: dict) -> dict:
    return {"input_ids": [[len(w) for w in t.split()] for t in batch["text"]]}


def expected() -> pa.Table:
    """pyarrow's read of the files, with the tokenize map's column added."""
    t = corpus()
    ids = [[len(w) for w in s.split()] for s in t.column("text").to_pylist()]
    return t.append_column("input_ids", pa.array(ids, pa.list_(pa.int64())))


def stored_columns(ds: am.Dataset) -> list[list[str]]:
    """The columns of each cache file of a map result (not the in-place files)."""
    names = [f for f in ds.cache_files if os.path.basename(f).startswith("cache-")]
    return [pa.ipc.open_file(f).schema.names for f in names]


def read_back(files: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in files])


def test_a_tokenize_map_stores_only_the_derived_column(files: list[str], tmp_path: Path) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True, batch_size=32)
    assert isinstance(state_of(out).table, JoinedTable)
    assert stored_columns(out) == [["input_ids"]]
    want = expected()
    assert read_back(files).equals(want.drop_columns(["input_ids"]))
    assert out.column_names == want.column_names
    assert out[:] == want.to_pydict()
    assert out[7] == want.slice(7, 1).to_pylist()[0]
    assert out[60:80] == want.slice(60, 20).to_pydict()
    assert out["input_ids"] == want.column("input_ids").to_pylist()
    assert all(not f.startswith(str(tmp_path / "cache")) or "cache-" in f for f in out.cache_files)


def test_removed_and_overwritten_columns(files: list[str], tmp_path: Path) -> None:
    ds = opened(files, tmp_path)
    out = ds.map(tokenize, batched=True, remove_columns=["text"])
    assert stored_columns(out) == [["input_ids"]] and out.column_names == [
        "id",
        "lang",
        "input_ids",
    ]
    assert out[:] == expected().drop_columns(["text"]).to_pydict()
    over = ds.map(lambda r: {"id": r["id"] * 10, "lang": r["lang"].upper()})  # derived wins
    assert stored_columns(over) == [["id", "lang"]] and over.column_names == ["text", "id", "lang"]
    t = corpus()
    assert over["id"] == [10 * k for k in range(N)]
    assert over["lang"] == [x.upper() for x in t.column("lang").to_pylist()]
    assert over["text"] == t.column("text").to_pylist()


def test_chained_maps_join_again(files: list[str], tmp_path: Path) -> None:
    first = opened(files, tmp_path).map(tokenize, batched=True)
    second = first.map(lambda r: {"n": len(r["input_ids"]), "id": r["id"] + 1})
    table = state_of(second).table
    assert isinstance(table, JoinedTable) and sorted(table.base.column_names) == ["lang", "text"]
    files_columns = sorted(sorted(c) for c in stored_columns(second))
    assert files_columns == [["id", "n"], ["input_ids"]]  # the new file: only what it derives
    want = expected()
    assert second["n"] == [len(x) for x in want.column("input_ids").to_pylist()]
    assert second["id"] == [k + 1 for k in range(N)]
    assert second["input_ids"] == want.column("input_ids").to_pylist()
    assert second["text"] == want.column("text").to_pylist()
    third = second.map(lambda r: {"m": r["n"] * 2}, remove_columns=["text", "lang"])
    assert not isinstance(state_of(third).table, JoinedTable)  # nothing kept in place
    assert third["m"] == [2 * x for x in second["n"]] and third.column_names[-1] == "m"


def test_filter_select_shuffle_sort_views(files: list[str], tmp_path: Path) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True)
    rows = expected().to_pylist()
    kept = out.filter(lambda r: r["id"] % 3 == 0)
    assert all(names == ["indices"] for names in stored_columns(kept)[1:])  # positions only
    assert kept[:] == pa.Table.from_pylist(rows[::3]).to_pydict()
    assert kept[5] == rows[15]
    picked = out.select([5, 3, 99, 3])
    assert [picked[i] for i in range(4)] == [rows[5], rows[3], rows[99], rows[3]]
    mixed = out.shuffle(seed=4)
    assert sorted(r["id"] for r in mixed) == list(range(N))
    assert mixed[0] == rows[mixed[0]["id"]]
    by = out.sort("id", reverse=True)
    assert by[0] == rows[-1] and by[-1] == rows[0]
    renamed = out.rename_column("text", "body").remove_columns(["lang"])
    assert renamed.column_names == ["body", "id", "input_ids"]
    assert renamed[3] == {"body": rows[3]["text"], "id": 3, "input_ids": rows[3]["input_ids"]}
    again = renamed.map(lambda r: {"k": len(r["body"])})  # joins the renamed projection
    assert isinstance(state_of(again).table, JoinedTable) and stored_columns(again)[0] == ["k"]
    assert again["k"] == [len(r["text"]) for r in rows]
    # a map over a contiguous range of the joined table joins from its first row
    part = out.select(range(30, 90)).map(lambda r: {"z": r["id"] - 30})
    assert isinstance(state_of(part).table, JoinedTable)
    assert part["z"] == list(range(60)) and part["text"] == [r["text"] for r in rows[30:90]]


def test_rerun_reuses_the_cache_and_a_changed_file_does_not(
    files: list[str], tmp_path: Path
) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True)
    again = opened(files, tmp_path).map(tokenize, batched=True)
    assert again.fingerprint == out.fingerprint and again.cache_files == out.cache_files
    t = corpus().slice(0, 70).set_column(0, "text", pa.array(["changed words"] * 70))
    pq.write_table(t, files[0], row_group_size=25)
    with pytest.raises(ChunkFileError, match=r"a\.parquet"):  # never rows of another version
        pickle.loads(pickle.dumps(out))[0]  # (``out`` itself may still hold decoded rows)
    fresh = opened(files, tmp_path).map(tokenize, batched=True)
    assert fresh.fingerprint != out.fingerprint and fresh.cache_files != out.cache_files
    assert fresh[0]["input_ids"] == [7, 5] and fresh[0]["text"] == "changed words"


def test_pickled_result_reopens_both_parts(files: list[str], tmp_path: Path) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True).map(lambda r: {"n": r["id"] * 2})
    data = pickle.dumps(out)
    assert len(data) < 16_000 and b"word word" not in data  # descriptions, not rows
    back = pickle.loads(data)
    assert back.fingerprint == out.fingerprint and back[:] == out[:]
    assert isinstance(state_of(back).table, JoinedTable)
    view = pickle.loads(pickle.dumps(out.filter(lambda r: r["id"] > 100)))
    assert view["id"] == list(range(101, N))


def test_save_to_disk_materialises_every_column(files: list[str], tmp_path: Path) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True)
    out.save_to_disk(str(tmp_path / "saved"))
    for f in files:
        os.remove(f)  # the saved copy does not need the in-place files
    back = am.load_from_disk(str(tmp_path / "saved"))
    assert back[:] == expected().to_pydict()


def test_streams_and_the_token_path(files: list[str], tmp_path: Path) -> None:
    from arrowmix._dataset.rows import DatasetRows

    out = opened(files, tmp_path).map(tokenize, batched=True)
    groups = [0, 25, 50, 70, 95, 120]  # a stream's chunks: the row groups, as in place
    assert DatasetRows(out).chunk_offsets().tolist() == groups
    assert DatasetRows(out.select(range(10, 100))).chunk_offsets().tolist() == [
        0,
        15,
        40,
        60,
        85,
        90,
    ]
    want = expected().to_pylist()
    for shuffle in ("global", "chunks", "blocks", None):
        rows = list(out.to_stream(shuffle=shuffle, seed=1, infinite=False))
        assert sorted(rows, key=lambda r: r["id"]) == want, shuffle
    tokens = out.select_columns(["input_ids"])
    stream = tokens.to_stream(shuffle="chunks", seed=0, infinite=False)
    packed = stream.pack("input_ids", 16, tail="pad")
    got = [
        t
        for b in packed
        for t, s in zip(*(np.ravel(b[k]) for k in ("input_ids", "segment_ids")), strict=True)
        if s
    ]
    assert sorted(got) == sorted(t for r in want for t in r["input_ids"] if t)


def test_a_stream_checkpoint_over_another_layout_is_refused(
    files: list[str], tmp_path: Path
) -> None:
    """The same map stored whole (as before joins, cut elsewhere) is another stream source."""
    joined = opened(files, tmp_path).map(tokenize, batched=True)
    whole = opened(files, tmp_path).map(
        tokenize, batched=True, cache_file_name=str(tmp_path / "whole.arrow")
    )
    assert joined.fingerprint == whole.fingerprint  # one map: its cache is reused either way
    state = None
    for ds in (whole, joined):
        stream = ds.to_stream(shuffle="chunks", seed=0, infinite=False)
        if state is not None:
            with pytest.raises(StateError, match="differs in `rows`"):
                stream.load_state_dict(state)
        it = iter(stream)
        next(it)
        state = stream.state_dict()
    again = joined.to_stream(shuffle="chunks", seed=0, infinite=False)
    again.load_state_dict(state)  # the same layout resumes
    assert len(list(again)) == N - 1


def test_a_map_changing_the_row_count_stores_every_column(files: list[str], tmp_path: Path) -> None:
    def group(batch: dict) -> dict:  # group_texts: one row per two input rows
        return {"id": batch["id"][::2], "text": batch["text"][::2]}

    ds = opened(files, tmp_path)
    out = ds.map(group, batched=True, batch_size=10, remove_columns=ds.column_names)
    assert not isinstance(state_of(out).table, JoinedTable)
    assert [sorted(c) for c in stored_columns(out)] == [["id", "text"]]
    assert out["id"] == list(range(0, N, 2))
    # a batched map keeping the input columns must return one row per input row
    with pytest.raises(ValueError, match="returned 5 rows for the 10 input rows"):
        ds.map(lambda b: {"x": b["id"][::2]}, batched=True, batch_size=10)


@pytest.mark.slow  # imports mosaicml-streaming (seconds); test_mds maps over MDS in the fast tier
def test_a_map_over_mds_stores_only_what_it_derives(tmp_path: Path) -> None:
    from tests.formats.mds_helpers import read_with_streaming, write_mds

    cols = {"text": "str", "id": "int"}
    rows = ({"text": r["text"], "id": r["id"]} for r in corpus(60).to_pylist())
    path = write_mds(str(tmp_path / "mds"), cols, rows, size_limit=900)
    ds = am.Dataset.from_mds(path, cache_dir=tmp_path / "cache")
    out = ds.map(tokenize, batched=True).map(lambda r: {"n": len(r["input_ids"])})
    assert isinstance(state_of(out).table, JoinedTable)
    assert sorted(sorted(c) for c in stored_columns(out)) == [["input_ids"], ["n"]]
    want = read_with_streaming(path, str(tmp_path / "scratch"))  # mosaicml-streaming's reads
    got = pickle.loads(pickle.dumps(out))[:]
    assert got["text"] == [r["text"] for r in want] and got["id"] == [r["id"] for r in want]
    assert got["n"] == [len(r["text"].split()) for r in want]


def test_a_map_over_lance_stores_only_what_it_derives(tmp_path: Path) -> None:
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "c.lance")
    lance.write_dataset(corpus(), uri, max_rows_per_file=50)
    ds = am.Dataset.from_lance(uri, cache_dir=tmp_path / "cache")
    out = ds.map(tokenize, batched=True)
    assert isinstance(state_of(out).table, JoinedTable) and stored_columns(out) == [["input_ids"]]
    assert out[:] == expected().to_pydict()
    assert pickle.loads(pickle.dumps(out))[100] == expected().to_pylist()[100]


def test_a_token_stream_resumes_exactly_from_a_pickled_dataset(
    files: list[str], tmp_path: Path
) -> None:
    out = opened(files, tmp_path).map(tokenize, batched=True)

    def pipeline(ds: am.Dataset) -> am.stream.Stream:
        s = ds.to_stream(shuffle="chunks", seed=2, infinite=False)
        return s.budget_bucket("input_ids", 24, read_ahead=40, seed=3).collate(max_length=8)

    first = pipeline(out)
    for _ in range(3):
        next(first)
    saved = first.state_dict()
    rest = [b["input_ids"].tolist() for b in first]
    again = pipeline(pickle.loads(pickle.dumps(out)))  # e.g. in a DataLoader worker
    again.load_state_dict(saved)
    assert [b["input_ids"].tolist() for b in again] == rest and rest


def test_maps_after_a_filter_join_at_the_kept_rows(files: list[str], tmp_path: Path) -> None:
    rows = expected().to_pylist()
    ds = opened(files, tmp_path, filters=[("lang", "!=", "fr")])  # scattered kept rows
    out = ds.map(tokenize, batched=True)
    table = state_of(out).table
    assert isinstance(table, JoinedTable) and table.positions is not None
    assert stored_columns(out) == [["input_ids"]]
    want = [r for r in rows if r["lang"] != "fr"]
    assert out[:] == pa.Table.from_pylist(want).to_pydict()
    kept = out.filter(lambda r: r["id"] % 4 == 0)  # a filter over the joined result
    again = kept.map(lambda r: {"n": len(r["input_ids"])})
    assert isinstance(state_of(again).table, JoinedTable)
    assert stored_columns(again)[0] == ["n"]
    sub = [r for r in want if r["id"] % 4 == 0]
    assert (
        again[:] == pa.Table.from_pylist([{**r, "n": len(r["input_ids"])} for r in sub]).to_pydict()
    )
    back = pickle.loads(pickle.dumps(again))
    assert back[:] == again[:] and back[2] == again[2]
    got = sorted(r["id"] for r in back.to_stream(shuffle="chunks", seed=0, infinite=False))
    assert got == [r["id"] for r in sub]
    shuffled = out.shuffle(seed=0).map(lambda r: {"z": 1})  # not in stored order: every column
    assert not isinstance(state_of(shuffled).table, JoinedTable)
