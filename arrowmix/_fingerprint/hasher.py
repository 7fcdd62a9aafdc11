"""A small streaming hasher over canonical encodings of Python values.

Values are encoded by type with a tag byte so that ``1``, ``"1"`` and ``b"1"`` differ, dicts and
sets are encoded in sorted order so insertion order never matters, and numpy / pyarrow arrays are
hashed by dtype, shape and raw values. Anything else goes through the deterministic pickler.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
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


def _encode(h: Any, v: Any) -> None:  # noqa: C901, PLR0912 - one branch per type
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
        h.update(struct.pack("<cQ", b"l" if isinstance(v, list) else b"t", len(v)))
        for item in v:
            _encode(h, item)
    elif isinstance(v, dict):
        items = sorted(((hash_value(k), k, val) for k, val in v.items()), key=lambda t: t[0])
        h.update(struct.pack("<cQ", b"d", len(items)))
        for kh, _, val in items:
            h.update(kh.encode())
            _encode(h, val)
    elif isinstance(v, (set, frozenset)):
        hs = sorted(hash_value(x) for x in v)
        h.update(struct.pack("<cQ", b"S", len(hs)))
        h.update("".join(hs).encode())
    elif isinstance(v, range):
        _encode(h, ("range", v.start, v.stop, v.step))
    elif isinstance(v, np.ndarray):
        arr = np.ascontiguousarray(v)
        _encode(h, ("ndarray", arr.dtype.str, list(arr.shape)))
        if arr.dtype == object:
            _encode(h, arr.tolist())
        else:
            h.update(memoryview(arr).cast("B"))
    elif isinstance(v, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        _encode_arrow(h, v)
    elif isinstance(v, pa.Schema):
        h.update(b"schema")
        h.update(v.serialize().to_pybytes())
    elif isinstance(v, pa.DataType):
        _encode(h, ("pa.DataType", str(v)))
    else:
        from arrowmix._fingerprint.pickler import dumps  # noqa: PLC0415 - dill is slow to import

        b = dumps(v)
        h.update(struct.pack("<cQ", b"p", len(b)))
        h.update(b)


def _encode_arrow(h: Any, v: Any) -> None:
    """Hash Arrow data independently of chunking and slicing (IPC of the combined data)."""
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
