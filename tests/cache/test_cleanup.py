from __future__ import annotations

import gc
import os

import filelock
import pytest

import arrowmix as am
from arrowmix._cache import inuse
from arrowmix._cache.cleanup import plan_cleanup, remove_file, remove_planned, remove_unused
from arrowmix._cache.listing import TMP_KIND, CacheEntry, CacheFile, scan

NOW = 1_000_000_000.0
DAY = 86400.0
FP = [f"{i:x}" * 16 for i in range(1, 8)]


def entry(fp, *, ages=(0.0,), size=100, busy=None, kind="map"):
    """An entry whose files were last touched ``ages`` seconds before NOW."""
    files = tuple(
        CacheFile(f"/c/cache-{fp}-{i:05d}-of-{len(ages):05d}.arrow", size, NOW - age, {})
        for i, age in enumerate(ages)
    )
    if len(ages) == 1:
        files = (CacheFile(f"/c/cache-{fp}.arrow", size, NOW - ages[0], {}),)
    return CacheEntry(f"cache-{fp}", kind, fp, files, busy=busy)


def tmp_entry(pid, busy=None):
    name = f"tmp-{pid}-0a1b2c3d-cache-{FP[0]}.arrow.partial"
    return CacheEntry(
        name, TMP_KIND, FP[0], (CacheFile(f"/c/{name}", 5, NOW, {}),), busy=busy, pid=pid
    )


def paths(plan):
    return [p for p, _ in plan]


# ---- the pure planner ----------------------------------------------------------------


def test_no_filter_removes_every_free_entry_whole():
    entries = [
        entry(FP[0], ages=(5.0, 1.0, 3.0)),
        entry(FP[1], busy="in use by an open dataset"),
        entry(FP[2], busy="locked by a writer"),
        entry(FP[3]),
        entry(FP[4]),
    ]
    plan = plan_cleanup(entries, NOW, keep=[FP[4]])
    assert paths(plan) == [*entries[0].paths, *entries[3].paths]
    assert all("no filter" in why for _, why in plan)


def test_older_than_judges_an_entry_by_its_newest_file():
    entries = [
        entry(FP[0], ages=(10 * DAY,)),
        entry(FP[1], ages=(10 * DAY, 1 * DAY)),  # one segment recently written: keep all
        entry(FP[2], ages=(2 * DAY,)),
        entry(FP[3], ages=(30 * DAY,), busy="in use by an open dataset"),
    ]
    plan = plan_cleanup(entries, NOW, older_than=7 * DAY)
    assert paths(plan) == entries[0].paths
    (why,) = {w for _, w in plan}
    assert why == "last used 10d ago, older than 7d"
    assert plan_cleanup(entries, NOW, older_than=0.5 * DAY) == [
        (p, w) for p, w in plan_cleanup(entries[:3], NOW, older_than=0.5 * DAY)
    ]
    assert len(plan_cleanup(entries, NOW, older_than=0.5 * DAY)) == 4


def test_max_size_removes_least_recently_used_first_until_it_fits():
    entries = [
        entry(FP[0], ages=(2 * DAY,)),
        entry(FP[1], ages=(3 * DAY,)),
        entry(FP[2], ages=(1 * DAY,)),
        entry(FP[3], ages=(5 * DAY, 4 * DAY)),  # 200 bytes, last used 4 days ago
    ]
    assert paths(plan_cleanup(entries, NOW, max_size=500)) == []
    assert paths(plan_cleanup(entries, NOW, max_size=499)) == entries[3].paths
    assert paths(plan_cleanup(entries, NOW, max_size=250)) == [*entries[3].paths, *entries[1].paths]
    assert paths(plan_cleanup(entries, NOW, max_size=0)) == [
        *entries[3].paths,
        *entries[1].paths,
        *entries[0].paths,
        *entries[2].paths,
    ]
    (why, *_) = [w for _, w in plan_cleanup(entries, NOW, max_size=250)]
    assert why == "least recently used; cache holds 500 B, max 250 B"


def test_max_size_counts_busy_and_kept_entries_but_never_removes_them():
    entries = [
        entry(FP[0], size=1000, ages=(9 * DAY,), busy="locked by a writer"),
        entry(FP[1], size=1000, ages=(8 * DAY,)),
        entry(FP[2], size=100, ages=(1 * DAY,)),
        entry(FP[3], size=100, ages=(2 * DAY,)),
    ]
    assert paths(plan_cleanup(entries, NOW, max_size=1100, keep=[FP[1].upper()])) == (
        entries[3].paths + entries[2].paths
    )
    assert paths(plan_cleanup(entries, NOW, max_size=1200)) == entries[1].paths
    assert paths(plan_cleanup(entries, NOW, max_size=1150)) == entries[1].paths + entries[3].paths


def test_older_than_and_max_size_together_remove_the_union():
    entries = [
        entry(FP[0], ages=(10 * DAY,)),
        entry(FP[1], ages=(3 * DAY,)),
        entry(FP[2], ages=(1 * DAY,)),
    ]
    plan = plan_cleanup(entries, NOW, older_than=7 * DAY, max_size=150)
    assert paths(plan) == entries[0].paths + entries[1].paths
    assert "older than" in plan[0][1] and "least recently used" in plan[1][1]
    assert "cache holds 200 B" in plan[1][1]  # the old entry's bytes are already gone


def test_stale_temporary_files_go_whatever_the_filters():
    dead, live = tmp_entry(4242), tmp_entry(os.getpid(), busy="being written")
    entries = [dead, live, entry(FP[1])]
    for kwargs in ({}, {"older_than": 7 * DAY}, {"max_size": 10**9}, {"keep": [FP[0]]}):
        plan = plan_cleanup(entries, NOW, **kwargs)
        assert dead.paths[0] in paths(plan) and live.paths[0] not in paths(plan)
    assert plan_cleanup([dead], NOW)[0][1] == "stale temporary file: writer pid 4242 is gone"


def test_planning_is_pure():
    entries = [entry(FP[0], ages=(10 * DAY,)), tmp_entry(1)]
    assert plan_cleanup(entries, NOW) == plan_cleanup(entries, NOW)
    assert plan_cleanup([], NOW, older_than=1.0, max_size=0) == []


# ---- from a directory: scan, plan, remove ------------------------------------------------


def test_scan_plan_remove_skips_locked_and_held_files(tmp_path, make_cache):
    locked = make_cache(FP[0])
    held = make_cache(FP[1], segments=2)
    free = make_cache(FP[2], segments=3)
    with filelock.FileLock(str(tmp_path / f"cache-{FP[0]}.lock")), inuse.hold(held[1]):
        plan = plan_cleanup(scan(str(tmp_path)), NOW)
        assert sorted(paths(plan)) == sorted(free)
        result = remove_planned(plan)
    assert sorted(p for p, _ in result.removed) == sorted(free)
    assert result.freed == sum(s for _, s in result.removed) > 0 and result.skipped == []
    assert all(os.path.exists(p) for p in locked + held)
    assert not any(os.path.exists(p) for p in free)


def test_removal_rechecks_a_stale_plan(tmp_path, make_cache):
    (locked,) = make_cache(FP[0])
    (held,) = make_cache(FP[1])
    (gone,) = make_cache(FP[2])
    plan = plan_cleanup(scan(str(tmp_path), probe=False), NOW)  # snapshot says: all free
    os.unlink(gone)
    calls = []
    with filelock.FileLock(str(tmp_path / f"cache-{FP[0]}.lock")), inuse.hold(held):
        result = remove_planned(plan, on_file=lambda *call: calls.append(call))
    assert result.removed == []
    assert calls == [(p, 0, why) for p, why in result.skipped] and len(calls) == 3
    assert dict(result.skipped) == {
        locked: "locked by a writer",
        held: "in use by an open dataset",
        gone: "already gone",
    }
    assert os.path.exists(locked) and os.path.exists(held)


def test_removal_never_touches_other_names_or_live_writers(tmp_path):
    am.write_chunks(({"n": i} for i in range(5)), tmp_path)
    chunk = str(tmp_path / "chunk-00000.arrow")
    other = tmp_path / "notes.arrow"
    other.write_bytes(b"x")
    live = tmp_path / f"tmp-{os.getpid()}-0a1b2c3d-cache-{FP[0]}.arrow.partial"
    live.write_bytes(b"x")
    result = remove_planned([(chunk, "bad plan"), (str(other), "bad plan"), (str(live), "bad")])
    assert result.removed == []
    assert [why for _, why in result.skipped] == [
        "not a cache file name; never removed",
        "not a cache file name; never removed",
        f"being written by live process {os.getpid()}",
    ]
    assert os.path.exists(chunk) and other.exists() and live.exists()


def test_dry_run_removes_nothing(tmp_path, make_cache):
    files = make_cache(FP[0], segments=2) + make_cache(FP[1])
    plan = plan_cleanup(scan(str(tmp_path)), NOW)
    result = remove_planned(plan, dry_run=True)
    assert sorted(p for p, _ in result.removed) == sorted(files)
    assert result.freed == sum(os.path.getsize(p) for p in files)
    assert all(os.path.exists(p) for p in files)


def test_remove_file_reports_os_errors(tmp_path, make_cache, monkeypatch):
    (path,) = make_cache(FP[0])

    def refuse(p, *args, **kwargs):
        raise PermissionError(13, "Permission denied", p)

    monkeypatch.setattr(os, "unlink", refuse)
    assert remove_file(path) == (0, "cannot remove: Permission denied")
    monkeypatch.undo()
    assert os.path.exists(path)


# ---- Dataset.cleanup_cache_files ----------------------------------------------------------


def test_remove_unused_keeps_listed_held_and_foreign_files(tmp_path, make_cache):
    am.write_chunks(({"n": i} for i in range(5)), tmp_path)
    (kept,) = make_cache(FP[0])
    (held,) = make_cache(FP[1])
    make_cache(FP[2], segments=2)
    make_cache(FP[3], kind="indices")
    (tmp_path / "cache-notes.txt").write_bytes(b"x")
    with inuse.hold(held):
        assert remove_unused(str(tmp_path), keep={kept}) == 3
    assert sorted(os.listdir(tmp_path)) == sorted(
        [
            "_manifest.json",
            "cache-notes.txt",
            "chunk-00000.arrow",
            os.path.basename(kept),
            os.path.basename(held),
        ]
    )
    assert remove_unused(str(tmp_path / "missing"), keep={kept}) == 0
    assert remove_unused(str(tmp_path), keep=set()) == 0  # no files of its own: touch nothing
    assert os.path.exists(held)


def test_in_memory_dataset_cleanup_leaves_the_cache_root_alone(make_cache):
    ds = am.Dataset.from_dict({"n": [1, 2, 3]})
    files = make_cache(FP[0], segments=2)
    assert ds.cleanup_cache_files() == 0
    assert all(os.path.exists(p) for p in files)


def test_dataset_cleanup_cache_files_skips_files_held_by_other_datasets(tmp_path):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path)
    ds = am.Dataset.from_chunks(str(tmp_path))
    a = ds.shuffle(seed=1).flatten_indices()
    b = ds.shuffle(seed=2).flatten_indices()
    c = ds.shuffle(seed=3).flatten_indices()
    c_file = c.cache_files[0]
    del c  # its hold goes with it; b's file stays held by the live dataset `b`
    gc.collect()
    with inuse.hold(b.cache_files[0]):  # a second reader (as another process would be)
        assert a.cleanup_cache_files() == 1
    assert os.path.exists(b.cache_files[0]) and not os.path.exists(c_file)
    assert a["n"] == ds.shuffle(seed=1)["n"]


@pytest.mark.parametrize("name", ["cache-0123.arrow", "chunk-00001.arrow", "indices-x.arrow"])
def test_remove_file_refuses_names_that_are_not_ours(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"x")
    assert remove_file(str(path)) == (0, "not a cache file name; never removed")
    assert path.exists()


def test_same_key_in_two_directories_are_two_entries():
    old = entry(FP[0], ages=(10 * DAY,))
    new = CacheEntry(old.key, "map", FP[0], (CacheFile(f"/d/cache-{FP[0]}.arrow", 100, NOW, {}),))
    assert paths(plan_cleanup([old, new], NOW, older_than=DAY)) == old.paths
    assert paths(plan_cleanup([old, new], NOW, older_than=DAY, max_size=100)) == old.paths
    assert paths(plan_cleanup([old, new], NOW, older_than=DAY, max_size=99)) == (
        old.paths + new.paths
    )
