"""Mosaic Streaming (MDS) shards read in place: ``Dataset.from_mds(path)``.

Nothing is converted. Opening reads ``index.json`` and checks that every shard file exists
with the size the index records; the fingerprint names the bytes of the index and of every
shard (content digests, answered by the digest cache for files already hashed), and the
columns read. A read decodes the shards it touches, only the columns it reads, into the
bounded cache of decoded columns that Parquet read in place uses (``cache_size`` bytes,
``"256MB"`` by default). Shards are the chunks a stream's ``"chunks"`` shuffle and chunk
sharding read whole. Before and after it decodes a shard, a read checks that its file is
still the version opened (:mod:`arrowmix._storage.in_place`): a shard replaced or rewritten
after open raises :class:`~arrowmix.exceptions.ChunkFileError` naming it. The hashes the
index declares for a shard are checked at its first read, once per file version
(:mod:`arrowmix._storage.shard_hashes`).

A compressed shard is decompressed once for the columns a read asks of it; when columns of
it not decoded yet are read later (a token stage reads ``input_ids`` first and another
column afterwards, or ``ds[i]`` after a projection), its decompressed bytes come from a
second, small cache (:class:`RawShards`): the last decompressed shards, least recently used
out first, within a quarter of ``cache_size`` (64 MiB by default, which holds a shard of
Mosaic Streaming's default ``size_limit``). A shard larger than that budget is not kept.
Uncompressed shards are memory-mapped and need no such cache.

Column types (see :mod:`arrowmix._storage.mds`): numeric scalars and ``int`` as Arrow
numbers, ``str``/``bytes`` as ``string``/``binary``, ``ndarray`` as (nested) lists of its
dtype (a 1-d token array is a ``list<uint16>`` or ``list<int32>`` ... column, which the token
path reads), ``json`` as its JSON text (Arrow's ``arrow.json``, HF's ``Json()``: the Python
format reads the values back, whatever their shapes in different shards), ``pkl`` as the
Arrow type unified over every shard's values (each shard's ``pkl`` columns decoded once at
open). ``pkl`` columns run pickle on load, so, as with Mosaic Streaming, they are read only with
``allow_unsafe_types=True``.

``map``/``filter`` results go to ``cache_dir=`` or ``<cache root>/in-place``, never beside
the shards. ``mosaicml-streaming`` is not needed to read.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.tables.parquet import DEFAULT_CACHE, Decoded, ParquetTable
from arrowmix._storage.mds import (
    Column,
    Shard,
    check_encoding,
    column_type,
    decode_columns,
    read_index,
    same_columns,
    shard_bytes,
    unify_types,
)
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError

__all__ = ["MDSTable", "RawShards", "from_mds"]


class RawShards:
    """Decompressed bytes of the last compressed shards read, within ``limit`` bytes.

    Least recently used out first; a shard larger than ``limit`` is decompressed each time
    and not kept. Uncompressed shards pass through (memory-mapped, never kept). Before a
    cached shard is served its file is checked again (a ``stat``), so a shard replaced
    after open is still refused at its next decode. Thread-safe.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data: OrderedDict[int, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.decompressed = self.hits = 0

    def get(self, k: int, shard: Shard) -> np.ndarray:
        """The uncompressed bytes of shard ``k`` (``shard``), from the cache or read now."""
        if shard.compression is None:
            return shard_bytes(shard)
        with self._lock:
            found = self._data.get(k)
            if found is not None:
                self._data.move_to_end(k)
                self.hits += 1
        if found is not None:
            shard.check()
            return found
        data = shard_bytes(shard)
        with self._lock:
            self.decompressed += 1
            if len(data) <= self.limit and k not in self._data:
                self._data[k] = data
                self._bytes += len(data)
                while self._bytes > self.limit:
                    _, old = self._data.popitem(last=False)
                    self._bytes -= len(old)
        return data

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "shards_decompressed": self.decompressed,
                "shard_hits": self.hits,
                "shard_cached_bytes": self._bytes,
                "shard_limit": self.limit,
            }


class MDSTable(ParquetTable):
    """Samples of MDS shards read in place (module docstring).

    Args:
        shards: the shards, in order (of every directory opened).
        columns: every column of the shards (name, encoding, size); the Arrow type of those
            read.
        schema: the Arrow schema of the columns read (stored names).
        cache_size: bytes of decoded columns kept in memory.
        names: ``(stored column, exposed name)`` pairs; default every column of ``schema``.
    """

    def __init__(
        self,
        shards: Sequence[Shard],
        columns: Sequence[Column],
        schema: pa.Schema,
        cache_size: int = DEFAULT_CACHE,
        names: Sequence[tuple[str, str]] | None = None,
        decoded: Decoded | None = None,
        raw: RawShards | None = None,
    ) -> None:
        self.shards = tuple(shards)
        self.mds_columns = tuple(columns)
        self.files = ()
        self.stored_schema = schema
        self.cache_size = cache_size
        self.names = tuple(names) if names is not None else tuple((n, n) for n in schema.names)
        fields = [schema.field(src).with_name(out) for src, out in self.names]
        self.schema = pa.schema(fields, metadata=dict(schema.metadata or {}))  # type: ignore[arg-type]
        self.offsets = np.cumsum([0, *(s.samples for s in self.shards)], dtype=np.int64)
        self.groups = [(k, 0) for k in range(len(self.shards))]
        self._decoded = decoded if decoded is not None else Decoded(cache_size)
        self._raw = raw if raw is not None else RawShards(cache_size // 4)
        self._handles: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as its description: the other process checks and decodes the same files.
        args = (self.shards, self.mds_columns, self.stored_schema, self.cache_size, self.names)
        return (type(self), args)

    @property
    def nbytes(self) -> int:
        """Bytes of the shard files (compressed or not): what reading every row decodes from."""
        return sum(s.size for s in self.shards)

    def _with(self, names: Sequence[tuple[str, str]], schema: pa.Schema | None = None) -> MDSTable:
        return MDSTable(self.shards, self.mds_columns, schema or self.stored_schema,
                        self.cache_size, names, self._decoded, self._raw)  # fmt: skip

    def replace_schema_metadata(self, metadata: Any = None) -> MDSTable:
        return self._with(self.names, self.stored_schema.with_metadata(metadata or {}))

    def group_columns(self, k: int, stored: Sequence[str]) -> list[pa.ChunkedArray[Any]]:
        """The stored columns ``stored`` of shard ``k``, decoded (or from the cache)."""
        found = {c: self._decoded.get((k, c)) for c in stored}
        missing = [c for c, col in found.items() if col is None]
        if missing:
            shard = self.shards[k]
            with self._reading:
                got = _decoded_columns(self._raw, k, shard, self.mds_columns, missing)
            for c in missing:
                found[c] = column = got[c]
                self._decoded.put((k, c), column)
        return [found[c] for c in stored]  # type: ignore[misc]

    def stats(self) -> dict[str, Any]:
        """The decoded-column cache's counters, and the decompressed shards' (``shard_*``)."""
        return {**self._decoded.stats(), **self._raw.stats()}

    opened_as = "MDS shards read in place (`from_mds(path)`)"
    stats_name = "mds"  # pickles as its description (shard paths, versions, digests, columns)


def _decoded_columns(
    raw: RawShards, k: int, shard: Shard, columns: Sequence[Column], wanted: Sequence[str]
) -> dict[str, pa.ChunkedArray[Any]]:
    """The columns ``wanted`` of shard ``k``, decoded from a file that did not change meanwhile.

    The decoded columns are copies: a shard written while it was decoded is refused after
    the decode (or, when its bytes no longer add up, instead of a "damaged" error).
    """
    try:
        got = decode_columns(raw.get(k, shard), shard, columns, wanted)
    except (ChunkFileError, SchemaMismatchError):
        shard.check()  # written meanwhile: say that instead
        raise
    shard.check()
    return got


def _directories(path_or_paths: Any) -> list[str]:
    from arrowmix._storage.fs import is_local, local_path
    from arrowmix._storage.globs import path_specs

    items = path_specs(path_or_paths)
    dirs = []
    for item in items:
        text = os.fspath(item)
        if not is_local(text):
            raise ValueError(
                f"`from_mds` reads local MDS directories; {text!r} is remote. Download it "
                "first (Mosaic Streaming's `remote=`/`local=` copy, or `fsspec`)."
            )
        text = os.path.abspath(local_path(text))
        dirs.append(os.path.dirname(text) if os.path.basename(text) == "index.json" else text)
    if not dirs:
        raise ValueError("`from_mds` needs at least one MDS directory.")
    return dirs


def _typed(
    shards: Sequence[Shard],
    columns: list[Column],
    read: Sequence[str],
    decoded: Decoded,
    raw: RawShards,
) -> list[Column]:
    """``columns`` with the Arrow types of those ``read``.

    An untyped ``ndarray`` column's type comes from the first shard holding samples; a
    ``pkl`` column's is unified over every shard's values (each shard decoded once). The
    decoded columns whose type is the one found are kept in ``decoded``.
    """
    typed = [Column(c.name, c.encoding, c.size, column_type(c)) if c.name in read else c
             for c in columns]  # fmt: skip
    unknown = [c.name for c in typed if c.name in read and c.kind is None]
    pickled = [c.name for c in typed if c.name in unknown and c.encoding == "pkl"]
    found: dict[str, list[tuple[str, pa.DataType]]] = {name: [] for name in unknown}
    got: dict[tuple[int, str], pa.ChunkedArray[Any]] = {}
    for k, shard in enumerate(shards):
        wanted = unknown if not any(found[n] for n in unknown) else pickled
        if not shard.samples or not wanted:
            continue
        for name, column in _decoded_columns(raw, k, shard, typed, wanted).items():
            found[name].append((shard.path, column.type))
            got[k, name] = column
    kinds = {n: unify_types(n, found[n]) if found[n] else pa.null() for n in unknown}
    for (k, name), column in got.items():
        if column.type.equals(kinds[name]):
            decoded.put((k, name), column)
    return [Column(c.name, c.encoding, c.size, kinds[c.name]) if c.name in unknown else c
            for c in typed]  # fmt: skip


def from_mds(
    path_or_paths: Any,
    columns: Sequence[str] | None = None,
    cache_size: int | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    allow_unsafe_types: bool = False,
) -> Any:
    """``Dataset.from_mds(path, ...)``: see the module docstring.

    Raises:
        ChunkFileError: an ``index.json`` is missing or damaged, or a shard file is missing
            or of another size than the index says (named).
        SchemaMismatchError: directories or shards of other columns.
        ValueError: an unknown column, an encoding not read, a ``pkl`` column without
            ``allow_unsafe_types=True``, or a remote path.
    """
    from arrowmix._dataset.dataset import Dataset, DatasetState
    from arrowmix._dataset.tables.parquet import _results_dir
    from arrowmix._fingerprint.hasher import hash_value
    from arrowmix._remote.cache import parse_size
    from arrowmix._storage.digests import file_digest

    dirs = _directories(path_or_paths)
    all_columns: list[Column] | None = None
    shards: list[Shard] = []
    digests: list[str] = []
    for d in dirs:
        cols, found, index_digest = read_index(d, file_digest)
        if all_columns is None:
            all_columns = cols
        else:
            same_columns(cols, all_columns, f"MDS directory {d!r}", repr(dirs[0]))
        shards.extend(found)
        digests.append(index_digest)
    assert all_columns is not None
    names = [c.name for c in all_columns]
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise ValueError(f"Column {unknown[0]!r} is not in the MDS dataset {dirs[0]!r} "
                             f"(columns: {names}).")  # fmt: skip
    read = columns if columns is not None else names
    for col in all_columns:
        if col.name in read:
            check_encoding(col, repr(dirs[0]))
            if col.encoding == "pkl" and not allow_unsafe_types:
                raise ValueError(
                    f"MDS column {col.name!r} is pickled (`pkl`): loading it runs code from the "
                    "files. Pass allow_unsafe_types=True if you trust them (as Mosaic "
                    "Streaming asks), or leave the column out with `columns=`."
                )
    size = DEFAULT_CACHE if cache_size is None else parse_size(cache_size, "cache_size")
    decoded, raw = Decoded(size), RawShards(size // 4)
    mds_columns = _typed(shards, all_columns, read, decoded, raw)
    typed = {c.name: c for c in mds_columns}
    schema = pa.schema([pa.field(n, typed[n].kind or pa.null()) for n in read])
    table = MDSTable(shards, mds_columns, schema, size, decoded=decoded, raw=raw)
    # the columns' types name how values are decoded (json as text, pkl unified over every
    # shard): a change of decoding is a new dataset, so results derived under another recompute
    kinds = [(f.name, str(f.type)) for f in schema]
    fp = hash_value(("from_mds", digests, [s.digest for s in shards], read, kinds))
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(s.path for s in shards),
        file_offsets=tuple(int(x) for x in table.offsets),  # shards: the chunks read whole
        indices=None,
        cache_dir=_results_dir(cache_dir),
    )
    return Dataset(state)
