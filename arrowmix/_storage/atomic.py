"""Atomic file writes: write a temporary file in the target directory, then rename.

A reader never sees half a file: the data goes to ``tmp-<pid>-<random>-<name>.partial`` beside
the target, is flushed and fsynced, and only then renamed over the final name. Writers of many
files (a map's segments) pass ``sync=False`` and make them all durable at the end with one
barrier (:func:`make_durable`): a crash of the process still never leaves half a file under a
final name (the rename comes after the last write); a power loss before the barrier may leave a
torn one, which the checksum of a cache file catches on its next check. Any exception,
``KeyboardInterrupt`` included, removes the temporary file. A process killed with ``kill -9``
can leave a ``tmp-*.partial`` file behind; it never has a final name, and the next write of the
same file (:func:`remove_dead_tmp`) or the cache cleanup removes it once :func:`writer_alive`
says its writer is gone.

A file the user named (:func:`replace_file`, the exporters) is replaced as a user expects of an
editor's save: through a symlink the file it points to is replaced and the link kept, the
previous file's permission bits are kept (a new file gets the umask's), temporaries of the same
target left by dead writers are removed first, and an ``OSError`` (a full disk) names the file.

fsspec URLs (object stores) follow the same scheme with a temporary *key* and a server-side
copy to the final key (see :func:`_atomic_remote`); a ``tmp-*`` key left by a killed writer is
never listed as a chunk; only a map's next run removes it, in a remote cache directory
(``arrowmix._cache.segments.remove_stale_tmp``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._storage import trust
from arrowmix._storage.fs import ensure_parent, is_local, local_path, url_to_fs

__all__ = [
    "TMP_PREFIX",
    "TMP_SUFFIX",
    "atomic_sink",
    "fsync_dir",
    "fsync_file",
    "make_durable",
    "remove_dead_tmp",
    "replace_file",
    "tmp_name",
    "writer_alive",
]

TMP_PREFIX = "tmp-"
TMP_SUFFIX = ".partial"
#: ``tmp-<pid>-<random>-<final name>.partial``
TMP_RE = re.compile(rf"^{re.escape(TMP_PREFIX)}(\d+)-[0-9a-f]+-(.+){re.escape(TMP_SUFFIX)}$")
#: Pauses while a temporary file's directory is being replaced by a re-save (about 0.6 s).
_MOVE_PAUSES = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25)
# A process that started this long after a file's last write cannot have written it.
_START_SLACK = 2.0


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return float(next(line.split()[1] for line in f if line.startswith("btime ")))
    except (OSError, StopIteration, ValueError):
        return None


def writer_alive(pid: int, written: float | None = None) -> bool:
    """Whether the writer ``pid`` of a temporary file last written at ``written`` may still run.

    False when no such process exists on this host, when it is a zombie (killed, not yet
    reaped), or (Linux) when the process with that pid started after ``written``: the pid was
    reused by an unrelated process. True whenever it cannot be told.

    Example:
        >>> writer_alive(os.getpid())
        True
    """
    if sys.platform == "win32" or pid <= 0:  # pragma: no cover - cannot probe safely
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: still look at /proc
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[-1].split()
    except OSError:
        return True
    if fields[0] == "Z":
        return False
    boot = _boot_time()
    if written is None or boot is None:
        return True
    started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return started <= written + _START_SLACK


def remove_dead_tmp(directory: str, final_name: Callable[[str], bool]) -> list[str]:
    """Remove the local temporary files in ``directory`` of dead writers of matching names.

    ``final_name(name)`` selects the final names whose temporary files are considered.
    Returns the removed paths.
    """
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = TMP_RE.match(name)
        if not (m and final_name(m.group(2))):
            continue
        path = os.path.join(directory, name)
        try:
            written = os.stat(path).st_mtime
        except OSError:
            continue
        if not writer_alive(int(m.group(1)), written):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed


def tmp_name(final_name: str) -> str:
    """A temporary file name for ``final_name``, tagged with our pid for stale-file cleanup."""
    return f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{final_name}{TMP_SUFFIX}"


@contextlib.contextmanager
def atomic_sink(
    path: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    finish: Callable[[str], None] | None = None,
    sync: bool = True,
) -> Iterator[pa.NativeFile]:
    """Yield a writable Arrow sink whose content appears at ``path`` only on success.

    ``finish`` (local paths only) is called with the temporary file's path once the sink is
    closed and before the file is synced and renamed (to patch it in place). ``sync=False``
    renames without syncing (the caller calls :func:`make_durable` later).
    """
    if is_local(path):
        with _atomic_local(local_path(path), finish, sync) as sink:
            yield sink
    else:
        if finish is not None:
            raise ValueError("`finish` needs a local path.")
        with _atomic_remote(path, storage_options) as sink:
            yield sink


@contextlib.contextmanager
def replace_file(
    path: str, storage_options: Mapping[str, Any] | None = None
) -> Iterator[pa.NativeFile]:
    """Like :func:`atomic_sink`, for a file the user named (see the module's docstring)."""
    if not is_local(path):
        with _atomic_remote(path, storage_options) as sink:
            yield sink
        return
    target = os.path.realpath(local_path(path))  # through symlinks: the file they point to
    directory, name = os.path.split(target)
    remove_dead_tmp(directory, name.__eq__)
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except OSError:
        mode = None  # a new file: the umask's default, as open() gives
    try:
        with _atomic_local(target, None, True, mode=mode) as sink:
            yield sink
    except OSError as err:
        named = _named(err, path)
        if named is err:
            raise
        raise named from err


def _named(err: OSError, path: str) -> OSError:
    """``err`` naming ``path`` when it names no file (Arrow's write errors do not)."""
    if err.filename is not None or err.errno is None:
        return err
    return OSError(err.errno, f"{os.strerror(err.errno)} while writing {path!r}", path)


@contextlib.contextmanager
def _atomic_local(
    path: str,
    finish: Callable[[str], None] | None,
    sync: bool,
    *,
    mode: int | None = None,
) -> Iterator[pa.NativeFile]:
    directory, name = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, tmp_name(name))
    try:
        sink = pa.OSFile(tmp, "wb")
        where = _dir_identity(directory)
        try:
            yield sink
        finally:
            sink.close()
        patched = False
        for pause in (*_MOVE_PAUSES, None):
            try:
                if finish is not None and not patched:
                    finish(tmp)
                    patched = True  # once only: it patches the file in place
                _finish_tmp(tmp, path, mode, sync)
                break
            except FileNotFoundError as exc:
                # A re-save replaced the directory meanwhile and moves the temporary file
                # into the new one (arrowmix._hf.carry_over): finish it there.
                if _dir_identity(directory) == where:
                    raise
                if pause is None:
                    raise FileNotFoundError(
                        exc.errno,
                        f"Cannot finish writing {path!r}: its directory was replaced while "
                        "the file was written (saved again by another process, or removed), "
                        "and the file was not moved into the new one. Run it again.",
                        path,
                    ) from exc
                time.sleep(pause)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync:
        fsync_dir(directory)
        with contextlib.suppress(OSError):
            trust.synced(trust.identity(path))


def _dir_identity(directory: str) -> tuple[int, int] | None:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _finish_tmp(tmp: str, path: str, mode: int | None, sync: bool) -> None:
    """Chmod and sync the complete temporary file ``tmp``, then rename it to ``path``."""
    if mode is not None:
        os.chmod(tmp, mode)
    if sync:
        fsync_file(tmp)
    os.replace(tmp, path)


def make_durable(paths: Sequence[str]) -> None:
    """One durability barrier for local files renamed into place with ``sync=False``.

    Linux: one ``syncfs`` per directory (the data, the renames and the directory entries of
    that file system at once); elsewhere each file and then each directory is fsynced.
    """
    local = [p for p in (local_path(p) for p in paths if is_local(p)) if os.path.exists(p)]
    directories = sorted({os.path.dirname(os.path.abspath(p)) for p in local})
    if not all(_syncfs(d) for d in directories):
        for p in local:
            with contextlib.suppress(OSError):
                fsync_file(p)
        for d in directories:
            fsync_dir(d)
    for p in local:
        with contextlib.suppress(OSError):
            trust.synced(trust.identity(p))


def fsync_file(path: str) -> None:
    """Flush the file ``path`` to disk (``fsync``)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(directory: str) -> bool:
    """``syncfs(2)`` on the file system of ``directory``; False where it is not available."""
    fn = getattr(_libc(), "syncfs", None) if sys.platform.startswith("linux") else None
    if fn is None:
        return False
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        return int(fn(fd)) == 0
    finally:
        os.close(fd)


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        except OSError:
            _LIBC = False
    return _LIBC or None


_LIBC: Any = None


def fsync_dir(directory: str) -> None:
    """Make a rename in ``directory`` durable (where directories can be fsynced)."""
    with contextlib.suppress(OSError):  # not supported everywhere (e.g. Windows): fine
        fsync_file(directory)


@contextlib.contextmanager
def _atomic_remote(url: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.NativeFile]:
    """Upload to a temporary key beside ``url``, then server-side copy it to the final key.

    Object stores have no rename: the final key is written by one copy (atomic per object on
    S3/GCS: readers see the old object, nothing, or the whole new one), then the temporary key
    is deleted. ``cp_file``/``rm_file`` rather than ``mv``: ``mv`` probes both keys as
    directories first (two listings per file) and would copy *into* a "directory" if a key
    below the final name existed.
    """
    fs, path = url_to_fs(url, storage_options)
    parent, name = path.rsplit("/", 1) if "/" in path else ("", path)
    tmp = f"{parent}/{tmp_name(name)}" if parent else tmp_name(name)
    ensure_parent(fs, parent, url)
    try:
        with fs.open(tmp, "wb") as f:
            sink = pa.PythonFile(f, mode="w")
            yield sink
            sink.flush()
        fs.cp_file(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(tmp)
        raise
    fs.rm_file(tmp)  # the final object is complete even if this fails (a tmp- key remains)
