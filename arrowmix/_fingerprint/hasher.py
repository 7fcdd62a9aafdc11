"""A small streaming hasher over canonical encodings of Python values.

Values are encoded by type with a tag byte so that ``1``, ``"1"`` and ``b"1"`` differ,
dicts and sets are encoded in sorted order so insertion order never matters, and numpy /
pyarrow arrays are hashed by dtype, shape and raw values. Anything else goes through the
deterministic pickler.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

__all__ = ["Hasher", "hash_bytes", "hash_value"]


class Hasher:
    """Incremental xxh3-64 hasher of canonically encoded values.

    Example:
        >>> h = Hasher()
        >>> h.update({"b": 1, "a": [1, 2]})
        >>> h.hexdigest() == hash_value({"a": [1, 2], "b": 1})
        True
    """

    def __init__(self) -> None:
        self._h = xxhash.xxh3_64()

    def update(self, value: Any) -> None:
        """Add one value to the hash."""
        _encode(self._h, value)

    def update_bytes(self, data: bytes | memoryview) -> None:
        """Add raw bytes (length-prefixed, so consecutive calls stay unambiguous)."""
        self._h.update(struct.pack("<cQ", b"R", len(data)))
        self._h.update(data)

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
    elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        s = str(int(v)).encode()
        h.update(struct.pack("<cI", b"i", len(s)) + s)
    elif isinstance(v, (float, np.floating)):
        f = float(v)
        h.update(b"f" + (b"nan" if math.isnan(f) else struct.pack("<d", f)))
    elif isinstance(v, str):
        b = v.encode("utf-8")
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


# Containers at least this long whose items all share one scalar type are hashed through
# Arrow (conversion, sort and hashing in C++): a 200k-entry vocabulary costs a few ms,
# not 0.3 s.
BIG_CONTAINER = 512
_ARROW_SCALAR_TYPES: dict[type, pa.DataType] = {
    str: pa.large_string(),
    bytes: pa.large_binary(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


def _homogeneous_arrow_type(values: Any) -> pa.DataType | None:
    types = set(map(type, values))
    if len(types) != 1:
        return None
    return _ARROW_SCALAR_TYPES.get(types.pop())


def _to_arrow(values: list[Any], typ: pa.DataType) -> pa.Array[Any] | None:
    try:
        return pa.array(values, type=typ)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # e.g. ints beyond int64: the generic encoding handles them


def _encode_big_sequence(h: Any, v: list[Any] | tuple[Any, ...]) -> bool:
    if len(v) < BIG_CONTAINER:
        return False
    typ = _homogeneous_arrow_type(v)
    arr = None if typ is None else _to_arrow(list(v), typ)
    if arr is None:
        return False
    h.update(b"L" if isinstance(v, list) else b"U")
    _encode_arrow(h, arr)
    return True


def _encode_dict(h: Any, v: dict[Any, Any]) -> None:
    if len(v) >= BIG_CONTAINER:
        ktype = _homogeneous_arrow_type(v)
        vtype = None if ktype is None else _homogeneous_arrow_type(v.values())
        keys = None if ktype is None else _to_arrow(list(v), ktype)
        vals = (
            None
            if vtype is None or keys is None
            else _to_arrow(list(v.values()), vtype)
        )
        if keys is not None and vals is not None:
            # Keys are unique, so sorting by key alone gives one canonical order.
            order = pc.sort_indices(keys)
            h.update(b"D")
            _encode_arrow(h, pa.table({"k": keys.take(order), "v": vals.take(order)}))
            return
    h.update(struct.pack("<cQ", b"d", len(v)))
    if all(type(k) is str for k in v):
        for k in sorted(v):
            _encode(h, k)
            _encode(h, v[k])
        return
    # Mixed or non-string keys: order by the keys' own canonical hashes.
    items = sorted(((hash_value(k), val) for k, val in v.items()), key=lambda t: t[0])
    for kh, val in items:
        h.update(b"k" + kh.encode())
        _encode(h, val)


def _encode_set(h: Any, v: set[Any] | frozenset[Any]) -> None:
    if len(v) >= BIG_CONTAINER:
        typ = _homogeneous_arrow_type(v)
        arr = None if typ is None else _to_arrow(list(v), typ)
        if arr is not None:
            h.update(b"Z")
            _encode_arrow(h, arr.take(pc.sort_indices(arr)))
            return
    hs = sorted(hash_value(x) for x in v)
    h.update(struct.pack("<cQ", b"S", len(hs)))
    h.update("".join(hs).encode())


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
