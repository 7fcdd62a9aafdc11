"""A small streaming hasher over canonical encodings of Python values.

Values are encoded by type with a tag byte so that ``1``, ``"1"`` and ``b"1"`` differ.
Dicts are encoded in insertion order (a Python dict is ordered, and code that iterates one
sees that order); sets are encoded in sorted order so that their arbitrary iteration order
never matters. numpy scalars are hashed with their dtype (``np.int32(2)`` differs from
``np.int64(2)`` and from ``2``), numpy / pyarrow arrays by dtype, shape and raw values
(Arrow data independently of chunking). Large containers of one scalar type (or lists /
tuples of such) are converted to Arrow and hashed in C++. Anything else goes through the
deterministic pickler.
"""

from __future__ import annotations

import itertools
import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

__all__ = [
    "BIG_CONTAINER",
    "Hasher",
    "big_container_digest",
    "hash_bytes",
    "hash_value",
]


class Hasher:
    """Incremental xxh3-64 hasher of canonically encoded values.

    Example:
        >>> h = Hasher()
        >>> h.update({"b": 1, "a": [1, 2]})
        >>> h.hexdigest() == hash_value({"b": 1, "a": [1, 2]})
        True
        >>> h.hexdigest() == hash_value({"a": [1, 2], "b": 1})  # dicts are ordered
        False
    """

    def __init__(self) -> None:
        self._h = xxhash.xxh3_64()

    def update(self, value: Any) -> None:
        """Add one value to the hash."""
        _encode(self._h, value)

    def hexdigest(self) -> str:
        """The 16-hex-character digest."""
        return self._h.hexdigest()


def hash_value(value: Any) -> str:
    """Hash one value canonically; 16 hex characters."""
    h = Hasher()
    h.update(value)
    return h.hexdigest()


def hash_bytes(data: bytes | memoryview) -> str:
    """xxh3-64 of raw bytes; 16 hex characters."""
    return xxhash.xxh3_64_hexdigest(data)


def _encode(h: Any, v: Any) -> None:
    if v is None:
        h.update(b"N")
    elif isinstance(v, bool):
        h.update(b"T" if v else b"F")
    elif isinstance(v, np.generic):
        # The dtype enters: np.int32(2), np.int64(2), np.float64(2) and 2 all differ.
        raw = v.tobytes()
        _encode(h, ("np.generic", v.dtype.str))
        h.update(struct.pack("<cQ", b"g", len(raw)) + raw)
    elif isinstance(v, int):
        s = str(int(v)).encode()
        h.update(struct.pack("<cI", b"i", len(s)) + s)
    elif isinstance(v, float):
        f = float(v)
        h.update(b"f" + (b"nan" if math.isnan(f) else struct.pack("<d", f)))
    elif isinstance(v, str):
        b = v.encode("utf-8", "surrogatepass")  # lone surrogates hash too
        h.update(struct.pack("<cQ", b"s", len(b)) + b)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        h.update(struct.pack("<cQ", b"b", len(v)))
        h.update(v)
    elif isinstance(v, (list, tuple)):
        if not _encode_big_sequence(h, v):
            h.update(struct.pack("<cQ", b"l" if isinstance(v, list) else b"t", len(v)))
            for item in v:
                _encode(h, item)
    elif isinstance(v, dict):
        _encode_dict(h, v)
    elif isinstance(v, (set, frozenset)):
        _encode_set(h, v)
    elif isinstance(v, range):
        _encode(h, ("range", v.start, v.stop, v.step))
    elif isinstance(v, np.ndarray):
        arr = np.ascontiguousarray(v)
        _encode(h, ("ndarray", arr.dtype.str, list(arr.shape)))
        if arr.dtype == object:
            _encode(h, arr.tolist())
        else:
            h.update(arr.data.cast("B"))
    elif isinstance(v, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        _encode_arrow(h, v)
    elif isinstance(v, pa.Schema):
        h.update(b"schema")
        h.update(v.serialize().to_pybytes())
    elif isinstance(v, pa.DataType):
        _encode(h, ("pa.DataType", str(v)))
    else:
        from arrowmix._fingerprint.pickler import dumps

        b = dumps(v)
        h.update(struct.pack("<cQ", b"p", len(b)))
        h.update(b)


# Containers at least this long whose items all share one scalar type (or are lists /
# tuples of such, nested) are hashed through Arrow: conversion, sort and hashing run in
# C++, so a 200k-entry vocabulary costs ~30 ms, not 0.3 s.
BIG_CONTAINER = 512
_ARROW_SCALAR_TYPES: dict[type, pa.DataType] = {
    str: pa.large_string(),
    bytes: pa.large_binary(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


def _column(values: list[Any]) -> tuple[str, pa.Array[Any]] | None:
    """Arrow array of ``values`` plus an exact type signature, if the types are uniform.

    ``values`` must all be of one scalar type, or all lists (or all tuples) whose items
    are, recursively. The signature (``"list[tuple[int]]"``) keeps list / tuple and
    int / float apart, which Arrow alone would not.
    """
    kinds = set(map(type, values))
    if len(kinds) > 1:
        return None
    kind = kinds.pop() if kinds else type(None)
    if kind in (list, tuple):
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        inner = _column(list(itertools.chain.from_iterable(values)))
        if inner is None:
            return None
        offsets_arr = pa.array(offsets, type=pa.int64())
        arr = pa.LargeListArray.from_arrays(offsets_arr, inner[1])
        return f"{kind.__name__}[{inner[0]}]", arr
    if kind is type(None) and not values:
        return "empty", pa.array([], pa.null())
    typ = _ARROW_SCALAR_TYPES.get(kind)
    if typ is None:
        return None
    try:
        return kind.__name__, pa.array(values, type=typ)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # e.g. ints beyond int64: the generic encoding handles them


def _encode_column(h: Any, tag: bytes, sig: str, table: pa.Table) -> None:
    h.update(tag)
    _encode(h, sig)
    _encode_arrow(h, table)


def _encode_big_sequence(h: Any, v: list[Any] | tuple[Any, ...]) -> bool:
    if len(v) < BIG_CONTAINER:
        return False
    col = _column(list(v))
    if col is None:
        return False
    _encode_column(h, b"L" if isinstance(v, list) else b"U", col[0], pa.table({"v": col[1]}))
    return True


def _encode_big_dict(h: Any, v: dict[Any, Any]) -> bool:
    if len(v) < BIG_CONTAINER:
        return False
    key_list = list(v)
    keys = _column(key_list)
    vals = None if keys is None else _column(list(v.values()))
    if keys is None or vals is None:
        return False
    # Insertion order, as the dict iterates: no sorting.
    table = pa.table({"k": keys[1], "v": vals[1]})
    _encode_column(h, b"D", f"{keys[0]}:{vals[0]}", table)
    return True


def _encode_dict(h: Any, v: dict[Any, Any]) -> None:
    if _encode_big_dict(h, v):
        return
    h.update(struct.pack("<cQ", b"d", len(v)))
    for k, val in v.items():
        _encode(h, k)
        _encode(h, val)


def _encode_big_set(h: Any, v: set[Any] | frozenset[Any]) -> bool:
    if len(v) < BIG_CONTAINER:
        return False
    col = _column(list(v))
    if col is None:
        return False
    _encode_column(h, b"Z", col[0], pa.table({"v": col[1].take(pc.sort_indices(col[1]))}))
    return True


def _encode_set(h: Any, v: set[Any] | frozenset[Any]) -> None:
    if _encode_big_set(h, v):
        return
    hs = sorted(hash_value(x) for x in v)
    h.update(struct.pack("<cQ", b"S", len(hs)))
    h.update("".join(hs).encode())


def big_container_digest(v: Any) -> str | None:
    """``hash_value(v)`` if ``v`` is a large container of one scalar type, else None.

    The check costs one pass over the items' types; the hashing runs in Arrow (C++).

    Example:
        >>> d = {f"w{i}": i for i in range(BIG_CONTAINER)}
        >>> big_container_digest(d) == hash_value(d)
        True
        >>> big_container_digest({"a": 1}) is None
        True
    """
    cached = _IMMUTABLE_DIGESTS.get(id(v))
    if cached is not None and cached[0] is v:
        return cached[1]
    h = xxhash.xxh3_64()
    if isinstance(v, dict):
        done = _encode_big_dict(h, v)
    elif isinstance(v, (set, frozenset)):
        done = _encode_big_set(h, v)
    elif isinstance(v, (list, tuple)):
        done = _encode_big_sequence(h, v)
    else:
        done = False
    if not done:
        return None
    digest = h.hexdigest()
    if type(v) is frozenset or (type(v) is tuple and type(v[0]) in _ARROW_SCALAR_TYPES):
        # A frozenset (hashable items) or a tuple of scalars can never change, so its
        # digest is kept, with the object itself so that its id stays valid.
        if len(_IMMUTABLE_DIGESTS) >= _IMMUTABLE_CACHE_SIZE:
            _IMMUTABLE_DIGESTS.pop(next(iter(_IMMUTABLE_DIGESTS)))
        _IMMUTABLE_DIGESTS[id(v)] = (v, digest)
    return digest


_IMMUTABLE_CACHE_SIZE = 64
_IMMUTABLE_DIGESTS: dict[int, tuple[Any, str]] = {}


def _encode_arrow(h: Any, v: Any) -> None:
    """Hash Arrow data independently of chunking and slicing (IPC of combined data)."""
    if isinstance(v, (pa.Array, pa.ChunkedArray)):
        v = pa.table({"_": v})
    elif isinstance(v, pa.RecordBatch):
        v = pa.Table.from_batches([v])
    table = v.combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    h.update(b"arrow")
    buf = sink.getvalue()
    h.update(struct.pack("<Q", buf.size))
    h.update(memoryview(buf))
