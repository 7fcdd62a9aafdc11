"""A bounded local cache of remote chunk files, shared by the processes of one node.

Layout of the cache directory (one byte budget per directory, whatever the processes):

- ``<key>.arrow``: a complete local copy of one version of a remote chunk (``key`` hashes the
  URL and the object's version tag: see :attr:`RemoteChunk.key`), memory-mapped by readers.
- ``dl-<key>-<pid>-<random>.partial``: a download in progress, created at its full size
  (sparse) when its space is reserved and renamed to ``<key>.arrow`` only once complete and
  checked, so a download killed mid-way is never taken for a chunk.
- ``<key>.pin``: readers hold a shared ``flock`` on it while they read the copy; eviction
  takes it exclusively without waiting, so a chunk in use by any process is never evicted,
  and removes it with the copy. Its modification time is the copy's last use (touched on
  every open and close), so the copy itself keeps the ``stat`` identity it was verified in.
- ``<key>.dl``: held exclusively while the chunk is downloaded (one download per chunk),
  and removed by the downloader when done. A lock taken on a lock file that its holder
  removed meanwhile is taken again on the current file, so removing them is safe.
- ``budget.lock``: held while space is counted, reserved or freed.
- ``budget.squeeze``: touched by a demand read waiting for space; for a second after, every
  process releases its read-ahead (:meth:`ChunkCache.hold`) and idle pins at its next read
  and takes no new read-ahead pins (a process looks at the file at most every 50 ms).

A process keeps the copy it read last open (pinned), and older idle ones up to an eighth of
the limit; before it forks, it closes its idle copies, and a forked child drops every pin it
inherited (its parent's to release).

Space is the sum of the sizes of the copies and of the reserved downloads. Before a download,
the least recently used copies (by the newer modification time of the copy and of its
``.pin``) that nobody pins are removed until the new chunk fits; when the pinned copies
alone leave no room, the download waits for readers to finish and then raises
:class:`~arrowmix.exceptions.CacheLimitError`. A partial download whose downloader died is
removed when its ``.dl`` lock is free.

Each downloaded copy is checked before it is renamed into place
(:mod:`arrowmix._remote.download`): the copy's content digest must equal the one its corpus
manifest records; on a mismatch the manifest is read again, and one that no longer records
that digest raises :class:`~arrowmix.exceptions.ObjectChangedError` saying the corpus was
rewritten; otherwise the object's version tag is asked afresh, and a new version raises
:class:`~arrowmix.exceptions.ObjectChangedError` naming the object, so two versions of a
corpus are never mixed. The copy is then checked like a local chunk file (its checksum,
or its arrays), and a damaged one raises :class:`~arrowmix.exceptions.ChunkFileError` naming
the object. Locks need ``fcntl`` (Linux, macOS).

A copy is trusted only in the state it was checked in: the downloader records it, once
checked, against its ``stat`` identity (:mod:`arrowmix._storage.trust`, the record the local
cache files use). A process that opens a copy it did not download itself and that no record
vouches for in its current state (another boot's unsynced record, a copy written to, truncated,
replaced or renamed since) hashes it once: a copy of the wrong size or whose digest is not the
manifest's is removed and downloaded again (counted in ``refetched``, with a
:class:`~arrowmix.exceptions.CacheWarning`), never served. Opening a trusted copy costs one
``stat`` and a dictionary lookup.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._remote.download import download
from arrowmix._remote.meta import RemoteChunk
from arrowmix._remote.stats import CacheStats, count, counting, parse_size
from arrowmix._storage import integrity, trust
from arrowmix._storage.local import root_dir, same_file
from arrowmix._warn import warn
from arrowmix.exceptions import CacheLimitError, CacheWarning, ChunkFileError

try:
    import fcntl
except ImportError:  # Windows: no flock, so no shared bounded cache (import stays possible)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CacheStats",
    "ChunkCache",
    "Pinned",
    "chunk_cache",
    "counting",
    "default_chunk_cache_dir",
    "parse_size",
]

_POLL = 0.05
#: Prefix of a download in progress; not ``tmp-``, which cleanup-cache reads as a dead writer's.
_PARTIAL = "dl-"
#: Idle copies kept open pin at most this share of the limit (1/8) per process.
_IDLE_SHARE = 8
#: How long a waiting demand read's request to release idle pins lasts (seconds).
_SQUEEZE = 1.0
#: How long a read waits for other readers to release space before CacheLimitError.
WAIT_FOR_SPACE = 30.0


@functools.lru_cache(maxsize=1 << 16)
def key_of(chunk: RemoteChunk) -> str:
    """``chunk.key``, computed once per chunk (every read of a chunk needs it)."""
    return chunk.key


def _lock_fd(path: str, mode: int) -> int | None:
    """A descriptor of the file at ``path`` (created if missing) holding ``flock(mode)``.

    ``.pin`` and ``.dl`` files are unlinked by whoever holds them exclusively once they are
    no longer needed, so a lock taken on a file unlinked meanwhile is dropped and taken
    again on the current one. None when ``LOCK_NB`` is in ``mode`` and the lock is busy.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        if same_file(fd, path):
            return fd
        os.close(fd)


@contextlib.contextmanager
def _flock(path: str, mode: int) -> Iterator[bool]:
    """Hold ``flock(mode)`` on ``path`` (created if missing); yield False if NB and busy."""
    fd = _lock_fd(path, mode)
    if fd is None:
        yield False
        return
    try:
        yield True
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class Pinned:
    """A local copy held open (memory-mapped) and pinned against eviction until released."""

    def __init__(self, cache: ChunkCache, chunk: RemoteChunk, fd: int, table: pa.Table) -> None:
        self.chunk = chunk
        self.key = key_of(chunk)
        self.table = table
        self._cache = cache
        self._fd = fd
        self.users = 0
        self._batches: dict[tuple[str, ...], tuple[list[pa.RecordBatch], np.ndarray]] = {}

    def batches(self, columns: tuple[str, ...]) -> tuple[list[pa.RecordBatch], np.ndarray]:
        """The non-empty record batches of ``columns`` and their row offsets (kept while open)."""
        got = self._batches.get(columns)
        if got is None:
            batches = [b for b in self.table.select(list(columns)).to_batches() if b.num_rows]
            offsets = np.cumsum([0, *(b.num_rows for b in batches)], dtype=np.int64)
            got = self._batches[columns] = (batches, offsets)
        return got

    def close(self) -> None:
        """Unmap and unpin (the table must not be used afterwards)."""
        self.table = None  # type: ignore[assignment]  # drop the mapping before unpinning
        self._batches = {}
        with contextlib.suppress(OSError):  # the last use is the eviction order (LRU)
            os.utime(self._fd)  # the pin's: the copy keeps its verified identity
        with contextlib.suppress(OSError):
            os.close(self._fd)


class Hold:
    """A read-ahead's pin of a copy (see :meth:`ChunkCache.hold`)."""

    def __init__(self, pinned: Pinned) -> None:
        self.pinned = pinned


class ChunkCache:
    """One cache directory with a byte budget (see the module docstring).

    Use :func:`chunk_cache` to get the instance of a directory: its open copies and counters
    are shared by every dataset of the process.
    """

    def __init__(self, directory: str, limit: int, keep_open: int = 8) -> None:
        self.directory = os.path.abspath(directory)
        if fcntl is None:
            raise OSError("`cache_limit` needs fcntl file locks (Linux, macOS).")
        self.limit = limit
        self.keep_open = keep_open
        self.stats = CacheStats()
        os.makedirs(self.directory, exist_ok=True)
        self._lock = threading.RLock()
        self._open: dict[str, Pinned] = {}  # key -> open copy (in use or idle, MRU last)
        self._holds: set[Hold] = set()  # read-ahead pins, released when demand needs room
        self._squeeze_seen = (-float("inf"), False)  # (when budget.squeeze was read, result)

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    # ---- reading -------------------------------------------------------------------
    def acquire(
        self, chunk: RemoteChunk, storage_options: Mapping[str, Any] | None, wait: bool = True
    ) -> Pinned | None:
        """The pinned, memory-mapped copy of ``chunk``, downloaded first if needed.

        ``wait=False`` (read-ahead) returns None instead of waiting for space.
        """
        if self._squeezed():  # a demand read somewhere waits for space
            if not wait:
                return None
            self._yield_idle()
        key = key_of(chunk)
        with self._lock:
            pinned = self._open.pop(key, None)
            if pinned is not None:
                self._open[key] = pinned  # most recently used
                pinned.users += 1
                return pinned
        fd = _lock_fd(self._path(key + ".pin"), fcntl.LOCK_SH)
        assert fd is not None  # a blocking lock
        try:
            data = self._path(key + ".arrow")
            if not self._usable(chunk, data):
                started = time.perf_counter()
                if not self._download(chunk, storage_options, wait):
                    os.close(fd)
                    self._drop_pin(chunk)
                    return None
                if wait:
                    waited = time.perf_counter() - started
                    with self._lock:
                        self.stats.wait_seconds += waited
                        count("wait_seconds", waited)
                if not self._usable(chunk, data):  # damaged again meanwhile: not ours to fix
                    raise ChunkFileError(
                        f"The local copy {data!r} of remote chunk {chunk.url!r} was damaged "
                        "again right after it was downloaded; check the disk of "
                        f"`chunk_cache_dir` {self.directory!r}."
                    )
            os.utime(fd)  # the last use is the pin's modification time (see the docstring)
            table = pa.ipc.open_file(pa.memory_map(data, "r").read_buffer()).read_all()
        except BaseException:
            os.close(fd)
            self._drop_pin(chunk)
            raise
        with self._lock:
            existing = self._open.get(key)
            if existing is not None:  # another thread opened it meanwhile
                os.close(fd)
                existing.users += 1
                return existing
            pinned = Pinned(self, chunk, fd, table)
            pinned.users = 1
            self._open[key] = pinned
            self._trim(self.keep_open)
        return pinned

    def _usable(self, chunk: RemoteChunk, data: str) -> bool:
        """Whether the copy ``data`` exists and holds ``chunk``'s bytes (a bad one is removed).

        Trusted by ``stat`` identity once checked (see the module docstring); otherwise
        hashed once and compared with the manifest's digest.
        """
        try:
            ident = trust.identity(data)
            why = trust.check(data, chunk.size, chunk.digest)
        except FileNotFoundError:  # absent, or evicted meanwhile
            return False
        if why is None:
            return True
        dl = self._path(key_of(chunk) + ".dl")
        with _flock(dl, fcntl.LOCK_EX), contextlib.suppress(OSError):
            if trust.identity(data) == ident:  # not replaced by a new download meanwhile
                os.unlink(data)
        with self._lock:
            self.stats.refetched += 1
            count("refetched", 1)
        warn(
            f"The local copy {data!r} of remote chunk {chunk.url!r} is {why}; it was removed "
            "and is downloaded again.",
            CacheWarning,
        )
        return False

    def _drop_pin(self, chunk: RemoteChunk) -> None:
        """Remove the ``.pin`` of a chunk that has no copy (a failed or refused download)."""
        pin = self._path(key_of(chunk) + ".pin")
        with _flock(pin, fcntl.LOCK_EX | fcntl.LOCK_NB) as free:
            if free and not os.path.exists(self._path(key_of(chunk) + ".arrow")):
                _unlink(pin)  # held exclusively (see _lock_fd)

    def hold(self, chunk: RemoteChunk, storage_options: Mapping[str, Any] | None) -> Hold | None:
        """A speculative (read-ahead) pin of ``chunk``: None when there is no room now.

        Demand reads take precedence: a read waiting for space releases the holds of its
        process at once, and those of other processes at their next read (see
        :meth:`_squeeze`).
        """
        pinned = self.acquire(chunk, storage_options, wait=False)
        if pinned is None:
            return None
        held = Hold(pinned)
        with self._lock:
            self._holds.add(held)
        return held

    def unhold(self, held: Hold) -> None:
        """Release a :meth:`hold` (nothing if a demand read already took it back)."""
        with self._lock:
            if held in self._holds:
                self._holds.discard(held)
                self.release(held.pinned)

    def _yield_idle(self) -> int:
        """Release every hold and close every idle copy; return how many copies closed."""
        with self._lock:
            for held in self._holds:
                held.pinned.users -= 1
            self._holds.clear()
            return self._trim(0)

    def _squeeze(self) -> None:
        """Tell the other processes of the directory that a demand read waits for space."""
        path = self._path("budget.squeeze")
        with contextlib.suppress(OSError):
            with open(path, "a"):
                pass
            os.utime(path)

    def _squeezed(self) -> bool:
        """Whether a demand read (of any process) waited for space within the last second.

        The file is looked at most every ``_POLL`` seconds (a read of an open copy costs
        no system call otherwise).
        """
        now = time.monotonic()
        seen_at, seen = self._squeeze_seen
        if now - seen_at < _POLL:
            return seen
        try:
            seen = os.stat(self._path("budget.squeeze")).st_mtime > time.time() - _SQUEEZE
        except OSError:
            seen = False
        self._squeeze_seen = (now, seen)
        return seen

    def copied(self, chunk: RemoteChunk) -> bool:
        """Whether ``chunk`` has a local copy now (open in this process, or on disk)."""
        key = key_of(chunk)
        return key in self._open or os.path.exists(self._path(key + ".arrow"))

    def release(self, pinned: Pinned) -> None:
        """Done reading ``pinned`` for now; it stays open while among the recent ones."""
        with self._lock:
            pinned.users -= 1
            self._trim(self.keep_open)

    def close_idle(self, timeout: float = 1.0) -> None:
        """Close every idle copy (before a fork: neither process then keeps their pins)."""
        if self._lock.acquire(timeout=timeout):
            try:
                self._trim(0)
            finally:
                self._lock.release()

    def _trim(self, keep: int) -> int:
        """Close idle copies beyond the ``keep`` most recent ones; return how many.

        Idle copies beyond the most recent one also stay within an eighth of the limit
        (their pins hold space that the other processes of the node may need).
        """
        idle = [k for k, p in self._open.items() if p.users <= 0]
        excess = max(0, len(self._open) - keep) if keep else len(idle)
        idle_bytes = sum(self._open[k].chunk.size for k in idle)
        closed = 0
        for key in idle:
            last = closed == len(idle) - 1  # the most recent idle copy may stay open
            if closed >= excess and (idle_bytes <= self.limit // _IDLE_SHARE or last):
                break
            idle_bytes -= self._open[key].chunk.size
            self._open.pop(key).close()
            closed += 1
        return closed

    # ---- downloading ---------------------------------------------------------------
    def _download(
        self, chunk: RemoteChunk, storage_options: Mapping[str, Any] | None, wait: bool
    ) -> bool:
        key = key_of(chunk)
        final = self._path(key + ".arrow")
        lock = self._path(key + ".dl")
        with _flock(lock, fcntl.LOCK_EX):
            try:
                if os.path.exists(final):
                    return True  # another process or thread downloaded it meanwhile
                for name in os.listdir(self.directory):  # a killed download of this chunk
                    if name.startswith(f"{_PARTIAL}{key}-"):
                        _unlink(self._path(name))
                partial = self._path(
                    f"{_PARTIAL}{key}-{os.getpid()}-{secrets.token_hex(4)}.partial"
                )
                if not self._reserve(chunk, partial, wait):
                    return False
                try:
                    self._fetch(chunk, storage_options, partial)
                    # Under the budget lock: a count of the directory sees the partial or
                    # the copy, never neither (its listing raced with the rename).
                    with _flock(self._path("budget.lock"), fcntl.LOCK_EX):
                        os.replace(partial, final)
                    trust.vouch(final, durable=True)  # synced, then renamed (a new ctime)
                finally:
                    _unlink(partial)
            finally:
                _unlink(lock)  # held exclusively: waiters retry on a new file (_lock_fd)
        return True

    def _fetch(
        self, chunk: RemoteChunk, storage_options: Mapping[str, Any] | None, partial: str
    ) -> None:
        def counted(n: int) -> None:
            with self._lock:
                self.stats.bytes_downloaded += n
                count("bytes_downloaded", n)

        download(chunk, storage_options, partial, self.directory, counted)
        # Checked once, when made: a damaged object (bad checksum, invalid arrays) is refused
        # as a damaged local chunk is (see arrowmix._storage.integrity).
        why = integrity.problem(pa.memory_map(partial, "r").read_buffer(), structural=True)
        if why is not None:
            raise ChunkFileError(
                f"Remote chunk {chunk.url!r} is damaged and cannot be used: {why}."
            )
        with self._lock:
            self.stats.chunks_downloaded += 1
            count("chunks_downloaded", 1)

    def _reserve(self, chunk: RemoteChunk, partial: str, wait: bool) -> bool:
        """Make room for ``chunk`` and create its (sparse) partial file; False if no room."""
        if chunk.size > self.limit:
            raise CacheLimitError(_too_small(self.limit, chunk))
        deadline = time.monotonic() + WAIT_FOR_SPACE
        while True:
            with _flock(self._path("budget.lock"), fcntl.LOCK_EX):
                used, pinned = self._make_room(chunk.size)
                if used + chunk.size <= self.limit:
                    with open(partial, "wb") as f:
                        f.truncate(chunk.size)
                    return True
            with self._lock:  # unpin our own least recently used idle copy, and try again
                idle = sum(1 for p in self._open.values() if p.users <= 0)
                closed = self._trim(len(self._open) - 1) if idle else 0
            if closed:
                continue
            if not wait:
                return False
            if self._yield_idle():
                continue
            self._squeeze()
            if time.monotonic() > deadline:
                raise CacheLimitError(
                    f"The chunk cache {self.directory!r} (limit {self.limit} bytes) cannot "
                    f"make room for {chunk.url!r} ({chunk.size} bytes): {used} bytes are "
                    f"held by {pinned} chunk(s) that readers are using. Raise `cache_limit`, "
                    "read with fewer processes, or shorten the read-ahead."
                )
            time.sleep(_POLL)

    def _make_room(self, need: int) -> tuple[int, int]:
        """Evict unpinned copies, least recently used first; ``(bytes used, pinned)``."""
        copies: list[tuple[float, int, str]] = []
        pins: dict[str, float] = {}
        used = 0
        for name in os.listdir(self.directory):
            path = self._path(name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            if name.endswith(".pin"):
                pins[name[: -len(".pin")]] = st.st_mtime
            elif name.endswith(".arrow"):
                copies.append((st.st_mtime, st.st_size, name))
                used += st.st_size
            elif name.endswith(".partial") and not self._stale_partial(name):
                used += st.st_size
        copies = [(max(t, pins.get(n[: -len(".arrow")], t)), size, n) for t, size, n in copies]
        pinned = 0
        for _, size, name in sorted(copies):
            if used + need <= self.limit:
                break
            key = name[: -len(".arrow")]
            with _flock(self._path(key + ".pin"), fcntl.LOCK_EX | fcntl.LOCK_NB) as free:
                if not free:
                    pinned += 1
                    continue
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._path(name))
                    used -= size
                    with self._lock:
                        self.stats.evicted += 1
                _unlink(self._path(key + ".pin"))  # held exclusively (see _lock_fd)
        return used, pinned

    def _stale_partial(self, name: str) -> bool:
        """Remove ``name`` if its download is dead (its ``.dl`` lock is free); True if so."""
        key = name[len(_PARTIAL) :].rsplit("-", 2)[0]
        with _flock(self._path(key + ".dl"), fcntl.LOCK_EX | fcntl.LOCK_NB) as free:
            if free:
                _unlink(self._path(name))
                _unlink(self._path(key + ".dl"))
            return free


def _too_small(limit: int, chunk: RemoteChunk) -> str:
    return (
        f"`cache_limit` ({limit} bytes) is smaller than the chunk {chunk.url!r} "
        f"({chunk.size} bytes): every chunk must fit in the cache. Raise `cache_limit` or "
        "rewrite the corpus with smaller chunks (`write_chunks(..., bytes_per_chunk=...)`)."
    )


def default_chunk_cache_dir() -> str:
    """``$ARROWMIX_CACHE/remote-chunks`` (default ``~/.cache/arrowmix/remote-chunks``)."""
    return os.path.join(root_dir(), "remote-chunks")


_CACHES: dict[str, ChunkCache] = {}
_CACHES_LOCK = threading.Lock()


def chunk_cache(directory: str | None, limit: int) -> ChunkCache:
    """The process's :class:`ChunkCache` of ``directory`` (its limit set to ``limit``).

    ``None`` is this process's :func:`default_chunk_cache_dir`.
    """
    key = os.path.abspath(directory or default_chunk_cache_dir())
    with _CACHES_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = ChunkCache(key, limit)
        cache.limit = limit
        return cache


def _before_fork() -> None:
    """Close idle copies, so that neither the parent nor the child keeps their pins."""
    for cache in list(_CACHES.values()):
        cache.close_idle()


def _in_child() -> None:
    """A forked child drops the pins it inherited: they are its parent's to release."""
    for cache in list(_CACHES.values()):
        cache._lock = threading.RLock()
        for pinned in cache._open.values():
            with contextlib.suppress(OSError):
                os.close(pinned._fd)
        cache._open.clear()
        cache._holds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _before_fork(), after_in_child=lambda: _in_child())


def check_fits(limit: int, chunks: list[RemoteChunk]) -> None:
    """Raise CacheLimitError when the largest of ``chunks`` exceeds ``limit``."""
    if chunks:
        largest = max(chunks, key=lambda c: c.size)
        if largest.size > limit:
            raise CacheLimitError(_too_small(limit, largest))
