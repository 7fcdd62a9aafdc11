"""num_proc is honoured on inputs smaller than a cache segment: segments computed in pieces."""

from __future__ import annotations

import logging
import os
import time

import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError


def _pid(row):
    return {"pid": os.getpid(), "n": len(row["t"])}


def _together(row, where, procs):
    """Each process waits (up to 60 s) until ``procs`` processes have started: concurrency."""
    mark = os.path.join(where, str(os.getpid()))
    if not os.path.exists(mark):
        open(mark, "w").close()
        deadline = time.monotonic() + 60
        while len(os.listdir(where)) < procs and time.monotonic() < deadline:
            time.sleep(0.01)
    return {"pid": os.getpid(), "seen": len(os.listdir(where))}


def _batch_pids(batch):
    n = len(batch["t"])
    return {"pid": [os.getpid()] * n, "size": [n] * n}


@pytest.fixture
def docs():
    return am.Dataset.from_dict({"t": ["x" * (i % 50) for i in range(497)]})


def _leftovers(ds):
    directory = os.path.dirname(ds.cache_files[0])
    return [n for n in os.listdir(directory) if n.startswith("tmp-")]


def test_small_input_uses_every_process_and_one_cache_file(docs, caplog, tmp_path):
    with caplog.at_level(logging.WARNING, logger="arrowmix"):
        together = docs.map(_together, fn_kwargs={"where": str(tmp_path), "procs": 2}, num_proc=2)
    assert not [r for r in caplog.records if "num_proc" in r.getMessage()]
    assert min(together["seen"]) == 2 and len(set(together["pid"])) == 2  # both ran at once
    out = docs.map(_pid, num_proc=2)
    assert os.getpid() not in out["pid"]
    assert out["n"] == [i % 50 for i in range(497)]
    assert len(out.cache_files) == 1 and _leftovers(out) == []
    # The file is the one a single process writes: a rerun without num_proc reuses it.
    again = docs.map(_pid)
    assert again.fingerprint == out.fingerprint and again["pid"] == out["pid"]
    assert again.features == docs.map(_pid, load_from_cache_file=False).features


def test_num_proc_above_the_rows_is_lowered_with_hf_warning(caplog, tmp_path):
    ds = am.Dataset.from_dict({"t": ["a", "b", "c"]})
    with caplog.at_level(logging.WARNING, logger="arrowmix"):
        out = ds.map(_together, fn_kwargs={"where": str(tmp_path), "procs": 3}, num_proc=5)
    notes = [r.getMessage() for r in caplog.records if "num_proc" in r.getMessage()]
    assert notes == ["num_proc must be <= 3. Reducing num_proc to 3 for dataset of size 3."]
    assert len(set(out["pid"])) == 3 and min(out["seen"]) == 3


def _batch_together(batch, where, procs):
    out = _together(None, where, procs)
    n = len(batch["t"])
    return {"pid": [out["pid"]] * n, "seen": [out["seen"]] * n, "size": [n] * n}


def test_batched_pieces_keep_hf_batches(docs, caplog, tmp_path):
    one = docs.map(_batch_pids, batched=True, batch_size=100, load_from_cache_file=False)
    many = docs.map(
        _batch_together,
        batched=True,
        batch_size=100,
        num_proc=3,
        fn_kwargs={"where": str(tmp_path), "procs": 3},
    )
    assert many["size"] == one["size"]  # batches of 100, the last of 97: HF's without num_proc
    assert min(many["seen"]) == 3  # three processes ran at once
    with caplog.at_level(logging.WARNING, logger="arrowmix"):
        whole = docs.map(_batch_pids, batched=True, num_proc=2, load_from_cache_file=False)
    assert set(whole["size"]) == {497}
    notes = [r.getMessage() for r in caplog.records if "num_proc" in r.getMessage()]
    assert len(notes) == 1 and "1 batch(es) of batch_size=1000" in notes[0]


def test_filter_in_pieces_keeps_the_rows_of_one_process(docs):
    kept = docs.filter(lambda r, i: i % 3 == 0, with_indices=True, num_proc=2)
    assert kept["t"] == docs.filter(lambda r, i: i % 3 == 0, with_indices=True)["t"]
    assert len(kept) == 166 and _leftovers(kept) == []


def _late_type(row, i):
    return {"v": None if i < 300 else i}


def test_piece_types_are_joined_as_one_process_stores_them(docs):
    many = docs.map(_late_type, with_indices=True, num_proc=2)
    one = docs.map(_late_type, with_indices=True, load_from_cache_file=False)
    assert many.features == one.features and many["v"] == one["v"]


def _new_then_none(row, i):
    return {"a": 1} if i < 300 else {}


def test_a_later_piece_without_a_new_column_gets_nulls_as_in_one_process(docs):
    many = docs.map(_new_then_none, with_indices=True, num_proc=2)
    one = docs.map(_new_then_none, with_indices=True, load_from_cache_file=False)
    assert many.column_names == one.column_names == ["t", "a"]
    assert many["a"] == one["a"] == [1] * 300 + [None] * 197


def _columns_by_row(row, i):
    return {"a": 1} if i < 300 else {"b": 2}


def test_pieces_returning_other_columns_are_refused(docs):
    with pytest.raises(SchemaMismatchError) as info:
        docs.map(_columns_by_row, with_indices=True, num_proc=2)
    message = str(info.value)
    assert "_columns_by_row" in message and "rows 248..496" in message
    assert "without num_proc" in message


def test_progress_counts_each_segment_once_with_every_piece_rows():
    from arrowmix._cache.segments import Segment
    from arrowmix._dataset.mapping.pieces import Pieces

    whole = Segment(0, 2, 0, 10, "a")
    cut = Segment(1, 2, 10, 20, "b")
    parts = [Segment(1, 2, 10, 13, "p0"), Segment(1, 2, 13, 20, "p1")]
    seen = []
    finished = Pieces([whole, *parts], [(cut, parts)]).counted(seen.append)
    for rows in (10, 3, 7):  # what an executor reporting rows per item passes
        finished(rows)
    assert len(seen) == 2 and sum(seen) == 20
