"""Computing and committing the segments of one map/filter result.

:func:`materialise` returns one table per segment. Without the lock, it first checks whether
every segment is already on disk and valid (a cache hit costs a footer read per segment and
no lock). Otherwise, under the fingerprint's lock, it removes temporary files of dead writers,
keeps the valid segments (warning about invalid ones, which are recomputed), computes the
missing ones (in ``num_proc`` processes, or on an ``executor`` such as Ray) and checks what it
wrote.

A remote cache directory (an fsspec URL) has no lock: concurrent writers each compute the
missing segments and every segment is committed by one atomic copy to its final key, so the
last copy wins and readers never see a partial object (``docs/remote-storage.md``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._cache.segments import (
    CacheWarning,
    Segment,
    check_segment,
    remove_stale_tmp,
    touch,
)
from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.mapping.call import Call
from arrowmix._dataset.progress import Progress, progress_enabled
from arrowmix._dataset.state import state_of
from arrowmix._fingerprint.record import RECORD_METADATA_KEY
from arrowmix._storage import fs
from arrowmix._storage.ipc import read_meta, write_file
from arrowmix.exceptions import CacheCorruptedError

__all__ = ["MAP_VERSION", "Job", "load_complete", "materialise"]

logger = logging.getLogger("arrowmix")

#: Bump when the stored layout or semantics of map/filter results change.
MAP_VERSION = 1


@dataclass(frozen=True)
class Job:
    """What a worker needs to compute and commit one segment."""

    kind: str
    ds: Dataset
    call: Call
    fingerprint: str
    zero_copy_ok: bool
    #: The fingerprint's explain record (JSON-serialisable), stored in every segment.
    record: Any = None

    @property
    def storage_options(self) -> Any:
        """The fsspec options for segments at URLs (the input dataset's)."""
        return state_of(self.ds).storage_options

    def meta(self, seg: Segment) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "fingerprint": self.fingerprint,
            "parent": self.ds.fingerprint,
            "transform": f"arrowmix.{self.kind}@{MAP_VERSION}",
            "function": self.call.name,
            "segment": seg.index,
            "num_segments": seg.count,
            "input_rows": [seg.start, seg.stop],
            "created": time.time(),
            "record": self.record,
        }

    def schema(self, schema: pa.Schema) -> pa.Schema:
        """The file schema: the record also goes under its own key, for other readers."""
        if self.record is None:
            return schema
        text = json.dumps(self.record, sort_keys=True, separators=(",", ":"))
        return schema.with_metadata({**(schema.metadata or {}), RECORD_METADATA_KEY: text})

    def expect(self, seg: Segment) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "fingerprint": self.fingerprint,
            "segment": seg.index,
            "num_segments": seg.count,
            "input_rows": [seg.start, seg.stop],
        }


def _compute_segment(job: Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
    # Imported here: a cache hit never computes, so it does not load the map engine.
    from arrowmix._dataset.mapping.arrays import numeric_array
    from arrowmix._dataset.mapping.compute import MapSegment, filter_positions

    meta = job.meta(seg)
    if job.kind == "filter":
        pos = filter_positions(job.ds, job.call, seg.start, seg.stop, on_rows)
        kept = numeric_array(pos.astype(np.int64, copy=False))  # no pandas import
        assert kept is not None, "int64 positions are numeric"
        batch = pa.RecordBatch.from_arrays([kept], names=["indices"])
        meta.update(rows=len(pos), columns=["indices"], zero_copy=[])
        write_file(
            seg.path,
            [batch],
            job.schema(batch.schema),
            meta=meta,
            storage_options=job.storage_options,
        )
        return
    call = job.call
    if call.with_rank:
        from arrowmix._dataset.mapping.local import worker_rank

        call = replace(call, rank=worker_rank())
    run = MapSegment(
        job.ds, call, seg.start, seg.stop, zero_copy_ok=job.zero_copy_ok, on_rows=on_rows
    )
    it = run.batches()
    first = next(it)  # a segment has at least one input row, so one batch
    meta.update(
        rows=seg.num_input_rows if run.rows_known else None,
        columns=run.columns,
        zero_copy=run.zero_copy,
    )
    meta["unchanged"] = run.unchanged  # fixed by the first block, like the columns
    write_file(
        seg.path,
        _chain(first, it),
        job.schema(first.schema.with_metadata(_hf_metadata(job, run.columns, first.schema))),
        meta=meta,
        storage_options=job.storage_options,
    )


def _hf_metadata(job: Job, columns: list[str] | None, stored: pa.Schema) -> dict[bytes, bytes]:
    """The HF features of the output (``columns``; kept ones not stored have the parent's)."""
    from arrowmix._dataset.hf_features import hf_metadata, output_metadata

    if job.call.features is not None:
        return hf_metadata(job.call.features)
    parent = state_of(job.ds).table.schema
    fields = [
        stored.field(c) if c in stored.names else parent.field(c)
        for c in columns or []
        if c in stored.names or c in parent.names
    ]
    return output_metadata(parent, pa.schema(fields))


def _chain(first: pa.RecordBatch, rest: Any) -> Any:
    yield first
    yield from rest


def _check(
    job: Job, seg: Segment, holds: list[Any] | None = None, *, reuse: bool = True
) -> pa.Table | str:
    """``check_segment`` plus what only map/filter know about their files.

    A map whose function returned None is never reused (``reuse``): the function runs again,
    for its side effects, as HF ``datasets`` runs it on every call (its result is the input).
    """
    found = check_segment(seg, job.expect(seg), job.storage_options, holds)
    if isinstance(found, str):
        return found
    meta = read_meta(found.schema)
    if reuse and meta.get("unchanged"):
        return "missing"
    if job.kind == "filter":
        if found.num_rows and found.column_names == ["indices"]:
            lo, hi = pc.min_max(found.column("indices")).values()
            if lo.as_py() < seg.start or hi.as_py() >= seg.stop:
                return f"kept positions outside the segment's rows {seg.start}..{seg.stop - 1}"
        elif found.column_names != ["indices"]:
            return f"columns {found.column_names}, expected ['indices']"
        return found
    zero_copy = meta.get("zero_copy") or []
    if zero_copy and not job.zero_copy_ok:
        return (
            "it references parent columns, which this parent cannot lend (an indexed view, "
            "or remote chunks read through a bounded cache)"
        )
    if any(c not in job.ds.column_names for c in zero_copy):
        return f"it references parent columns {zero_copy} missing from {job.ds.column_names}"
    if (zero_copy or not job.call.batched) and found.num_rows != seg.num_input_rows:
        return f"{found.num_rows} rows for {seg.num_input_rows} input rows"
    return found


def _log_hit(job: Job, segments: list[Segment], desc: str | None) -> None:
    """HF's log line for a result read from the cache, and a bar that says so."""
    more = f" (and {len(segments) - 1} more segments)" if len(segments) > 1 else ""
    logger.info("Loading cached processed dataset at %s%s", segments[0].path, more)
    if progress_enabled():
        rows = sum(s.num_input_rows for s in segments)
        label = f"{desc or job.kind.capitalize()} (cached)"
        with Progress(label, rows, len(segments), len(segments)) as bar:
            bar.rows(rows)


def load_complete(
    job: Job, segments: list[Segment], holds: list[Any] | None = None, desc: str | None = None
) -> list[pa.Table] | None:
    """Every segment's table when all are on disk and valid (no lock taken), else None.

    ``holds`` receives the registrations of the segments checked (see :func:`materialise`).
    """
    tables: list[pa.Table] = []
    for seg in segments:
        found = _check(job, seg, holds)
        if isinstance(found, str):
            return None
        tables.append(found)
    touch(s.path for s in segments)  # ignored for read-only files
    _log_hit(job, segments, desc)
    return tables


def materialise(
    job: Job,
    segments: list[Segment],
    *,
    load: bool,
    num_proc: int | None,
    desc: str | None,
    executor: Any = None,
    holds: list[Any] | None = None,
) -> list[pa.Table]:
    """The tables of ``segments``, reused or computed; ``holds`` receives their registrations.

    Keep ``holds`` alive until the result holds the files itself: a cleanup cannot remove a
    file between its check here and then.
    """
    if load:
        complete = load_complete(job, segments, holds, desc)
        if complete is not None:
            return complete
    # Imported here: a cache hit needs neither locks nor process pools (faster imports).
    from arrowmix._cache.lock import fingerprint_lock
    from arrowmix._dataset.mapping.local import run_segments

    directory = fs.split(segments[0].path)[0]
    fs.makedirs(directory)
    # No lock in a remote directory: concurrent writers fall back to "last copy wins".
    local = fs.is_local(directory)
    lock = fingerprint_lock(directory, job.fingerprint) if local else contextlib.nullcontext()
    with lock:
        names = [fs.split(s.path)[1] for s in segments]
        remove_stale_tmp(directory, names, job.storage_options)
        tables = {}
        if load:
            for seg in segments:
                found = _check(job, seg, holds)
                if not isinstance(found, str):
                    tables[seg.index] = found
                elif found != "missing":
                    warnings.warn(
                        f"Cache file {seg.path!r} is not usable ({found}); recomputing it.",
                        CacheWarning,
                        stacklevel=5,
                    )
        touch(s.path for s in segments if s.index in tables)  # reused: "last used" now
        missing = [s for s in segments if s.index not in tables]
        rows = sum(s.num_input_rows for s in missing)
        label = desc or job.kind.capitalize()
        with Progress(label, rows, len(segments), len(segments) - len(missing)) as bar:
            run_segments(
                _compute_segment,
                job,
                missing,
                num_proc,
                on_rows=bar.rows,
                on_segment=bar.segment_done,
                executor=executor,
            )
        for seg in missing:
            found = _check(job, seg, holds, reuse=False)
            if isinstance(found, str):
                raise CacheCorruptedError(
                    f"Cache file {seg.path!r} was just written but is not valid: {found}."
                )
            tables[seg.index] = found
    return [tables[s.index] for s in segments]
