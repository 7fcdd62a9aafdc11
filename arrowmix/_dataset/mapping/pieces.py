"""``num_proc`` processes on fewer cache segments: a segment computed in pieces.

The segments of a result depend on its input rows only, so that its files never depend on
``num_proc`` (a segment holds at least ``MIN_SEGMENT_ROWS`` rows). When ``num_proc`` asks for
more processes than there are segments to compute, each of those segments is cut into
pieces, row ranges that processes compute as they compute segments, into temporary files
beside it (``tmp-<pid>-<token>-<segment name>.partial``, which a later run removes if this
process dies); the parent then joins a segment's pieces, in order, into the segment's file.
The file holds what one process would have written: the same rows, columns and metadata.

Pieces of a batched function's segment start at multiples of ``batch_size``, so that the
function sees HF's batches whatever ``num_proc`` is; a segment has at most one piece per
batch (and per row). HF's ``num_proc`` shards cut batches instead: here the cut would change
what a batch-dependent function (padding to the longest row) returns, and so the files.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from arrowmix._cache.segments import Segment, unify_tables
from arrowmix._dataset.mapping.jobs import Job
from arrowmix._dataset.state import column_names, state_of
from arrowmix._storage import fs
from arrowmix._storage.atomic import tmp_name
from arrowmix._storage.ipc import open_table, read_meta, write_file
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["Pieces", "pieces"]

logger = logging.getLogger("arrowmix")

_BATCH_ROWS = 65536


@dataclass(frozen=True)
class Pieces:
    """The work to run (``work``: segments, or pieces of them) and how to join it back."""

    work: list[Segment]
    #: Each segment computed in pieces, with its pieces in order.
    cut: list[tuple[Segment, list[Segment]]]

    def joined(self, job: Job) -> None:
        """Write each cut segment's file from its pieces' files, then remove them."""
        for seg, parts in self.cut:
            _join(job, seg, parts)

    def discard(self, job: Job) -> None:
        """Remove the pieces' files (after a failure, or once joined)."""
        for _, parts in self.cut:
            for part in parts:
                fs.remove(part.path, job.storage_options)

    def counted(self, on_segment: Callable[[int], None]) -> Callable[[int], None]:
        """``on_segment`` called once per segment while the ``work`` items finish."""
        total, segments = len(self.work), len(self.work) - sum(len(p) - 1 for _, p in self.cut)
        done, rows_pending = [0], [0]

        def finished(rows: int) -> None:
            before = done[0] * segments // total
            done[0] += 1
            rows_pending[0] += rows  # reported with the next segment counted
            for _ in range(done[0] * segments // total - before):
                on_segment(rows_pending[0])
                rows_pending[0] = 0

        return finished


def pieces(job: Job, missing: Sequence[Segment], num_proc: int | None, align: int) -> Pieces:
    """The ``missing`` segments, cut so that ``num_proc`` processes have work.

    ``align``: pieces start at multiples of it from their segment's start (a batched
    function's ``batch_size``). A ``with_rank`` job's segments are HF's shards: never cut.
    """
    rows = sum(s.num_input_rows for s in missing)
    procs = min(num_proc or 1, rows)
    if procs <= len(missing) or job.rank_by_segment:
        return Pieces(list(missing), [])
    work: list[Segment] = []
    cut: list[tuple[Segment, list[Segment]]] = []
    for seg in missing:
        units = math.ceil(seg.num_input_rows / align)  # batches (rows when align is 1)
        m = min(units, max(1, round(procs * seg.num_input_rows / rows)))
        if m <= 1:
            work.append(seg)
            continue
        bounds = [seg.start + min(seg.num_input_rows, (units * i // m) * align) for i in range(m)]
        bounds.append(seg.stop)
        directory, name = fs.split(seg.path)
        parts = [
            replace(seg, start=a, stop=b, path=fs.join(directory, tmp_name(name)))
            for a, b in itertools.pairwise(bounds)
        ]
        work.extend(parts)
        cut.append((seg, parts))
    if len(work) < procs:
        logger.warning(
            "num_proc=%d runs %d process(es): the batched function's %d row(s) make %d "
            "batch(es) of batch_size=%d, and a batch is never cut (so that the function sees "
            "HF's batches and its results do not depend on num_proc). Pass a smaller "
            "batch_size to use more processes.",
            procs,
            len(work),
            rows,
            len(work),
            align,
        )
    return Pieces(work, cut)


def _conformed(
    job: Job, head: tuple[Segment, dict[str, Any], pa.Table], part: Segment, t: pa.Table
) -> pa.Table:
    """A later piece's table with the first piece's columns.

    As one process does in a segment's later blocks, a row function's new column that a
    piece's rows did not return is null there; any other difference is refused.
    """
    seg0, first, t0 = head
    meta = read_meta(t.schema)
    cols, first_cols = meta.get("columns") or [], first.get("columns") or []
    absent = [c for c in first_cols if c not in cols]
    fillable = not absent or (
        not job.call.batched
        and all(
            c not in first.get("zero_copy", []) and c not in column_names(state_of(job.ds))
            for c in absent
        )
    )
    same_kept = meta.get("zero_copy") == first.get("zero_copy")
    if [c for c in first_cols if c in cols] != cols or not fillable or not same_kept:
        raise SchemaMismatchError(
            f"Function {job.call.name} returned the columns {cols} for the rows "
            f"{part.start}..{part.stop - 1} but {first_cols} for the rows "
            f"{seg0.start}..{seg0.stop - 1}, which num_proc computed in separate processes: "
            "return the same columns (None where there is no value) from every row, or run "
            "without num_proc."
        )
    if not absent:
        return t
    order = t0.schema.names  # the columns the first piece stored
    arrays = [t.column(c) if c in t.schema.names else pa.nulls(t.num_rows) for c in order]
    return pa.Table.from_arrays(arrays, names=order).replace_schema_metadata(t.schema.metadata)


def _join(job: Job, seg: Segment, parts: list[Segment]) -> None:
    tables = [open_table(p.path, job.storage_options, check="checksum") for p in parts]
    metas = [read_meta(t.schema) for t in tables]
    first = metas[0]
    head = (parts[0], first, tables[0])
    tables = [tables[0]] + [
        _conformed(job, head, part, t) for part, t in zip(parts[1:], tables[1:], strict=True)
    ]
    unified = unify_tables(tables, [p.path for p in parts])
    schema = unified[0].schema
    if schema.equals(tables[0].schema.remove_metadata()):
        schema = tables[0].schema  # the first piece's metadata: the same columns and types
    else:
        schema = job.kind.file_schema(job, first.get("columns"), schema)
    counts: list[int | None] = [m.get("rows") for m in metas]
    meta = job.meta(seg)
    meta.update({k: first[k] for k in ("columns", "zero_copy", "unchanged") if k in first})
    meta["rows"] = sum(c for c in counts if c is not None) if None not in counts else None
    joined = pa.concat_tables(unified).combine_chunks()
    write_file(
        seg.path,
        joined.to_batches(max_chunksize=_BATCH_ROWS),
        schema,
        meta=meta,
        storage_options=job.storage_options,
        sync=False,  # made durable once for the whole map (execute.materialise)
    )
    del tables, unified, joined
