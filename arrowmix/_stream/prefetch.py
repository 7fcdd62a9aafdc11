"""Prefetch: compute the source's items in a background thread or forked process.

The worker pulls chunks of ``max(1, buffer_size // 4)`` items and records the source's
state after each chunk; up to four chunks wait in a queue. ``close()`` (or leaving the
``with`` block) stops the worker; workers are daemons, so nothing hangs at interpreter
exit. An exception in the worker is raised in the consumer as a ``RuntimeError`` that
names the prefetched stage, chained to the original. A worker process that dies is
reported the same way. ``processes=True`` needs ``fork`` (else a thread is used) and
picklable items.

Checkpointing: the state is the source's state before the chunk being consumed and
the number of items of it already consumed; restoring restarts the worker there and
skips them (replay cost: less than one chunk).
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import queue
import threading
from typing import Any, TypeVar

from arrowmix._stream.base import ElasticMode, State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = ["PrefetchIterator"]

T = TypeVar("T")
_POLL = 0.1
_DEPTH = 4


def _work(source: Stream[Any], q: Any, stop: Any, chunk: int) -> None:
    """Worker loop (thread or process): push (kind, payload, state) messages."""

    def put(msg: tuple[Any, ...]) -> bool:
        while not stop.is_set():
            try:
                q.put(msg, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            items = source._pull(chunk)
            state = source.get_state()
            if not items:
                put(("end", None, state))
                return
            if not put(("items", items, state)):
                return
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the consumer
        put(("error", _portable(exc), None))


def _portable(exc: BaseException) -> BaseException:
    import pickle

    try:
        pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - unpicklable exception: keep its text
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class PrefetchIterator(Stream[T]):
    """Items of ``source``, computed ahead in a background worker.

    State:
        ``source``: the source's state before the chunk being consumed. ``skip``:
        items of that chunk already consumed. Replay cost: less than one chunk.
    """

    SOURCE_KEY = "source"
    SKIP_KEY = "skip"
    STATE_KEYS = (SOURCE_KEY, SKIP_KEY)
    TRANSIENT = ("_worker", "_queue", "_stop", "_chunk")
    ELASTIC_ROLE = ElasticRole.BUFFERING

    def __init__(self, source: Stream[T], buffer_size: int, *, processes: bool = False):
        super().__init__()
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
            raise TypeError(f"`buffer_size` must be an int, got {buffer_size!r}.")
        if buffer_size < 1:
            raise ValueError(f"`buffer_size` must be a positive int, got {buffer_size!r}.")
        self.source = source
        self.buffer_size = buffer_size
        self.chunk_size = max(1, buffer_size // _DEPTH)
        self.processes = bool(processes) and "fork" in mp.get_all_start_methods()
        self._worker: Any = None
        self._sync = False  # set while elastic resume computes frontiers

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {"chunk_size": self.chunk_size}

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """Read in the consumer's thread while elastic resume computes frontiers."""
        self._sync = mode.synchronous

    @property
    def schema(self) -> Any:
        return self.source.schema

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._shutdown()
        skip = 0
        if state is not None:
            skip = state[self.SKIP_KEY]
            if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
                raise StateError(f"PrefetchIterator: bad `skip` {skip!r}.")
        self.source.reset(None if state is None else state[self.SOURCE_KEY])
        self._after: State = self.source.get_state()
        self._anchor: State = self._after
        self._skip = skip
        self._chunk: list[T] = []
        self._pos = 0
        self._ended = False

    def replay_open_window(self) -> None:
        """Re-read the consumed part of the open chunk (synchronously, yielding nothing)."""
        if self._worker is None and self._skip > 0 and not self._chunk and not self._ended:
            items = self.source._pull(self._skip)
            self._chunk, self._pos, self._skip = items, len(items), 0
            self._after = self.source.get_state()

    def get_state(self) -> State:
        if self._pos < len(self._chunk):
            return {
                self.SOURCE_KEY: copy.deepcopy(self._anchor),
                self.SKIP_KEY: self._pos,
            }
        return {self.SOURCE_KEY: copy.deepcopy(self._after), self.SKIP_KEY: self._skip}

    def _start(self) -> None:
        if self.processes:
            ctx = mp.get_context("fork")
            self._queue: Any = ctx.Queue(_DEPTH)
            self._stop: Any = ctx.Event()
            self._worker = ctx.Process(
                target=_work,
                args=(self.source, self._queue, self._stop, self.chunk_size),
                daemon=True,
            )
        else:
            self._queue = queue.Queue(_DEPTH)
            self._stop = threading.Event()
            self._worker = threading.Thread(
                target=_work,
                args=(self.source, self._queue, self._stop, self.chunk_size),
                name="arrowmix-prefetch",
                daemon=True,
            )
        self._worker.start()

    def _receive(self) -> tuple[Any, ...]:
        if self.__dict__.get("_sync"):  # elastic frontiers: no read-ahead in the background
            items = self.source._pull(self.chunk_size)
            return ("items" if items else "end", items, self.source.get_state())
        if self.__dict__.get("_worker") is None:
            self._start()
        while True:
            try:
                msg: tuple[Any, ...] = self._queue.get(timeout=_POLL)
                return msg
            except queue.Empty:
                if not self._worker.is_alive():
                    try:  # the last message may have arrived meanwhile
                        msg = self._queue.get(timeout=_POLL)
                        return msg
                    except queue.Empty:
                        return ("error", RuntimeError("the worker died"), None)

    def next(self) -> T:
        if self._pos < len(self._chunk):
            item = self._chunk[self._pos]
            self._pos += 1
            return item
        if self._ended:
            raise StopIteration
        kind, payload, state = self._receive()
        if kind == "error":
            self._ended = True
            self._shutdown()
            raise RuntimeError(
                f"prefetch worker of {self.source.explain()} failed: "
                f"{type(payload).__name__}: {payload}"
            ) from payload
        if kind == "end":
            self._ended = True
            self._after = state
            self._shutdown()
            raise StopIteration
        self._anchor, self._after = self._after, state
        self._chunk, self._pos, self._skip = payload, self._skip, 0
        return self.next()

    def _shutdown(self) -> None:
        worker = self.__dict__.get("_worker")
        if worker is None:
            return
        self._stop.set()
        if self.processes:
            worker.join(timeout=1.0)
            if worker.is_alive():
                worker.terminate()
                worker.join()
            self._queue.cancel_join_thread()
            self._queue.close()
        else:
            while worker.is_alive():
                try:  # unblock a worker waiting on a full queue
                    self._queue.get_nowait()
                except queue.Empty:
                    worker.join(timeout=_POLL)
        self._worker = None

    def close(self) -> None:
        if self.__dict__.get("_started"):
            self._shutdown()
        super().close()

    def __del__(self) -> None:
        if self.__dict__.get("_worker") is not None:
            self._stop.set()
