"""Indices mappings: a view of a base table through a range or an array of row positions.

A mapping is either a contiguous range (stored as two integers) or an int64 array. Composing
``outer[inner]`` keeps ranges as ranges where possible, so chained ``select``/``shard`` of
contiguous parts never allocate. Large arrays are stored as ``indices-<fingerprint>.arrow`` in
the cache directory and memory-mapped back (zero-copy numpy view), so a shuffled view of a huge
corpus costs disk, not RAM.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.paths import indices_file_name
from arrowmix._storage import fs, windows
from arrowmix._storage.atomic import remove_dead_tmp
from arrowmix._storage.ipc import open_table, read_meta, write_file
from arrowmix._warn import warn
from arrowmix.exceptions import (
    CacheCorruptedError,
    CacheWarning,
    ChunkFileError,
    InvalidTypeError,
)

__all__ = ["INDICES_FILE_MIN_ROWS", "IndexMap", "find_stored", "load_or_store", "to_positions"]

#: Mappings at least this long are written to an indices file instead of living in RAM only.
INDICES_FILE_MIN_ROWS = 100_000


@dataclass(frozen=True)
class IndexMap:
    """Row positions into a base table: ``range(start, stop)`` or an int64 ``array``."""

    start: int = 0
    stop: int = 0
    array: np.ndarray | None = None

    @classmethod
    def from_range(cls, start: int, stop: int) -> IndexMap:
        return cls(start=start, stop=max(start, stop))

    @classmethod
    def from_array(cls, array: np.ndarray) -> IndexMap:
        arr = np.asarray(array, dtype=np.int64)
        n = len(arr)
        if (
            n
            and int(arr[-1]) - int(arr[0]) + 1 == n
            and (n == 1 or bool(np.all(np.diff(arr) == 1)))
        ):
            return cls.from_range(int(arr[0]), int(arr[-1]) + 1)
        return cls(array=arr)

    def __len__(self) -> int:
        return len(self.array) if self.array is not None else self.stop - self.start

    @property
    def is_range(self) -> bool:
        return self.array is None

    def to_numpy(self) -> np.ndarray:
        if self.array is not None:
            return self.array
        return np.arange(self.start, self.stop, dtype=np.int64)

    def lookup(self, positions: np.ndarray) -> np.ndarray:
        """Base rows of view ``positions``."""
        if self.array is None:
            return np.asarray(positions, dtype=np.int64) + self.start
        return np.asarray(self.array[positions])

    def lookup_range(self, start: int, stop: int) -> IndexMap:
        """The sub-mapping of view rows ``[start, stop)``."""
        if self.array is None:
            return IndexMap.from_range(self.start + start, self.start + stop)
        return IndexMap(array=self.array[start:stop])

    def compose(self, inner: IndexMap) -> IndexMap:
        """``self[inner]``: apply ``inner`` (view positions) through this mapping."""
        if inner.array is None:
            return self.lookup_range(inner.start, inner.stop)
        return IndexMap.from_array(self.lookup(inner.array))


def to_positions(indices: Any, length: int) -> IndexMap:
    """Validate user indices (range, slice, list, numpy/pyarrow array, iterable of ints).

    Negative indices count from the end, as in Python and HF ``datasets``.

    Raises:
        IndexError: an index is not in ``[-length, length)``; the message names it.
        TypeError: an index is not an integer.
    """
    if isinstance(indices, range) and indices.step == 1 and indices.start >= 0:
        if len(indices) and indices.stop > length:
            _raise_index(indices.stop - 1, length)
        return IndexMap.from_range(indices.start, indices.stop)
    arr = _as_int_array(indices)
    if len(arr):
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -length:
            _raise_index(lo, length)
        if hi >= length:
            _raise_index(hi, length)
        if lo < 0:
            arr = np.where(arr < 0, arr + length, arr)
    return IndexMap.from_array(arr)


def _as_int_array(indices: Any) -> np.ndarray:
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        indices = indices.to_numpy()
    elif not isinstance(indices, (Iterable, np.ndarray)) or isinstance(
        indices, (str, bytes, Mapping)
    ):
        raise InvalidTypeError(
            f"`indices` must be a range, a list or an array of ints, got "
            f"{type(indices).__name__} {indices!r:.80}."
        )
    elif not isinstance(indices, np.ndarray):
        indices = np.fromiter(_check_ints(indices), dtype=np.int64)
    if indices.dtype.kind not in "iu" and len(indices):
        raise TypeError(f"`indices` must be integers, got dtype {indices.dtype}.")
    return np.asarray(indices, dtype=np.int64)


def _check_ints(values: Iterable[Any]) -> Iterable[int]:
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"`indices` must be integers; item {i} is {v!r}.")
        yield int(v)


def _raise_index(index: int, length: int) -> None:
    raise IndexError(f"Index {index} is out of range for a dataset of length {length}.")


def load_or_store(
    mapping: IndexMap,
    fingerprint: str,
    cache_dir: str,
    parent: str,
    transform: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    shipped: str | None = None,
    path: str | None = None,
    in_memory: bool = False,
    reuse: bool = True,
    sources: str | None = None,
) -> tuple[IndexMap, str | None]:
    """Back a large array mapping by ``indices-<fingerprint>.arrow``; return it and its path.

    ``cache_dir`` may be a URL (reached with ``storage_options``): the file is then an object,
    memory-mapped through its local read-through copy. A valid file of that name in the
    read-only directory ``shipped`` (a corpus that ships its cache) is used in place.

    HF's options: ``path`` (``indices_cache_file_name``) stores any array mapping, whatever
    its size, in that file; ``in_memory`` (``keep_in_memory``) stores none; ``reuse=False``
    (``load_from_cache_file=False``) writes the file again even when a valid one exists.

    ``sources`` (a digest of what the mapping was computed from) is recorded in the file, so
    that a later run finds it with :func:`find_stored` before computing the mapping; a valid
    file holding the mapping but another ``sources`` is written again.
    """
    if mapping.array is None or in_memory:
        return mapping, None
    if path is None and len(mapping) < INDICES_FILE_MIN_ROWS:
        return mapping, None
    name = indices_file_name(fingerprint)
    if path is None and shipped is not None and shipped != cache_dir:
        found = _shipped(mapping.array, os.path.join(shipped, name), fingerprint)
        if found is not None:
            return found, os.path.join(shipped, name)
    if path is None:
        path = fs.join(cache_dir, name)
    if reuse and fs.exists(path, storage_options):
        try:
            stored = open_indices(path, fingerprint, len(mapping), storage_options)
        except ChunkFileError as exc:  # damaged or foreign: written again below
            warn(f"{exc} Rewriting it.", CacheWarning)
        else:
            # The mapping is at hand: a file is only ever used when it holds exactly it (a
            # `new_fingerprint` given twice for different rows names the same file).
            equal = windows.equal(stored, mapping.array)
            if equal and (sources is None or _sources_of(path, storage_options) == sources):
                return IndexMap(array=stored), path
            if not equal:  # (else: the same rows, written again to record their sources)
                warn(
                    f"Indices file {path!r} holds other row positions than the view of "
                    f"fingerprint {fingerprint!r} it is named for; rewriting it.",
                    CacheWarning,
                )
    meta = {"fingerprint": fingerprint, "parent": parent, "transform": transform}
    if sources is not None:
        meta["sources"] = sources
    return _store(mapping.array, path, meta, storage_options), path


def _sources_of(path: str, storage_options: Mapping[str, Any] | None) -> Any:
    """The ``sources`` recorded in the (already checked) indices file at ``path``."""
    return read_meta(open_table(path, storage_options, check="checksum").schema).get("sources")


def _shipped(positions: np.ndarray, beside: str, fingerprint: str) -> IndexMap | None:
    """The mapping from the read-only file ``beside``, if it holds exactly ``positions``."""
    if not os.path.exists(beside):
        return None
    with contextlib.suppress(ChunkFileError):  # damaged or foreign: not used
        shipped_array = open_indices(beside, fingerprint, len(positions))
        if windows.equal(shipped_array, positions):
            return IndexMap(array=shipped_array)
    return None


def _store(
    positions: np.ndarray,
    path: str,
    meta: dict[str, Any],
    storage_options: Mapping[str, Any] | None,
) -> IndexMap:
    """Write ``positions`` to ``path`` (atomically) and return it memory-mapped from there."""
    if fs.is_local(path):  # temporary files of killed writers of this very file
        directory, base = fs.split(fs.local_path(path))
        remove_dead_tmp(directory, base.__eq__)
    contiguous: Any = np.ascontiguousarray(positions, dtype=np.int64)
    data = pa.py_buffer(contiguous)  # zero-copy
    column = pa.Array.from_buffers(pa.int64(), len(positions), [None, data])
    batch = pa.record_batch({"indices": column})
    meta = {
        "kind": "indices",
        "fingerprint": meta["fingerprint"],
        "parent": meta["parent"],
        "transform": meta["transform"],
        "rows": len(positions),
        "created": time.time(),
        **({"sources": meta["sources"]} if "sources" in meta else {}),
    }
    large = contiguous.nbytes > windows.WINDOW  # written a window at a time
    write_file(
        path, [batch], batch.schema, meta=meta, storage_options=storage_options, windowed=large
    )
    array = open_indices(path, meta["fingerprint"], len(positions), storage_options)
    return IndexMap(array=array)


def open_indices(
    path: str,
    fingerprint: str,
    rows: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Memory-map an indices file as a read-only int64 numpy array, checking it.

    Raises:
        CacheCorruptedError: the file fails its checksum or does not match its name.
        ChunkFileError: the file is missing or not an Arrow IPC file.
    """
    table = open_table(path, storage_options, check="checksum")
    meta = read_meta(table.schema)
    if meta.get("fingerprint") != fingerprint or (rows is not None and table.num_rows != rows):
        raise CacheCorruptedError(
            f"Indices file {path!r} does not match its name: metadata says fingerprint "
            f"{meta.get('fingerprint')!r} with {table.num_rows} rows, expected {fingerprint!r}"
            + (f" with {rows} rows." if rows is not None else ".")
        )
    col = table.column("indices")
    if col.num_chunks == 1 and col.chunk(0).null_count == 0:
        # A read-only view of the mapped file (pyarrow's to_numpy would import pandas).
        chunk: Any = col.chunk(0)
        data: Any = chunk.buffers()[1]
        if data is None:
            return np.empty(0, dtype=np.int64)
        return np.frombuffer(data, dtype=np.int64)[chunk.offset : chunk.offset + len(chunk)]
    return np.asarray(col.to_numpy(), dtype=np.int64)


def find_stored(
    fingerprint: str,
    cache_dir: str,
    rows: int,
    sources: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    shipped: str | None = None,
) -> tuple[IndexMap, str] | None:
    """The stored mapping named ``fingerprint`` made from ``sources``, without recomputing it.

    ``sources`` is a digest of everything the mapping was computed from (see
    :func:`load_or_store`), recorded in the file when it was written: a file that records the
    same value and ``rows`` positions holds the mapping, so it is memory-mapped without being
    compared with a recomputed one. None when there is no such file.
    """
    name = indices_file_name(fingerprint)
    places: list[tuple[str, Mapping[str, Any] | None]] = []
    if shipped is not None and shipped != cache_dir:
        places.append((os.path.join(shipped, name), None))
    places.append((fs.join(cache_dir, name), storage_options))
    for path, so in places:
        if not fs.exists(path, so):
            continue
        with contextlib.suppress(ChunkFileError):  # damaged or foreign: recomputed
            table = open_table(path, so, check="checksum")
            if read_meta(table.schema).get("sources") == sources:
                return IndexMap(array=open_indices(path, fingerprint, rows, so)), path
    return None
