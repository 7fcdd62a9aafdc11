"""A table over remote chunks that are downloaded only when read, into a bounded cache.

:class:`RemoteTable` stands where a Dataset otherwise holds a memory-mapped ``pyarrow.Table``
when ``from_chunks`` gets a ``cache_limit``. It knows every chunk's schema, row count and
version from :func:`~arrowmix._remote.meta.probe` (a few range requests per chunk at
open) and reads rows with the reader protocol of the Dataset layer (``num_rows``,
``slice``, ``take``): the rows of each chunk touched are taken from its pinned,
memory-mapped local copy (:class:`~arrowmix._remote.cache.ChunkCache`), one chunk at
a time, and *copied* out, so a chunk may be evicted as soon as no read is using it.
Column selection and renaming are zero-cost projections. The table pickles as its
description (URLs, versions, cache directory and limit), so worker processes share the
directory's cache and budget.

:class:`ReadAhead` downloads, on background threads, the chunks a stream will read next, in
the order it will read them (see the ``read_ahead`` hook of
:class:`~arrowmix._stream.sources.ArrowSource`), up to ``chunks`` chunks or ``max_bytes``
bytes ahead of the reader; each downloaded chunk stays pinned until the reader gets to it,
unless a demand read of the node needs the space first (read-ahead pins yield to it).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from arrowmix._remote.cache import CacheStats, ChunkCache, Hold, Pinned, chunk_cache, counting
from arrowmix._remote.meta import RemoteChunk
from arrowmix._remote.stats import current
from arrowmix._storage.background import awaited
from arrowmix._storage.distinct import first_and_last
from arrowmix._storage.projection import NamedColumns
from arrowmix._storage.take import int64_array, take_unchecked
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError

__all__ = ["ReadAhead", "RemoteTable"]

DOWNLOAD_THREADS = 4

#: ``visit(chunk, table, local, rows)``: see :meth:`RemoteTable.take`.
ChunkVisitor = Callable[[int, pa.Table, np.ndarray, np.ndarray], None]


class RemoteTable(NamedColumns):
    """Rows of remote chunk files, read through a bounded local cache (see module docstring).

    Args:
        chunks: the chunk files, in order.
        schema: their common schema (without metadata).
        directory: the local cache directory (None: each process's default one).
        limit: its byte budget.
        storage_options: fsspec options for the chunk URLs.
        names: ``(stored column, exposed name)`` pairs; default every column as stored.
    """

    def __init__(
        self,
        chunks: Sequence[RemoteChunk],
        schema: pa.Schema,
        directory: str | None,
        limit: int,
        storage_options: Mapping[str, Any] | None = None,
        names: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.chunks = tuple(chunks)
        self.stored_schema = schema
        self.directory = directory
        self.limit = limit
        self.storage_options = dict(storage_options) if storage_options else None
        self.names = tuple(names) if names is not None else tuple((n, n) for n in schema.names)
        self.schema = pa.schema([schema.field(src).with_name(out) for src, out in self.names])
        self.offsets = np.cumsum([0, *(c.num_rows for c in self.chunks)], dtype=np.int64)
        self._checked: set[int] = set()  # chunks whose copy was seen to match the description

    def __reduce__(self) -> tuple[Any, ...]:
        args = (self.chunks, self.stored_schema, self.directory, self.limit,
                self.storage_options, self.names)  # fmt: skip
        return (type(self), args)

    @property
    def cache(self) -> ChunkCache:
        """The process's cache of :attr:`directory`."""
        return chunk_cache(self.directory, self.limit)

    @property
    def nbytes(self) -> int:
        """Bytes of the chunk files (what reading everything downloads)."""
        return sum(c.size for c in self.chunks)

    # ---- projections (what Dataset column operations call) -----------------------
    def _with(self, names: Sequence[tuple[str, str]]) -> RemoteTable:
        return type(self)(self.chunks, self.stored_schema, self.directory, self.limit,
                           self.storage_options, names)  # fmt: skip

    def replace_schema_metadata(self, metadata: Any = None) -> RemoteTable:
        """``self``: a remote table exposes no file metadata."""
        return self

    # ---- reading -----------------------------------------------------------------
    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)`` (copied out of the cache; ``reads`` changes nothing here)."""
        return self.take(np.arange(start, max(start, stop), dtype=np.int64))

    def take(self, positions: np.ndarray, visit: ChunkVisitor | None = None) -> pa.Table:
        """Rows at ``positions`` in that order, gathered chunk by chunk (copied out).

        ``visit(c, table, local, rows)``, if given, is called for each chunk ``c`` while it
        is pinned, with its memory-mapped table (stored column names), the rows read from
        it (``local``, in the chunk) and their places in ``positions`` (``rows``): to copy
        more out of the chunk in the same pass. Without columns (``select([])``) the
        chunks are only visited.

        Raises:
            IndexError: a position is out of range.
        """
        idx = np.asarray(positions, dtype=np.int64)
        if len(idx) == 0:
            return self.schema.empty_table()
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self.num_rows:
            bad = lo if lo < 0 else hi
            raise IndexError(f"Row {bad} is out of range for a table of {self.num_rows} rows.")
        owner = np.searchsorted(self.offsets, idx, side="right") - 1
        order = np.argsort(owner, kind="stable")
        sorted_owner = owner[order]
        cuts = [0, *(np.flatnonzero(np.diff(sorted_owner)) + 1).tolist(), len(idx)]
        # Chunks in order of their first row in ``positions`` (the reading order): the
        # cache's recency then says which chunks a reader has moved on from, so making room
        # closes those first, not one it has only begun (a block spans two windows).
        groups = sorted(itertools.pairwise(cuts), key=lambda g: int(order[g[0]]))
        src = tuple(s for s, _ in self.names)
        parts: list[pa.RecordBatch] = []
        placed: list[np.ndarray] = []  # gathered row -> position in ``positions``
        cache = self.cache
        owners = [int(sorted_owner[a]) for a, _ in groups]
        pins = self._pinned_in_order(owners)
        try:
            for (a, b), (c, pinned) in zip(groups, pins, strict=True):
                rows = order[a:b]
                try:
                    if c not in self._checked:
                        self._check(c, pinned.table)
                    local = idx[rows] - self.offsets[c]
                    if src:
                        parts += _copy_rows(pinned, src, local, rows, placed)
                    if visit is not None:
                        visit(c, pinned.table, local, rows)
                finally:
                    cache.release(pinned)
        finally:
            pins.close()  # an error: the downloads of this read end before it is raised
        if not src:
            return self.schema.empty_table()
        gathered = pa.Table.from_batches(parts).replace_schema_metadata(None)
        at = np.concatenate(placed)
        if not bool((np.diff(at) == 1).all()):
            inverse = np.empty(len(idx), dtype=np.int64)
            inverse[at] = np.arange(len(idx), dtype=np.int64)
            gathered = gathered.take(int64_array(inverse))
        out = gathered.rename_columns(self.column_names)
        return out if out.schema.equals(self.schema) else out.cast(self.schema)

    def read_chunks(self, chunks: Sequence[int]) -> Generator[tuple[int, pa.Table], None, None]:
        """Each of ``chunks`` as the memory-mapped table of its pinned local copy, in order.

        A chunk stays pinned until the next one is asked for (or the iterator is closed):
        nothing read out of its table, zero-copy views of its buffers included, may be
        used after that. The next chunks download in parallel meanwhile (see
        :meth:`_pinned_in_order`); each is checked against the corpus's description on
        first use. Columns have their stored names (:meth:`stored_name`).
        """
        cache = self.cache
        pins = self._pinned_in_order(list(chunks))
        try:
            for c, pinned in pins:
                try:
                    if c not in self._checked:
                        self._check(c, pinned.table)
                    yield c, pinned.table
                finally:
                    cache.release(pinned)
        finally:
            pins.close()  # an early stop releases the chunks acquired ahead

    def _pinned_in_order(self, owners: Sequence[int]) -> Generator[tuple[int, Pinned], None, None]:
        """Each chunk of ``owners`` pinned, in order; the caller releases each one.

        When some are missing, the next chunks are acquired in parallel (downloads) while the
        first is read, up to half the cache limit in flight, so a read spanning several
        missing chunks waits for the slowest download, not for the sum of them; when all are
        copied already, they are opened in turn on the caller's thread.
        """
        cache = self.cache
        if len(owners) == 1 or all(cache.copied(self.chunks[c]) for c in owners):
            # Nothing to download (or one chunk): no threads, one chunk pinned at a time.
            for c in owners:
                pinned = cache.acquire(self.chunks[c], self.storage_options)
                assert pinned is not None  # waiting acquires always return a copy
                yield c, pinned
            return
        pool = _pool()
        reader = current()  # the stream these reads count for, if any
        futures: list[Future[Pinned | None]] = []
        flying, budget = 0, self.limit // 2

        def submit() -> None:
            nonlocal flying
            while len(futures) < len(owners):
                size = self.chunks[owners[len(futures)]].size
                busy = len(futures) - done[0]
                if busy and flying + size > budget:
                    return
                flying += size
                futures.append(pool.submit(
                    _acquire_for, reader, cache, self.chunks[owners[len(futures)]],
                    self.storage_options,
                ))  # fmt: skip

        done = [0]
        try:
            submit()
            for k, c in enumerate(owners):
                pinned = futures[k].result()
                assert pinned is not None  # waiting acquires always return a copy
                done[0] = k + 1
                flying -= self.chunks[c].size
                submit()
                yield c, pinned
        finally:
            for fut in futures[done[0] :]:  # an error: release what was acquired meanwhile
                with contextlib.suppress(BaseException):
                    if (p := fut.result()) is not None:
                        cache.release(p)

    def _check(self, c: int, table: pa.Table) -> None:
        """Refuse a copy whose schema or rows differ from what opening described.

        Opening reads no chunk (the manifest records the schema and rows; an older one, only
        the first chunk of its directory), so each chunk's schema is checked here, on first use.

        Raises:
            SchemaMismatchError: the chunk's schema is not the corpus's.
            ChunkFileError: its row count is not the manifest's.
        """
        chunk = self.chunks[c]
        if not table.schema.remove_metadata().equals(self.stored_schema):
            raise SchemaMismatchError(
                f"Chunk file {chunk.url!r} has a different schema from the one the corpus was "
                f"opened with (its manifest's, or its first chunk's):\n"
                f"{table.schema.remove_metadata()}\nexpected\n{self.stored_schema}"
            )
        if table.num_rows != chunk.num_rows:
            raise ChunkFileError(
                f"Remote chunk {chunk.url!r} has {table.num_rows} rows where its corpus "
                f"manifest records {chunk.num_rows}."
            )
        self._checked.add(c)

    def chunks_touched(self, positions: np.ndarray) -> list[int]:
        """Indices of the chunks holding ``positions``, in order of first touch."""
        owner = np.searchsorted(self.offsets, np.asarray(positions), side="right") - 1
        _, first, _ = first_and_last(owner)
        return [int(owner[i]) for i in np.sort(first)]


class Upcoming(Protocol):
    """What :meth:`ReadAhead.read_ahead` is told (see ``arrowmix._stream.sources``)."""

    @property
    def cursor(self) -> tuple[int, int]: ...

    def positions(self, cursor: tuple[int, int], n: int) -> tuple[np.ndarray, tuple[int, int]]: ...


class ReadAhead:
    """Downloads, in reading order, the chunks a stream will read next (module docstring).

    A chunk stays held from its download until the reader has passed the last of its rows
    that the plan has seen, not only until the reader starts on it: a shuffled window reads
    its chunks interleaved, and a chunk released while the reader still comes back to it
    would be opened again for every batch, or evicted to make room for the chunks ahead and
    downloaded again. The chunks ahead get the room the chunks being read leave (at most
    half the limit); like every hold, both yield to a demand read that needs the room.

    Args:
        table: the remote table the stream reads.
        chunks: how many chunks to keep downloaded ahead of the reader.
        max_bytes: and at most this many bytes (None: no byte bound).
        threads: parallel downloads.
    """

    def __init__(
        self,
        table: RemoteTable,
        chunks: int = 4,
        max_bytes: int | None = None,
        threads: int = DOWNLOAD_THREADS,
    ) -> None:
        self.table = table
        self.chunks = chunks
        self.max_bytes = max_bytes
        self._pool: ThreadPoolExecutor | None = None
        self._threads = threads
        # Planned chunks ahead of the reader: chunk -> (cursor of its first row, download).
        self._ahead: dict[int, tuple[tuple[int, int], Future[Hold | None] | None]] = {}
        # Chunks the reader has started on: chunk -> download (held until passed).
        self._reading: dict[int, Future[Hold | None] | None] = {}
        # Planned chunks -> the cursor after the last of their rows the plan has seen.
        self._until: dict[int, tuple[int, int]] = {}
        self._plan: tuple[int, int] | None = None  # cursor up to which the order was read
        self._full = False  # the plan stopped at a chunk that did not fit (nothing freed since)
        self._last: tuple[int, int] | None = None
        self._step = max(1, table.num_rows // max(1, len(table.chunks)))
        self.own = CacheStats()  # what this reader's reads and read-ahead downloaded

    def stats(self) -> dict[str, Any]:
        """This reader's downloads and waiting, and the cache directory's counters.

        ``bytes_downloaded``, ``chunks_downloaded``, ``wait_seconds``: this reader's (its
        reads and its read-ahead; a chunk another reader of the node had downloaded costs
        nothing). ``evicted`` and ``cache``: every reader of the directory in this process.
        """
        cache = self.table.cache
        own = self.own.as_dict()
        del own["evicted"]
        return {
            "cache_dir": cache.directory,
            **own,
            "evicted": cache.stats.evicted,
            "cache": cache.stats.as_dict(),
        }

    def counting(self) -> Any:
        """A context in which this thread's reads are counted as this reader's."""
        return counting(self.own)

    def read_ahead(self, upcoming: Upcoming) -> None:
        """Called by the stream before each block: plan and start the next downloads."""
        now = upcoming.cursor
        if self._last is not None and now < self._last:
            self._drop_plan()  # a restore moved the reader back: plan again from there
        self._last = now
        if self._advance(now):
            self._full = False  # room ahead was freed: the plan may go on
        if self._plan is None or self._plan < now:
            # The reader went past the plan (a plan shorter than a block, or a restore
            # further on): plan from where it is; the chunks held stay held.
            self._plan, self._full = now, False
        # The chunks being read keep their room: the read-ahead never evicts one of them.
        reading = sum(self.table.chunks[c].size for c in self._reading)
        cap = min(self.max_bytes or 2**62, self.table.limit // 2, self.table.limit - reading)
        while not self._full:
            pos, after = upcoming.positions(self._plan, self._step)
            if len(pos) == 0:
                break
            owner = np.searchsorted(self.table.offsets, pos, side="right") - 1
            seen = len(pos)
            for c in self.table.chunks_touched(pos):
                if c in self._ahead or c in self._reading:
                    continue
                size = self.table.chunks[c].size
                at = int(np.argmax(owner == c))
                if len(self._ahead) >= self.chunks or self._bytes_ahead() + size > cap:
                    self._full = True  # the plan resumes at this chunk's first row later
                    after, seen = (self._plan[0], self._plan[1] + at), at
                    break
                self._ahead[c] = ((self._plan[0], self._plan[1] + at), None)
            self._note_last_rows(owner[:seen])
            self._plan = after
        for c, (first, fut) in list(self._ahead.items()):
            if fut is None or _no_room(fut):
                t = self.table  # a function, not a method of ``self`` (see __del__)
                fut = self._executor().submit(
                    _hold_for, self.own, t.cache, t.chunks[c], t.storage_options
                )
                self._ahead[c] = (first, fut)

    def _advance(self, now: tuple[int, int]) -> bool:
        """Move the chunks the reader started on to the read set; release those it passed.

        Returns whether the room for chunks ahead grew (the plan may go on).
        """
        started = [c for c, (first, _) in self._ahead.items() if first < now]
        for c in started:  # the reader has started on it
            self._reading[c] = self._ahead.pop(c)[1]
        passed = [c for c in self._reading if self._until[c] <= now]
        for c in passed:  # the reader is past every row of it planned so far
            self._release(c)
        return bool(started or passed)

    def _note_last_rows(self, owner: np.ndarray) -> None:
        """Record, for the held chunks among ``owner`` (read from the plan), their last row."""
        assert self._plan is not None
        chunks, _, last = first_and_last(owner)
        for c, i in zip(chunks.tolist(), last.tolist(), strict=True):
            if c in self._ahead or c in self._reading:
                self._until[c] = (self._plan[0], self._plan[1] + i + 1)

    def __reduce__(self) -> tuple[Any, ...]:
        # A pickled stream (worker processes) starts with no plan and no threads.
        return (type(self), (self.table, self.chunks, self.max_bytes, self._threads))

    def _bytes_ahead(self) -> int:
        return sum(self.table.chunks[c].size for c in self._ahead)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="arrowmix-fetch")
        return self._pool

    def _release(self, c: int) -> None:
        self._until.pop(c, None)
        fut = self._reading.pop(c) if c in self._reading else self._ahead.pop(c)[1]
        if fut is None:
            return
        # Not a method of ``self``: a download in flight never keeps the reader alive.
        fut.add_done_callback(functools.partial(_unhold, self.table.cache))

    def _drop_plan(self) -> None:
        for c in [*self._ahead, *self._reading]:
            self._release(c)
        self._plan = None
        self._full = False

    def close(self) -> None:
        """Stop downloading ahead and unpin what was downloaded.

        Downloads not started are cancelled and those under way are awaited, so that nothing
        writes to the cache directory once this returns and no read-ahead pin is left. The
        stream calls it when it ends, and on ``close()``; a later read plans again. When a
        dropped stream's finalizer calls it, the downloads under way are not awaited: they
        finish on their own threads and release their pins as they end.
        """
        self._drop_plan()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            # A dropped stream's finalizer does not wait (see arrowmix._storage.background),
            # nor does a download's own thread.
            wait = awaited() and threading.current_thread() not in getattr(pool, "_threads", ())
            pool.shutdown(wait=wait, cancel_futures=True)

    def __del__(self) -> None:
        # Dropped without close() (the stream was garbage-collected mid-way): cancel the
        # downloads not started and unpin the others as they finish. Not awaited: a
        # finalizer may run on any thread, one of these downloads' or one holding a lock.
        with contextlib.suppress(Exception):
            self._drop_plan()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)


def _unhold(cache: ChunkCache, fut: Future[Hold | None]) -> None:
    """Release a finished read-ahead's pin (a cancelled or failed one pinned nothing)."""
    if fut.cancelled() or fut.exception() is not None:
        return  # a failed download is retried by the reader itself
    if (held := fut.result()) is not None:
        cache.unhold(held)


def _hold_for(
    reader: CacheStats,
    cache: ChunkCache,
    chunk: RemoteChunk,
    storage_options: Mapping[str, Any] | None,
) -> Hold | None:
    """A read-ahead download of ``chunk``, counted as ``reader``'s (see ChunkCache.hold)."""
    with counting(reader):
        return cache.hold(chunk, storage_options)


def _acquire_for(
    reader: CacheStats | None,
    cache: ChunkCache,
    chunk: RemoteChunk,
    storage_options: Mapping[str, Any] | None,
) -> Pinned | None:
    with counting(reader) if reader is not None else contextlib.nullcontext():
        return cache.acquire(chunk, storage_options)


_POOL: dict[int, ThreadPoolExecutor] = {}


def _pool() -> ThreadPoolExecutor:
    """This process's threads for the parallel acquisitions of a read."""
    pool = _POOL.get(os.getpid())
    if pool is None:
        _POOL.clear()  # a forked child does not inherit the parent's threads
        pool = _POOL[os.getpid()] = ThreadPoolExecutor(
            DOWNLOAD_THREADS, thread_name_prefix="arrowmix-read"
        )
    return pool


def _no_room(fut: Future[Hold | None]) -> bool:
    """Whether a finished read-ahead found no room in the cache (to be tried again)."""
    return fut.done() and not fut.cancelled() and fut.exception() is None and fut.result() is None


def _copy_rows(
    pinned: Pinned, src: tuple[str, ...], local: np.ndarray, rows: np.ndarray,
    placed: list[np.ndarray],
) -> list[pa.RecordBatch]:  # fmt: skip
    """Copies of rows ``local`` of the columns ``src`` of a pinned chunk, batch by batch.

    One unchecked ``take`` per record batch touched (``local`` is in range by construction);
    appends to ``placed`` the entries of ``rows`` (positions in the request) in the order the
    returned rows come. Always copies: the chunk may be evicted once released.
    """
    batches, offsets = pinned.batches(src)
    if len(batches) == 1:
        placed.append(rows)
        return [take_unchecked(batches[0], int64_array(local))]
    owner = np.searchsorted(offsets, local, side="right") - 1
    by_batch = np.argsort(owner, kind="stable")
    owner, local, rows = owner[by_batch], local[by_batch], rows[by_batch]
    cuts = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), len(local)]
    out = []
    for a, b in itertools.pairwise(cuts):
        k = int(owner[a])
        out.append(take_unchecked(batches[k], int64_array(local[a:b] - offsets[k])))
        placed.append(rows[a:b])
    return out
