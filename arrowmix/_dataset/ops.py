"""Transforms that produce indices mappings or column views: no column data is copied.

Each transform rolls the fingerprint forward with its name and canonical arguments and composes
its selection with the existing mapping (``outer[inner]``), so chains of
``select``/``shuffle``/``sort``/``shard`` always hold one mapping over the base table.
"""

from __future__ import annotations

import math
import os
import secrets
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._cache.inuse import Hold
from arrowmix._cache.paths import cache_file_name as _cache_file_name
from arrowmix._cache.paths import shipped_cache_dir
from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._dataset.indices import IndexMap, load_or_store, to_positions
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._fingerprint.transform import roll
from arrowmix._storage import fs
from arrowmix._storage.atomic import remove_dead_tmp
from arrowmix._storage.ipc import open_table, read_meta, write_file
from arrowmix._storage.remote_table import RemoteTable
from arrowmix._validate import check_index, check_int
from arrowmix.exceptions import (
    CacheCorruptedError,
    CacheWarning,
    ChunkFileError,
    SchemaMismatchError,
)

__all__ = [
    "SplitResult",
    "concatenate_datasets",
    "flatten_indices",
    "remove_columns",
    "rename_column",
    "select",
    "select_columns",
    "shard",
    "shuffle",
    "sort",
    "train_test_split",
]

_FLATTEN_BLOCK = 65536
#: Times a file is written again when a cleanup removes it before it is held.
_ATTEMPTS = 3


def with_selection(
    ds: Dataset, sel: IndexMap, transform: str, kwargs: dict[str, Any] | None = None
) -> Dataset:
    """``ds`` viewed through ``sel`` (positions in ``ds``), composed into one mapping.

    The fingerprint rolls forward with ``transform`` and its canonical ``kwargs``.
    """
    fingerprint = roll(ds.fingerprint, transform, kwargs)
    s = ds._s
    mapping = sel if s.indices is None else s.indices.compose(sel)
    path = None
    if mapping.is_range and mapping.start == 0 and mapping.stop == s.table.num_rows:
        result: IndexMap | None = None
    else:
        result, path = load_or_store(
            mapping,
            fingerprint,
            ds.cache_dir,
            ds.fingerprint,
            transform,
            s.storage_options,
            shipped=shipped_cache_dir(s.files),
        )
    for attempt in range(_ATTEMPTS):
        try:
            own = hold_cache_files([path] if path else [])
            break
        except FileNotFoundError:  # a cleanup removed it before we held it: write it again
            if attempt == _ATTEMPTS - 1:
                raise
            result, path = load_or_store(
                mapping, fingerprint, ds.cache_dir, ds.fingerprint, transform, s.storage_options
            )
    holds = tuple(h for h in s.holds if h.path != s.indices_file) + own
    return Dataset(
        replace(s, fingerprint=fingerprint, indices=result, indices_file=path, holds=holds)
    )


def select(ds: Dataset, indices: Any) -> Dataset:
    sel = to_positions(indices, len(ds))
    key: Any = range(sel.start, sel.stop) if sel.is_range else sel.array
    return with_selection(ds, sel, "select", {"indices": key})


def shuffle(ds: Dataset, seed: int | None) -> Dataset:
    seed = _check_seed(seed)
    perm = np.random.default_rng(seed).permutation(len(ds))
    return with_selection(ds, IndexMap(array=perm), "shuffle", {"seed": seed})


def _check_seed(seed: int | None) -> int:
    if seed is None:
        return secrets.randbits(63)  # fresh entropy; never numpy's global state
    return int(check_int("seed", seed, minimum=0, none_ok=True))


def sort(ds: Dataset, column: str | Sequence[str], reverse: bool | Sequence[bool]) -> Dataset:
    cols = [column] if isinstance(column, str) else list(column)
    revs = [reverse] * len(cols) if isinstance(reverse, bool) else list(reverse)
    if len(revs) != len(cols):
        raise ValueError(f"`reverse` has {len(revs)} entries for {len(cols)} sort columns.")
    for c in cols:
        ds._check_column(c)
    keys: list[tuple[str, Literal["ascending", "descending"]]] = [
        (c, "descending" if r else "ascending") for c, r in zip(cols, revs, strict=True)
    ]
    table = ds._range(0, len(ds), cols)
    try:
        perm = pc.sort_indices(table, sort_keys=keys).to_numpy()  # stable; nulls last
    except pa.ArrowNotImplementedError as exc:
        raise TypeError(f"Cannot sort by column(s) {cols}: {exc}") from exc
    return with_selection(ds, IndexMap.from_array(perm), "sort", {"column": cols, "reverse": revs})


def shard(ds: Dataset, num_shards: int, index: int, contiguous: bool) -> Dataset:
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
    return with_selection(ds, sel, "shard", kwargs)


class SplitResult(NamedTuple):
    """``(train, test)``; unpack it or index it by ``"train"``/``"test"`` as in HF datasets."""

    train: Dataset
    test: Dataset

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(f"Unknown split {key!r}; available splits: ['train', 'test'].")
            return getattr(self, key)
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The split names."""
        return list(self._fields)


def train_test_split(
    ds: Dataset, test_size: float | int, seed: int | None, shuffle: bool
) -> SplitResult:
    n = len(ds)
    if isinstance(test_size, float) and 0.0 < test_size < 1.0:
        n_test = math.ceil(test_size * n)
    elif isinstance(test_size, int) and not isinstance(test_size, bool) and test_size > 0:
        n_test = test_size
    else:
        raise ValueError(
            f"`test_size` must be a float in (0, 1) or a positive int, got {test_size!r}."
        )
    if not 0 < n_test < n:
        raise ValueError(
            f"`test_size`={test_size!r} gives {n_test} test rows out of {n}: both splits must "
            "be non-empty."
        )
    if shuffle:
        seed = _check_seed(seed)
        perm = np.random.default_rng(seed).permutation(n)
        test_sel, train_sel = (
            IndexMap(array=perm[:n_test]),
            IndexMap(array=perm[n_test:]),
        )
    else:
        train_sel, test_sel = (
            IndexMap.from_range(0, n - n_test),
            IndexMap.from_range(n - n_test, n),
        )
    kw: dict[str, Any] = {"test_size": test_size, "seed": seed, "shuffle": shuffle}
    train = with_selection(ds, train_sel, "train_test_split", {**kw, "split": "train"})
    test = with_selection(ds, test_sel, "train_test_split", {**kw, "split": "test"})
    return SplitResult(train, test)


def _open_flattened(
    path: str, fp: str, n: int, so: Any, *, warn: bool = True
) -> tuple[pa.Table, tuple[Hold, ...]] | None:
    """The flattened table at ``path`` and its hold, or None (with a ``CacheWarning``).

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
        if meta.get("fingerprint") == fp and table.num_rows == n:
            return table, holds
        why = (
            f"Cache file {path!r} does not match its name: expected {n} rows of fingerprint "
            f"{fp!r}, found {table.num_rows} rows of {meta.get('fingerprint')!r}."
        )
    if warn:
        warnings.warn(f"{why} Recomputing it.", CacheWarning, stacklevel=4)
    return None


def flatten_indices(ds: Dataset, *, cache_file_name: str | None = None) -> Dataset:
    from arrowmix._dataset.map_options import check_cache_file_name

    user_path = check_cache_file_name(cache_file_name)
    s = ds._s
    if s.indices is None:
        return ds
    fp = roll(ds.fingerprint, "flatten_indices")
    path = user_path or fs.join(ds.cache_dir, _cache_file_name(fp))
    n = len(ds)
    so = s.storage_options
    found = None
    shipped = shipped_cache_dir(s.files)
    if shipped is not None and shipped != ds.cache_dir and user_path is None:
        # A read-only corpus that ships its cache: a valid flattened copy is read in place.
        beside = os.path.join(shipped, _cache_file_name(fp))
        if os.path.exists(beside):
            found = _open_flattened(beside, fp, n, None, warn=False)
            path = beside if found is not None else path
    if found is None and fs.exists(path, so):
        found = _open_flattened(path, fp, n, so)
    for _ in range(_ATTEMPTS):
        if found is not None:
            break
        _write_flattened(ds, path, fp)
        # None only if a cleanup removed the file before we held it (or it is unreadable)
        found = _open_flattened(path, fp, n, so, warn=False)
    if found is None:
        raise CacheCorruptedError(f"Cache file {path!r} was just written but is not usable.")
    table, holds = found
    table = table.replace_schema_metadata(None)
    return Dataset(
        DatasetState(
            table=table,
            fingerprint=fp,
            files=(path,),
            file_offsets=(0, n),
            fmt=s.fmt,
            fmt_columns=s.fmt_columns,
            cache_dir=s.cache_dir,
            storage_options=so,
            holds=holds,
        )
    )


def _write_flattened(ds: Dataset, path: str, fp: str) -> None:
    s, n = ds._s, len(ds)
    if fs.is_local(path):  # temporary files of killed writers of this very file
        directory, name = fs.split(fs.local_path(path))
        remove_dead_tmp(directory, name.__eq__)
    blocks = (
        b
        for start in range(0, n, _FLATTEN_BLOCK)
        for b in ds._range(start, min(start + _FLATTEN_BLOCK, n)).combine_chunks().to_batches()
    )
    meta = {
        "kind": "flatten",
        "fingerprint": fp,
        "parent": ds.fingerprint,
        "transform": "flatten_indices",
        "rows": n,
        "created": time.time(),
    }
    schema = s.table.schema.remove_metadata()
    write_file(path, blocks, schema, meta=meta, storage_options=s.storage_options)


def _names(column_names: str | Sequence[str]) -> list[str]:
    return [column_names] if isinstance(column_names, str) else list(column_names)


def _with_table(
    ds: Dataset, table: pa.Table | RemoteTable, transform: str, kwargs: dict[str, Any]
) -> Dataset:
    s = ds._s
    cols = s.fmt_columns
    if cols is not None:
        cols = tuple(c for c in cols if c in table.column_names)
    fp = roll(ds.fingerprint, transform, kwargs)
    return Dataset(replace(s, table=table, fingerprint=fp, fmt_columns=cols))


def select_columns(ds: Dataset, column_names: str | Sequence[str]) -> Dataset:
    cols = _names(column_names)
    for c in cols:
        ds._check_column(c)
    return _with_table(ds, ds._s.table.select(cols), "select_columns", {"columns": cols})


def remove_columns(ds: Dataset, column_names: str | Sequence[str]) -> Dataset:
    cols = _names(column_names)
    for c in cols:
        ds._check_column(c)
    return _with_table(ds, ds._s.table.drop_columns(cols), "remove_columns", {"columns": cols})


def rename_column(ds: Dataset, old: str, new: str) -> Dataset:
    ds._check_column(old)
    if new in ds.column_names and new != old:
        raise ValueError(f"Cannot rename {old!r} to {new!r}: a column {new!r} already exists.")
    names = [new if c == old else c for c in ds.column_names]
    return _with_table(
        ds, ds._s.table.rename_columns(names), "rename_column", {"old": old, "new": new}
    )


def concatenate_datasets(datasets: Sequence[Dataset]) -> Dataset:
    """Rows of ``datasets`` one after the other, without copying column data.

    Example:
        >>> import arrowmix as am
        >>> a, b = am.Dataset.from_dict({"x": [1, 2]}), am.Dataset.from_dict({"x": [3]})
        >>> am.concatenate_datasets([a, b])["x"]
        [1, 2, 3]
    """
    dsets = list(datasets)
    if not dsets:
        raise ValueError("`concatenate_datasets` needs at least one dataset.")
    first = dsets[0]
    for i, d in enumerate(dsets[1:], start=1):
        if not d.schema.equals(first.schema):
            raise SchemaMismatchError(
                f"Dataset {i} has a different schema from dataset 0:\n{d.schema}\n"
                f"dataset 0:\n{first.schema}"
            )
    tables = [d._s.table for d in dsets]
    if any(isinstance(t, RemoteTable) for t in tables):
        raise ValueError(
            "`concatenate_datasets` cannot join datasets read through a bounded remote cache "
            "(`from_chunks(..., cache_limit=...)`); open all their chunks with one "
            "`from_chunks([url, ...], cache_limit=...)` call, or mix their streams."
        )
    table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])  # type: ignore[misc]  # no RemoteTable here (checked above)
    mapping = None
    if any(d._s.indices is not None for d in dsets):
        parts, offset = [], 0
        for d in dsets:
            ix = d._s.indices or IndexMap.from_range(0, d._s.table.num_rows)
            parts.append(ix.to_numpy() + offset)
            offset += d._s.table.num_rows
        mapping = IndexMap.from_array(np.concatenate(parts))
    offsets: tuple[int, ...] | None = None
    if mapping is None and all(d._s.file_offsets for d in dsets):
        acc, base = [0], 0
        for d in dsets:
            acc.extend(base + o for o in d._s.file_offsets[1:])  # type: ignore[index]
            base += d._s.table.num_rows
        offsets = tuple(acc)
    fp = hash_value(("concatenate", [d.fingerprint for d in dsets]))
    s = first._s
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(f for d in dsets for f in d._s.files),
        file_offsets=offsets,
        fmt=s.fmt,
        fmt_columns=s.fmt_columns,
        cache_dir=s.cache_dir,
        storage_options=s.storage_options,
        holds=tuple(h for d in dsets for h in d._s.holds if h.path != d._s.indices_file),
    )
    out = Dataset(state)
    if mapping is not None:
        mapping, path = load_or_store(
            mapping, fp, out.cache_dir, fp, "concatenate_datasets", s.storage_options
        )
        holds = state.holds + hold_cache_files([path] if path else [])
        out = Dataset(replace(state, indices=mapping, indices_file=path, holds=holds))
    return out
