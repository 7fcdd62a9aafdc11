"""A cached rerun costs metadata: no cache file is hashed again, no kept position loaded, and
one segment file opened per result."""

from __future__ import annotations

import json
import os
import stat
import tracemalloc
import warnings

import numpy as np
import pytest

import arrowmix as am
from arrowmix._cache import inuse
from arrowmix._dataset.state import DeferredTable, state_of, stored_table
from arrowmix._storage import integrity, trust
from arrowmix.exceptions import CacheCorruptedError, CacheWarning

ROWS = 300_000  # three map segments; 150,000 kept positions: an indices file


def _lengths(batch):
    return {"m": [v % 7 for v in batch["v"]]}


def _even(batch):
    return [v % 2 == 0 for v in batch["v"]]


@pytest.fixture
def corpus(tmp_path):
    am.write_chunks(({"v": i} for i in range(ROWS)), tmp_path / "c", rows_per_chunk=100_000)
    return str(tmp_path / "c"), str(tmp_path / "cache")


def _run(corpus):
    path, cache = corpus
    mapped = am.Dataset.from_chunks(path, cache_dir=cache).map(_lengths, batched=True)
    return mapped, mapped.filter(_even, batched=True)


def _new_process(monkeypatch):
    """Forget what this process checked, as a fresh process would."""
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.setattr(trust, "_records", {})
    monkeypatch.setattr(trust, "_changed", {})


def _count_hashes(monkeypatch):
    hashed = []
    digest = integrity._digest

    def counting(buf, spots):
        hashed.append(len(buf))
        return digest(buf, spots)

    monkeypatch.setattr(integrity, "_digest", counting)
    return hashed


def _segments(cache, prefix="cache-"):
    return sorted(os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(prefix))


def test_rerun_hashes_no_cache_file(corpus, monkeypatch):
    first = _run(corpus)[1]
    hashed = _count_hashes(monkeypatch)
    for _ in range(2):  # the second rerun follows the first one's touch of every file
        _new_process(monkeypatch)
        mapped, kept = _run(corpus)
        assert hashed == []
        assert kept["v"][:3] == [0, 2, 4] and len(kept) == ROWS // 2
        assert kept["m"] == first["m"]
        assert mapped["m"][:8] == [0, 1, 2, 3, 4, 5, 6, 0]


def _flip_byte(path, *, in_place):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF  # a value in the middle: footer and schema intact
    if in_place:  # same inode and size; the modification time put back
        st = os.stat(path)
        with open(path, "r+b") as f:
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        with open(path + ".new", "wb") as f:
            f.write(data)
        os.replace(path + ".new", path)


@pytest.mark.parametrize("in_place", [False, True], ids=["replaced", "rewritten"])
def test_changed_segment_is_hashed_again_and_recomputed(corpus, monkeypatch, in_place):
    model = _run(corpus)[1]["m"]
    _new_process(monkeypatch)
    _run(corpus)  # every file trusted from the records now
    victim = _segments(corpus[1])[1]
    _flip_byte(victim, in_place=in_place)
    _new_process(monkeypatch)
    hashed = _count_hashes(monkeypatch)
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        kept = _run(corpus)[1]
    assert kept["m"] == model
    assert len(hashed) >= 1  # the changed file, and only changed files, hashed


def _forget_durability(cache):
    """Mark every recorded file as not synced (as if its writer had been killed)."""
    record = trust._record_path(cache)
    with open(record, encoding="utf-8") as f:
        files = json.load(f)["files"]
    for entry in files.values():
        entry[6] = False
    with open(record, "w", encoding="utf-8") as f:
        json.dump({"files": files}, f)


def test_after_a_reboot_only_synced_files_are_trusted(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    monkeypatch.setattr(trust, "_BOOT", "another-boot")
    monkeypatch.setattr(trust, "_BOOT_NS", 0)  # every file changed since the boot
    hashed = _count_hashes(monkeypatch)
    _run(corpus)
    assert hashed == []  # the map synced its files before recording them
    _forget_durability(corpus[1])
    _new_process(monkeypatch)
    monkeypatch.setattr(trust, "_BOOT", "a-third-boot")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing damaged: hashed, not recomputed
        _run(corpus)
    assert len(hashed) == len(_segments(corpus[1])) + 1  # segments and the indices file
    _new_process(monkeypatch)
    hashed.clear()
    _run(corpus)
    assert hashed == []  # checked in this boot: trusted from then on


def test_rerun_of_a_filter_loads_no_kept_positions(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    tracemalloc.start()
    try:
        kept = _run(corpus)[1]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < ROWS // 2 * 8 // 2, f"peak {peak} bytes: kept positions loaded"
    arr = state_of(kept).indices.array
    assert not arr.flags.owndata and not arr.flags.writeable  # a view of the mapped file
    np.testing.assert_array_equal(arr, np.arange(0, ROWS, 2))
    assert kept["v"][-1] == ROWS - 2


def _count_barriers(monkeypatch):
    """Calls of fsync on files and of syncfs (directory fsyncs are not counted)."""
    from arrowmix._storage import atomic

    calls = []
    fsync, syncfs = os.fsync, atomic._syncfs

    def counting_fsync(fd):
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            calls.append("fsync")
        return fsync(fd)

    def counting_syncfs(directory):
        calls.append("syncfs")
        return syncfs(directory)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    monkeypatch.setattr(atomic, "_syncfs", counting_syncfs)
    return calls


@pytest.mark.parametrize("num_proc", [None, 2])
def test_a_map_makes_its_segments_durable_with_one_barrier(corpus, monkeypatch, num_proc):
    path, cache = corpus
    ds = am.Dataset.from_chunks(path, cache_dir=cache)
    calls = _count_barriers(monkeypatch)
    mapped = ds.map(_lengths, batched=True, num_proc=num_proc)
    assert len(_segments(cache)) == 8
    assert len(calls) == 1, calls  # not one (or two) per segment
    assert mapped["m"][:8] == [0, 1, 2, 3, 4, 5, 6, 0]


def _traced_peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_shuffle_holds_no_permutation_in_memory_and_a_rerun_maps_it(corpus, monkeypatch):
    path, cache = corpus
    ds = am.Dataset.from_chunks(path, cache_dir=cache)
    model = np.random.default_rng(5).permutation(ROWS)  # HF's values, pinned
    ds.select(range(10)).shuffle(seed=0)  # what a first call imports and caches
    for run in ("first", "rerun"):
        _new_process(monkeypatch)
        shuffled, peak = _traced_peak(lambda: ds.shuffle(seed=5))
        assert peak < ROWS * 8 // 4, f"{run}: peak {peak} bytes, the permutation in memory"
        arr = state_of(shuffled).indices.array
        assert not arr.flags.owndata and not arr.flags.writeable, run
        np.testing.assert_array_equal(arr, model)
        assert shuffled["v"][:3] == model[:3].tolist()
    assert ds.shuffle(seed=6)["v"][:3] == np.random.default_rng(6).permutation(ROWS)[:3].tolist()


def test_shuffle_of_a_view_and_in_memory_keep_their_values(corpus):
    path, cache = corpus
    ds = am.Dataset.from_chunks(path, cache_dir=cache)
    view = ds.select(range(1, ROWS))
    expected = (np.random.default_rng(3).permutation(ROWS - 1) + 1)[:4].tolist()
    assert view.shuffle(seed=3)["v"][:4] == expected
    assert view.shuffle(seed=3)["v"][:4] == expected  # from its indices file
    again = ds.shuffle(seed=3, keep_in_memory=True)
    assert again["v"][:4] == np.random.default_rng(3).permutation(ROWS)[:4].tolist()


def test_a_first_filter_gathers_kept_positions_outside_memory(corpus):
    path, cache = corpus
    mapped = am.Dataset.from_chunks(path, cache_dir=cache).map(_lengths, batched=True)
    mapped.select(range(10)).filter(_even, batched=True)  # what a first call imports
    kept, peak = _traced_peak(lambda: mapped.filter(_even, batched=True))
    assert peak < ROWS // 2 * 8 // 2, f"peak {peak} bytes: kept positions gathered in memory"
    np.testing.assert_array_equal(state_of(kept).indices.array, np.arange(0, ROWS, 2))


# ---- a rerun opens one segment per result; the others when their rows are first read ----
def _count_opens(monkeypatch):
    from arrowmix._cache import segments as cache_segments

    opened = []
    open_table = cache_segments.open_table

    def counting(path, *args, **kwargs):
        opened.append(os.path.basename(path))
        return open_table(path, *args, **kwargs)

    monkeypatch.setattr(cache_segments, "open_table", counting)
    return opened


def _of(cache, ds):
    """The segment files of the result ``ds``."""
    return _segments(cache, f"cache-{state_of(ds).fingerprint}-")


def _stored_only(corpus):
    path, cache = corpus
    return am.Dataset.from_chunks(path, cache_dir=cache).map(
        _lengths, batched=True, remove_columns=["v"]
    )


def test_rerun_opens_the_first_segment_of_each_result(corpus, monkeypatch):
    model_map, model = _run(corpus)
    model_rows, model_stored = model_map[:], _stored_only(corpus)[:]
    _new_process(monkeypatch)
    opened = _count_opens(monkeypatch)
    mapped, kept = _run(corpus)
    stored = _stored_only(corpus)  # no column of the parent referenced
    assert len(opened) == 3, opened  # one segment of each map and of the filter
    assert len(kept) == ROWS // 2 and len(mapped) == ROWS and len(stored) == ROWS
    for ds in (mapped, stored):
        table = stored_table(state_of(ds))
        assert isinstance(table, DeferredTable)
        assert all(inuse.in_use(p) for p in _of(corpus[1], ds))  # no cleanup removes them
    assert kept[:] == model[:]  # now read: the other map segments are opened and checked
    assert sorted(opened[3:]) == [os.path.basename(p) for p in _of(corpus[1], mapped)[1:]]
    before = stored_table(state_of(mapped)).schema
    assert mapped[:] == model_rows and stored[:] == model_stored
    assert state_of(mapped).table.schema.equals(before, check_metadata=True)
    assert before.equals(state_of(model_map).table.schema, check_metadata=True)


def test_a_segment_damaged_after_the_rerun_is_never_read(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    mapped = _run(corpus)[0]
    victim = _of(corpus[1], mapped)[2]
    _flip_byte(victim, in_place=True)
    with pytest.raises(CacheCorruptedError, match="checksum mismatch") as err:
        mapped["m"]
    assert os.path.basename(victim) in str(err.value)


def test_a_segment_replaced_after_the_rerun_by_another_result_is_refused(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    mapped = _run(corpus)[0]
    first, victim = _of(corpus[1], mapped)[:2]
    os.replace(first, victim)  # a valid file of the same result, but of other rows
    with pytest.raises(CacheCorruptedError, match="metadata segment=0, expected 1"):
        mapped["m"]
