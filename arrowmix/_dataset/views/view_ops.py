"""Transforms that produce indices mappings or column views: no column data is copied.

Each transform rolls the fingerprint forward with its name and canonical arguments and composes
its selection with the existing mapping (``outer[inner]``), so chains of
``select``/``shuffle``/``sort``/``shard`` always hold one mapping over the base table.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._cache.inuse import Hold
from arrowmix._cache.paths import cache_file_name as _cache_file_name
from arrowmix._cache.paths import shipped_cache_dir
from arrowmix._dataset import formats
from arrowmix._dataset.access import check_column
from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._dataset.indices import IndexMap, find_stored, load_or_store, to_positions
from arrowmix._dataset.map_options import user_fingerprint
from arrowmix._dataset.permutation import parent_token, permutation, sources
from arrowmix._dataset.state import num_rows, state_of, view_range
from arrowmix._dataset.tables import Table
from arrowmix._dataset.views.view_options import ViewOptions
from arrowmix._fingerprint.transform import roll
from arrowmix._hf.info import renamed_entry
from arrowmix._storage import fs
from arrowmix._storage.atomic import remove_dead_tmp
from arrowmix._storage.integrity import touch
from arrowmix._storage.ipc import open_table, read_meta, write_file
from arrowmix._storage.metadata import kept_metadata as hf_metadata
from arrowmix._validate import check_index, check_int
from arrowmix._warn import warn as warn_user
from arrowmix.exceptions import (
    CacheCorruptedError,
    CacheWarning,
    ChunkFileError,
    InvalidTypeError,
)

__all__ = [
    "check_seed",
    "flatten_indices",
    "remove_columns",
    "rename_column",
    "rename_columns",
    "select",
    "select_columns",
    "set_format",
    "shard",
    "shuffle",
    "sort",
]

_FLATTEN_BLOCK = 65536
#: Times a file is written again when a cleanup removes it before it is held.
_ATTEMPTS = 3


def with_selection(
    ds: Dataset,
    sel: IndexMap | Callable[[], IndexMap],
    transform: str,
    kwargs: dict[str, Any] | None = None,
    opts: ViewOptions | None = None,
    *,
    made_of: str | None = None,
) -> Dataset:
    """``ds`` viewed through ``sel`` (positions in ``ds``), composed into one mapping.

    The fingerprint rolls forward with ``transform`` and its canonical ``kwargs`` (or is
    ``opts.new_fingerprint``); ``opts`` says where the mapping is stored (HF's
    ``keep_in_memory``, ``indices_cache_file_name``, ``load_from_cache_file``).

    ``sel`` may be a function computing it; with ``made_of`` (a digest of everything it is
    computed from, ``permutation.sources``), an indices file that records that digest is
    memory-mapped instead, and ``sel`` is not computed at all.
    """
    opts = opts or ViewOptions()
    if opts.new_fingerprint is not None:
        fingerprint, key = user_fingerprint(opts.new_fingerprint)
    else:
        fingerprint = key = roll(ds.fingerprint, transform, kwargs)
    s = state_of(ds)
    stored = None
    default_file = opts.load_from_cache_file and opts.indices_cache_file_name is None
    if made_of is not None and default_file and not opts.keep_in_memory:
        where = (key, ds.cache_dir, len(ds), made_of, s.storage_options)
        stored = find_stored(*where, shipped=shipped_cache_dir(s.files))
    if stored is not None:
        return _viewed(s, fingerprint, *stored)
    if callable(sel):
        sel = sel()
    mapping = sel if s.indices is None else s.indices.compose(sel)
    path = None

    def store() -> tuple[IndexMap, str | None]:
        return load_or_store(
            mapping,
            key,
            ds.cache_dir,
            ds.fingerprint,
            transform,
            s.storage_options,
            shipped=shipped_cache_dir(s.files),
            path=opts.indices_cache_file_name,
            in_memory=opts.keep_in_memory,
            reuse=opts.load_from_cache_file,
            sources=made_of,
        )

    if mapping.is_range and mapping.start == 0 and mapping.stop == s.table.num_rows:
        result: IndexMap | None = None
    else:
        result, path = store()
    for attempt in range(_ATTEMPTS):
        try:
            own = hold_cache_files([path] if path else [])
            break
        except FileNotFoundError:  # a cleanup removed it before we held it: write it again
            if attempt == _ATTEMPTS - 1:
                raise
            result, path = store()
    return _viewed(s, fingerprint, result, path, own)


def _viewed(
    s: DatasetState,
    fingerprint: str,
    result: IndexMap | None,
    path: str | None,
    own: tuple[Hold, ...] | None = None,
) -> Dataset:
    """The view of ``s`` through ``result`` (stored at ``path``, held by ``own``)."""
    if own is None:  # a stored file: a cleanup that removed it meanwhile is an error
        own = hold_cache_files([path] if path else [])
    holds = tuple(h for h in s.holds if h.path != s.indices_file) + own
    return Dataset(
        replace(s, fingerprint=fingerprint, indices=result, indices_file=path, holds=holds)
    )


def select(ds: Dataset, indices: Any, opts: ViewOptions | None = None) -> Dataset:
    sel = to_positions(indices, len(ds))
    key: Any = range(sel.start, sel.stop) if sel.is_range else sel.array
    return with_selection(ds, sel, "select", {"indices": key}, opts)


def shuffle(ds: Dataset, seed: int | None, opts: ViewOptions | None = None) -> Dataset:
    seed = check_seed(seed)
    s, n = state_of(ds), len(ds)
    in_memory = opts is not None and opts.keep_in_memory
    scratch = None if in_memory or s.indices is not None else ds.cache_dir

    def perm() -> IndexMap:
        return IndexMap(array=permutation(n, seed, scratch))

    made_of = sources("shuffle", s.fingerprint, parent_token(s.indices, s.indices_file), seed, n)
    return with_selection(ds, perm, "shuffle", {"seed": seed}, opts, made_of=made_of)


def drawn_permutation(generator: Any, n: int) -> np.ndarray:
    """``generator.permutation(n)`` (HF's ``generator=``), checked as HF checks it."""
    if not isinstance(generator, np.random.Generator):
        raise ValueError("The provided generator must be an instance of numpy.random.Generator")
    return np.asarray(generator.permutation(n), dtype=np.int64)


def check_seed(seed: int | None) -> int:
    """``seed`` validated; ``None`` draws one from numpy's global generator, as HF does.

    HF ``datasets`` takes the next word of the legacy Mersenne Twister's state and advances it
    by one draw, so ``np.random.seed(0)`` at the top of a script makes every unseeded shuffle
    reproducible and, with the same permutation rule, the same as HF's.
    """
    if seed is None:
        state: Any = np.random.get_state()
        key, pos = state[1], int(state[2])
        drawn = int(key[pos] if pos < 624 else key[0])
        np.random.random()  # one step, so the next unseeded shuffle differs
        return drawn
    return int(check_int("seed", seed, minimum=0, none_ok=True))


_NULL_PLACEMENT = {
    "at_end": "at_end",
    "last": "at_end",
    "at_start": "at_start",
    "first": "at_start",
}


def _check_sortable(ds: Dataset, column: str) -> None:
    t = ds.schema.field(column).type
    if pa.types.is_nested(t):
        raise InvalidTypeError(
            f"Cannot sort by column {column!r}: it holds {t} values, which have no order; "
            "sort by a column of numbers, strings, booleans or dates (e.g. map a length "
            "column first)."
        )


def sort(
    ds: Dataset,
    column: str | Sequence[str],
    reverse: bool | Sequence[bool],
    null_placement: str = "at_end",
    opts: ViewOptions | None = None,
) -> Dataset:
    if null_placement not in _NULL_PLACEMENT:
        raise ValueError(
            f"`null_placement` must be 'at_end', 'at_start', 'last' or 'first', got "
            f"{null_placement!r}."
        )
    placement: Literal["at_start", "at_end"] = (
        "at_start" if _NULL_PLACEMENT[null_placement] == "at_start" else "at_end"
    )
    cols = [column] if isinstance(column, str) else list(column)
    revs = [reverse] * len(cols) if isinstance(reverse, bool) else list(reverse)
    if len(revs) != len(cols):
        raise ValueError(f"`reverse` has {len(revs)} entries for {len(cols)} sort columns.")
    for c in cols:
        check_column(state_of(ds), c)
        _check_sortable(ds, c)
    orders = ["descending" if r else "ascending" for r in revs]
    table = view_range(state_of(ds), 0, len(ds), cols)
    try:
        perm = _sort_indices(table, cols, orders, placement)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidTypeError(f"Cannot sort by column(s) {cols}: {exc}") from exc
    kwargs: dict[str, Any] = {"column": cols, "reverse": revs}
    if placement == "at_start":
        kwargs["null_placement"] = placement
    return with_selection(ds, IndexMap.from_array(perm), "sort", kwargs, opts)


def _sort_indices(table: pa.Table, cols: list[str], orders: list[str], placement: str) -> Any:
    """Stable sort permutation; nulls placed per key (pyarrow >= 25) or globally (older)."""
    if int(pa.__version__.split(".")[0]) >= 25:
        keys: Any = [(c, o, placement) for c, o in zip(cols, orders, strict=True)]
        return pc.sort_indices(table, sort_keys=keys).to_numpy()
    keys = list(zip(cols, orders, strict=True))
    legacy: Any = pc.sort_indices
    return legacy(table, sort_keys=keys, null_placement=placement).to_numpy()


def shard(
    ds: Dataset, num_shards: int, index: int, contiguous: bool, opts: ViewOptions | None = None
) -> Dataset:
    num_shards = check_int("num_shards", num_shards, minimum=1)
    index = check_index("index", index, num_shards)
    n = len(ds)
    if contiguous:
        div, mod = divmod(n, num_shards)
        start = div * index + min(index, mod)
        sel = IndexMap.from_range(start, start + div + (1 if index < mod else 0))
    else:
        sel = IndexMap.from_array(np.arange(index, n, num_shards, dtype=np.int64))
    kwargs = {"num_shards": num_shards, "index": index, "contiguous": contiguous}
    return with_selection(ds, sel, "shard", kwargs, opts)


def _open_flattened(
    path: str, fp: str, n: int, so: Any, *, warn: bool = True, parent: str | None = None
) -> tuple[pa.Table, tuple[Hold, ...]] | None:
    """The flattened table at ``path`` and its hold, or None (with a ``CacheWarning``).

    ``parent`` (given with a user's ``new_fingerprint``, which does not say what it was
    flattened from): the file must also record that parent.

    A local file is held (registered as in use) before it is opened, so a concurrent cleanup
    cannot remove it in between; a file removed just before is reported missing (None).
    """
    try:
        holds = hold_cache_files([path]) if fs.is_local(path) else ()
    except FileNotFoundError:
        return None
    try:
        table = open_table(path, so, check="checksum")
    except ChunkFileError as exc:
        why = str(exc)
    else:
        meta = read_meta(table.schema)
        same_parent = parent is None or meta.get("parent") == parent
        if meta.get("fingerprint") == fp and table.num_rows == n and same_parent:
            return table, holds
        why = (
            f"Cache file {path!r} does not match its name: expected {n} rows of fingerprint "
            f"{fp!r}, found {table.num_rows} rows of {meta.get('fingerprint')!r}"
            + ("." if same_parent else f" flattened from another dataset than {parent!r}.")
        )
    if warn:
        warn_user(f"{why} Recomputing it.", CacheWarning)
    return None


def flatten_indices(
    ds: Dataset,
    *,
    cache_file_name: str | None = None,
    keep_in_memory: bool = False,
    new_fingerprint: str | None = None,
) -> Dataset:
    from arrowmix._dataset.map_options import check_cache_file_name

    user_path = check_cache_file_name(cache_file_name)
    if keep_in_memory and user_path is not None:
        raise ValueError("Please use either `keep_in_memory` or `cache_file_name` but not both.")
    s = state_of(ds)
    if s.indices is None:
        return ds
    # With a name of the user's, the file also records what was flattened.
    parent = ds.fingerprint if new_fingerprint is not None else None
    if new_fingerprint is not None:
        fp, key = user_fingerprint(new_fingerprint)
    else:
        fp = key = roll(ds.fingerprint, "flatten_indices")
    if keep_in_memory:
        return _flatten_in_memory(s, fp)
    path = user_path or fs.join(ds.cache_dir, _cache_file_name(key))
    n, so = len(ds), s.storage_options
    found, path = _reuse_flattened(ds, path, key, fp, parent, shipped_ok=user_path is None)
    for _ in range(_ATTEMPTS):
        if found is not None:
            break
        _write_flattened(ds, path, fp)
        # None only if a cleanup removed the file before we held it (or it is unreadable)
        found = _open_flattened(path, fp, n, so, warn=False, parent=parent)
    if found is None:
        raise CacheCorruptedError(f"Cache file {path!r} was just written but is not usable.")
    return _flattened_dataset(s, path, fp, n, found)


_Flattened = tuple[pa.Table, tuple[Hold, ...]]


def _reuse_flattened(
    ds: Dataset, path: str, key: str, fp: str, parent: str | None, *, shipped_ok: bool
) -> tuple[_Flattened | None, str]:
    """A valid flattened copy already written (and the path it is at), or None and ``path``.

    ``shipped_ok``: a copy in the cache a read-only corpus ships may be read in place.
    """
    s = state_of(ds)
    n, so = len(ds), s.storage_options
    found = None
    shipped = shipped_cache_dir(s.files)
    if shipped is not None and shipped != ds.cache_dir and shipped_ok:
        # A read-only corpus that ships its cache: a valid flattened copy is read in place.
        beside = os.path.join(shipped, _cache_file_name(key))
        if os.path.exists(beside):
            found = _open_flattened(beside, fp, n, None, warn=False, parent=parent)
            path = beside if found is not None else path
    if found is None and fs.exists(path, so):
        found = _open_flattened(path, fp, n, so, parent=parent)
        if found is not None and fs.is_local(path):
            touch([fs.local_path(path)])  # reused: "last used" now, as a map cache hit
    return found, path


def _flattened_dataset(s: DatasetState, path: str, fp: str, n: int, found: _Flattened) -> Dataset:
    """The dataset of the flattened ``path`` with the view's format, cache dir and split."""
    table, holds = found
    table = table.replace_schema_metadata(hf_metadata(s.table.schema))  # HF's features kept
    return Dataset(
        DatasetState(
            table=table,
            fingerprint=fp,
            files=(path,),
            file_offsets=(0, n),
            fmt=s.fmt,
            fmt_columns=s.fmt_columns,
            fmt_all=s.fmt_all,
            fmt_kwargs=s.fmt_kwargs,
            cache_dir=s.cache_dir,
            storage_options=s.storage_options,
            holds=holds,
            split=s.split,
            hf_info=s.hf_info,
        )
    )


def _flatten_in_memory(s: DatasetState, fp: str) -> Dataset:
    """The view gathered into one table in memory (``keep_in_memory=True``), format kept."""
    from arrowmix._storage.metadata import kept_or_none as hf_only

    table = view_range(s, 0, num_rows(s)).combine_chunks()
    table = table.replace_schema_metadata(hf_only(table.schema))  # HF's features kept
    fields = (
        "fmt",
        "fmt_columns",
        "fmt_all",
        "fmt_kwargs",
        "cache_dir",
        "storage_options",
        "split",
        "hf_info",
    )
    return Dataset(DatasetState(table=table, fingerprint=fp, **{f: getattr(s, f) for f in fields}))


def _write_flattened(ds: Dataset, path: str, fp: str) -> None:
    s, n = state_of(ds), len(ds)
    if fs.is_local(path):  # temporary files of killed writers of this very file
        directory, name = fs.split(fs.local_path(path))
        remove_dead_tmp(directory, name.__eq__)
    blocks = _gathered(state_of(ds), n)
    meta = {
        "kind": "flatten",
        "fingerprint": fp,
        "parent": ds.fingerprint,
        "transform": "flatten_indices",
        "rows": n,
        "created": time.time(),
    }
    schema = s.table.schema.remove_metadata().with_metadata(hf_metadata(s.table.schema))
    write_file(path, blocks, schema, meta=meta, storage_options=s.storage_options)


def _gathered(s: DatasetState, n: int) -> Iterator[pa.RecordBatch]:
    """Rows ``[0, n)`` of the view, gathered :data:`_FLATTEN_BLOCK` rows at a time.

    No batch of a block is held here while the next block is gathered, and the memory the
    last one's gather freed is handed back to the system first (Arrow's allocator keeps it
    otherwise, on top of the next gather's).
    """
    for start in range(0, n, _FLATTEN_BLOCK):
        if start:
            pa.default_memory_pool().release_unused()
        yield from (
            view_range(s, start, min(start + _FLATTEN_BLOCK, n)).combine_chunks().to_batches()
        )


def _names(column_names: str | Sequence[str]) -> list[str]:
    return [column_names] if isinstance(column_names, str) else list(column_names)


def _with_table(
    ds: Dataset,
    table: pa.Table | Table,
    transform: str,
    kwargs: dict[str, Any],
    renamed: dict[str, str] | None = None,
) -> Dataset:
    s = state_of(ds)
    cols = formats.transmit_columns(s.fmt_columns, ds.column_names, table.column_names, renamed)
    if renamed:  # HF's features follow their columns (pyarrow's rename drops them)
        meta = renamed_entry(s.table.schema, renamed)  # the info texts too
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
    fp = roll(ds.fingerprint, transform, kwargs)
    return Dataset(replace(s, table=table, fingerprint=fp, fmt_columns=cols))


def set_format(
    ds: Dataset,
    type: str | None,
    columns: str | Sequence[str] | None,
    output_all_columns: bool,
    format_kwargs: dict[str, Any],
) -> Dataset:
    """``ds`` viewed in another format; the fingerprint rolls forward (as in HF).

    A ``format_kwargs`` entry (a dict) is merged into the others, as HF does, so that
    ``ds.with_format(**other.format)`` gives ``other``'s format.
    """
    nested = format_kwargs.pop("format_kwargs", None)
    if nested:
        format_kwargs = {**dict(nested), **format_kwargs}
    fmt = formats.check_format(type)
    cols = None
    if columns is not None:
        cols = tuple(_names(columns))
        for c in cols:
            check_column(state_of(ds), c)
    kw = tuple(sorted(format_kwargs.items()))
    args = {
        "type": fmt,
        "columns": list(cols) if cols is not None else None,
        "output_all_columns": bool(output_all_columns),
        "format_kwargs": dict(kw),
    }
    fp = roll(ds.fingerprint, "with_format", args)
    state = replace(
        state_of(ds),
        fingerprint=fp,
        fmt=fmt,
        fmt_columns=cols,
        fmt_all=bool(output_all_columns),
        fmt_kwargs=kw,
    )
    return Dataset(state)


def select_columns(ds: Dataset, column_names: str | Sequence[str]) -> Dataset:
    cols = _names(column_names)
    for c in cols:
        check_column(state_of(ds), c)
    return _with_table(ds, state_of(ds).table.select(cols), "select_columns", {"columns": cols})


def remove_columns(ds: Dataset, column_names: str | Sequence[str]) -> Dataset:
    cols = _names(column_names)
    for c in cols:
        check_column(state_of(ds), c)
    return _with_table(
        ds, state_of(ds).table.drop_columns(cols), "remove_columns", {"columns": cols}
    )


def rename_column(ds: Dataset, old: str, new: str) -> Dataset:
    check_column(state_of(ds), old)
    if new in ds.column_names and new != old:
        raise ValueError(f"Cannot rename {old!r} to {new!r}: a column {new!r} already exists.")
    names = [new if c == old else c for c in ds.column_names]
    return _with_table(
        ds,
        state_of(ds).table.rename_columns(names),
        "rename_column",
        {"old": old, "new": new},
        {old: new},
    )


def rename_columns(ds: Dataset, column_mapping: dict[str, str]) -> Dataset:
    """Rename several columns at once (``{old: new}``), as HF ``datasets`` does."""
    mapping = dict(column_mapping)
    for old in mapping:
        check_column(state_of(ds), old)
    names = [mapping.get(c, c) for c in ds.column_names]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(
            f"Cannot rename columns with {mapping}: the result would have duplicate column(s) "
            f"{dupes}."
        )
    for old, new in mapping.items():
        if not isinstance(new, str) or not new:
            raise ValueError(f"New name for column {old!r} must be a non-empty string: {new!r}.")
    return _with_table(
        ds,
        state_of(ds).table.rename_columns(names),
        "rename_columns",
        {"mapping": mapping},
        mapping,
    )
