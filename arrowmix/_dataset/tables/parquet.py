"""Parquet files read in place: ``Dataset.from_parquet(paths, in_place=True)``.

Nothing is converted. Each row group acts as a record batch: a read decodes the row groups it
touches, only the columns it reads, into a bounded in-process cache of decoded columns
(:class:`Decoded`, least recently used first out, ``cache_size`` bytes, ``"256MB"`` by
default), shared by every projection of the opened table. Arrow data handed out stays valid
after its row group leaves the cache (the cache only drops its reference), so nothing is
copied.

Opening reads each file's footer (row groups, schema) and its content digest (xxh3 of the
bytes, answered by the digest cache when the file's size, inode and times are those it
recorded): the fingerprint names the files' bytes, the columns and the filters. Before and
after it decodes a row group, a read checks that the file is still the version it opened
(:mod:`arrowmix._storage.in_place`): a file replaced, rewritten or truncated after open
raises :class:`~arrowmix.exceptions.ChunkFileError` naming it, never rows of another version.
Pages written with checksums (``write_page_checksum=True``) are verified as they decode.

``columns=`` selects columns (the others are never decoded); ``filters=`` (DNF lists as
``pyarrow.parquet`` and HF take them, or a ``pyarrow.compute`` expression) first drops the
row groups whose statistics exclude every row, then keeps the matching rows of the others
(the view's indices, computed once at open from the filter's columns only).

``map``/``filter`` results go to ``cache_dir=`` or ``<cache root>/in-place``, never beside the
Parquet files. A map's cache files hold only the columns it derives: its result reads the
columns it keeps here, in place (:mod:`arrowmix._dataset.tables.joined`).

Random access: ``ds[i]`` decodes the row group holding ``i`` (its read columns) once; the
next rows of that row group are then served from the cache.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Generator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from arrowmix._storage.digests import file_digest
from arrowmix._storage.in_place import FileVersion, OpenedFile
from arrowmix._storage.metadata import kept_metadata
from arrowmix._storage.projection import NamedColumns
from arrowmix._storage.take import int64_array
from arrowmix._stream.tokens import TokenColumn
from arrowmix._stream.tokens.pinned import PinnedTokenColumn
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.tables.protocol import Mapper
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.sources import Upcoming

__all__ = ["Decoded", "ParquetFile", "ParquetTable", "open_parquet_table"]

DEFAULT_CACHE = 256 << 20


@dataclass(frozen=True)
class ParquetFile(OpenedFile):
    """One Parquet file as opened: its version, digest, and the row groups kept."""

    version: FileVersion
    digest: str
    #: Indices of the row groups read (all, or those a filter's statistics keep).
    groups: tuple[int, ...]
    #: Rows of each of ``groups``.
    rows: tuple[int, ...]
    kind: ClassVar[str] = "Parquet file"


class Decoded:
    """Decoded columns of row groups, least recently used first out, within ``limit`` bytes.

    Keys are ``(row group, stored column)``. Thread-safe; one per opened table and process.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data: OrderedDict[tuple[int, str], pa.ChunkedArray[Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.decoded = self.hits = self.evicted = 0
        self.bytes_decoded = 0

    def get(self, key: tuple[int, str]) -> pa.ChunkedArray[Any] | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
                self.hits += 1
            return found

    def put(self, key: tuple[int, str], column: pa.ChunkedArray[Any]) -> None:
        size = int(column.nbytes)
        with self._lock:
            self.decoded += 1
            self.bytes_decoded += size
            if key in self._data:
                return
            self._data[key] = column
            self._bytes += size
            while self._bytes > self.limit and len(self._data) > 1:
                _, old = self._data.popitem(last=False)
                self._bytes -= int(old.nbytes)
                self.evicted += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "columns_decoded": self.decoded,
                "bytes_decoded": self.bytes_decoded,
                "hits": self.hits,
                "evicted": self.evicted,
                "cached_bytes": self._bytes,
                "limit": self.limit,
            }


class ParquetTable(NamedColumns):
    """Rows of Parquet files read in place (see the module docstring).

    Args:
        files: the files, in order, with the row groups kept.
        schema: their common Arrow schema (stored names; HF's metadata entry kept).
        cache_size: bytes of decoded columns kept in memory.
        names: ``(stored column, exposed name)`` pairs; default every column as stored.
    """

    def __init__(
        self,
        files: Sequence[ParquetFile],
        schema: pa.Schema,
        cache_size: int = DEFAULT_CACHE,
        names: Sequence[tuple[str, str]] | None = None,
        decoded: Decoded | None = None,
    ) -> None:
        self.files = tuple(files)
        self.stored_schema = schema
        self.cache_size = cache_size
        self.names = tuple(names) if names is not None else tuple((n, n) for n in schema.names)
        fields = [schema.field(src).with_name(out) for src, out in self.names]
        self.schema = pa.schema(fields, metadata=dict(schema.metadata or {}))  # type: ignore[arg-type]
        #: Every row group read, as ``(file, row group in the file)``.
        self.groups = [(f, g) for f, pf in enumerate(self.files) for g in pf.groups]
        rows = [r for pf in self.files for r in pf.rows]
        self.offsets = np.cumsum([0, *rows], dtype=np.int64)
        self._decoded = decoded if decoded is not None else Decoded(cache_size)
        self._handles: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # one decode at a time per table and process

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as its description: the other process opens the files and checks them.
        return (type(self), (self.files, self.stored_schema, self.cache_size, self.names))

    # ---- what pyarrow.Table has (with NamedColumns) -----------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes of the files (compressed): what reading every row decodes from."""
        return sum(f.size for f in self.files)

    def _with(
        self, names: Sequence[tuple[str, str]], schema: pa.Schema | None = None
    ) -> ParquetTable:
        return ParquetTable(
            self.files, schema or self.stored_schema, self.cache_size, names, self._decoded
        )

    def replace_schema_metadata(self, metadata: Any = None) -> ParquetTable:
        schema = self.stored_schema.with_metadata(metadata or {})
        return self._with(self.names, schema)

    # ---- decoding -------------------------------------------------------------------
    def _handle(self, f: int) -> Any:
        import pyarrow.parquet as pq

        with self._lock:
            handle = self._handles.get(f)
            if handle is None:
                path = self.files[f].path
                try:
                    handle = self._handles[f] = pq.ParquetFile(
                        path, memory_map=True, page_checksum_verification=True
                    )
                except (OSError, pa.ArrowException) as exc:
                    raise ChunkFileError(f"Parquet file {path!r} cannot be read: {exc}") from exc
            return handle

    def group_columns(self, k: int, stored: Sequence[str]) -> list[pa.ChunkedArray[Any]]:
        """The stored columns ``stored`` of row group ``k``, decoded (or from the cache)."""
        found = {c: self._decoded.get((k, c)) for c in stored}
        missing = [c for c, col in found.items() if col is None]
        if missing:
            f, g = self.groups[k]
            pf = self.files[f]
            pf.check()
            try:
                handle = self._handle(f)
                with self._reading:
                    table = handle.read_row_group(g, columns=missing, use_threads=False)
            except (OSError, pa.ArrowException) as exc:
                pf.check()  # written while it was decoded: say so
                raise ChunkFileError(
                    f"Parquet file {pf.path!r}: row group {g} cannot be decoded: {exc}"
                ) from exc
            pf.check()  # not written while it was decoded
            expected = pf.rows[pf.groups.index(g)]
            if table.num_rows != expected:
                raise ChunkFileError(
                    f"Parquet file {pf.path!r}: row group {g} has {table.num_rows} rows, its "
                    f"footer said {expected} at open."
                )
            for c in missing:
                found[c] = column = table.column(c)
                self._decoded.put((k, c), column)
        return [found[c] for c in stored]  # type: ignore[misc]

    def _group_table(self, k: int, pairs: Sequence[tuple[str, str]]) -> pa.Table:
        columns = self.group_columns(k, [s for s, _ in pairs])
        fields = [self.stored_schema.field(s).with_name(o) for s, o in pairs]
        return pa.Table.from_arrays(columns, schema=pa.schema(fields))

    def _empty(self) -> pa.Table:
        return self.schema.remove_metadata().empty_table()

    # ---- reads ----------------------------------------------------------------------
    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)``, from the row groups they lie in (zero-copy slices)."""
        stop = min(stop, self.num_rows)
        if stop <= start:
            return self._empty()
        if not self.names:  # no columns: the rows only
            return pa.table({"_": pa.nulls(stop - start)}).drop_columns(["_"])
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop, side="left"))
        parts = []
        for k in range(first, last):
            base = int(self.offsets[k])
            a, z = max(start, base) - base, min(stop, int(self.offsets[k + 1])) - base
            parts.append(self._group_table(k, self.names).slice(a, z - a))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions``, gathered row group by row group.

        Raises:
            IndexError: a position is out of range.
        """
        idx = np.asarray(positions, dtype=np.int64)
        if len(idx) == 0:
            return self._empty()
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self.num_rows:
            bad = lo if lo < 0 else hi
            raise IndexError(f"Row {bad} is out of range for a table of {self.num_rows} rows.")
        if not self.names:
            return pa.table({"_": pa.nulls(len(idx))}).drop_columns(["_"])
        if len(idx) == 1:  # ds[i]: a zero-copy slice of the decoded row group
            return self.slice(lo, lo + 1)
        schema = self.schema.remove_metadata()
        stored = [src for src, _ in self.names]
        parts: list[pa.Table] = []
        placed: list[np.ndarray] = []
        for k, local, rows in self._by_group(idx):
            taken = int64_array(local)
            columns = [c.take(taken) for c in self.group_columns(k, stored)]
            parts.append(pa.Table.from_arrays(columns, schema=schema))
            placed.append(rows)
        gathered = pa.concat_tables(parts)
        at = np.concatenate(placed)
        if not bool((np.diff(at) == 1).all()):
            inverse = np.empty(len(idx), dtype=np.int64)
            inverse[at] = np.arange(len(idx), dtype=np.int64)
            gathered = gathered.take(int64_array(inverse))
        return gathered

    def _by_group(
        self, idx: np.ndarray
    ) -> Generator[tuple[int, np.ndarray, np.ndarray], None, None]:
        """``(row group, its local rows, their places in idx)``, in order of first touch."""
        owner = np.searchsorted(self.offsets, idx, side="right") - 1
        order = np.argsort(owner, kind="stable")
        sorted_owner = owner[order]
        cuts = [0, *(np.flatnonzero(np.diff(sorted_owner)) + 1).tolist(), len(idx)]
        for a, b in sorted(itertools.pairwise(cuts), key=lambda g: int(order[g[0]])):
            k = int(sorted_owner[a])
            rows = order[a:b]
            yield k, idx[rows] - self.offsets[k], rows

    # ---- facts ----------------------------------------------------------------------
    arrow = None
    by_reference = True  # a map result joins the table (tables.joined)
    map_joins = True
    layout_tag = None
    bounded = True
    opened_as = "Parquet files read in place (`from_parquet(..., in_place=True)`)"
    #: The key of the decode cache's counters in a stream's stats.
    stats_name = "parquet"

    @property
    def storage_bytes(self) -> int:
        return self.nbytes

    def pickled(self) -> ParquetTable:
        """Itself: it pickles as its description (paths, versions, digests, row groups)."""
        return self

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> ParquetReading:
        return ParquetReading(self)

    def stats(self) -> dict[str, Any]:
        """The decoded-column cache's counters (shared by the table's projections)."""
        return self._decoded.stats()


class ParquetReading:
    """A stream's reading of a :class:`ParquetTable`; ``stats`` are the decode cache's."""

    hooks: tuple[str, ...] = ("stats",)

    def __init__(self, table: ParquetTable) -> None:
        self.table = table

    def read_ahead(self, upcoming: Upcoming) -> None:
        """Not declared in :attr:`hooks`: row groups are decoded when first read."""

    def stats(self) -> dict[str, Any]:
        return {self.table.stats_name: self.table.stats()}

    def close(self) -> None:
        """Nothing held beyond the shared cache."""

    def counting(self) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        column: pa.ChunkedArray[Any] = self.table.select([name]).take(positions).column(0)
        return column

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        values: dict[str, list[Any]] = {name: [None] * len(positions) for name in lists}
        for k, local, rows in self.table._by_group(np.asarray(positions, dtype=np.int64)):
            for name, (dtype, convert) in lists.items():
                (column,) = self.table.group_columns(k, [self.table.stored_name(name)])
                try:
                    got = TokenColumn(column, name).gather_each(local, dtype)
                except ValueError:  # null documents or ids: converted as Arrow rows
                    got = convert(column.take(int64_array(local)))
                out = values[name]
                for j, value in zip(rows.tolist(), got, strict=True):
                    out[j] = value
        table = self.table.select(others).take(positions) if others else None
        return table, values

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        """A token column read row group by row group through the decode cache."""
        stored = self.table.stored_name(name)

        def read(groups: Sequence[int]) -> Generator[tuple[int, pa.ChunkedArray[Any]], None, None]:
            for k in groups:
                yield k, self.table.group_columns(k, [stored])[0]

        kind = self.table.schema.field(name).type
        return PinnedTokenColumn(
            read, self.table.offsets, kind, name, mapper=mapper, view_rows=view_rows
        )

    def prefetch_ranges(
        self, starts: np.ndarray, stops: np.ndarray, columns: Sequence[str]
    ) -> None:
        """Nothing: a row group is decoded when first read."""


def open_parquet_table(
    paths: Sequence[str],
    columns: Sequence[str] | None,
    filters: Any,
    cache_size: int,
) -> tuple[ParquetTable, np.ndarray | None]:
    """The files as a :class:`ParquetTable`, and the rows ``filters`` keep (None: all).

    Raises:
        ChunkFileError: a file is not a readable Parquet file (named).
        SchemaMismatchError: a file's schema differs from the first file's (named).
        ValueError: a column of ``columns`` or of ``filters`` is not in the files.
    """
    import pyarrow.parquet as pq

    files: list[ParquetFile] = []
    schema: pa.Schema | None = None
    metas = []
    for path in paths:
        try:
            version = FileVersion.of(path)
            meta = pq.read_metadata(path)
            file_schema = meta.schema.to_arrow_schema()
        except (OSError, pa.ArrowException) as exc:
            raise ChunkFileError(f"Parquet file {path!r} cannot be read: {exc}") from exc
        if schema is None:
            schema = file_schema
        elif not file_schema.remove_metadata().equals(schema.remove_metadata()):
            raise SchemaMismatchError(
                f"Parquet file {path!r} has another schema than {paths[0]!r}:\n"
                f"{file_schema.remove_metadata()}\nexpected\n{schema.remove_metadata()}\n"
                "Open files of one schema together (or convert with in_place=False)."
            )
        digest = file_digest(path)
        version.check("Parquet file")  # the footer and the digest are of this version
        groups = tuple(range(meta.num_row_groups))
        rows = tuple(meta.row_group(g).num_rows for g in groups)
        files.append(ParquetFile(version, digest, groups, rows))
        metas.append(meta)
    assert schema is not None  # at least one file
    stored = schema.remove_metadata().with_metadata(kept_metadata(schema))
    for c in columns or ():
        if c not in stored.names:
            raise ValueError(f"Unknown column {c!r} in `columns`; the files have {stored.names}.")
    if filters is None:
        table = ParquetTable(files, stored, cache_size)
        return (table.select(list(columns)) if columns is not None else table), None
    expr = filter_expression(filters)
    files = [_pruned(pf, expr, stored) for pf in files]
    table = ParquetTable(files, stored, cache_size)
    kept = _kept_rows(table, expr)
    return (table.select(list(columns)) if columns is not None else table), kept


def filter_expression(filters: Any) -> Any:
    """``filters`` (DNF lists, or a ``pyarrow.compute.Expression``) as an expression."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if isinstance(filters, pc.Expression):
        return filters
    try:
        return pq.filters_to_expression(filters)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            "`filters` must be a pyarrow.compute expression or DNF lists such as "
            f"[('column', '>', 3)] or [[...], [...]]; got {filters!r} ({exc})."
        ) from exc


def filter_columns(expr: Any, schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` that ``expr`` reads (found on empty tables: nothing read)."""
    empty = schema.remove_metadata().empty_table()
    try:
        empty.filter(expr)
    except (pa.ArrowException, TypeError) as exc:
        raise ValueError(f"`filters` cannot be applied to these files: {exc}") from exc
    needed = []
    for c in schema.names:
        try:
            empty.drop_columns([c]).filter(expr)
        except (pa.ArrowException, TypeError):
            needed.append(c)
    return needed


def _pruned(pf: ParquetFile, expr: Any, schema: pa.Schema) -> ParquetFile:
    """``pf`` with only the row groups whose statistics may hold rows ``expr`` keeps."""
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    fragment: Any = pads.ParquetFileFormat().make_fragment(pf.path, pafs.LocalFileSystem())
    try:
        kept = {rg.id for part in fragment.split_by_row_group(expr, schema=schema.remove_metadata())
                for rg in part.row_groups}  # fmt: skip
    except (pa.ArrowException, TypeError) as exc:
        raise ValueError(f"`filters` cannot be applied to {pf.path!r}: {exc}") from exc
    groups = tuple(g for g in pf.groups if g in kept)
    rows = tuple(r for g, r in zip(pf.groups, pf.rows, strict=True) if g in kept)
    return ParquetFile(pf.version, pf.digest, groups, rows)


def _kept_rows(table: ParquetTable, expr: Any) -> np.ndarray:
    """Table rows ``expr`` keeps, decoding only the columns it reads, row group by row group."""
    needed = filter_columns(expr, table.stored_schema)
    kept = []
    for k in range(len(table.groups)):
        n = int(table.offsets[k + 1] - table.offsets[k])
        cols = table.group_columns(k, needed)
        part = pa.Table.from_arrays([*cols, pa.array(np.arange(n, dtype=np.int64))],
                                    names=[*needed, "__arrowmix_row"])  # fmt: skip
        rows = part.filter(expr).column("__arrowmix_row").to_numpy()
        kept.append(rows + int(table.offsets[k]))
    return np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)


def from_parquet_in_place(
    paths: Any,
    columns: Sequence[str] | None = None,
    filters: Any = None,
    cache_size: int | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """``Dataset.from_parquet(paths, in_place=True, ...)``: see the module docstring.

    Raises:
        ValueError: a remote URL (in place reads local files only), or bad ``columns`` /
            ``filters`` / ``cache_size``.
    """
    from arrowmix._dataset.dataset import Dataset, DatasetState
    from arrowmix._dataset.indices import IndexMap
    from arrowmix._fingerprint.hasher import hash_value
    from arrowmix._remote.cache import parse_size
    from arrowmix._storage.fs import is_local, local_path
    from arrowmix._storage.globs import expand_inputs

    found = expand_inputs(paths)
    remote = [p for p in found if not is_local(p)]
    if remote:
        raise ValueError(
            f"`from_parquet(..., in_place=True)` reads local files; {remote[0]!r} is remote. "
            "Pass in_place=False to convert it into cached chunks."
        )
    files = [os.path.abspath(local_path(p)) for p in found]
    size = DEFAULT_CACHE if cache_size is None else parse_size(cache_size, "cache_size")
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
    table, kept = open_parquet_table(files, columns, filters, size)
    filter_key = None if filters is None else str(filter_expression(filters))
    fp = hash_value(
        ("from_parquet", "in_place", [f.digest for f in table.files], columns, filter_key)
    )
    offsets = tuple(int(x) for x in table.offsets)
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(files),
        file_offsets=offsets,  # row groups: the chunks a stream reads whole
        indices=None if kept is None else IndexMap.from_array(kept),
        cache_dir=_results_dir(cache_dir),
    )
    return Dataset(state)


def _results_dir(cache_dir: str | os.PathLike[str] | None) -> str | None:
    """Where ``map``/``filter`` results go: ``cache_dir``, else ``<cache root>/in-place``.

    Not beside the Parquet files: the user's data directory stays as it was (and a later
    ``from_parquet(directory)`` finds only Parquet files there). None while caching is
    disabled (each call's own temporary files).
    """
    from arrowmix._cache.paths import cache_root, is_caching_enabled

    if cache_dir is not None:
        return os.fspath(cache_dir)
    return os.path.join(cache_root(), "in-place") if is_caching_enabled() else None
