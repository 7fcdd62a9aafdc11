"""Spread cache segments over worker processes (``num_proc``).

Segments are the unit of work, so the files on disk never depend on ``num_proc``: each worker
computes whole segments and commits each one atomically. Workers are forked where the platform
allows it (they inherit the memory-mapped input and the function for free); elsewhere they are
spawned and receive the job serialised with dill. Workers exit when the process that started
them dies (even by ``kill -9``): on Linux the kernel sends them ``SIGKILL``
(``prctl(PR_SET_PDEATHSIG)``), and everywhere a watchdog thread exits once their parent pid
changes (they were re-parented). Worker processes set
``TOKENIZERS_PARALLELISM=false`` (and one thread for OpenMP/BLAS pools), since every core is
already busy with a worker and forked tokenizer pools can deadlock.

:class:`LocalExecutor` is the default implementation of the
:class:`~arrowmix._dataset.mapping.execute.Executor` protocol (``executor=None`` or
``"local"``); Ray is the other (``arrowmix.integrations.ray``).
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from arrowmix._cache.segments import Segment
from arrowmix._dataset.mapping.worker import prepare_worker, set_worker_rank
from arrowmix.exceptions import WorkerDiedError

__all__ = ["LocalExecutor", "run_segments"]

logger = logging.getLogger("arrowmix")

SegmentFn = Callable[[Any, Segment, Callable[[int], None]], None]

# Jobs of forked workers by token: set in the parent before forking, inherited by children
# (a dict, so maps started from several threads at once do not mix their jobs up).
_FORK_JOBS: dict[int, tuple[SegmentFn, Any]] = {}
_WORKER_JOB: tuple[SegmentFn, Any] | None = None
_WORKER_ROWS: Any = None  # a shared counter of the rows processed, read by the parent

#: How often the parent refreshes the progress bar from the workers' row counter (s).
_POLL_S = 0.2
#: HF ``datasets``'s words for a dead worker (kept verbatim: code matches on them).
WORKER_DIED = (
    "One of the subprocesses has abruptly died during map operation."
    "To debug the error, disable multiprocessing."
)


#: Seconds between two checks of the worker's parent pid by the watchdog thread.
WATCHDOG_INTERVAL = 0.5
_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)  # orphaned: nobody will collect our results


def exit_with_parent(parent: int) -> None:
    """Make this (worker) process exit when process ``parent`` dies."""
    _set_pdeathsig()
    if os.getppid() != parent:  # died before the request above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _init_worker(
    token: int, payload: bytes | None, ranks: Any, rows: Any, parent: int | None = None
) -> None:
    global _WORKER_JOB, _WORKER_ROWS
    if parent is not None:
        exit_with_parent(parent)
    prepare_worker()
    with ranks.get_lock():
        set_worker_rank(ranks.value)
        ranks.value += 1
    _WORKER_ROWS = rows
    if payload is None:
        _WORKER_JOB = _FORK_JOBS[token]
    else:
        import dill

        _WORKER_JOB = dill.loads(payload)


def _count(n: int) -> None:
    with _WORKER_ROWS.get_lock():
        _WORKER_ROWS.value += n


def _work(seg: Segment) -> int:
    assert _WORKER_JOB is not None, "worker started without a job"
    fn, job = _WORKER_JOB
    fn(job, seg, _count)
    return seg.num_input_rows


def run_segments(
    fn: SegmentFn,
    job: Any,
    segments: Sequence[Segment],
    num_proc: int | None,
    *,
    on_rows: Callable[[int], None],
    on_segment: Callable[[int], None],
) -> None:
    """Run ``fn(job, segment, on_rows)`` for every segment, in ``num_proc`` processes.

    ``on_rows(n)`` reports rows processed (in-process runs); ``on_segment(rows)`` reports each
    finished segment with the rows not reported yet.
    """
    procs = min(num_proc or 1, len(segments))
    if not segments:
        return
    if num_proc is None or num_proc <= 1:
        for seg in segments:
            fn(job, seg, on_rows)
            on_segment(0)
        return
    # num_proc > 1 runs in worker processes even for one segment: a function that crashes
    # its process (native code, os._exit, a kill) must never take the caller down.
    _run_pool(fn, job, segments, procs, on_rows, on_segment)


class LocalExecutor:
    """The process pool on this machine (``num_proc`` processes; in-process for 1 or None).

    Args:
        on_rows: Called with the number of rows processed, as workers progress.
    """

    def __init__(self, on_rows: Callable[[int], None] = lambda n: None) -> None:
        self.on_rows = on_rows

    def run_segments(
        self,
        fn: SegmentFn,
        job: Any,
        segments: Sequence[Segment],
        num_proc: int | None,
        *,
        on_segment: Callable[[int], None],
    ) -> None:
        """Run ``fn(job, segment, on_rows)`` for every segment (see :func:`run_segments`)."""
        run_segments(fn, job, segments, num_proc, on_rows=self.on_rows, on_segment=on_segment)


def _died(job: Any, exc: BaseException) -> WorkerDiedError:
    err = WorkerDiedError(WORKER_DIED)
    name = getattr(getattr(job, "call", None), "name", None) or type(job).__name__
    note = (
        f"arrowmix: a worker process running {name} died without raising ({exc}); it was "
        "killed (out of memory?) or crashed in native code. Run with num_proc=1 to debug."
    )
    if hasattr(err, "add_note"):
        err.add_note(note)
    else:  # Python 3.10
        err.__notes__ = [note]  # type: ignore[attr-defined]  # 3.10 has no add_note
    return err


def _run_pool(
    fn: SegmentFn,
    job: Any,
    segments: Sequence[Segment],
    procs: int,
    on_rows: Callable[[int], None],
    on_segment: Callable[[int], None],
) -> None:
    token = id(job)
    if "fork" in mp.get_all_start_methods():
        ctx: Any = mp.get_context("fork")
        payload: bytes | None = None
        _FORK_JOBS[token] = (fn, job)
    else:  # spawn-only platforms (Windows, macOS defaults)
        import dill

        ctx = mp.get_context("spawn")
        payload = dill.dumps((fn, job), recurse=True)
    try:
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork() in a threaded process; our children only run
            # the job (no locks taken by other threads are needed) and exit.
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            ranks, rows = ctx.Value("i", 0), ctx.Value("q", 0)
            pool = ProcessPoolExecutor(
                procs,
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(token, payload, ranks, rows, os.getpid()),
            )
            futures: list[Future[int]] = [pool.submit(_work, seg) for seg in segments]
        seen = 0
        try:
            pending: set[Future[int]] = set(futures)
            while pending:
                done, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_EXCEPTION)
                now = rows.value
                on_rows(now - seen)  # the bar advances while workers run
                seen = now
                for fut in done:
                    try:
                        fut.result()  # raises the worker's exception
                    except BrokenProcessPool as exc:
                        raise _died(job, exc) from exc
                    on_segment(0)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    finally:
        _FORK_JOBS.pop(token, None)
