"""The token-file kind of :class:`~arrowmix._dataset.tables.protocol.Table`: Megatron and numpy.

A Megatron ``.bin``/``.idx`` pair or a flat numpy token file, read in place. Its rows are an
Arrow table whose one ``list<dtype>`` column has the files' memory maps as values
(:mod:`arrowmix._storage.token_files`), so every read is the local kind's
(:class:`~arrowmix._dataset.tables.local.LocalTable`, which this class extends): zero-copy
slices, batch-aware gathers, token columns as views of the map. What differs is what a
pickle carries (:meth:`TokenTable.pickled`): the table's description (the files, their
versions, how rows are cut), reopened on the other side (the offsets rebuilt, the files
mapped again), never the tokens. A projection that drops the column is an ordinary
(empty-columned) local table.

Every read checks first that the files it reads are still the versions opened
(:mod:`arrowmix._storage.in_place`: one ``stat`` per file touched): ``ds[i]``, slices and
takes (:meth:`TokenTable.slice`, :meth:`TokenTable.take`), a stream's gathers and the token
path's copies out of the map (:class:`FileGuard`, the token column's ``guard``). A file
written in place after the open raises :class:`~arrowmix.exceptions.ChunkFileError` at the
next read; what a read handed out before (zero-copy views of the map) is not protected.
A ``map`` result that keeps the token column by reference is a :class:`TokenViews` (any
Arrow table viewing token files is adapted to one, :func:`local_table`): its reads check the
files it views the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.tables.local import LocalReading, LocalTable
from arrowmix._storage.distinct import distinct
from arrowmix._storage.in_place import check_all
from arrowmix._storage.token_arrays import TOKEN_FILE, TokenSource, token_chunk_ref

if TYPE_CHECKING:
    from arrowmix._dataset.tables.protocol import Mapper
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.tokens import TokenColumn

__all__ = ["FileGuard", "TokenReading", "TokenTable", "TokenViews", "local_table", "token_sources"]


class FileGuard:
    """Checks the token files behind chunks or rows of a column before they are read.

    Args:
        column: the column as built from token sources (its non-empty chunks are the
            chunks a token column numbers).
        sources: every source of the table (checked when a chunk names none).
    """

    def __init__(self, column: pa.ChunkedArray[Any], sources: Sequence[TokenSource]) -> None:
        kept = [c for c in column.chunks if len(c)]
        refs = [token_chunk_ref(c) for c in kept]
        self._all = tuple(sources)
        self._sources = [self._all if r is None else (r.source,) for r in refs]
        self._rows = np.cumsum([0, *(len(c) for c in kept)], dtype=np.int64)
        self._one = len(self._all) == 1
        #: Every file's version, in one tuple: what a read checks in one loop.
        self._versions = tuple(v for source in self._all for v in source.versions)

    def all(self) -> None:
        """Check every file."""
        check_all(self._versions, TOKEN_FILE)

    def chunks(self, owner: np.ndarray | None) -> None:
        """Check the files of the non-empty chunks ``owner`` (None: every file)."""
        if owner is None or self._one:
            check_all(self._versions, TOKEN_FILE)
            return
        checked: set[int] = set()
        for k in distinct(np.asarray(owner, dtype=np.int64)).tolist():
            for source in self._sources[k]:
                if id(source) not in checked:
                    checked.add(id(source))
                    source.check()

    def span(self, start: int, stop: int) -> None:
        """Check the files holding the table rows ``[start, stop)``."""
        if self._one:
            check_all(self._versions, TOKEN_FILE)
        elif stop > start:
            first, last = np.searchsorted(self._rows, [start, stop - 1], side="right") - 1
            self.chunks(np.arange(first, last + 1))

    def rows(self, positions: np.ndarray) -> None:
        """Check the files holding the table rows ``positions``."""
        if self._one:
            check_all(self._versions, TOKEN_FILE)
        elif len(positions):
            self.chunks(np.searchsorted(self._rows, positions, side="right") - 1)


class TokenViews(LocalTable):
    """An Arrow table some of whose columns are views of token files' memory maps.

    A ``map`` result over token files that keeps the token column by reference is one (its
    column chunks are slices of the token arrays): a :class:`LocalTable` whose reads check
    first the token files it views (every file, per read; :class:`TokenTable` checks only
    the files of the rows read). Projections keep the kind while a view remains.
    """

    def __init__(self, table: pa.Table, sources: Sequence[TokenSource]) -> None:
        super().__init__(table)
        self.sources = tuple(sources)

    def check_rows(self, positions: np.ndarray) -> None:
        """Check the token files behind the table rows ``positions`` (here: every file)."""
        for source in self.sources:
            source.check()

    def check_span(self, start: int, stop: int) -> None:
        """Check the token files behind the table rows ``[start, stop)``."""
        self.check_rows(np.empty(0, dtype=np.int64))

    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)``, the files checked first (zero-copy views of the map)."""
        self.check_span(start, stop)
        return super().slice(start, stop, reads)

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions``, the files checked first."""
        self.check_rows(np.asarray(positions, dtype=np.int64))
        return super().take(positions)

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> TokenReading:
        return TokenReading(self, mapper)

    def _same(self, table: pa.Table) -> LocalTable:
        return local_table(table)

    def select(self, columns: Sequence[str]) -> LocalTable:
        return self._same(self.table.select(list(columns)))

    def drop_columns(self, columns: Sequence[str]) -> LocalTable:
        return self._same(self.table.drop_columns(list(columns)))

    def rename_columns(self, names: Sequence[str]) -> LocalTable:
        return self._same(self.table.rename_columns(list(names)))

    def replace_schema_metadata(self, metadata: Any = None) -> LocalTable:
        return self._same(self.table.replace_schema_metadata(metadata))


def token_sources(table: pa.Table) -> tuple[TokenSource, ...]:
    """The token sources whose memory maps columns of ``table`` view (in first-seen order)."""
    found: dict[int, TokenSource] = {}
    for column in table.columns:
        if not pa.types.is_list(column.type):
            continue
        for chunk in column.chunks:
            ref = token_chunk_ref(chunk)
            if ref is not None:
                found.setdefault(id(ref.source), ref.source)
    return tuple(found.values())


def local_table(table: pa.Table) -> LocalTable:
    """``table`` as a local table: a :class:`TokenViews` when it views token files."""
    sources = token_sources(table)
    return TokenViews(table, sources) if sources else LocalTable(table)


class TokenTable(TokenViews):
    """Token files as a :class:`Table`: a :class:`LocalTable` pickled as its description.

    Args:
        sources: the files, in row order (one source per prefix or file).
        table: their one column, as built from ``sources`` (projected or renamed since).
        opened_as: how the user opened them, for error messages.
    """

    def __init__(self, sources: Sequence[TokenSource], table: pa.Table, opened_as: str) -> None:
        super().__init__(table, sources)
        self.opened_as = opened_as

    def _guard(self) -> FileGuard:
        guard = self.__dict__.get("_file_guard")
        if guard is None:
            guard = self._file_guard = FileGuard(self.table.column(0), self.sources)
        return guard

    def check_rows(self, positions: np.ndarray) -> None:
        """Check the files holding the rows ``positions`` only."""
        self._guard().rows(positions)

    def check_span(self, start: int, stop: int) -> None:
        self._guard().span(start, stop)

    def _same(self, table: pa.Table) -> LocalTable:
        if not table.num_columns:
            return LocalTable(table)
        return TokenTable(self.sources, table, self.opened_as)

    def pickled(self) -> Any:
        """Itself: it pickles as its description (see :meth:`__reduce__`)."""
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen, (self.sources, self.table.schema, self.opened_as))


def _reopen(sources: tuple[TokenSource, ...], schema: pa.Schema, opened_as: str) -> TokenTable:
    """Unpickle: map the files again (ChunkFileError if one changed since it was opened)."""
    chunks = [c for s in sources for c in s.chunks()]
    column = pa.chunked_array(chunks, type=schema.field(0).type)
    return TokenTable(sources, pa.Table.from_arrays([column], schema=schema), opened_as)


class TokenReading(LocalReading):
    """A stream's reading of token files: the local reading, the files checked at each read."""

    table: TokenViews

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        self.table.check_rows(positions)
        return super().take_column(positions, name)

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        self.table.check_rows(positions)
        return super().take_lists(positions, others, lists)

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        """Zero-copy views of the map; each copy out of them checks the files it reads."""
        column = super().token_column(name, mapper, view_rows)
        column.guard = FileGuard(self.table.table.column(name), self.table.sources).chunks
        return column
