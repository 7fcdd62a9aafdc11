"""Cached ``Dataset.map`` and ``Dataset.filter``.

The result's fingerprint rolls the parent's: ``roll(parent, "map"|"filter" @ version,
{function fingerprint, fn_kwargs, batched, batch_size (batched only), with_indices,
input_columns, remove_columns, format})`` with default arguments dropped; ``num_proc``,
``desc`` and ``load_from_cache_file`` never enter it. ``new_fingerprint`` replaces it.

The output is cut into segments by input rows (``arrowmix._cache.segments``) and computed by
``map_job.materialise`` (in local processes, or on an ``executor`` such as Ray, which never
enters the fingerprint): only missing segments are computed, each committed atomically, under
a lock per fingerprint. An invalid file (unreadable, or metadata that does not match its name)
is recomputed with a :class:`~arrowmix._cache.segments.CacheWarning`; it is never returned as
data.

A map result is opened memory-mapped: the stored columns come from the segment files, and
input columns the function keeps unchanged are referenced zero-copy from the parent when the
parent is a plain or contiguous view (otherwise they are copied into the segments, as HF
``datasets`` does). A filter stores the kept positions and returns an indices mapping composed
with the parent's (no column data copied).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.paths import is_caching_enabled, shipped_cache_dir, temp_cache_dir
from arrowmix._cache.segments import Segment, plan_segments, unify_tables
from arrowmix._dataset import formats
from arrowmix._dataset.apply import Call
from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._dataset.hf_features import HF_KEY, features_schema, hf_metadata
from arrowmix._dataset.indices import IndexMap, load_or_store
from arrowmix._dataset.json_values import no_mixed_types
from arrowmix._dataset.map_job import MAP_VERSION, Job, load_complete, materialise
from arrowmix._dataset.map_options import (
    MapOptions,
    check_cache_file_name,
    check_suffix_template,
    user_fingerprint,
)
from arrowmix._fingerprint.transform import validate_fingerprint
from arrowmix._storage.ipc import read_meta
from arrowmix._storage.remote_table import RemoteTable
from arrowmix._validate import check_callable, check_int
from arrowmix.exceptions import InvalidTypeError, SchemaMismatchError

__all__ = ["MAP_VERSION", "filter_dataset", "map_dataset"]

# Under disable_caching(), each call gets its own files (as in HF), never a shared name.
_UNCACHED = itertools.count()

_DEFAULT_OPTIONS = MapOptions()

#: Times a result is materialised when a cleanup keeps removing its files under it.
_ATTEMPTS = 3


def _map_result(job: Job, fp: str, tables: list[pa.Table], segments: list[Segment]) -> Dataset:
    ds, s = job.ds, job.ds._s
    metas = [read_meta(t.schema) for t in tables]
    if all(m.get("unchanged") for m in metas):
        return ds  # the function returned None and removed nothing: HF keeps the dataset
    columns, zero_copy = metas[0]["columns"], metas[0].get("zero_copy") or []
    for m, seg in zip(metas[1:], segments[1:], strict=True):
        if m["columns"] != columns or (m.get("zero_copy") or []) != zero_copy:
            raise SchemaMismatchError(
                f"Cache segment {seg.path!r} has columns {m['columns']} but the first segment "
                f"has {columns}: {job.call.name} returned different columns for different rows."
            )
    paths = [seg.path for seg in segments]
    stored = pa.concat_tables(unify_tables(tables, paths))
    # Row boundaries of the segments: the "chunks" a stream over the result shuffles.
    offsets = tuple(int(x) for x in np.cumsum([0, *(t.num_rows for t in tables)]))
    if zero_copy:  # drop_last_batch can only shorten the end
        parent = ds._range(0, offsets[-1], zero_copy)
        owner = [parent if c in zero_copy else stored for c in columns]
        fields = [t.schema.field(c) for t, c in zip(owner, columns, strict=True)]
        arrays = [t.column(c) for t, c in zip(owner, columns, strict=True)]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        files = (*s.files, *paths)
        holds = (*s.holds, *hold_cache_files(paths))  # the parent's files stay in use
    else:
        table = stored.select(columns)
        files = tuple(paths)
        holds = hold_cache_files(paths)
    hf = hf_metadata(tables[0].schema)  # the HF features of the output, written with it
    if hf:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **hf})
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=files,
        file_offsets=offsets,
        fmt=s.fmt,
        fmt_columns=formats.transmit_columns(s.fmt_columns, ds.column_names, columns),
        fmt_all=s.fmt_all,
        fmt_kwargs=s.fmt_kwargs,
        cache_dir=s.cache_dir,
        storage_options=s.storage_options,
        holds=tuple(holds),
    )
    return Dataset(state)


def _filter_result(job: Job, fp: str, tables: list[pa.Table], segment_paths: list[str]) -> Dataset:
    """The parent viewed through the kept positions, composed into its indices mapping.

    The result holds its segments (the kept positions) as well as its indices file, so a
    cleanup never removes the cache of a filter whose result is in use.
    """
    ds, s = job.ds, job.ds._s
    from arrowmix._dataset.outputs import int64_numpy  # not pandas' to_numpy: see there

    parts = [int64_numpy(t.column("indices")) for t in tables]
    sel = IndexMap.from_array(np.concatenate(parts) if parts else np.empty(0, dtype=np.int64))
    mapping = sel if s.indices is None else s.indices.compose(sel)
    path = None
    result: IndexMap | None = None
    if not (mapping.is_range and mapping.start == 0 and mapping.stop == s.table.num_rows):
        transform = f"arrowmix.{job.kind}@{MAP_VERSION}"
        result, path = load_or_store(
            mapping,
            job.fingerprint,
            ds.cache_dir,
            ds.fingerprint,
            transform,
            s.storage_options,
            shipped=shipped_cache_dir(s.files),
        )
    holds = tuple(h for h in s.holds if h.path != s.indices_file)
    holds += hold_cache_files([*segment_paths, *([path] if path else [])])
    state = replace(s, fingerprint=fp, indices=result, indices_file=path, holds=holds)
    return Dataset(state)


def _names(ds: Dataset, value: str | Sequence[str] | None, arg: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    listed = isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))
    names = (value,) if isinstance(value, str) else tuple(value) if listed else ()
    if not (isinstance(value, str) or listed) or not all(isinstance(c, str) for c in names):
        raise InvalidTypeError(
            f"`{arg}` must be a column name or a list of column names, got "
            f"{type(value).__name__} {value!r:.80}."
        )
    missing = [c for c in names if c not in ds.column_names]
    if missing:
        raise KeyError(
            f"`{arg}` has column(s) {missing} that are not in the dataset; available columns: "
            f"{ds.column_names}."
        )
    return names


def _kwargs(fn_kwargs: Any) -> dict[str, Any]:
    if fn_kwargs is None:
        return {}
    if not isinstance(fn_kwargs, Mapping) or not all(isinstance(k, str) for k in fn_kwargs):
        raise InvalidTypeError(
            "`fn_kwargs` must be a dict of keyword arguments for the function (str keys), "
            f"got {type(fn_kwargs).__name__} {fn_kwargs!r:.80}."
        )
    return dict(fn_kwargs)


def _check_args(function: Any, batch_size: Any, num_proc: Any) -> None:
    check_callable("function", function)
    check_int("batch_size", batch_size, none_ok=True)
    check_int("num_proc", num_proc, minimum=1, none_ok=True)


def _resolve_executor(executor: Any) -> Any:
    if executor is None:
        return None
    # Imported here: a plain map (and its cache hit) does not load the process-pool modules.
    from arrowmix._dataset.workers import resolve_executor

    return resolve_executor(executor)


def _transform_fingerprint(ds: Dataset, kind: str, call: Call) -> tuple[str, dict[str, Any]]:
    """``(fingerprint, explain record)`` of ``kind`` (map/filter) of ``call`` on ``ds``.

    The function is hashed by value (``arrowmix._fingerprint``), with the arguments that can
    change the output (dropped when equal to their default). ``num_proc``, ``desc``,
    ``load_from_cache_file``, ``cache_file_name`` and ``suffix_template`` never enter.
    Something unhashable gives a random fingerprint and one ``FingerprintWarning`` pointing
    at the user's call.
    """
    from arrowmix._fingerprint.transform import transform_record  # dill loads lazily

    kwargs = {
        "fn_kwargs": dict(call.fn_kwargs) or None,
        "batched": call.batched,
        "batch_size": call.batch_size if call.batched else None,
        "with_indices": call.with_indices,
        "input_columns": list(call.input_columns) if call.input_columns else None,
        "remove_columns": list(call.remove_columns) or None,
        "format": call.fmt,
        "format_kwargs": dict(call.fmt_kwargs) or None,
        "with_rank": call.with_rank,
        "drop_last_batch": call.drop_last_batch and call.batched,
        "try_original_type": call.try_original_type,
        "features": _features_key(call.features),
        "on_mixed_types": call.on_mixed_types,
    }
    defaults = dict.fromkeys(kwargs) | {
        "batched": False,
        "with_indices": False,
        "with_rank": False,
        "drop_last_batch": False,
        "try_original_type": True,
    }
    record = transform_record(
        ds.fingerprint,
        f"arrowmix.{kind}",
        MAP_VERSION,
        call.function,
        kwargs,
        defaults,
        stacklevel=6,  # transform_record < this < _run < map_dataset < Dataset.map < user
    )
    return record.fingerprint, record.to_dict()


def _features_key(schema: pa.Schema | None) -> list[str] | None:
    """``map(features=...)`` in the fingerprint: the Arrow types and HF's feature JSON."""
    if schema is None:
        return None
    hf = hf_metadata(schema).get(HF_KEY, b"").decode()
    return [str(schema.remove_metadata()), hf]


def _align(ds: Dataset, call: Call) -> int:
    """The multiple that segment boundaries of ``call`` follow.

    For a batched function, multiples of ``batch_size``, so every batch the function sees is
    the one HF ``datasets`` would give it (``batch_size=None``: one batch, one segment).
    """
    if not call.batched:
        return 1
    return call.batch_size or max(len(ds), 1)


def _run(kind: str, ds: Dataset, call: Call, opts: MapOptions) -> Dataset:
    record = None
    if opts.new_fingerprint is not None:
        fp, key = user_fingerprint(opts.new_fingerprint)
    else:
        fp, record = _transform_fingerprint(ds, kind, call)
        key = fp
    caching = is_caching_enabled() and not opts.keep_in_memory
    load = caching if opts.load_from_cache_file is None else bool(opts.load_from_cache_file)
    load = load and not opts.keep_in_memory
    user_path = check_cache_file_name(opts.cache_file_name)
    if caching:
        cache_dir = ds.cache_dir
    else:  # this call's own files, removed at exit; the fingerprint stays the same
        cache_dir = temp_cache_dir()
        if user_path is None:
            key = validate_fingerprint(f"{next(_UNCACHED) % 16**8:08x}{key[:8]}")
    rows = len(ds)
    if kind == "map" and call.batched and call.drop_last_batch and call.batch_size:
        rows -= rows % call.batch_size  # segments start at multiples of batch_size
    segments = plan_segments(rows, key, cache_dir, user_path, align=_align(ds, call))
    ix = ds._s.indices
    # Kept columns are referenced in the parent, not stored, when the parent is a plain or
    # contiguous view of local data; remote chunks read through a bounded cache cannot be
    # referenced (the result would pin the whole corpus), so their kept columns are stored.
    zero_copy_ok = (ix is None or ix.is_range) and not isinstance(ds._s.table, RemoteTable)
    # A file the user names holds every column (``Dataset.from_file(path)`` opens it, as in
    # HF), and so does an output cast to ``features`` (kept columns are cast too).
    zero_copy_ok = zero_copy_ok and user_path is None and call.features is None
    job = Job(kind, ds, call, key, zero_copy_ok=zero_copy_ok, record=record)
    shipped = shipped_cache_dir(ds._s.files) if load and user_path is None else None
    planned = segments
    for attempt in range(_ATTEMPTS):
        holds: list[Any] = []  # the segments stay registered as in use until the result is
        tables = None
        segments = planned
        if shipped is not None and shipped != cache_dir:
            # A read-only corpus that ships its cache: read a complete result in place.
            beside = plan_segments(rows, key, shipped, align=_align(ds, call))
            tables = load_complete(job, beside, holds)
            segments = beside if tables is not None else planned
        if tables is None:
            tables = materialise(
                job,
                segments,
                load=load,
                num_proc=opts.num_proc,
                desc=opts.desc,
                executor=opts.executor,
                holds=holds,
            )
        try:
            if kind == "filter":
                return _filter_result(job, fp, tables, [seg.path for seg in segments])
            return _map_result(job, fp, tables, segments)
        except FileNotFoundError:
            # A file of the result (e.g. its indices file) was removed before it was held:
            # the next attempt finds it missing and computes it again.
            if attempt == _ATTEMPTS - 1:
                raise
        finally:
            del holds
    raise AssertionError("unreachable")  # pragma: no cover


def _call(
    ds: Dataset,
    function: Callable[..., Any],
    *,
    batched: bool,
    batch_size: int | None,
    input_columns: str | Sequence[str] | None,
    fn_kwargs: Mapping[str, Any] | None,
    **more: Any,
) -> Call:
    return Call(
        function,
        batched=bool(batched),
        batch_size=batch_size if batch_size and batch_size > 0 else None,
        input_columns=_names(ds, input_columns, "input_columns"),
        fn_kwargs=_kwargs(fn_kwargs),
        fmt=ds._s.fmt,
        fmt_kwargs=ds._s.fmt_kwargs if ds._s.fmt is not None else (),
        **more,
    )


def map_dataset(
    ds: Dataset,
    function: Callable[..., Any] | None,
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    with_rank: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    remove_columns: str | Sequence[str] | None = None,
    drop_last_batch: bool = False,
    try_original_type: bool | None = True,
    suffix_template: str | None = None,
    features: Any = None,
    on_mixed_types: str | None = None,
    opts: MapOptions = _DEFAULT_OPTIONS,
) -> Dataset:
    """``Dataset.map`` (see its docstring)."""
    if function is None:  # HF: identity, handy for remove_columns alone
        # With features, the identity returns its input so that the cast applies to it.
        function = _identity if features is None else _same
    _check_args(function, batch_size, opts.num_proc)
    target = features_schema(features)
    mixed = no_mixed_types(on_mixed_types)
    check_suffix_template(suffix_template)
    opts = replace(opts, executor=_resolve_executor(opts.executor))
    check_cache_file_name(opts.cache_file_name)
    removed = _names(ds, remove_columns, "remove_columns") or ()
    dropped_all = batched and drop_last_batch and batch_size and len(ds) < batch_size
    if len(ds) == 0 or dropped_all:
        ds = ds.select([]) if dropped_all else ds
        return ds.remove_columns(list(removed)) if removed else ds
    call = _call(
        ds,
        function,
        batched=batched,
        batch_size=batch_size,
        input_columns=input_columns,
        fn_kwargs=fn_kwargs,
        with_indices=bool(with_indices),
        with_rank=bool(with_rank),
        remove_columns=removed,
        drop_last_batch=bool(drop_last_batch),
        try_original_type=try_original_type is not False,
        features=target,
        on_mixed_types=mixed,
    )
    return _run("map", ds, call, opts)


def _identity(*args: Any, **kwargs: Any) -> None:
    return None


def _same(example: Any, *args: Any, **kwargs: Any) -> Any:
    return example


def filter_dataset(
    ds: Dataset,
    function: Callable[..., Any] | None,
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    with_rank: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    opts: MapOptions = _DEFAULT_OPTIONS,
) -> Dataset:
    """``Dataset.filter`` (see its docstring)."""
    if function is None:  # HF: keep every row
        function = _keep
    _check_args(function, batch_size, opts.num_proc)
    opts = replace(opts, executor=_resolve_executor(opts.executor))
    check_cache_file_name(opts.cache_file_name)
    if len(ds) == 0:
        return ds
    call = _call(
        ds,
        function,
        batched=batched,
        batch_size=batch_size,
        input_columns=input_columns,
        fn_kwargs=fn_kwargs,
        with_indices=bool(with_indices),
        with_rank=bool(with_rank),
    )
    return _run("filter", ds, call, opts)


def _keep(*args: Any, **kwargs: Any) -> Any:
    batch = args[0] if args else None
    if isinstance(batch, Mapping) and batch and isinstance(next(iter(batch.values())), list):
        return [True] * len(next(iter(batch.values())))
    return True
