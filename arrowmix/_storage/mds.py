"""Mosaic Streaming's MDS shards: the ``index.json``, and one shard's columns as Arrow arrays.

An MDS dataset is a directory holding ``index.json`` (format version 2) and its shards. The
index lists every shard: its column names, encodings and fixed sizes, its sample count, and
its file: ``raw_data`` (``shard.NNNNN.mds``) and, when written with ``compression=``,
``zip_data`` (``shard.NNNNN.mds.zstd`` ...; the writer then keeps only that file).

A shard file is ``[samples: u32] [offsets: (samples + 1) x u32] [config JSON] [samples]``;
sample ``j`` spans bytes ``offsets[j]:offsets[j + 1]``: first a ``u32`` size for each column
without a fixed size, then each column's bytes in order. :func:`decode_columns` finds every
sample's column spans with numpy (no Python loop over samples) and turns the spans of one
column into one Arrow array:

========================================  =====================================================
encoding                                  Arrow type
========================================  =====================================================
``int``, ``int8`` ... ``uint64``,         ``int64``, ``int8`` ... ``float64``
``float16`` ... ``float64``
``str``, ``bytes``                        ``string`` (UTF-8 checked), ``binary``
``str_int``, ``str_float``                ``int64``, ``float64``
``ndarray[:dtype[:shape]]``               ``list<dtype>`` (nested once per further axis)
``json``                                  ``arrow.json`` (HF's ``Json()``): the JSON text
``pkl``                                   the Arrow type of every shard's values, unified
``jpeg``, ``png``                         ``binary``: the encoded image file's bytes
========================================  =====================================================

A ``json`` column keeps each sample's JSON text as written (checked to parse), in Arrow's
``arrow.json`` type: reading it in the Python format gives the values streaming's reader
gives, whatever their shapes in different shards. A ``pkl`` column's values are typed by
Arrow shard by shard at open and the types unified (:func:`unify_types`: a struct gains the
keys of every shard, ints among floats become floats); values of kinds no one type holds are
refused, naming the shards.

``pil``, ``list[...]``, ``jpeg_array`` and ``str_decimal`` are refused at open, naming the
column. A compressed shard is decompressed in memory (pyarrow's codecs for ``zstd``, ``br``
and ``snappy``; the standard library's for ``gz`` and ``bz2``) each time columns of it are
decoded; an uncompressed one is memory-mapped.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import itertools
import json
import mmap
import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._storage.in_place import FileVersion, OpenedFile
from arrowmix._storage.shard_hashes import declared_hashes, verify_hashes
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError

__all__ = [
    "Column",
    "Shard",
    "decode_columns",
    "read_index",
    "same_columns",
    "shard_bytes",
    "unify_types",
]

_SCALARS: dict[str, Any] = {
    "int": np.int64,
    **{name: getattr(np, name) for name in (
        "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        "float16", "float32", "float64")},
}  # fmt: skip
_BYTES: dict[str, pa.DataType] = {
    "str": pa.string(), "bytes": pa.binary(), "jpeg": pa.binary(), "png": pa.binary()
}  # fmt: skip
_PARSED: dict[str, pa.DataType] = {"str_int": pa.int64(), "str_float": pa.float64()}
_PYTHON = {"json", "pkl"}
#: The ndarray encoding's dtype codes (one byte before the values when the dtype is not fixed).
_NDARRAY_CODES = {
    8: "uint8", 9: "int8", 16: "uint16", 17: "int16", 18: "float16", 32: "uint32",
    33: "int32", 34: "float32", 64: "uint64", 65: "int64", 66: "float64",
}  # fmt: skip
_CODECS = {"zstd": "zstd", "br": "brotli", "snappy": "snappy"}
#: Bytes (or elements) one Arrow array with 32-bit offsets holds.
_ARRAY_LIMIT = (1 << 31) - 1


@dataclass(frozen=True)
class Column:
    """One MDS column: its name, encoding, fixed size in bytes (or None), and Arrow type.

    ``kind`` is None until the first shard was read, for an encoding whose type only the
    values tell (``json``, ``pkl``, ``ndarray`` without dtype or shape).
    """

    name: str
    encoding: str
    size: int | None
    kind: pa.DataType | None = None

    @property
    def ndarray(self) -> tuple[str | None, tuple[int, ...] | None] | None:
        """``(dtype, shape)`` of an ``ndarray`` encoding (each None when not fixed)."""
        if self.encoding != "ndarray" and not self.encoding.startswith("ndarray:"):
            return None
        parts = self.encoding.split(":")[1:]
        dtype = parts[0] if parts else None
        shape = tuple(int(x) for x in parts[1].split(",")) if len(parts) > 1 else None
        return dtype, shape


def column_type(column: Column) -> pa.DataType | None:
    """The Arrow type of ``column`` known from its encoding alone (None: the values tell)."""
    enc = column.encoding
    if enc in _SCALARS:
        return pa.from_numpy_dtype(_SCALARS[enc])
    if enc in _BYTES:
        return _BYTES[enc]
    if enc in _PARSED:
        return _PARSED[enc]
    if enc == "json":
        return pa.json_()
    nd = column.ndarray
    if nd is not None and nd[0] is not None and nd[1] is not None:
        kind: pa.DataType = pa.from_numpy_dtype(np.dtype(nd[0]))
        for _ in nd[1]:
            kind = pa.list_(kind)
        return kind
    return None


def check_encoding(column: Column, where: str) -> None:
    """Refuse an encoding this reader does not decode, naming the column."""
    enc = column.encoding
    nd = column.ndarray
    if nd is not None and (nd[0] is None or nd[0] in _NDARRAY_CODES.values()):
        return
    if enc in _SCALARS or enc in _BYTES or enc in _PARSED or enc in _PYTHON:
        return
    raise ValueError(
        f"MDS column {column.name!r} of {where} has the encoding {enc!r}, which "
        "`from_mds` does not read (it reads int, the numeric scalars, str, bytes, str_int, "
        "str_float, ndarray, json, pkl, and jpeg/png as encoded bytes). Leave it out with "
        "`columns=`."
    )


@dataclass(frozen=True)
class Shard(OpenedFile):
    """One shard as opened: the file read, its version and digest, and the index's facts."""

    #: The file read (the raw file when present, else the compressed one) as opened.
    version: FileVersion
    #: The algorithm the file is compressed with (``zstd``, ``br``, ...), or None.
    compression: str | None
    raw_bytes: int
    samples: int
    digest: str
    #: The hashes ``index.json`` declares for the file read: ``((algorithm, hex), ...)``.
    hashes: tuple[tuple[str, str], ...] = ()
    kind: ClassVar[str] = "MDS shard"


def _index_error(path: str, problem: str) -> ChunkFileError:
    return ChunkFileError(f"MDS index {path!r} {problem}")


def read_index(
    directory: str, digest: Callable[[str], str]
) -> tuple[list[Column], list[Shard], str]:
    """The columns and shards ``directory/index.json`` lists, and the index's own digest.

    ``digest(path)`` gives a file's content digest. Every shard's file must exist with the
    size the index records.

    Raises:
        ChunkFileError: the index is missing or not an MDS index (named), or a shard file
            is missing or of another size than the index says (named).
        SchemaMismatchError: a shard has other columns than the first shard (named).
    """
    path = os.path.join(directory, "index.json")
    try:
        with open(path, "rb") as f:
            index = json.loads(f.read())
    except FileNotFoundError as exc:
        raise _index_error(path, "does not exist: is this an MDS dataset directory?") from exc
    except (OSError, ValueError) as exc:
        raise _index_error(path, f"is not readable JSON: {exc}") from exc
    shards_meta = index.get("shards") if isinstance(index, dict) else None
    if not isinstance(shards_meta, list):
        raise _index_error(path, "has no list of `shards`: not an MDS index.")
    columns: list[Column] | None = None
    shards: list[Shard] = []
    for k, meta in enumerate(shards_meta):
        try:
            cols, shard = _shard(directory, meta)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, SchemaMismatchError):
                raise
            raise _index_error(path, f"describes shard {k} badly: {exc!r}") from exc
        if columns is None:
            columns = cols
        else:
            same_columns(cols, columns, f"MDS shard {shard.path!r}", "the first shard")
        found = digest(shard.path)
        shard.check()  # the digest is of the version opened
        shards.append(dataclasses.replace(shard, digest=found))
    return columns or [], shards, digest(path)


def same_columns(cols: Sequence[Column], first: Sequence[Column], what: str, than: str) -> None:
    """Refuse ``cols`` (of ``what``) unless they are ``first``'s names and encodings.

    Raises:
        SchemaMismatchError: they differ (both listed).
    """
    if [(c.name, c.encoding) for c in cols] != [(c.name, c.encoding) for c in first]:
        raise SchemaMismatchError(
            f"{what} has other columns than {than}: {_described(cols)} vs {_described(first)}."
        )


def _described(cols: Sequence[Column]) -> str:
    return ", ".join(f"{c.name}:{c.encoding}" for c in cols)


def _shard(directory: str, meta: dict[str, Any]) -> tuple[list[Column], Shard]:
    if meta.get("format") != "mds" or meta.get("version") != 2:
        raise ValueError(
            f"format {meta.get('format')!r} version {meta.get('version')!r} (expected mds, 2)"
        )
    names, encodings, sizes = meta["column_names"], meta["column_encodings"], meta["column_sizes"]
    if not len(names) == len(encodings) == len(sizes):
        raise ValueError("column_names, column_encodings and column_sizes differ in length")
    cols = [Column(str(n), str(e), None if s is None else int(s))
            for n, e, s in zip(names, encodings, sizes, strict=True)]  # fmt: skip
    raw, zipped = meta["raw_data"], meta.get("zip_data")
    raw_path = os.path.join(directory, raw["basename"])
    candidates: list[tuple[str, str | None, int]] = [(raw_path, None, int(raw["bytes"]))]
    if zipped:
        codec = str(meta.get("compression") or "").split(":")[0]
        candidates.append((os.path.join(directory, zipped["basename"]), codec,
                           int(zipped["bytes"])))  # fmt: skip
    infos = [raw, zipped]
    for (file, algorithm, expected), info in zip(candidates, infos, strict=False):
        try:  # the raw file first: no decompression
            version = FileVersion.of(file)
        except FileNotFoundError:
            continue
        if version.size != expected:
            raise ChunkFileError(
                f"MDS shard {file!r} is {version.size} bytes; index.json says {expected} "
                "(truncated, or written by another run?)."
            )
        if algorithm is not None and algorithm not in (*_CODECS, "gz", "bz2"):
            raise ChunkFileError(f"MDS shard {file!r} has an unknown compression {algorithm!r}.")
        shard = Shard(version, algorithm, int(raw["bytes"]), int(meta["samples"]), "",
                      declared_hashes(info))  # fmt: skip
        return cols, shard
    raise ChunkFileError(
        f"MDS shard {candidates[-1][0]!r} (listed in {directory!r}/index.json) does not exist."
    )


def shard_bytes(shard: Shard) -> np.ndarray:
    """The shard's uncompressed bytes (``uint8``): memory-mapped, or decompressed now.

    Checked first: the file is the version opened (:mod:`arrowmix._storage.in_place`), and
    its bytes hash to what index.json declares, when it declares hashes
    (:mod:`arrowmix._storage.shard_hashes`, once per file version).

    Raises:
        ChunkFileError: the file changed since it was opened, does not hash to what the
            index declares, or does not decompress to the size the index says (named).
    """
    shard.check()
    if shard.compression is None:
        if shard.size == 0:
            return np.zeros(0, dtype=np.uint8)
        with open(shard.path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        verify_hashes(shard.version, shard.hashes, mapped)
        return np.frombuffer(mapped, dtype=np.uint8)
    with open(shard.path, "rb") as f:
        data = f.read()
    shard.check()  # the bytes read are the version opened
    verify_hashes(shard.version, shard.hashes, data)
    try:
        if shard.compression in _CODECS:
            codec = pa.Codec(_CODECS[shard.compression])  # type: ignore[arg-type]
            out: Any = codec.decompress(data, decompressed_size=shard.raw_bytes)
        else:
            out = (gzip if shard.compression == "gz" else bz2).decompress(data)
    except (OSError, ValueError, EOFError, pa.ArrowException) as exc:
        raise ChunkFileError(
            f"MDS shard {shard.path!r} does not decompress ({shard.compression}): {exc}"
        ) from exc
    got = np.frombuffer(out, dtype=np.uint8)
    if len(got) != shard.raw_bytes:
        raise ChunkFileError(
            f"MDS shard {shard.path!r} decompresses to {len(got)} bytes; index.json says "
            f"{shard.raw_bytes}."
        )
    return got


def _damaged(shard: Shard, problem: str) -> ChunkFileError:
    return ChunkFileError(f"MDS shard {shard.path!r} is damaged: {problem}")


def sample_spans(
    buf: np.ndarray, shard: Shard, columns: Sequence[Column]
) -> tuple[np.ndarray, np.ndarray]:
    """Every sample's ``(starts, sizes)``, each ``(samples, columns)`` ``int64``.

    Raises:
        ChunkFileError: the sample count, offsets or sizes disagree with the file (named).
    """
    n = shard.samples
    head = 4 * (n + 2)
    if len(buf) < head or int(buf[:4].view(np.uint32)[0]) != n:
        raise _damaged(shard, f"its header does not hold the {n} samples index.json says.")
    offsets = buf[4:head].view(np.uint32).astype(np.int64)
    if n and (offsets[0] < head or offsets[-1] != len(buf) or (np.diff(offsets) < 0).any()):
        raise _damaged(shard, "its sample offsets are out of order or out of the file.")
    begins, lengths = offsets[:-1], np.diff(offsets)
    dynamic = [c for c, col in enumerate(columns) if col.size is None]
    sizes = np.empty((n, len(columns)), dtype=np.int64)
    header = 4 * len(dynamic)
    if dynamic:
        if (lengths < header).any():
            raise _damaged(shard, "a sample is shorter than its column sizes.")
        raw = buf[begins[:, None] + np.arange(header)]
        sizes[:, dynamic] = np.ascontiguousarray(raw).view(np.uint32).reshape(n, len(dynamic))
    for c, col in enumerate(columns):
        if col.size is not None:
            sizes[:, c] = col.size
    if n and (sizes.sum(axis=1) + header != lengths).any():
        j = int(np.flatnonzero(sizes.sum(axis=1) + header != lengths)[0])
        raise _damaged(shard, f"sample {j}'s column sizes do not add up to its length.")
    starts = begins[:, None] + header + np.cumsum(sizes, axis=1) - sizes
    return starts, sizes


def _gather(buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The bytes ``buf[starts[j]:starts[j] + sizes[j]]`` of every ``j``, concatenated.

    Spans of one size (a fixed-size column) are one 2-d take; spans of 64 bytes or more
    on average are joined slice by slice (a copy per span, no index per byte); shorter
    ones are one take of every byte's index.
    """
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint8)
    if (sizes == sizes[0]).all():
        return buf[starts[:, None] + np.arange(int(sizes[0]))].reshape(-1)
    if total >= 64 * len(sizes):
        view = memoryview(buf)  # type: ignore[arg-type]
        spans = zip(starts.tolist(), (starts + sizes).tolist(), strict=True)
        return np.frombuffer(b"".join([view[a:b] for a, b in spans]), dtype=np.uint8)
    before = np.cumsum(sizes) - sizes
    return buf[np.repeat(starts - before, sizes) + np.arange(total, dtype=np.int64)]


def _pieces(sizes: np.ndarray) -> list[tuple[int, int]]:
    """Sample ranges whose ``sizes`` each sum below one 32-bit-offset array's limit."""
    ends = np.cumsum(sizes)
    cuts, base = [0], 0
    while cuts[-1] < len(sizes):
        nxt = int(np.searchsorted(ends, base + _ARRAY_LIMIT, side="right"))
        nxt = max(nxt, cuts[-1] + 1)
        cuts.append(nxt)
        base = int(ends[nxt - 1])
    return list(itertools.pairwise(cuts))


def _bytes_array(values: np.ndarray, sizes: np.ndarray, kind: pa.DataType) -> Any:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    buffers = [None, pa.py_buffer(offsets.data), pa.py_buffer(values.data)]
    return pa.Array.from_buffers(kind, len(sizes), buffers)


def _ndarray(
    buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, column: Column, shard: Shard
) -> Any:
    """One piece of an ``ndarray`` column: nested lists of its dtype."""
    nd = column.ndarray
    assert nd is not None
    dtype: str | None
    dtype, shape = nd
    pos, n = starts.copy(), len(starts)
    if dtype is None:
        codes = buf[pos]
        first = _NDARRAY_CODES.get(int(codes[0])) if n else None
        dtype = _leaf(column.kind) or first
        if n and (first is None or (codes != codes[0]).any() or first != dtype):
            raise _damaged(shard, f"ndarray column {column.name!r} mixes dtypes (or an unknown "
                           "dtype code): `from_mds` reads one dtype per column.")  # fmt: skip
        pos = pos + 1
    if shape is None:
        flags = buf[pos].astype(np.int64)
        ndims = flags >> 2
        if n and (ndims != ndims[0]).any():
            raise _damaged(shard, f"ndarray column {column.name!r} mixes numbers of axes.")
        ndim = int(ndims[0]) if n else 1
        shapes = np.empty((n, ndim), dtype=np.int64)
        for code in np.unique(flags & 3).tolist():
            rows = np.flatnonzero((flags & 3) == code)
            width = 1 << code
            raw = buf[pos[rows, None] + 1 + np.arange(ndim * width)]
            view = np.ascontiguousarray(raw).view(f"<u{width}").reshape(len(rows), ndim)
            shapes[rows] = view
            pos[rows] += 1 + ndim * width
    else:
        shapes = np.tile(np.asarray(shape, dtype=np.int64), (n, 1))
    np_dtype = np.dtype(str(dtype))
    value_sizes = starts + sizes - pos
    if (value_sizes != shapes.prod(axis=1) * np_dtype.itemsize).any():
        raise _damaged(shard, f"ndarray column {column.name!r}: a sample's values do not fill "
                       "its shape.")  # fmt: skip
    array: Any = pa.array(_gather(buf, pos, value_sizes).view(np_dtype))
    for axis in range(shapes.shape[1] - 1, -1, -1):
        lengths = np.repeat(shapes[:, axis], shapes[:, :axis].prod(axis=1))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        array = pa.ListArray.from_arrays(pa.array(offsets), array)  # type: ignore[call-overload]
    return array


def _leaf(kind: pa.DataType | None) -> str | None:
    """The numpy dtype name of the values of the (nested) list type ``kind``."""
    while kind is not None and pa.types.is_list(kind):
        kind = kind.value_type
    return None if kind is None else np.dtype(kind.to_pandas_dtype()).name


def _python(
    buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, column: Column, shard: Shard
) -> Any:
    """One piece of a ``json`` column (its text) or a ``pkl`` column (its values, typed)."""
    load: Callable[[bytes], Any]
    load = pickle.loads if column.encoding == "pkl" else json.loads
    try:
        spans = zip(starts.tolist(), sizes.tolist(), strict=True)
        values = [load(buf[s : s + z].tobytes()) for s, z in spans]
    except Exception as exc:  # what json and pickle raise on damaged bytes varies
        raise _damaged(shard, f"column {column.name!r} holds a value that does not decode as "
                       f"{column.encoding}: {exc!r}") from exc  # fmt: skip
    if column.encoding == "json":  # the text as written: every value parsed above
        text = _bytes_array(_gather(buf, starts, sizes), sizes, pa.string())
        return pa.ExtensionArray.from_storage(pa.json_(), text)
    try:
        return pa.array(values, type=column.kind)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        what = (
            "values of no one Arrow type"
            if column.kind is None
            else f"values that do not take the type unified over every shard ({column.kind})"
        )
        raise SchemaMismatchError(
            f"MDS shard {shard.path!r}: column {column.name!r} ({column.encoding}) holds {what}: "
            f"{exc}. Leave it out with `columns=`."
        ) from exc


def unify_types(name: str, types: Sequence[tuple[str, pa.DataType]]) -> pa.DataType:
    """One Arrow type holding the values of every ``(shard path, type)`` of column ``name``.

    Arrow's permissive promotion: a struct gets every shard's fields, ints among floats are
    floats, a null type takes the other's.

    Raises:
        SchemaMismatchError: two shards' types have no common type (both named).
    """
    kind = types[0][1]
    for k, (path, t) in enumerate(types[1:], start=1):
        try:
            schemas = [pa.schema([pa.field(name, kind)]), pa.schema([pa.field(name, t)])]
            kind = pa.unify_schemas(schemas, promote_options="permissive").field(name).type
        except (pa.ArrowException, TypeError, ValueError) as exc:
            first = next(p for p, u in types[:k] if not pa.types.is_null(u))
            raise SchemaMismatchError(
                f"MDS column {name!r} holds values of {kind} in shard {first!r} and of {t} in "
                f"shard {path!r}, which no one Arrow type holds ({exc}). Leave it out with "
                "`columns=`."
            ) from exc
    return kind


def decode_columns(
    buf: np.ndarray, shard: Shard, columns: Sequence[Column], wanted: Sequence[str]
) -> dict[str, pa.ChunkedArray[Any]]:
    """The columns ``wanted`` of one shard (its bytes ``buf``), as Arrow data.

    Raises:
        ChunkFileError: the shard's layout or a value is damaged (the file named).
        SchemaMismatchError: a ``json``/``pkl`` column's values have another type here.
    """
    starts, sizes = sample_spans(buf, shard, columns)
    out: dict[str, pa.ChunkedArray[Any]] = {}
    for name in wanted:
        c = next(i for i, col in enumerate(columns) if col.name == name)
        col, s, z = columns[c], starts[:, c], sizes[:, c]
        pieces = [_column_piece(buf, s[a:b], z[a:b], col, shard) for a, b in _pieces(z)]
        kind: Any = col.kind or pieces[0].type
        out[name] = pa.chunked_array(pieces, type=kind)
    return out


def _column_piece(
    buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, column: Column, shard: Shard
) -> Any:
    enc = column.encoding
    if enc in _SCALARS:
        dtype = np.dtype(_SCALARS[enc])
        return pa.array(_gather(buf, starts, sizes).view(dtype))
    if enc in _BYTES or enc in _PARSED:
        kind = pa.string() if enc in _PARSED else _BYTES[enc]
        array = _bytes_array(_gather(buf, starts, sizes), sizes, kind)
        if kind == pa.string():
            try:
                array.validate(full=True)
            except pa.ArrowInvalid as exc:
                raise _damaged(shard, f"column {column.name!r} holds invalid UTF-8.") from exc
        if enc in _PARSED:
            try:
                return pc.cast(array, _PARSED[enc])
            except pa.ArrowInvalid as exc:
                raise ChunkFileError(
                    f"MDS shard {shard.path!r}: column {column.name!r} ({enc}) holds a value "
                    f"that is not an {_PARSED[enc]}: {exc}"
                ) from exc
        return array
    if enc in _PYTHON:
        return _python(buf, starts, sizes, column, shard)
    return _ndarray(buf, starts, sizes, column, shard)
