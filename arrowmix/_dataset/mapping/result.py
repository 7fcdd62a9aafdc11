"""The Dataset a map or filter returns, built from the tables of its segments.

A map result is opened memory-mapped: the stored columns come from the segment files, and
input columns the function keeps unchanged are referenced zero-copy from the parent when the
parent is a plain or contiguous view (otherwise they are copied into the segments, as HF
``datasets`` does). Over rows read in place (Parquet, MDS, Lance), the kept columns stay
there: the result joins them with the stored columns (``tables.joined``). A filter stores
the kept positions and returns an indices mapping composed with the parent's (no column
data copied).

This is the bottom of the map engine: it reads the parent through ``arrowmix._dataset.state``
and wraps the new state in a ``Dataset``; it calls nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.inuse import Hold
from arrowmix._cache.paths import shipped_cache_dir
from arrowmix._cache.segments import Segment, unify_tables
from arrowmix._dataset import formats
from arrowmix._dataset.indices import IndexMap, find_stored, load_or_store
from arrowmix._dataset.mapping.arrays import int64_numpy
from arrowmix._dataset.mapping.deferred import Pending, schema_digest
from arrowmix._dataset.permutation import parent_token, scratch, sources
from arrowmix._dataset.state import (
    DatasetState,
    DeferredTable,
    cache_dir,
    column_names,
    derive,
    hold_cache_files,
    map_joins,
    state_of,
    stored_table,
    view_range,
)
from arrowmix._hf.info import carried_texts
from arrowmix._storage import windows
from arrowmix._storage.cast import has_null_type
from arrowmix._storage.integrity import CHECKSUM_KEY
from arrowmix._storage.ipc import read_meta
from arrowmix._storage.metadata import kept_metadata as hf_metadata
from arrowmix.exceptions import CacheCorruptedError, SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["Found", "filter_result", "map_result"]

#: A segment's table, or a segment planned with by its recorded facts (opened on first use).
Found = pa.Table | Pending


def _columns(
    metas: list[dict[str, Any]], segments: list[Segment], name: str, keep_unchanged: bool = False
) -> tuple[list[str], list[str]] | None:
    """``(columns, zero_copy)`` shared by every segment; None when nothing changed.

    With ``keep_unchanged`` (a file the user named), the files hold the result even then.

    Raises:
        SchemaMismatchError: segments with different columns.
    """
    if not keep_unchanged and all(m.get("unchanged") for m in metas):
        return None
    columns, zero_copy = metas[0]["columns"], metas[0].get("zero_copy") or []
    for m, seg in zip(metas[1:], segments[1:], strict=True):
        if m["columns"] != columns or (m.get("zero_copy") or []) != zero_copy:
            raise SchemaMismatchError(
                f"Cache segment {seg.path!r} has columns {m['columns']} but the first segment "
                f"has {columns}: {name} returned different columns for different rows."
            )
    return columns, zero_copy


def _meta(found: Found) -> dict[str, Any]:
    return dict(found.meta) if isinstance(found, Pending) else read_meta(found.schema)


def _rows(found: Found) -> int:
    return found.rows if isinstance(found, Pending) else int(found.num_rows)


def _opened(
    found: list[Found], open_segment: Callable[[Segment], pa.Table] | None
) -> list[pa.Table]:
    """Every segment's table: the pending ones opened (and checked) now.

    Raises:
        CacheCorruptedError: a pending segment's file now holds other rows than planned.
    """
    out = []
    for f in found:
        if not isinstance(f, Pending):
            out.append(f)
            continue
        assert open_segment is not None, "pending segments need an opener"
        table = open_segment(f.seg)
        if table.num_rows != f.rows or schema_digest(table.schema) != f.schema:
            raise CacheCorruptedError(
                f"Cache file {f.seg.path!r} changed after the cached result was opened: it "
                f"holds {table.num_rows} rows of schema {table.schema.remove_metadata()}, "
                f"where {f.rows} rows were planned. Run the map or filter again."
            )
        out.append(table)
    return out


def _deferrable(found: list[Found]) -> bool:
    """Whether the result's schema is the first segment's, so it is known without the others."""
    first = found[0]
    if not isinstance(first, pa.Table) or not any(isinstance(f, Pending) for f in found):
        return False
    if any(has_null_type(t) for t in first.schema.types):
        return False  # a later segment may fix a null column's type
    digest = schema_digest(first.schema)
    return all(isinstance(f, pa.Table) or f.schema == digest for f in found[1:])


def map_result(
    ds: Dataset,
    name: str,
    fp: str,
    found: list[Found],
    segments: list[Segment],
    *,
    keep_unchanged: bool = False,
    open_segment: Callable[[Segment], pa.Table] | None = None,
    held: Sequence[Hold] = (),
) -> Dataset:
    """The result of a map of ``ds`` (by the function called ``name``) with fingerprint ``fp``.

    A function that changed nothing gives ``ds`` itself, unless ``keep_unchanged`` (the user
    named the file): then, as in HF, the dataset backed by that file. Pending segments are
    opened by ``open_segment`` when the result's table is first used (at once when its
    schema depends on them).
    """
    columns_found = _columns([_meta(f) for f in found], segments, name, keep_unchanged)
    if columns_found is None:
        return ds  # the function returned None and removed nothing: HF keeps the dataset
    columns, zero_copy = columns_found
    s = state_of(ds)
    joined = bool(zero_copy) and map_joins(s)  # kept columns read in place (tables.joined)
    if joined or not _deferrable(found):
        found = list(_opened(found, open_segment))
    paths = [seg.path for seg in segments]
    # Row boundaries of the segments: the "chunks" a stream over the result shuffles.
    offsets = tuple(int(x) for x in np.cumsum([0, *(_rows(f) for f in found)]))

    def build() -> Any:
        tables = _opened(found, open_segment)
        stored = pa.concat_tables(unify_tables(tables, paths))
        if joined:
            table: Any = _joined(s, stored, columns, zero_copy)
        elif zero_copy:  # drop_last_batch can only shorten the end
            # referenced, not read: the rows' pages are asked for when they are read
            parent = view_range(s, 0, offsets[-1], zero_copy, ahead=False)
            owner = [parent if c in zero_copy else stored for c in columns]
            fields = [t.schema.field(c) for t, c in zip(owner, columns, strict=True)]
            arrays = [t.column(c) for t, c in zip(owner, columns, strict=True)]
            table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
        else:
            table = stored.select(columns)
        if hf:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **hf})
        return table

    first = found[0]
    assert isinstance(first, pa.Table), "the first segment is always opened"
    hf = hf_metadata(first.schema)  # the HF features of the output, written with it
    hf = carried_texts(hf, stored_table(s).schema) or {}  # and the info texts, as HF
    if joined:  # the in-place files are the joined table's to read (and check), not cache files
        files = tuple(paths)
        holds = (*s.holds, *hold_cache_files(paths, held))  # earlier derived columns' files
    elif zero_copy:
        files = (*s.files, *paths)
        holds = (*s.holds, *hold_cache_files(paths, held))  # the parent's files stay in use
    else:
        files = tuple(paths)
        holds = hold_cache_files(paths, held)
    if joined:  # a stream reads the in-place storage units whole (row groups, shards)
        offsets = _inner_offsets(s, offsets[-1])
    if any(isinstance(f, Pending) for f in found):
        parent_schema = stored_table(s).schema
        fields = [(parent_schema if c in zero_copy else first.schema).field(c) for c in columns]
        schema = pa.schema(fields, metadata=dict(hf.items()) if hf else None)
        table: pa.Table | DeferredTable = DeferredTable(offsets[-1], schema, build)
    else:
        table = build()
    state = DatasetState(
        table=table,  # type: ignore[arg-type]  # the slot builds a deferred table when read
        fingerprint=fp,
        files=files,
        file_offsets=offsets,
        fmt=s.fmt,
        fmt_columns=formats.transmit_columns(s.fmt_columns, column_names(s), columns),
        fmt_all=s.fmt_all,
        fmt_kwargs=s.fmt_kwargs,
        cache_dir=s.cache_dir,
        storage_options=s.storage_options,
        holds=tuple(holds),
        split=s.split,
        hf_info=s.hf_info,
    )
    return type(ds)(state)


def _joined(s: DatasetState, stored: pa.Table, columns: list[str], kept: list[str]) -> Any:
    """The map result joining ``s``'s table (read in place) with the ``stored`` columns."""
    from arrowmix._dataset.tables.joined import join

    ix = s.indices  # None, a contiguous view, or increasing rows (mapping/plan.py)
    rows = 0 if ix is None else ix.start if ix.array is None else ix.array
    return join(s.reader, rows, stored, columns, kept)


def _inner_offsets(s: DatasetState, rows: int) -> tuple[int, ...]:
    """The storage units of ``s``'s view (its ``file_offsets``) over its first ``rows`` rows."""
    ix = s.indices
    base = np.asarray(s.file_offsets or (0, stored_table(s).num_rows), dtype=np.int64)
    if ix is not None and ix.array is not None:  # increasing rows: where each unit starts
        inner = np.searchsorted(np.asarray(ix.array[:rows]), base)
        inner = inner[(inner > 0) & (inner < rows)]
    else:
        start = ix.start if ix is not None else 0
        inner = base[(base > start) & (base < start + rows)] - start
    return tuple(int(x) for x in np.unique(np.concatenate([[0], inner, [rows]])))


def filter_result(
    ds: Dataset,
    transform: str,
    key: str,
    fp: str,
    found: list[Found],
    segments: list[Segment],
    open_segment: Callable[[Segment], pa.Table] | None = None,
    held: Sequence[Hold] = (),
) -> Dataset:
    """``ds`` viewed through the kept positions, composed into its indices mapping.

    ``key`` names the indices file and ``transform`` is recorded in it. The result holds its
    segments (the kept positions) as well as its indices file, so a cleanup never removes
    the cache of a filter whose result is in use. Pending segments are opened (by
    ``open_segment``) only when the mapping is not stored yet.
    """
    s = state_of(ds)
    paths = [seg.path for seg in segments]
    sources = _sources(s, found)
    shipped = shipped_cache_dir(s.files)
    rows = sum(_rows(f) for f in found)
    path = None
    result: IndexMap | None = None
    # A rerun maps the stored mapping: the kept positions are neither loaded nor composed.
    stored = find_stored(key, cache_dir(s), rows, sources, s.storage_options, shipped=shipped)
    if stored is not None:
        result, path = stored
    else:
        tables = _opened(found, open_segment)
        sel = IndexMap.from_array(_kept(tables, cache_dir(s)))
        mapping = sel if s.indices is None else _composed(s.indices, sel, cache_dir(s))
        table_rows = stored_table(s).num_rows
        if not (mapping.is_range and mapping.start == 0 and mapping.stop == table_rows):
            result, path = load_or_store(
                mapping,
                key,
                cache_dir(s),
                s.fingerprint,
                transform,
                s.storage_options,
                shipped=shipped,
                sources=sources,
            )
    holds: tuple[Any, ...] = tuple(h for h in s.holds if h.path != s.indices_file)
    holds += hold_cache_files([*paths, *([path] if path else [])], held)
    return type(ds)(derive(s, fingerprint=fp, indices=result, indices_file=path, holds=holds))


def _kept(tables: list[pa.Table], directory: str | None) -> np.ndarray:
    """The kept positions of every segment, in one array (file-backed when large).

    A file-backed array larger than a window is filled keeping a window resident: each
    segment's positions are handed back once copied, and the array's pages every
    ``windows.WINDOW`` bytes (they stay in the page cache; see :mod:`arrowmix._storage.windows`).
    """
    n = sum(t.num_rows for t in tables)
    out = scratch(n, directory)
    if out is None:
        parts = [int64_numpy(t.column("indices")) for t in tables]  # not pandas' to_numpy
        return np.concatenate(parts) if parts else np.empty(0, np.int64)
    large = out.nbytes > windows.WINDOW
    at = done = 0
    for t in tables:
        for chunk in t.column("indices").chunks:
            part = int64_numpy(pa.chunked_array([chunk], pa.int64()))
            out[at : at + len(part)] = part
            at += len(part)
            if large:
                windows.release_buffers(chunk)
                if (at - done) * 8 >= windows.WINDOW:
                    windows.release_array(out[done:at])
                    done = at
    if large:
        windows.release_array(out[done:at])
    return out


def _composed(outer: IndexMap, sel: IndexMap, directory: str | None) -> IndexMap:
    """``outer.compose(sel)`` (a view's mapping through its filter's kept positions).

    When large, the composed positions are written into a file-backed array a window at a
    time, as :func:`_kept` gathers: the kept positions increase, so ``outer``'s array is read
    in order, and the pages of all three arrays are handed back once a window is done (those
    of file mappings; see :mod:`arrowmix._storage.windows`). The values are ``outer``'s at the
    kept positions, as ``compose`` gives them.
    """
    inner = sel.array
    out = None if inner is None else scratch(len(inner), directory)
    if inner is None or out is None:
        return outer.compose(sel)
    base, large = outer.array, out.nbytes > windows.WINDOW
    step = max(1, windows.WINDOW // 8)
    done = 0  # positions of ``base`` below this one were read
    for lo in range(0, len(inner), step):
        part, dest = inner[lo : lo + step], out[lo : lo + step]
        if base is None:
            np.add(part, outer.start, out=dest)
        else:
            np.take(base, part, out=dest)
        if large:
            windows.release_array(part)
            windows.release_array(dest)
            if base is not None and int(part[-1]) > done:
                windows.release_array(base[done : int(part[-1])])
                done = int(part[-1])
    return IndexMap.from_array(out)


def _sources(s: DatasetState, found: list[Found]) -> str:
    """A digest of what a filter's mapping is made of: the parent's view and the segments.

    The segments count by their checksums (each covers its metadata, creation time included,
    so a recomputed segment gives a new digest).
    """
    segments = [_meta(f).get(CHECKSUM_KEY) for f in found]
    return sources(s.fingerprint, parent_token(s.indices, s.indices_file), segments)
