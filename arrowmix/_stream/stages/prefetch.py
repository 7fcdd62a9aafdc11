"""Prefetch: compute the source's items in a background thread or forked process.

The worker pulls chunks of ``max(1, buffer_size // 4)`` items and records the source's
state after each chunk; up to four chunks wait in a queue. ``close()`` (or leaving the
``with`` block) stops the worker without waiting for a pull in progress; workers are
daemons, so nothing hangs at interpreter exit.

An exception in the source is raised in the consumer, at the item where it happened
(the good items before it are yielded first), as a ``RuntimeError`` that names the
prefetched stage, chained to the original and carrying the worker's traceback (also
from a process); the next call goes on after the failing item, as without prefetch. A
worker process that dies is reported the same way and ends the stream.
``processes=True`` needs ``fork`` and picklable items; without ``fork``, or inside a
daemonic process (a DataLoader worker, which cannot have children), a thread is used.

Checkpointing: the state is the source's state before the chunk being consumed and
the number of items of it already consumed; restoring re-reads those items (less than
one chunk) and restarts the worker after them. Neither the buffer size nor the worker
kind enters the pipeline fingerprint: a checkpoint loads into a pipeline that
prefetches differently.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import queue
import threading
import traceback
from typing import Any, TypeVar

from arrowmix._stream.base import ElasticMode, State, Stream
from arrowmix._stream.counters import collect, rewindow
from arrowmix._stream.topology import ElasticRole
from arrowmix._validate import check_int
from arrowmix.exceptions import StateError

__all__ = ["PrefetchIterator"]

T = TypeVar("T")
_POLL = 0.1
_CLOSE_WAIT = 0.3  # close() waits this long for a thread, not for a blocked pull
_DEPTH = 4


def _work(source: Stream[Any], q: Any, stop: Any, chunk: int, linger: bool = False) -> None:
    """Worker loop (thread or process): push (kind, payload, state) messages.

    A failure inside a chunk is located by reading that chunk again item by item: the
    good items before it are sent, then the error with the state after the failing
    item, and the loop goes on (the consumer sees what an unprefetched stream gives).
    """

    def put(msg: tuple[Any, ...]) -> bool:
        if linger:  # a process: its stages' counters travel with every message
            with contextlib.suppress(Exception):  # counters never stop the items
                msg = (*msg, collect(source))
        while not stop.is_set():
            try:
                q.put(msg, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    try:
        while not stop.is_set():
            anchor = source.get_state()
            try:
                items: list[Any] | None = source.pull(chunk)
            except Exception:  # noqa: BLE001 - located below, item by item
                items = None
            if items is None:  # outside the handler: the error is not chained to itself
                source.reset(anchor)
                if not _one_by_one(source, put, chunk):
                    return
                continue
            state = source.get_state()
            if not items:
                if put(("end", None, state)) and linger:
                    _linger(stop)
                return
            if not put(("items", items, state)):
                return
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the consumer
        if put(("error", _portable(exc), None)) and linger:
            _linger(stop)


def _linger(stop: Any) -> None:
    """Wait until the consumer stops the worker.

    A worker process (``linger``) must outlive the messages it sent: torch tensors travel as
    shared-memory handles that the consumer opens from the sender while unpickling,
    so a sender that exits at once loses the last batches of a finite stream.
    """
    while not stop.wait(_POLL):
        pass


def _one_by_one(source: Stream[Any], put: Any, chunk: int) -> bool:
    """Read one chunk item by item; send the good items, then the first error."""
    good: list[Any] = []
    while len(good) < chunk:
        before = source.get_state()
        try:
            good.append(source.next())
        except StopIteration:
            break
        except Exception as exc:  # noqa: BLE001 - the user's error, sent as is
            if good and not put(("items", good, before)):
                return False
            return bool(put(("error", _portable(exc), source.get_state())))
    return not good or bool(put(("items", good, source.get_state())))


def _portable(exc: BaseException) -> BaseException:
    """``exc`` with its formatted traceback attached (it does not survive pickling)."""
    import pickle

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        exc.arrowmix_traceback = text  # type: ignore[attr-defined]
        pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - unpicklable exception: keep its text
        out = RuntimeError(f"{type(exc).__name__}: {exc}")
        out.arrowmix_traceback = text  # type: ignore[attr-defined]
        return out
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
    TRANSIENT = ("_worker", "_queue", "_stop", "_chunk", "_zombie", "_below", "_seen")
    ELASTIC_ROLE = ElasticRole.BUFFERING

    def __init__(self, source: Stream[T], buffer_size: int, *, processes: bool = False):
        super().__init__()
        buffer_size = check_int("buffer_size", buffer_size, minimum=1)
        self.source = source
        self.buffer_size = buffer_size
        self.chunk_size = max(1, buffer_size // _DEPTH)
        self.processes = bool(processes) and "fork" in mp.get_all_start_methods()
        self._worker: Any = None
        self._sync = False  # set while elastic resume computes frontiers

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        # The buffer size and the worker kind do not change the items: a checkpoint
        # loads into a pipeline that prefetches differently.
        return {}

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """Read in the consumer's thread while elastic resume computes frontiers."""
        self._sync = mode.synchronous

    @property
    def schema(self) -> Any:
        return self.source.schema

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._shutdown()
        zombie = self.__dict__.pop("_zombie", None)
        if zombie is not None:  # a closed worker may still be inside a pull
            zombie.join()
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

    def stats_below(self) -> dict[str, Any] | None:
        """The stats of the stages below, as a worker process last sent them (else None).

        Sent with every chunk, so they include the chunks read ahead; ``window_*``
        values are recomputed here, between two calls.
        """
        below = self.__dict__.get("_below")
        if below is None:
            return None
        seen = self.__dict__.setdefault("_seen", {})
        return rewindow(below, seen)

    def replay_open_window(self) -> None:
        """Re-read the consumed part of the open chunk (synchronously, yielding nothing)."""
        if (
            self.__dict__.get("_worker") is None
            and self._skip > 0
            and not self._chunk
            and not self._ended
        ):
            items = self.source.pull(self._skip)
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
        zombie = self.__dict__.pop("_zombie", None)
        if zombie is not None:  # a closed worker may still be inside a pull
            zombie.join()
        # A daemonic process (a DataLoader worker) cannot have children: use a thread.
        if self.processes and not mp.current_process().daemon:
            ctx = mp.get_context("fork")
            self._queue: Any = ctx.Queue(_DEPTH)
            self._stop: Any = ctx.Event()
            self._worker = ctx.Process(
                target=_work,
                args=(self.source, self._queue, self._stop, self.chunk_size, True),
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
            items = self.source.pull(self.chunk_size)
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
                    except Exception as exc:  # noqa: BLE001 - reported as the stage's error
                        return ("error", exc, None)
            except Exception as exc:  # noqa: BLE001 - a message that cannot be read back
                return ("error", exc, None)

    def next(self) -> T:
        if self._pos < len(self._chunk):
            item = self._chunk[self._pos]
            self._pos += 1
            return item
        if self._ended:
            raise StopIteration
        if self._skip and self.__dict__.get("_worker") is None:
            # Restored inside a chunk: re-read its consumed part here, so that any
            # chunk size resumes any other.
            self.replay_open_window()
            return self.next()
        msg = self._receive()
        kind, payload, state = msg[:3]
        if len(msg) > 3:
            self._below = msg[3]
        if kind == "error":
            if state is None:  # the worker cannot go on
                self._ended = True
                self._shutdown()
            else:  # the stream goes on after the failing item, as without prefetch
                self._anchor, self._after = self._after, state
                self._chunk, self._pos, self._skip = [], 0, 0
            where = getattr(payload, "arrowmix_traceback", "")
            raise RuntimeError(
                f"prefetch worker of {self.source.explain()} failed: "
                f"{type(payload).__name__}: {payload}"
                + (f"\n\nWorker traceback:\n{where}" if where else "")
            ) from payload
        if kind == "end":
            self._ended = True
            self._after = state
            self._shutdown()
            raise StopIteration
        self._anchor, self._after = self._after, state
        self._chunk, self._pos, self._skip = payload, self._skip, 0
        return self.next()

    def _shutdown(self, wait: bool = True) -> None:
        """Stop the worker; ``wait=False`` does not wait for a thread inside a pull."""
        worker = self.__dict__.get("_worker")
        if worker is None:
            return
        self._stop.set()
        if isinstance(worker, threading.Thread) and not wait:
            try:  # unblock a worker waiting on a full queue; it then sees the stop
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            worker.join(timeout=_CLOSE_WAIT)  # most workers stop at once
            if worker.is_alive():
                self._zombie = worker  # joined before a restart reads the source
            self._worker = None
            return
        if not isinstance(worker, threading.Thread):
            worker.join(timeout=1.0 if wait else 0.1)
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
            self._shutdown(wait=False)
        super().close()

    def __del__(self) -> None:
        if self.__dict__.get("_worker") is not None:
            self._stop.set()
