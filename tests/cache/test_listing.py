from __future__ import annotations

import os
import subprocess
import sys
import time

import filelock
import pyarrow as pa

from arrowmix._cache import inuse
from arrowmix._cache.listing import TMP_KIND, scan
from arrowmix._storage.ipc import write_file

FP1, FP2, FP3 = "1" * 16, "2" * 16, "3" * 16


def dead_pid():
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


def test_segments_of_a_fingerprint_form_one_entry(tmp_path, make_cache):
    paths = make_cache(FP1, rows=5, segments=4, present=3, age=100, parent=FP2)
    os.utime(paths[1], (time.time() - 10, time.time() - 10))
    make_cache(FP2, kind="indices", rows=7)
    entries = {e.key: e for e in scan(str(tmp_path))}
    assert set(entries) == {f"cache-{FP1}", f"indices-{FP2}"}
    seg = entries[f"cache-{FP1}"]
    assert seg.paths == sorted(paths) and seg.segments == "3/4" and seg.num_segments == 4
    assert seg.kind == "map" and seg.parent == FP2 and seg.fingerprint == FP1
    assert seg.rows == 15
    assert seg.size == sum(os.path.getsize(p) for p in paths)
    assert seg.last_used == os.path.getmtime(paths[1])
    assert seg.created is not None and seg.created <= time.time() - 99
    ix = entries[f"indices-{FP2}"]
    assert ix.kind == "indices" and ix.rows == 7 and ix.segments == "1" and ix.busy is None


def test_only_our_exact_names_are_listed(tmp_path, make_cache):
    import arrowmix as am

    am.write_chunks(({"n": i} for i in range(5)), tmp_path)
    make_cache(FP1)
    for name in (
        "cache-notes.txt",
        "cache-XYZ.arrow",
        f"cache-{FP1}.arrow.bak",
        f"cache-{FP1}0.arrow",
        f"xcache-{FP1}.arrow",
        f"tmp-12-ab-notes-{FP1}.txt.partial",
        f"cache-{FP1}.lock",
    ):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / f"cache-{FP2}.arrow").mkdir()
    os.symlink(tmp_path / f"cache-{FP1}.arrow", tmp_path / f"cache-{FP3}.arrow")
    assert [e.key for e in scan(str(tmp_path))] == [f"cache-{FP1}"]


def test_rows_without_metadata_come_from_the_footer(tmp_path):
    table = pa.table({"x": list(range(12))})
    write_file(
        str(tmp_path / f"cache-{FP1}.arrow"), table.to_batches(max_chunksize=5), table.schema
    )
    (entry,) = scan(str(tmp_path))
    assert entry.rows == 12 and entry.kind == "?" and entry.parent is None and entry.created is None


def test_recorded_rows_are_used_without_counting_batches(tmp_path, make_cache):
    make_cache(FP1, rows=10, extra={"rows": 7})  # what the writer recorded wins
    (entry,) = scan(str(tmp_path))
    assert entry.rows == 7 and entry.files[0].meta["rows"] == 7


def test_unreadable_files_are_listed_with_their_problem(tmp_path):
    (tmp_path / f"cache-{FP1}.arrow").write_bytes(b"not arrow at all")
    (entry,) = scan(str(tmp_path))
    assert entry.kind == "?" and entry.rows is None
    assert entry.problem.startswith(f"cache-{FP1}.arrow: unreadable")


def test_busy_entries(tmp_path, make_cache):
    make_cache(FP1)
    (held,) = make_cache(FP2)
    make_cache(FP3, segments=2)
    with filelock.FileLock(str(tmp_path / f"cache-{FP1}.lock")), inuse.hold(held):
        entries = {e.fingerprint: e for e in scan(str(tmp_path))}
        assert entries[FP1].busy == "locked by a writer"
        assert entries[FP2].busy == "in use by an open dataset"
        assert entries[FP3].busy is None
        assert all(e.busy is None for e in scan(str(tmp_path), probe=False))
    assert all(e.busy is None for e in scan(str(tmp_path)))


def test_temporary_files(tmp_path):
    dead = dead_pid()
    live_name = f"tmp-{os.getpid()}-0a1b2c3d-cache-{FP1}.arrow.partial"
    dead_name = f"tmp-{dead}-0a1b2c3d-cache-{FP2}-00001-of-00004.arrow.partial"
    chunk_name = f"tmp-{dead}-0a1b2c3d-chunk-00003.arrow.partial"
    locked_name = f"tmp-{dead}-0a1b2c3d-indices-{FP3}.arrow.partial"
    for name in (live_name, dead_name, chunk_name, locked_name):
        (tmp_path / name).write_bytes(b"x" * 10)
    with filelock.FileLock(str(tmp_path / f"cache-{FP3}.lock")):
        entries = {e.key: e for e in scan(str(tmp_path))}
    assert set(entries) == {live_name, dead_name, chunk_name, locked_name}
    assert all(e.kind == TMP_KIND and e.size == 10 for e in entries.values())
    assert entries[live_name].busy == f"being written by live process {os.getpid()}"
    assert entries[live_name].pid == os.getpid() and entries[live_name].fingerprint == FP1
    assert entries[dead_name].busy is None and entries[dead_name].fingerprint == FP2
    assert entries[chunk_name].busy is None and entries[chunk_name].fingerprint is None
    assert entries[locked_name].busy == "locked by a writer"


def test_files_removed_while_listing_are_skipped(tmp_path, make_cache, monkeypatch):
    from arrowmix._cache import listing

    (gone,) = make_cache(FP1)
    (kept,) = make_cache(FP2)
    real = listing._read_file

    def racing(path):
        if path == gone:
            os.unlink(path)
        return real(path)

    monkeypatch.setattr(listing, "_read_file", racing)
    assert [e.paths for e in scan(str(tmp_path))] == [[kept]]


def test_empty_file_is_unreadable_not_fatal(tmp_path):
    (tmp_path / f"indices-{FP1}.arrow").write_bytes(b"")
    (entry,) = scan(str(tmp_path))
    assert entry.size == 0 and "unreadable" in entry.problem


def test_scan_tree_walks_subdirectories_without_following_links(tmp_path, make_cache):
    from arrowmix._cache.listing import scan_tree

    nested = tmp_path / "ingested" / FP3
    nested.mkdir(parents=True)
    (top,) = make_cache(FP1)
    (below,) = make_cache(FP1, directory=str(nested))  # same fingerprint, another lineage
    os.symlink(nested, tmp_path / "link")
    assert [e.paths for e in scan(str(tmp_path))] == [[top]]
    entries = scan_tree(str(tmp_path))
    assert [e.paths for e in entries] == [[top], [below]]
    assert [e.directory for e in entries] == [str(tmp_path), str(nested)]
