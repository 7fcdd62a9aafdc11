from __future__ import annotations

import gc
import os
import subprocess
import sys

import filelock
import pytest

from arrowmix._cache import inuse

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock probes need fcntl")


@pytest.fixture
def cache_file(tmp_path):
    path = tmp_path / "cache-0123456789abcdef.arrow"
    path.write_bytes(b"data")
    return str(path)


def test_hold_marks_a_file_in_use_until_released(cache_file):
    assert not inuse.in_use(cache_file)
    h = inuse.hold(cache_file)
    assert h.active and inuse.in_use(cache_file)
    h.release()
    h.release()  # idempotent
    assert not h.active and not inuse.in_use(cache_file)


def test_hold_as_context_manager_and_garbage_collection(cache_file):
    with inuse.hold(cache_file):
        assert inuse.in_use(cache_file)
    assert not inuse.in_use(cache_file)
    h = inuse.hold(cache_file)
    assert inuse.in_use(cache_file)
    del h
    gc.collect()
    assert not inuse.in_use(cache_file)


def test_several_readers_share_a_file(cache_file):
    a, b = inuse.hold(cache_file), inuse.hold(cache_file)
    a.release()
    assert inuse.in_use(cache_file)
    b.release()
    assert not inuse.in_use(cache_file)


def test_a_hold_in_another_process_is_seen(cache_file):
    code = (
        "import sys; from arrowmix._cache.inuse import hold; h = hold(sys.argv[1]);"
        " print('held', flush=True); sys.stdin.read()"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(inuse.__file__)))
    proc = subprocess.Popen(
        [sys.executable, "-c", code, cache_file],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(root)},
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        assert inuse.in_use(cache_file)
    finally:
        proc.communicate("")
    assert not inuse.in_use(cache_file)


def test_missing_files(tmp_path):
    missing = str(tmp_path / "cache-0123456789abcdef.arrow")
    assert not inuse.in_use(missing)
    with pytest.raises(FileNotFoundError):
        inuse.hold(missing)


def test_exclusive_blocks_nothing_when_free_and_reports_readers(cache_file):
    with inuse.exclusive(cache_file) as free:
        assert free
    with inuse.hold(cache_file), inuse.exclusive(cache_file) as free:
        assert not free


def test_lock_held_probes_without_creating_the_lock_file(tmp_path):
    lock = str(tmp_path / "cache-0123456789abcdef.lock")
    assert not inuse.lock_held(lock)
    assert not os.path.exists(lock)
    with filelock.FileLock(lock):
        assert inuse.lock_held(lock)
    assert not inuse.lock_held(lock)
    assert os.path.exists(lock)  # a probe never deletes the writer's lock file


def test_pid_alive():
    assert inuse.pid_alive(os.getpid())
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert not inuse.pid_alive(int(proc.stdout))


def test_file_systems_without_locks_register_nothing(cache_file, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    h = inuse.hold(cache_file)
    assert not h.active and not inuse.in_use(cache_file)


def test_an_unreadable_lock_file_counts_as_held(tmp_path, monkeypatch):
    lock = tmp_path / "cache-0123456789abcdef.lock"
    lock.write_bytes(b"")
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if os.fspath(path) == str(lock):
            raise PermissionError(13, "Permission denied", str(lock))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    assert inuse.lock_held(str(lock))


def test_probe_falls_back_to_read_only_descriptors(cache_file, monkeypatch):
    import errno

    real_open, modes = os.open, []

    def read_only_fs(path, flags, *args):
        modes.append(flags & (os.O_RDWR | os.O_WRONLY))
        if flags & os.O_RDWR:
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only_fs)
    with inuse.hold(cache_file):
        assert inuse.in_use(cache_file)
    assert not inuse.in_use(cache_file)
    assert os.O_RDWR in modes


@pytest.mark.parametrize("limit_raised", [True, False])
def test_running_out_of_descriptors_raises_the_limit_or_registers_nothing(
    cache_file, monkeypatch, limit_raised
):
    import errno

    real_open, calls = os.open, []

    def emfile_once(path, flags, *args):
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", emfile_once)
    monkeypatch.setattr(inuse, "_raise_fd_limit", lambda: limit_raised)
    h = inuse.hold(cache_file)
    assert h.active is limit_raised
    monkeypatch.undo()
    assert inuse.in_use(cache_file) is limit_raised
    h.release()


def test_raise_fd_limit_grows_the_soft_limit_up_to_the_hard_one():
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if soft == hard:
            assert not inuse._raise_fd_limit()
        else:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
            assert inuse._raise_fd_limit()
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > min(soft, 256)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
