"""Cached ``Dataset.map`` and ``Dataset.filter``.

The result's fingerprint rolls the parent's: ``roll(parent, "map"|"filter" @ version,
{function fingerprint, fn_kwargs, batched, batch_size (batched only), with_indices,
input_columns, remove_columns, format})`` with default arguments dropped; ``num_proc``,
``desc`` and ``load_from_cache_file`` never enter it. ``new_fingerprint`` replaces it.

The output is cut into segments by input rows (``arrowmix._cache.segments``). Under a lock per
fingerprint, stray temporary files of dead writers are removed, the segments already on disk
and valid are kept, and only the missing ones are computed (in ``num_proc`` processes), each
committed atomically. An invalid file (unreadable, or metadata that does not match its name) is
recomputed with a :class:`~arrowmix._cache.segments.CacheWarning`; it is never returned as data.

A map result is opened memory-mapped: the stored columns come from the segment files, and
input columns the function keeps unchanged are referenced zero-copy from the parent when the
parent is a plain or contiguous view (otherwise they are copied into the segments, as HF
``datasets`` does). A filter stores the kept positions and returns an indices mapping composed
with the parent's (no column data copied).
"""

from __future__ import annotations

import os
import pickle
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._cache.paths import is_caching_enabled, temp_cache_dir
from arrowmix._cache.segments import (
    CacheWarning,
    Segment,
    check_segment,
    plan_segments,
    remove_stale_tmp,
    touch,
    unify_tables,
)
from arrowmix._dataset.apply import Call, function_name
from arrowmix._dataset.dataset import Dataset, DatasetState
from arrowmix._dataset.indices import IndexMap
from arrowmix._dataset.progress import Progress
from arrowmix._dataset.runner import MapSegment, filter_positions
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._fingerprint.transform import random_fingerprint, roll, validate_fingerprint
from arrowmix._storage.ipc import read_meta, write_file
from arrowmix.exceptions import CacheCorruptedError, FingerprintWarning, SchemaMismatchError

__all__ = ["MAP_VERSION", "filter_dataset", "map_dataset"]

#: Bump when the stored layout or semantics of map/filter results change.
MAP_VERSION = 1

_UNHASHABLE = (
    pickle.PicklingError,
    TypeError,
    AttributeError,
    ValueError,
    RecursionError,
    NotImplementedError,
)


def _function_fingerprint(fn: Callable[..., Any]) -> str:
    """Fingerprint of the user function; random (plus one warning) when it cannot be hashed.

    The single swap point for ``arrowmix._fingerprint.fingerprint_transform``.
    """
    try:
        return hash_value(fn)
    except _UNHASHABLE as exc:
        warnings.warn(
            f"Function {function_name(fn)} cannot be hashed ({type(exc).__name__}: {exc}); "
            "its result gets a random fingerprint and will not be reused from the cache. "
            "Pass `new_fingerprint=` to cache it under a name of your choice.",
            FingerprintWarning,
            stacklevel=5,
        )
        return random_fingerprint()


def _kwargs_fingerprint(fn: Callable[..., Any], fn_kwargs: Mapping[str, Any]) -> str | None:
    if not fn_kwargs:
        return None
    try:
        return hash_value(dict(fn_kwargs))
    except _UNHASHABLE as exc:
        warnings.warn(
            f"`fn_kwargs` of {function_name(fn)} cannot be hashed ({type(exc).__name__}: {exc});"
            " the result gets a random fingerprint and will not be reused from the cache.",
            FingerprintWarning,
            stacklevel=5,
        )
        return random_fingerprint()


@dataclass(frozen=True)
class _Job:
    """What a worker needs to compute and commit one segment."""

    kind: str
    ds: Dataset
    call: Call
    fingerprint: str
    zero_copy_ok: bool

    def meta(self, seg: Segment) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "fingerprint": self.fingerprint,
            "parent": self.ds.fingerprint,
            "transform": f"{self.kind}@{MAP_VERSION}",
            "function": self.call.name,
            "segment": seg.index,
            "num_segments": seg.count,
            "input_rows": [seg.start, seg.stop],
            "created": time.time(),
            "record": None,
        }

    def expect(self, seg: Segment) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "fingerprint": self.fingerprint,
            "segment": seg.index,
            "num_segments": seg.count,
            "input_rows": [seg.start, seg.stop],
        }


def _compute_segment(job: _Job, seg: Segment, on_rows: Callable[[int], None]) -> None:
    meta = job.meta(seg)
    if job.kind == "filter":
        pos = filter_positions(job.ds, job.call, seg.start, seg.stop, on_rows)
        batch = pa.record_batch({"indices": pa.array(pos, type=pa.int64())})
        meta.update(rows=len(pos), columns=["indices"], zero_copy=[])
        write_file(seg.path, [batch], batch.schema, meta=meta)
        return
    run = MapSegment(
        job.ds, job.call, seg.start, seg.stop, zero_copy_ok=job.zero_copy_ok, on_rows=on_rows
    )
    it = run.batches()
    first = next(it)  # a segment has at least one input row, so one batch
    meta.update(
        rows=seg.num_input_rows if run.rows_known else None,
        columns=run.columns,
        zero_copy=run.zero_copy,
    )
    write_file(seg.path, _chain(first, it), first.schema, meta=meta)


def _chain(first: pa.RecordBatch, rest: Any) -> Any:
    yield first
    yield from rest


def _check(job: _Job, seg: Segment) -> pa.Table | str:
    """``check_segment`` plus what only map/filter know about their files."""
    found = check_segment(seg, job.expect(seg))
    if isinstance(found, str):
        return found
    meta = read_meta(found.schema)
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
        return "it references parent columns but the parent is an indexed view"
    if any(c not in job.ds.column_names for c in zero_copy):
        return f"it references parent columns {zero_copy} missing from {job.ds.column_names}"
    if (zero_copy or not job.call.batched) and found.num_rows != seg.num_input_rows:
        return f"{found.num_rows} rows for {seg.num_input_rows} input rows"
    return found


def _materialise(
    job: _Job,
    segments: list[Segment],
    *,
    load: bool,
    num_proc: int | None,
    desc: str | None,
) -> list[pa.Table]:
    tables: dict[int, pa.Table] = {}
    if load:
        for seg in segments:
            found = _check(job, seg)
            if isinstance(found, str):
                break
            tables[seg.index] = found
        if len(tables) == len(segments):
            touch(s.path for s in segments)
            return [tables[s.index] for s in segments]
    # Imported here: a cache hit needs neither locks nor process pools (faster imports).
    from arrowmix._cache.lock import fingerprint_lock
    from arrowmix._dataset.workers import run_segments

    directory = os.path.dirname(os.path.abspath(segments[0].path))
    with fingerprint_lock(directory, job.fingerprint):
        remove_stale_tmp(directory, [os.path.basename(s.path) for s in segments])
        tables = {}
        if load:
            for seg in segments:
                found = _check(job, seg)
                if not isinstance(found, str):
                    tables[seg.index] = found
                elif found != "missing":
                    warnings.warn(
                        f"Cache file {seg.path!r} is not usable ({found}); recomputing it.",
                        CacheWarning,
                        stacklevel=5,
                    )
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
            )
        for seg in missing:
            found = _check(job, seg)
            if isinstance(found, str):
                raise CacheCorruptedError(
                    f"Cache file {seg.path!r} was just written but is not valid: {found}."
                )
            tables[seg.index] = found
    return [tables[s.index] for s in segments]


def _map_result(job: _Job, tables: list[pa.Table], segments: list[Segment]) -> Dataset:
    ds, s = job.ds, job.ds._s
    metas = [read_meta(t.schema) for t in tables]
    columns, zero_copy = metas[0]["columns"], metas[0].get("zero_copy") or []
    for m, seg in zip(metas[1:], segments[1:], strict=True):
        if m["columns"] != columns or (m.get("zero_copy") or []) != zero_copy:
            raise SchemaMismatchError(
                f"Cache segment {seg.path!r} has columns {m['columns']} but the first segment "
                f"has {columns}: {job.call.name} returned different columns for different rows."
            )
    paths = [seg.path for seg in segments]
    stored = pa.concat_tables(unify_tables(tables, paths))
    offsets: tuple[int, ...] | None = None
    if zero_copy:
        parent = ds._range(0, len(ds), zero_copy)
        src = dict.fromkeys(zero_copy, parent)
        fields = [(src.get(c) or stored).schema.field(c) for c in columns]
        arrays = [(src.get(c) or stored).column(c) for c in columns]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        files = (*s.files, *paths)
    else:
        table = stored.select(columns)
        files = tuple(paths)
        offsets = tuple(np.cumsum([0, *(t.num_rows for t in tables)]).tolist())
    fmt_cols = s.fmt_columns
    if fmt_cols is not None:
        fmt_cols = tuple(c for c in fmt_cols if c in columns)
    state = DatasetState(
        table=table,
        fingerprint=job.fingerprint,
        files=files,
        file_offsets=offsets,
        fmt=s.fmt,
        fmt_columns=fmt_cols,
        cache_dir=s.cache_dir,
    )
    return Dataset(state)


def _filter_result(job: _Job, tables: list[pa.Table]) -> Dataset:
    from arrowmix._dataset.ops import with_selection

    parts = [t.column("indices").to_numpy() for t in tables]
    kept = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return with_selection(job.ds, IndexMap.from_array(kept), job.fingerprint)


def _names(ds: Dataset, value: str | Sequence[str] | None, arg: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    missing = [c for c in names if c not in ds.column_names]
    if missing:
        raise KeyError(
            f"`{arg}` has column(s) {missing} that are not in the dataset; available columns: "
            f"{ds.column_names}."
        )
    return names


def _check_args(function: Any, batch_size: Any, num_proc: Any) -> None:
    if not callable(function):
        raise TypeError(f"`function` must be callable, got {type(function).__name__}.")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)):
        raise TypeError(f"`batch_size` must be an int or None, got {batch_size!r}.")
    if num_proc is not None and (
        isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1
    ):
        raise ValueError(f"`num_proc` must be a positive int or None, got {num_proc!r}.")


def _run(
    kind: str,
    ds: Dataset,
    call: Call,
    *,
    num_proc: int | None,
    load_from_cache_file: bool | None,
    cache_file_name: str | None,
    new_fingerprint: str | None,
    desc: str | None,
) -> Dataset:
    if new_fingerprint is not None:
        fp = validate_fingerprint(new_fingerprint)
    else:
        kwargs = {
            "function": _function_fingerprint(call.function),
            "fn_kwargs": _kwargs_fingerprint(call.function, call.fn_kwargs),
            "batched": call.batched,
            "batch_size": call.batch_size if call.batched else None,
            "with_indices": call.with_indices,
            "input_columns": list(call.input_columns) if call.input_columns else None,
            "remove_columns": list(call.remove_columns) or None,
            "format": call.fmt,
        }
        defaults = dict.fromkeys(kwargs) | {"batched": False, "with_indices": False}
        fp = roll(ds.fingerprint, kind, kwargs, version=MAP_VERSION, defaults=defaults)
    caching = is_caching_enabled()
    load = caching if load_from_cache_file is None else bool(load_from_cache_file)
    user_path = os.path.abspath(os.fspath(cache_file_name)) if cache_file_name else None
    cache_dir = ds.cache_dir if caching else temp_cache_dir()
    segments = plan_segments(len(ds), fp, cache_dir, user_path)
    ix = ds._s.indices
    job = _Job(kind, ds, call, fp, zero_copy_ok=ix is None or ix.is_range)
    tables = _materialise(job, segments, load=load, num_proc=num_proc, desc=desc)
    if kind == "filter":
        return _filter_result(job, tables)
    return _map_result(job, tables, segments)


def map_dataset(
    ds: Dataset,
    function: Callable[..., Any] | None,
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    remove_columns: str | Sequence[str] | None = None,
    num_proc: int | None = None,
    load_from_cache_file: bool | None = None,
    cache_file_name: str | None = None,
    new_fingerprint: str | None = None,
    desc: str | None = None,
) -> Dataset:
    """``Dataset.map`` (see its docstring)."""
    if function is None:  # HF: identity, handy for remove_columns alone
        function = _identity
    _check_args(function, batch_size, num_proc)
    inputs = _names(ds, input_columns, "input_columns")
    removed = _names(ds, remove_columns, "remove_columns") or ()
    if len(ds) == 0:
        return ds.remove_columns(list(removed)) if removed else ds
    call = Call(
        function,
        batched=bool(batched),
        batch_size=batch_size if batch_size and batch_size > 0 else None,
        with_indices=bool(with_indices),
        input_columns=inputs,
        fn_kwargs=dict(fn_kwargs or {}),
        remove_columns=removed,
        fmt=ds.format,
    )
    return _run(
        "map",
        ds,
        call,
        num_proc=num_proc,
        load_from_cache_file=load_from_cache_file,
        cache_file_name=cache_file_name,
        new_fingerprint=new_fingerprint,
        desc=desc,
    )


def _identity(*args: Any, **kwargs: Any) -> None:
    return None


def filter_dataset(
    ds: Dataset,
    function: Callable[..., Any],
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    num_proc: int | None = None,
    load_from_cache_file: bool | None = None,
    new_fingerprint: str | None = None,
    desc: str | None = None,
) -> Dataset:
    """``Dataset.filter`` (see its docstring)."""
    _check_args(function, batch_size, num_proc)
    inputs = _names(ds, input_columns, "input_columns")
    if len(ds) == 0:
        return ds
    call = Call(
        function,
        batched=bool(batched),
        batch_size=batch_size if batch_size and batch_size > 0 else None,
        with_indices=bool(with_indices),
        input_columns=inputs,
        fn_kwargs=dict(fn_kwargs or {}),
        fmt=ds.format,
    )
    return _run(
        "filter",
        ds,
        call,
        num_proc=num_proc,
        load_from_cache_file=load_from_cache_file,
        cache_file_name=None,
        new_fingerprint=new_fingerprint,
        desc=desc,
    )
