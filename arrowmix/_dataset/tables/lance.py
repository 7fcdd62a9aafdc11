"""Lance datasets read in place: ``Dataset.from_lance(uri)``.

Nothing is converted. Opening pins the dataset's version (the latest, or ``version=``): a
later write, append or delete at the URI does not change what the opened Dataset reads, and
the fingerprint names the URI, the version, its commit time and its size, so ``map`` /
``filter`` caches are reused while that version is read and a new version gets a new
fingerprint.

Reads go through Lance's own random access (``LanceDataset.take`` by row position): a single
row (``ds[i]``) is taken alone; larger reads (iteration, ``map``, streams) take blocks of
``block_rows`` consecutive rows (8192 by default), only the columns read, into the bounded
cache of decoded columns Parquet read in place uses (``cache_size`` bytes, ``"256MB"`` by
default).
The blocks are the chunks a stream's ``"chunks"`` shuffle and chunk sharding read whole.

A local dataset's data files are checked as every file read in place is
(:mod:`arrowmix._storage.in_place`): their versions recorded at open, and those of the
fragments a read takes rows from checked before and after it, so a data file written in
place raises :class:`~arrowmix.exceptions.ChunkFileError` naming it.

A Dataset pickles as its description (URI, version, columns, the data files' versions):
another process opens the same version. If that version's files were removed since
(``cleanup_old_versions``), the read raises :class:`~arrowmix.exceptions.ChunkFileError`
naming the URI and version.

``pylance`` is an optional dependency (``pip install arrowmix[lance]``), imported when a
Lance dataset is opened.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.tables.parquet import DEFAULT_CACHE, Decoded, ParquetTable
from arrowmix._storage.in_place import FileVersion, check_all
from arrowmix._storage.metadata import kept_metadata
from arrowmix.exceptions import ChunkFileError

__all__ = ["BLOCK_ROWS", "LanceFiles", "LanceTable", "from_lance"]

#: Rows a block read takes at once (the unit of the decode cache and of chunk shuffling).
BLOCK_ROWS = 8192


def _lance() -> Any:
    try:
        import lance
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise ImportError(
            "`Dataset.from_lance` needs pylance: pip install 'arrowmix[lance]'."
        ) from exc
    return lance


def _open(uri: str, version: int | None) -> Any:
    lance = _lance()
    try:
        return lance.dataset(uri) if version is None else lance.dataset(uri, version=version)
    except (ValueError, OSError, RuntimeError) as exc:
        at = "" if version is None else f" at version {version}"
        raise ChunkFileError(f"{uri!r}{at} is not a readable Lance dataset: {exc}") from exc


@dataclass(frozen=True)
class LanceFiles:
    """The data files of a local Lance version, per fragment, as opened; and its row counts.

    ``rows``: the first row of each fragment, and the row count (empty: not checked, as for
    a remote URI).
    """

    files: tuple[tuple[FileVersion, ...], ...]
    rows: tuple[int, ...]

    def check(self, positions: np.ndarray) -> None:
        """Check the files of the fragments holding ``positions`` (ChunkFileError, named)."""
        if not self.files or not len(positions):
            return
        bounds = np.asarray(self.rows, dtype=np.int64)
        lo, hi = int(np.min(positions)), int(np.max(positions))
        first, last = np.searchsorted(bounds, [lo, hi], side="right") - 1
        for f in range(max(int(first), 0), min(int(last), len(self.files) - 1) + 1):
            check_all(self.files[f], "Lance data file")


def _lance_files(handle: Any, uri: str, local: bool) -> LanceFiles:
    """The version's data files (local URIs), fragment by fragment, with their rows."""
    if not local:
        return LanceFiles((), ())
    files, rows = [], [0]
    for fragment in handle.get_fragments():
        paths = [os.path.join(uri, "data", d.path) for d in fragment.data_files()]
        files.append(tuple(FileVersion.of(p) for p in paths))
        rows.append(rows[-1] + int(fragment.count_rows()))
    return LanceFiles(tuple(files), tuple(rows))


class LanceTable(ParquetTable):
    """Rows of one version of a Lance dataset, read in place (module docstring).

    Args:
        uri: the dataset's URI (a local path is made absolute).
        version: the version read.
        rows: its row count.
        schema: its Arrow schema.
        size: bytes of its data files.
        cache_size: bytes of decoded columns kept in memory.
        names: ``(stored column, exposed name)`` pairs; default every column as stored.
    """

    def __init__(
        self,
        uri: str,
        version: int,
        rows: int,
        schema: pa.Schema,
        size: int,
        cache_size: int = DEFAULT_CACHE,
        names: Sequence[tuple[str, str]] | None = None,
        decoded: Decoded | None = None,
        block_rows: int = BLOCK_ROWS,
        fragments: LanceFiles | None = None,
    ) -> None:
        self.uri = uri
        self.fragments = fragments if fragments is not None else LanceFiles((), ())
        self.block_rows = block_rows
        self.version = version
        self.rows = rows
        self.size = size
        self.files = ()
        self.stored_schema = schema
        self.cache_size = cache_size
        self.names = tuple(names) if names is not None else tuple((n, n) for n in schema.names)
        fields = [schema.field(src).with_name(out) for src, out in self.names]
        self.schema = pa.schema(fields, metadata=dict(schema.metadata or {}))  # type: ignore[arg-type]
        self.offsets = np.array([*range(0, rows, block_rows), rows], dtype=np.int64)
        self.groups = [(0, k) for k in range(len(self.offsets) - 1)]
        self._decoded = decoded if decoded is not None else Decoded(cache_size)
        self._handles: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles as its description: the other process opens the same version.
        args = (self.uri, self.version, self.rows, self.stored_schema, self.size)
        more = (self.cache_size, self.names, None, self.block_rows, self.fragments)
        return (type(self), (*args, *more))

    @property
    def nbytes(self) -> int:
        """Bytes of the version's data files (encoded): what reading every row decodes from."""
        return self.size

    def _with(
        self, names: Sequence[tuple[str, str]], schema: pa.Schema | None = None
    ) -> LanceTable:
        return LanceTable(
            self.uri,
            self.version,
            self.rows,
            schema or self.stored_schema,
            self.size,
            self.cache_size,
            names,
            self._decoded,
            self.block_rows,
            self.fragments,
        )

    def replace_schema_metadata(self, metadata: Any = None) -> LanceTable:
        return self._with(self.names, self.stored_schema.with_metadata(metadata or {}))

    # ---- reading --------------------------------------------------------------------
    def _handle(self, f: int = 0) -> Any:
        with self._lock:  # a forked process opens its own (Lance is not fork-safe)
            handle = self._handles.get(os.getpid())
            if handle is None:
                self._handles.clear()
                handle = self._handles[os.getpid()] = _open(self.uri, self.version)
            return handle

    def _take(self, rows: np.ndarray, stored: Sequence[str]) -> pa.Table:
        """Lance's take of ``rows`` (positions in the pinned version), columns ``stored``.

        The data files of the fragments read are checked before and after (a ``stat`` each).
        """
        self.fragments.check(rows)
        try:
            table: pa.Table = self._handle().take(rows, columns=list(stored))
            self.fragments.check(rows)
        except ChunkFileError:
            raise
        except (ValueError, OSError, RuntimeError) as exc:
            self.fragments.check(rows)  # a file written meanwhile: say so
            raise ChunkFileError(
                f"Lance dataset {self.uri!r} version {self.version}: rows cannot be read "
                f"(its files removed or damaged?): {exc}"
            ) from exc
        if table.num_rows != len(rows):
            raise ChunkFileError(
                f"Lance dataset {self.uri!r} version {self.version}: asked {len(rows)} rows, "
                f"read {table.num_rows}."
            )
        return table

    def group_columns(self, k: int, stored: Sequence[str]) -> list[pa.ChunkedArray[Any]]:
        """The stored columns ``stored`` of block ``k``, taken (or from the cache)."""
        found = {c: self._decoded.get((k, c)) for c in stored}
        missing = [c for c, col in found.items() if col is None]
        if missing:
            rows = np.arange(int(self.offsets[k]), int(self.offsets[k + 1]), dtype=np.int64)
            with self._reading:
                table = self._take(rows, missing)
            for c in missing:
                found[c] = column = table.column(c)
                self._decoded.put((k, c), column)
        return [found[c] for c in stored]  # type: ignore[misc]

    def _one_row(self, i: int) -> pa.Table | None:
        """Row ``i`` taken alone, unless its block's columns are cached (then None)."""
        if not self.names or not 0 <= i < self.num_rows:
            return None
        stored = [src for src, _ in self.names]
        k = i // self.block_rows
        if all(self._decoded.get((k, c)) is not None for c in stored):
            return None  # a zero-copy slice of the cached block is cheaper
        got = self._take(np.array([i], dtype=np.int64), stored)
        return pa.Table.from_arrays(got.columns, schema=self.schema.remove_metadata())

    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)``: one row taken alone (``ds[i]``), more by blocks."""
        one = self._one_row(start) if stop - start == 1 else None
        return one if one is not None else super().slice(start, stop, reads)

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions``; one row is taken alone, more by blocks through the cache.

        Raises:
            IndexError: a position is out of range.
        """
        idx = np.asarray(positions, dtype=np.int64)
        one = self._one_row(int(idx[0])) if len(idx) == 1 else None
        return one if one is not None else super().take(idx)

    opened_as = "a Lance dataset read in place (`from_lance(uri)`)"
    stats_name = "lance"  # pickles as its description (URI, version, columns)


def _version_facts(handle: Any) -> tuple[str, int]:
    """The pinned version's commit time and data bytes, as Lance records them."""
    for v in handle.versions():
        if int(v["version"]) == int(handle.version):
            meta = v.get("metadata") or {}
            return str(v["timestamp"]), int(meta.get("total_files_size", 0) or 0)
    return "", 0


def from_lance(
    uri: str | os.PathLike[str],
    version: int | None = None,
    columns: Sequence[str] | None = None,
    cache_size: int | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    block_rows: int | None = None,
) -> Any:
    """``Dataset.from_lance(uri, ...)``: see the module docstring.

    Raises:
        ChunkFileError: ``uri`` (at ``version``) is not a readable Lance dataset.
        ValueError: a column of ``columns`` is not in the dataset, or a bad ``cache_size``.
    """
    from arrowmix._dataset.dataset import Dataset, DatasetState
    from arrowmix._dataset.tables.parquet import _results_dir
    from arrowmix._fingerprint.hasher import hash_value
    from arrowmix._remote.cache import parse_size
    from arrowmix._storage.fs import is_local, local_path

    text = os.fspath(uri)
    if is_local(text):
        text = os.path.abspath(local_path(text))
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ValueError(f"`version` must be a Lance version number (int), got {version!r}.")
    handle = _open(text, version)
    schema = handle.schema
    schema = schema.remove_metadata().with_metadata(kept_metadata(schema))
    size = DEFAULT_CACHE if cache_size is None else parse_size(cache_size, "cache_size")
    stamp, data_bytes = _version_facts(handle)
    rows = int(handle.count_rows())
    block = BLOCK_ROWS if block_rows is None else block_rows
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"`block_rows` must be a number of rows (int >= 1), got {block!r}.")
    fragments = _lance_files(handle, text, is_local(text))
    table = LanceTable(text, int(handle.version), rows, schema, data_bytes, size,
                       block_rows=block, fragments=fragments)  # fmt: skip
    table._handles[os.getpid()] = handle
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ValueError(
                f"Column {unknown[0]!r} is not in the Lance dataset {text!r} "
                f"(columns: {schema.names})."
            )
        table = table.select(columns)
    fp = hash_value(("from_lance", text, table.version, stamp, data_bytes, table.rows, columns))
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=(),
        file_offsets=tuple(int(x) for x in table.offsets),
        indices=None,
        cache_dir=_results_dir(cache_dir),
    )
    return Dataset(state)
