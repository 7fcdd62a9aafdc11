"""What a Dataset's table is: the :class:`Table` protocol, and :class:`TableReading`.

A Dataset holds its rows in one table. Today's kinds are memory-mapped (or in-memory) Arrow
tables, adapted by :class:`~arrowmix._dataset.tables.local.LocalTable`; remote chunks read
through a bounded cache (:class:`~arrowmix._dataset.tables.remote.RemoteRows`); Parquet files
read in place (:class:`~arrowmix._dataset.tables.parquet.ParquetTable`), and the formats
built on it (Lance, MDS); a map result over those, joined with its derived columns
(:class:`~arrowmix._dataset.tables.joined.JoinedTable`). The Dataset layer
never asks which kind it holds: it calls the members below. A new format is one new module
with one class that has them (see ``docs/architecture.md``, "Adding a table format").

The state keeps the table as it was built (``DatasetState.table``: a ``pyarrow.Table`` or an
object of this protocol); :func:`as_table` is the one place where a ``pyarrow.Table`` is
adapted, and ``DatasetState.reader`` holds the adapted table.

Every member that takes rows takes *table* positions (the view's indices mapping is applied
by the caller) and returns Arrow data that stays valid after the call (a kind whose storage
may go away, such as an evicted chunk or row group, copies it out).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.sources import Upcoming
    from arrowmix._stream.tokens import TokenColumn

__all__ = ["Mapper", "Table", "TableReading", "as_table"]

#: View positions to table positions (a view's indices mapping), or None for the identity.
Mapper = Callable[[np.ndarray], np.ndarray] | None


class Table(Protocol):
    """A Dataset's table, whatever its storage (module docstring).

    The first members are ``pyarrow.Table``'s own (a projection returns the same kind,
    reading nothing); then the reads, the facts the Dataset layer decides on, and the
    stream's reading of it (:meth:`reading`).
    """

    # ---- what pyarrow.Table has ---------------------------------------------------
    @property
    def num_rows(self) -> int: ...
    @property
    def num_columns(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def schema(self) -> pa.Schema:
        """The exposed columns (with the metadata carried to results, if any)."""
        ...

    @property
    def nbytes(self) -> int: ...
    def select(self, columns: Sequence[str]) -> Any: ...
    def drop_columns(self, columns: Sequence[str]) -> Any: ...
    def rename_columns(self, names: Sequence[str]) -> Any: ...
    def replace_schema_metadata(self, metadata: Any = None) -> Any: ...

    # ---- reads (table positions) --------------------------------------------------
    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        """Rows ``[start, stop)``; ``reads``: the only columns the caller will read."""
        ...

    def take(self, positions: np.ndarray) -> pa.Table:
        """Rows at ``positions`` (int64, any order, repeats allowed), in that order.

        Raises:
            IndexError: a position is out of range.
        """
        ...

    # ---- facts --------------------------------------------------------------------
    @property
    def arrow(self) -> pa.Table | None:
        """The rows as one Arrow table held now (memory-mapped or in memory), or None.

        None for a kind that reads rows on demand (nothing may then treat the table as
        Arrow data: concatenation refuses it, the page-cache estimate leaves it out).
        """
        ...

    @property
    def storage_bytes(self) -> int:
        """Bytes of the storage behind the rows (files, or Arrow buffers); nothing read."""
        ...

    @property
    def by_reference(self) -> bool:
        """Whether a map result may reference the columns it keeps instead of storing them."""
        ...

    @property
    def map_joins(self) -> bool:
        """Whether a map result reads the columns it keeps here, joined with its own.

        True for rows read in place from the user's files: the result is a
        :class:`~arrowmix._dataset.tables.joined.JoinedTable` (its cache files hold only the
        derived columns). False: the kept columns are referenced as Arrow columns (with
        :attr:`by_reference`) or stored.
        """
        ...

    @property
    def layout_tag(self) -> str | None:
        """A tag a stream adds to the rows' identity, or None.

        None when the dataset's fingerprint implies where its chunks are cut. A kind whose
        layout the fingerprint does not fix (a joined map result: the same map, stored whole
        by earlier versions, was cut elsewhere) names itself, so a stream checkpoint taken
        over another layout is refused instead of resuming at other rows.
        """
        ...

    @property
    def bounded(self) -> bool:
        """Whether reads go through a bounded cache (a stream then shards by chunk)."""
        ...

    @property
    def opened_as(self) -> str:
        """How the user opened this kind, for error messages (e.g. ``from_parquet(...)``)."""
        ...

    def pickled(self) -> Any:
        """What a pickled Dataset carries for the table: a reference, or the table itself.

        A ``TableRef`` (reopened memory-mapped), or any picklable object that *is* a table
        after unpickling (a kind that pickles as its description).
        """
        ...

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> TableReading:
        """What one stream reading the table through the view ``mapper`` uses.

        Raises:
            ValueError: ``read_ahead`` is not valid for this kind.
        """
        ...


class TableReading(Protocol):
    """One stream's reading of a table: the reads a row source makes, and its hooks.

    ``hooks`` names which of the row source's optional members (``read_ahead``, ``stats``,
    ``close``) the stream may call; the others are never called. Reads made inside
    :meth:`counting` count as this stream's in :meth:`stats`.
    """

    hooks: tuple[str, ...]

    def read_ahead(self, upcoming: Upcoming) -> None: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def counting(self) -> AbstractContextManager[Any]: ...

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """The column ``name`` at table ``positions``, gathered alone."""
        ...

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        """Columns ``others`` at ``positions`` as a table, and the ``lists`` copied out.

        See ``DatasetRows.take_lists``.
        """
        ...

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        """The ``list<int*>`` column ``name`` as a token column over view positions."""
        ...

    def prefetch_ranges(
        self, starts: np.ndarray, stops: np.ndarray, columns: Sequence[str]
    ) -> None:
        """A hint: ``columns`` of rows ``[starts[i], stops[i])`` are read next (may do nothing)."""
        ...


def as_table(table: pa.Table | Table) -> Table:
    """``table`` as a :class:`Table`: a ``pyarrow.Table`` adapted, any other kind itself."""
    if isinstance(table, pa.Table):
        from arrowmix._dataset.tables.tokens import local_table

        return local_table(table)  # checks the token files it views, if any, at each read
    return table
