"""Mosaic Streaming (MDS) shards read in place: ``Dataset.from_mds(path)``.

Nothing is converted. Opening reads ``index.json`` and checks that every shard file exists
with the size the index records; the fingerprint names the bytes of the index and of every
shard (content digests, answered by the digest cache for files already hashed), and the
columns read. A read decodes the shards it touches, only the columns it reads, into the
bounded cache of decoded columns that Parquet read in place uses (``cache_size`` bytes,
``"256MB"`` by default). Shards are the chunks a stream's ``"chunks"`` shuffle and chunk
sharding read whole. Before it decodes a shard, a read checks that its file is still the
version opened: a shard replaced or rewritten after open raises
:class:`~arrowmix.exceptions.ChunkFileError` naming it.

Column types (see :mod:`arrowmix._storage.mds`): numeric scalars and ``int`` as Arrow
numbers, ``str``/``bytes`` as ``string``/``binary``, ``ndarray`` as (nested) lists of its
dtype (a 1-d token array is a ``list<uint16>`` or ``list<int32>`` ... column, which the token
path reads), ``json``/``pkl`` as the type Arrow infers from the first shard's values. ``pkl``
columns run pickle on load, so, as with Mosaic Streaming, they are read only with
``allow_unsafe_types=True``.

``map``/``filter`` results go to ``cache_dir=`` or ``<cache root>/in-place``, never beside
the shards. ``mosaicml-streaming`` is not needed to read.
"""

from __future__ import annotations

import os
import threading
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
)

__all__ = ["MDSTable", "from_mds"]


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
                        self.cache_size, names, self._decoded)  # fmt: skip

    def replace_schema_metadata(self, metadata: Any = None) -> MDSTable:
        return self._with(self.names, self.stored_schema.with_metadata(metadata or {}))

    def group_columns(self, k: int, stored: Sequence[str]) -> list[pa.ChunkedArray[Any]]:
        """The stored columns ``stored`` of shard ``k``, decoded (or from the cache)."""
        found = {c: self._decoded.get((k, c)) for c in stored}
        missing = [c for c, col in found.items() if col is None]
        if missing:
            shard = self.shards[k]
            with self._reading:
                got = decode_columns(shard_bytes(shard), shard, self.mds_columns, missing)
            for c in missing:
                found[c] = column = got[c]
                self._decoded.put((k, c), column)
        return [found[c] for c in stored]  # type: ignore[misc]

    opened_as = "MDS shards read in place (`from_mds(path)`)"
    stats_name = "mds"  # pickles as its description (shard paths, versions, digests, columns)


def _directories(path_or_paths: Any) -> list[str]:
    from arrowmix._storage.fs import is_local, local_path

    items = [path_or_paths] if isinstance(path_or_paths, (str, os.PathLike)) else path_or_paths
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
    shards: Sequence[Shard], columns: list[Column], read: Sequence[str], decoded: Decoded
) -> list[Column]:
    """``columns`` with the Arrow types of those ``read``.

    Types only the values tell come from the first shard holding samples (its decoded
    columns are kept in ``decoded``).
    """
    typed = [Column(c.name, c.encoding, c.size, column_type(c)) if c.name in read else c
             for c in columns]  # fmt: skip
    unknown = [c.name for c in typed if c.name in read and c.kind is None]
    first = next((k for k, s in enumerate(shards) if s.samples), None)
    if not unknown:
        return typed
    got: dict[str, pa.ChunkedArray[Any]] = {}
    if first is not None:
        got = decode_columns(shard_bytes(shards[first]), shards[first], typed, unknown)
        for name, column in got.items():
            decoded.put((first, name), column)
    return [Column(c.name, c.encoding, c.size, got[c.name].type if got else pa.null())
            if c.name in unknown else c for c in typed]  # fmt: skip


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
    decoded = Decoded(size)
    mds_columns = _typed(shards, all_columns, read, decoded)
    typed = {c.name: c for c in mds_columns}
    schema = pa.schema([pa.field(n, typed[n].kind or pa.null()) for n in read])
    table = MDSTable(shards, mds_columns, schema, size, decoded=decoded)
    fp = hash_value(("from_mds", digests, [s.digest for s in shards], read))
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(s.path for s in shards),
        file_offsets=tuple(int(x) for x in table.offsets),  # shards: the chunks read whole
        indices=None,
        cache_dir=_results_dir(cache_dir),
    )
    return Dataset(state)
