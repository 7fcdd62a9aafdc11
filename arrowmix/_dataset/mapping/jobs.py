"""Computing, writing and checking one segment of a map/filter result.

A :class:`Job` is what a worker needs: the input dataset, the call, the fingerprint, and the
*kind* of the transform, a small strategy object (:data:`MAP` or :data:`FILTER`) that knows
how to compute a segment, which stored files it may reuse, how many input rows it covers and
which Dataset its tables make. Nothing else in the engine switches on the kind.

:func:`compute_segment` is the function every executor runs once per missing segment: the
map's batches (``compute.MapSegment``) or the filter's kept positions go to one Arrow IPC
file, committed atomically. :func:`check` decides whether a stored file can be reused.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.segments import Segment, check_segment
from arrowmix._dataset.mapping.call import Call
from arrowmix._dataset.mapping.deferred import Pending, note_facts, pending
from arrowmix._dataset.mapping.result import Found, filter_result, map_result
from arrowmix._dataset.state import column_names, state_of
from arrowmix._fingerprint.record import RECORD_METADATA_KEY
from arrowmix._storage.ipc import read_meta, write_file
from arrowmix.exceptions import CacheCorruptedError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "FILTER",
    "KINDS",
    "MAP",
    "MAP_VERSION",
    "Found",
    "Job",
    "check",
    "check_pending",
    "compute_segment",
    "opener",
]

#: Bump when the stored layout or semantics of map/filter results change.
MAP_VERSION = 1


@dataclass(frozen=True)
class Job:
    """What a worker needs to compute and commit one segment."""

    kind: Kind
    ds: Dataset
    call: Call
    fingerprint: str
    zero_copy_ok: bool
    #: The fingerprint's explain record (JSON-serialisable), stored in every segment.
    record: Any = None
    #: ``with_rank`` with ``num_proc > 1``: a segment is one of HF's shards, its index the rank.
    rank_by_segment: bool = False
    #: The user named the file (``cache_file_name``): the result is read from it even when
    #: the function changed nothing, as HF returns the dataset backed by that file.
    named_file: bool = False

    def ranked(self, seg: Segment) -> Call:
        """The call for ``seg``: with its rank when ``with_rank`` (HF: the shard's index)."""
        if not self.call.with_rank:
            return self.call
        if self.rank_by_segment:
            return replace(self.call, rank=seg.index)
        from arrowmix._dataset.mapping.worker import worker_rank

        return replace(self.call, rank=worker_rank())

    @property
    def storage_options(self) -> Any:
        """The fsspec options for segments at URLs (the input dataset's)."""
        return state_of(self.ds).storage_options

    @property
    def transform(self) -> str:
        """``arrowmix.<kind>@<version>``, as recorded in the files."""
        return f"arrowmix.{self.kind.name}@{MAP_VERSION}"

    def meta(self, seg: Segment) -> dict[str, Any]:
        """The metadata written into ``seg``'s file."""
        return {
            "kind": self.kind.name,
            "fingerprint": self.fingerprint,
            "parent": state_of(self.ds).fingerprint,
            "transform": self.transform,
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
        """The metadata a reusable file of ``seg`` must carry."""
        return {
            "kind": self.kind.name,
            "fingerprint": self.fingerprint,
            "segment": seg.index,
            "num_segments": seg.count,
            "input_rows": [seg.start, seg.stop],
        }


class Kind:
    """What differs between a map and a filter (the strategy of a :class:`Job`)."""

    name = ""

    def input_rows(self, rows: int, call: Call) -> int:
        """Input rows the segments cover (a map may drop a last short batch)."""
        return rows

    def compute(self, job: Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
        """Compute ``seg`` and commit its file."""
        raise NotImplementedError

    def check(self, job: Job, seg: Segment, found: pa.Table, meta: dict[str, Any]) -> str | None:
        """Why the valid file ``found`` of ``seg`` cannot be reused, or None."""
        raise NotImplementedError

    def check_facts(self, job: Job, seg: Segment, rows: int, meta: Mapping[str, Any]) -> str | None:
        """Why a file of ``seg`` with ``rows`` rows and ``meta`` cannot be reused, or None.

        What :meth:`check` decides from the job rather than from the file's content (which
        the checks of the file, once passed, vouch for while its identity is unchanged).
        """
        return None

    def file_schema(self, job: Job, columns: list[str] | None, schema: pa.Schema) -> pa.Schema:
        """The schema (with its metadata) of a file storing ``schema``'s columns."""
        return job.schema(schema)

    def result(
        self, job: Job, fp: str, tables: list[Found], segments: list[Segment], held: Any = ()
    ) -> Any:
        """The Dataset the segments' ``tables`` make, with fingerprint ``fp``.

        ``held``: registrations of the segments already taken (reused by the result).
        """
        raise NotImplementedError

    def __reduce__(self) -> str:
        return self.name.upper()  # the module constant: pickles by reference


class _Map(Kind):
    name = "map"

    def input_rows(self, rows: int, call: Call) -> int:
        if call.batched and call.drop_last_batch and call.batch_size:
            rows -= rows % call.batch_size  # segments start at multiples of batch_size
        return rows

    def compute(self, job: Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
        # Imported here: a cache hit never computes, so it does not load the map engine.
        from arrowmix._dataset.mapping.compute import MapSegment

        meta = job.meta(seg)
        call = job.ranked(seg)
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
            itertools.chain([first], it),
            self.file_schema(job, run.columns, first.schema),
            meta=meta,
            storage_options=job.storage_options,
            sync=False,  # made durable once for the whole map (execute.materialise)
        )

    def file_schema(self, job: Job, columns: list[str] | None, schema: pa.Schema) -> pa.Schema:
        return job.schema(schema.with_metadata(_hf_metadata(job, columns, schema)))

    def check(self, job: Job, seg: Segment, found: pa.Table, meta: dict[str, Any]) -> str | None:
        return self.check_facts(job, seg, found.num_rows, meta)

    def check_facts(self, job: Job, seg: Segment, rows: int, meta: Mapping[str, Any]) -> str | None:
        zero_copy = meta.get("zero_copy") or []
        if zero_copy and not job.zero_copy_ok:
            return (
                "it references parent columns, which this parent cannot lend (an indexed "
                "view, or remote chunks read through a bounded cache)"
            )
        names = column_names(state_of(job.ds))
        if any(c not in names for c in zero_copy):
            return f"it references parent columns {zero_copy} missing from {names}"
        if (zero_copy or not job.call.batched) and rows != seg.num_input_rows:
            return f"{rows} rows for {seg.num_input_rows} input rows"
        return None

    def result(
        self, job: Job, fp: str, tables: list[Found], segments: list[Segment], held: Any = ()
    ) -> Any:
        return map_result(
            job.ds,
            job.call.name,
            fp,
            tables,
            segments,
            keep_unchanged=job.named_file,
            open_segment=opener(job),
            held=held,
        )


class _Filter(Kind):
    name = "filter"

    def compute(self, job: Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
        from arrowmix._dataset.mapping.arrays import numeric_array
        from arrowmix._dataset.mapping.compute import filter_positions

        meta = job.meta(seg)
        pos = filter_positions(job.ds, job.ranked(seg), seg.start, seg.stop, on_rows)
        kept = numeric_array(pos.astype(np.int64, copy=False))  # no pandas import
        assert kept is not None, "int64 positions are numeric"
        batch = pa.RecordBatch.from_arrays([kept], names=["indices"])
        meta.update(rows=len(pos), columns=["indices"], zero_copy=[])
        write_file(
            seg.path,
            [batch],
            self.file_schema(job, ["indices"], batch.schema),
            meta=meta,
            storage_options=job.storage_options,
            sync=False,  # made durable once for the whole map (execute.materialise)
        )

    def check(self, job: Job, seg: Segment, found: pa.Table, meta: dict[str, Any]) -> str | None:
        if found.num_rows and found.column_names == ["indices"]:
            # Kept positions are written in increasing order (and the checksum vouches for
            # the file), so the first and the last bound them: no need to read them all.
            col = found.column("indices")
            lo, hi = col[0].as_py(), col[-1].as_py()
            if lo < seg.start or hi >= seg.stop or lo > hi:
                return f"kept positions outside the segment's rows {seg.start}..{seg.stop - 1}"
        elif found.column_names != ["indices"]:
            return f"columns {found.column_names}, expected ['indices']"
        return None

    def result(
        self, job: Job, fp: str, tables: list[Found], segments: list[Segment], held: Any = ()
    ) -> Any:
        return filter_result(
            job.ds, job.transform, job.fingerprint, fp, tables, segments, opener(job), held
        )


MAP: Kind = _Map()
FILTER: Kind = _Filter()
#: The kinds by name.
KINDS = {k.name: k for k in (MAP, FILTER)}


def compute_segment(job: Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
    """Compute segment ``seg`` of ``job`` and commit its file (what executors run)."""
    job.kind.compute(job, seg, on_rows)


def _hf_metadata(job: Job, columns: list[str] | None, stored: pa.Schema) -> dict[bytes, bytes]:
    """The HF features of the output (``columns``; kept ones not stored have the parent's)."""
    from arrowmix._hf.features import output_metadata
    from arrowmix._storage.metadata import kept_metadata as hf_metadata

    if job.call.features is not None:
        return hf_metadata(job.call.features)
    parent = state_of(job.ds).table.schema
    fields = [
        stored.field(c) if c in stored.names else parent.field(c)
        for c in columns or []
        if c in stored.names or c in parent.names
    ]
    return output_metadata(parent, pa.schema(fields))


def check(
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
    problem = job.kind.check(job, seg, found, meta)
    if problem is not None:
        return problem
    note_facts(seg.path, found, meta)
    return found


def check_pending(job: Job, seg: Segment, holds: list[Any]) -> pa.Table | Pending | str:
    """:func:`check`, or a :class:`Pending` segment where its recorded facts suffice."""
    found = pending(seg, job.expect(seg), holds)
    if found is None:
        return check(job, seg, holds)
    problem = job.kind.check_facts(job, seg, found.rows, found.meta)
    return found if problem is None else problem


def opener(job: Job) -> Callable[[Segment], pa.Table]:
    """Opens and checks one segment of ``job`` (a pending one, when its rows are first read).

    Raises:
        CacheCorruptedError: the file changed since it was planned with, and fails a check.
    """

    def open_segment(seg: Segment) -> pa.Table:
        found = check(job, seg)
        if isinstance(found, str):
            raise CacheCorruptedError(
                f"Cache file {seg.path!r} is not usable ({found}): it changed after the cached "
                "result was opened. Run the map or filter again to recompute it."
            )
        return found

    return open_segment
