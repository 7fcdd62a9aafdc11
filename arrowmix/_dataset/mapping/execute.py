"""Execute a plan: reuse the valid segments on disk, compute the missing ones on an executor.

:func:`materialise` returns one table per segment. Without the lock, it first checks whether
every segment is already on disk and valid (a cache hit costs a footer read per segment and
no lock). Otherwise, under the fingerprint's lock, it removes temporary files of dead writers,
keeps the valid segments (warning about invalid ones, which are recomputed), has an
:class:`Executor` compute the missing ones and checks what was written.

An executor is anything with ``run_segments(fn, job, segments, num_proc, *, on_segment)``
that runs ``fn(job, segment, on_rows)`` for every segment and returns once all are committed
(re-raising the first failure). Two ship with arrowmix: the local process pool
(``mapping.local.LocalExecutor``, the default) and Ray
(``arrowmix.integrations.ray.RayExecutor``, ``executor="ray"``), both imported lazily.

A remote cache directory (an fsspec URL) has no lock: concurrent writers each compute the
missing segments and every segment is committed by one atomic copy to its final key, so the
last copy wins and readers never see a partial object (``docs/remote-storage.md``).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from arrowmix._cache.segments import CacheWarning, Segment, remove_stale_tmp, touch
from arrowmix._dataset.mapping.jobs import Found, Job, check, check_pending, compute_segment
from arrowmix._dataset.progress import Progress, progress_enabled
from arrowmix._storage import fs, trust
from arrowmix._storage.atomic import make_durable
from arrowmix._warn import warn
from arrowmix.exceptions import CacheCorruptedError

__all__ = ["EXECUTORS", "Executor", "load_complete", "materialise", "resolve_executor"]

logger = logging.getLogger("arrowmix")

#: Executors known by name: ``name -> (module, class)``, imported on first use.
EXECUTORS = {"ray": ("arrowmix.integrations.ray", "RayExecutor")}


@runtime_checkable
class Executor(Protocol):
    """Runs the missing segments of a map/filter somewhere (``executor=`` of ``map``)."""

    def run_segments(
        self,
        fn: Callable[[Any, Segment, Callable[[int], None]], None],
        job: Any,
        segments: Sequence[Segment],
        num_proc: int | None,
        *,
        on_segment: Callable[[int], None],
    ) -> None:
        """Run ``fn(job, segment, on_rows)`` for every segment; re-raise the first failure.

        ``on_segment(rows)`` reports each finished segment with the rows not reported yet.
        """


def resolve_executor(executor: Any) -> Executor | None:
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
        found: Executor = getattr(importlib.import_module(module), name)()
        return found
    if not callable(getattr(executor, "run_segments", None)):
        raise ValueError(
            f"`executor` must be None, 'local', one of {sorted(EXECUTORS)} or an object with a "
            f"run_segments method; got {type(executor).__name__}."
        )
    return executor  # type: ignore[no-any-return]  # checked structurally just above


def _log_hit(job: Job, segments: list[Segment], desc: str | None) -> None:
    """HF's log line for a result read from the cache, and a bar that says so."""
    more = f" (and {len(segments) - 1} more segments)" if len(segments) > 1 else ""
    logger.info("Loading cached processed dataset at %s%s", segments[0].path, more)
    if progress_enabled():
        rows = sum(s.num_input_rows for s in segments)
        label = f"{desc or job.kind.name.capitalize()} (cached)"
        with Progress(label, rows, len(segments), len(segments)) as bar:
            bar.rows(rows)


def load_complete(
    job: Job, segments: list[Segment], holds: list[Any] | None = None, desc: str | None = None
) -> list[Found] | None:
    """Every segment when all are on disk and valid (no lock taken), else None.

    The first segment is opened; the others are :class:`~.deferred.Pending` where the
    records of their directory vouch for them (opened when the result's rows are first
    read), else opened and checked. ``holds`` receives the registrations of the segments
    (see :func:`materialise`). Only the first file is marked used: the cleanup ages a result
    by the newest of its files.
    """
    tables: list[Found] = []
    held: list[Any] = [] if holds is None else holds
    with trust.batch():  # the records of files checked here: written once
        for seg in segments:
            found = check_pending(job, seg, held) if tables else check(job, seg, held)
            if isinstance(found, str):
                return None
            tables.append(found)
        touch([segments[0].path])  # ignored for read-only files
    _log_hit(job, segments, desc)
    return tables


def _reusable(job: Job, segments: list[Segment], holds: list[Any] | None) -> dict[int, pa.Table]:
    """The valid segments on disk by index; a warning for each invalid one (recomputed)."""
    tables = {}
    for seg in segments:
        found = check(job, seg, holds)
        if not isinstance(found, str):
            tables[seg.index] = found
        elif found != "missing":
            warn(f"Cache file {seg.path!r} is not usable ({found}); recomputing it.", CacheWarning)
    return tables


def materialise(
    job: Job,
    segments: list[Segment],
    *,
    load: bool,
    num_proc: int | None,
    desc: str | None,
    executor: Executor | None = None,
    holds: list[Any] | None = None,
    align: int = 1,
) -> list[Found]:
    """The tables of ``segments``, reused or computed; ``holds`` receives their registrations.

    Keep ``holds`` alive until the result holds the files itself: a cleanup cannot remove a
    file between its check here and then. With more processes (``num_proc``) than segments
    to compute, segments are computed in pieces (``pieces``) that start at multiples of
    ``align``.
    """
    if load:
        complete = load_complete(job, segments, holds, desc)
        if complete is not None:
            return complete
    # Imported here: a cache hit needs neither locks nor process pools (faster imports).
    from arrowmix._cache.lock import fingerprint_lock
    from arrowmix._dataset.mapping.local import LocalExecutor
    from arrowmix._dataset.mapping.pieces import pieces

    directory = fs.split(segments[0].path)[0]
    fs.makedirs(directory)
    # No lock in a remote directory: concurrent writers fall back to "last copy wins".
    local = fs.is_local(directory)
    lock = fingerprint_lock(directory, job.fingerprint) if local else contextlib.nullcontext()
    with lock, trust.batch():
        names = [fs.split(s.path)[1] for s in segments]
        remove_stale_tmp(directory, names, job.storage_options)
        tables = _reusable(job, segments, holds) if load else {}
        touch([s.path for s in segments if s.index in tables])  # reused: "last used" now
        missing = [s for s in segments if s.index not in tables]
        rows = sum(s.num_input_rows for s in missing)
        label = desc or job.kind.name.capitalize()
        cut = pieces(job, missing, num_proc, align)
        with Progress(label, rows, len(segments), len(segments) - len(missing)) as bar:
            done = cut.counted(bar.segment_done)
            try:
                if executor is None:
                    LocalExecutor(on_rows=bar.rows).run_segments(
                        compute_segment, job, cut.work, num_proc, on_segment=done
                    )
                elif missing:
                    executor.run_segments(compute_segment, job, cut.work, num_proc, on_segment=done)
                cut.joined(job)
            finally:
                cut.discard(job)
        # One durability barrier for every segment written, before any is recorded as checked.
        make_durable([s.path for s in missing])
        for seg in missing:
            found = check(job, seg, holds, reuse=False)
            if isinstance(found, str):
                raise CacheCorruptedError(
                    f"Cache file {seg.path!r} was just written but is not valid: {found}."
                )
            tables[seg.index] = found
    return [tables[s.index] for s in segments]
