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

An *executor* (the ``executor=`` argument of ``map``/``filter``) replaces the local processes:
any object with a ``run_segments(fn, job, segments, num_proc, *, on_segment)`` method that runs
``fn(job, segment, on_rows)`` for every segment somewhere else and returns when all are
committed (re-raising the first failure). Names resolve lazily: ``"ray"`` is
``arrowmix.integrations.ray.RayExecutor()``; ``None`` and ``"local"`` mean local processes.
"""

from __future__ import annotations

import ctypes
import importlib
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
from arrowmix.exceptions import WorkerDiedError

__all__ = ["EXECUTORS", "WORKER_ENV", "resolve_executor", "run_segments", "worker_rank"]

logger = logging.getLogger("arrowmix")

#: Environment set in worker processes (unless already set, except the tokenizer switch).
WORKER_ENV = {
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
}

SegmentFn = Callable[[Any, Segment, Callable[[int], None]], None]

#: Executors known by name: ``name -> (module, class)``, imported on first use.
EXECUTORS = {"ray": ("arrowmix.integrations.ray", "RayExecutor")}


def resolve_executor(executor: Any) -> Any:
    """The executor object for ``executor`` (a name or an object), or None for local processes.

    Raises:
        ValueError: an unknown name, or an object without a ``run_segments`` method.
    """
    if executor is None or executor == "local":
        return None
    if isinstance(executor, str):
        if executor not in EXECUTORS:
            raise ValueError(
                f"Unknown executor {executor!r}; use None or 'local' (processes on this "
                f"machine), one of {sorted(EXECUTORS)}, or an object with a run_segments method."
            )
        module, name = EXECUTORS[executor]
        return getattr(importlib.import_module(module), name)()
    if not callable(getattr(executor, "run_segments", None)):
        raise ValueError(
            f"`executor` must be None, 'local', one of {sorted(EXECUTORS)} or an object with a "
            f"run_segments method; got {type(executor).__name__}."
        )
    return executor


# Jobs of forked workers by token: set in the parent before forking, inherited by children
# (a dict, so maps started from several threads at once do not mix their jobs up).
_FORK_JOBS: dict[int, tuple[SegmentFn, Any]] = {}
_WORKER_JOB: tuple[SegmentFn, Any] | None = None
_WORKER_RANK: int | None = None
_WORKER_ROWS: Any = None  # a shared counter of the rows processed, read by the parent

#: How often the parent refreshes the progress bar from the workers' row counter (s).
_POLL_S = 0.2
#: HF ``datasets``'s words for a dead worker (kept verbatim: code matches on them).
WORKER_DIED = (
    "One of the subprocesses has abruptly died during map operation."
    "To debug the error, disable multiprocessing."
)


def worker_rank() -> int | None:
    """This process's index in the map's process pool (None outside a pool), for ``with_rank``."""
    return _WORKER_RANK


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
    global _WORKER_JOB, _WORKER_RANK, _WORKER_ROWS
    if parent is not None:
        exit_with_parent(parent)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    for key, value in WORKER_ENV.items():
        os.environ.setdefault(key, value)
    os.environ["ARROWMIX_PROGRESS"] = "0"
    with ranks.get_lock():
        _WORKER_RANK = ranks.value
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
    executor: Any = None,
) -> None:
    """Run ``fn(job, segment, on_rows)`` for every segment, in ``num_proc`` processes.

    ``on_rows(n)`` reports rows processed (in-process runs); ``on_segment(rows)`` reports each
    finished segment with the rows not reported yet. ``executor`` (from
    :func:`resolve_executor`) runs the segments instead of local processes.
    """
    if executor is not None:
        if segments:
            executor.run_segments(fn, job, segments, num_proc, on_segment=on_segment)
        return
    procs = min(num_proc or 1, len(segments))
    if num_proc is not None and num_proc > 1 and procs < num_proc:
        logger.info(
            "num_proc=%d capped to %d: only %d segment(s) to compute.",
            num_proc,
            procs,
            len(segments),
        )
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
