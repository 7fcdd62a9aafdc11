"""Leftovers of killed writers go: temporary files on the next write, idle lock files."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cache import lock as lockmod
from arrowmix._cache.cleanup import remove_idle_locks
from arrowmix._cache.inuse import lock_held
from arrowmix._dataset import indices
from arrowmix._dataset.state import state_of
from arrowmix._storage.atomic import writer_alive


def dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


def _stale(directory: os.PathLike[str] | str, final: str) -> str:
    path = os.path.join(directory, f"tmp-{dead_pid()}-0a1b2c3d-{final}.partial")
    with open(path, "wb") as f:
        f.write(b"x" * 1000)
    return path


def test_writer_alive_sees_dead_zombie_and_reused_pids():
    assert writer_alive(os.getpid())
    assert not writer_alive(dead_pid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        assert writer_alive(child.pid, time.time())
        # a file last written an hour before this process started: another writer's
        assert not writer_alive(child.pid, time.time() - 3600)
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        assert not writer_alive(child.pid)  # killed, not reaped yet: a zombie
    finally:
        child.kill()
        child.wait()


def test_write_chunks_removes_temporary_files_of_dead_writers(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    stale = [_stale(out, "chunk-00003.arrow"), _stale(out, "_COMPLETE.json")]
    other = _stale(out, "notes.txt")  # not a name write_chunks writes: left alone
    live = out / f"tmp-{os.getpid()}-0a1b2c3d-chunk-00000.arrow.partial"
    live.write_bytes(b"l")
    am.write_chunks(pa.table({"v": [1, 2]}), out)
    assert not any(os.path.exists(p) for p in stale)
    assert os.path.exists(other) and live.exists()


def test_indices_and_flatten_remove_temporary_files_of_dead_writers(tmp_path, monkeypatch):
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    am.write_chunks(pa.table({"v": list(range(50))}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c")).shuffle(seed=4)
    (ipath,) = (tmp_path / "c").glob("indices-*.arrow")
    flat = ds.flatten_indices()
    (fpath,) = (tmp_path / "c").glob("cache-*.arrow")
    del ds, flat
    os.unlink(ipath)
    os.unlink(fpath)
    stale = [_stale(tmp_path / "c", ipath.name), _stale(tmp_path / "c", fpath.name)]
    again = am.Dataset.from_chunks(str(tmp_path / "c")).shuffle(seed=4)
    again.flatten_indices()
    assert not any(os.path.exists(p) for p in stale)


def test_ingestion_rerun_removes_temporary_files_of_a_killed_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "a.txt"
    src.write_text("one\ntwo\n")
    first = am.Dataset.from_text(str(src))
    out = os.path.dirname(state_of(first).files[0])
    os.unlink(os.path.join(out, "_COMPLETE.json"))  # as if killed before the marker
    stale = [_stale(out, "chunk-00001.arrow"), _stale(out, "_COMPLETE.json")]
    assert am.Dataset.from_text(str(src))["text"] == ["one", "two"]
    assert not any(os.path.exists(p) for p in stale)


def test_a_map_leaves_no_lock_file(tmp_path):
    am.write_chunks(pa.table({"v": [1, 2, 3]}), tmp_path / "c")
    am.Dataset.from_chunks(str(tmp_path / "c")).map(lambda r: {"w": r["v"] + 1})
    assert [n for n in os.listdir(tmp_path / "c") if n.endswith(".lock")] == []


def test_cleanup_removes_idle_lock_files_only(tmp_path):
    idle = tmp_path / f"cache-{'1' * 16}.lock"
    idle.write_bytes(b"")  # left by a killed writer
    with lockmod.fingerprint_lock(str(tmp_path), "2" * 16):
        held = lockmod.lock_path(str(tmp_path), "2" * 16)
        assert remove_idle_locks([str(tmp_path)], dry_run=True) == [str(idle)]
        assert idle.exists()
        assert remove_idle_locks([str(tmp_path)]) == [str(idle)]
        assert not idle.exists() and os.path.exists(held) and lock_held(held)
    assert not os.path.exists(held)  # the holder removes its own


@pytest.mark.slow
def test_lock_excludes_while_lock_files_are_removed_under_it(tmp_path):
    directory, fp = str(tmp_path), "3" * 16
    counter = tmp_path / "counter"
    counter.write_text("0")
    inside = []
    stop = threading.Event()

    def worker() -> None:
        for _ in range(40):
            with lockmod.fingerprint_lock(directory, fp) as held:
                assert held
                inside.append(1)
                assert len(inside) == 1, "two holders at once"
                n = int(counter.read_text())
                counter.write_text(str(n + 1))
                inside.pop()

    def remover() -> None:
        while not stop.is_set():
            lockmod.remove_idle_lock(lockmod.lock_path(directory, fp))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    sweeper = threading.Thread(target=remover)
    sweeper.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    sweeper.join()
    assert counter.read_text() == "160"


def test_cleanup_cache_files_removes_idle_lock_files(tmp_path):
    am.write_chunks(pa.table({"v": [1, 2, 3]}), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c")).map(lambda r: {"w": r["v"] + 1})
    idle = tmp_path / "c" / f"cache-{'4' * 16}.lock"
    idle.write_bytes(b"")
    assert ds.cleanup_cache_files() == 0
    assert not idle.exists()
