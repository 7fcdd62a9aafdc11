"""The joined kind of :class:`~arrowmix._dataset.tables.protocol.Table`: a map over rows in place.

A ``map`` over rows read in place (Parquet ``from_parquet(..., in_place=True)``, MDS, Lance:
a table whose :attr:`~arrowmix._dataset.tables.protocol.Table.map_joins` is true) stores only
what it derives in its ``cache-<fingerprint>.arrow`` files: the columns it adds or overwrites.
Its result is a :class:`JoinedTable`: the input columns it keeps, still read in place (with
projection, through the same decode cache), beside the derived columns, memory-mapped from the
cache files, row for row. A column the map overwrites is the derived one.

Row ``i`` of the joined table is row ``start + i`` of the in-place table (the map's input was
the whole table or a contiguous range of it), or row ``positions[i]`` (increasing: the input
was a filtered view), and row ``i`` of the derived columns. A map over a contiguous view of a
joined table joins again: its kept in-place columns stay in place, its kept derived columns
are referenced zero-copy in the earlier cache files, and only what it derives is written
(:func:`join`); over a filtered view of one, the joined table is itself the in-place part.
A filter, ``select``, ``shuffle`` or ``sort`` over it is an indices mapping, as over any
table.

When a map joins: it keeps at least one input column (so it returns one row per input row,
in order: a batched map that changes the row count must remove every input column, and then
stores its whole output, as before), over rows in their stored order (a shuffled or sorted
view, a named ``cache_file_name`` or ``features=`` store every column: ``mapping/plan.py``).

It pickles as its parts: the in-place table's description and references into the cache files
(reopened memory-mapped), never their rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.tables.local import LocalTable

if TYPE_CHECKING:
    from arrowmix._dataset.tables.protocol import Mapper, Table, TableReading
    from arrowmix._stream.row_source import ListSpec
    from arrowmix._stream.sources import Upcoming
    from arrowmix._stream.tokens import TokenColumn

__all__ = ["JoinedReading", "JoinedTable", "join"]


class JoinedTable:
    """Columns read in place joined, row for row, with derived columns (module docstring).

    Args:
        base: the in-place table, projected to the columns it gives (exposed names).
        start: the in-place row of the joined table's row 0.
        derived: the derived columns (memory-mapped cache files); its rows are the table's.
        columns: every column, in order (each one of ``base``'s or of ``derived``'s).
        metadata: the schema's metadata (HF features of the result).
    """

    def __init__(
        self,
        base: Table,
        start: int,
        derived: pa.Table,
        columns: Sequence[str],
        metadata: Mapping[bytes, bytes] | None = None,
        positions: np.ndarray | None = None,
    ) -> None:
        self.base = base
        self.start = int(start)
        self.positions = positions
        self.derived = derived
        self.columns = tuple(columns)
        self.metadata = dict(metadata or {})
        self._local = LocalTable(derived)
        mine = set(derived.column_names)
        self._in_base = frozenset(c for c in self.columns if c not in mine)
        if not self._in_base <= set(base.column_names):
            missing = sorted(self._in_base - set(base.column_names))
            raise ValueError(f"columns {missing} are neither derived nor in {base.opened_as}.")
        if positions is not None:
            if len(positions) != derived.num_rows or (
                len(positions) and int(positions[-1]) >= base.num_rows
            ):
                raise ValueError(
                    f"{len(positions)} row positions for {derived.num_rows} derived rows do "
                    f"not fit in {base.num_rows} rows of {base.opened_as}."
                )
        elif start < 0 or start + derived.num_rows > base.num_rows:
            raise ValueError(
                f"{derived.num_rows} derived rows from row {start} do not fit in "
                f"{base.num_rows} rows of {base.opened_as}."
            )

    def base_rows(self, positions: np.ndarray) -> np.ndarray:
        """The in-place rows of joined rows ``positions``."""
        pos = np.asarray(positions, dtype=np.int64)
        if self.positions is None:
            return pos + self.start
        return np.asarray(self.positions[pos], dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        from arrowmix._storage.mapped import table_ref

        ref = table_ref(self.derived) if self.derived.num_columns else None
        derived: Any = ref if ref is not None else self.derived
        rows = self.derived.num_rows
        args = (self.base.pickled(), self.start, derived, rows, self.columns, self.metadata)
        return (_reopen, (*args, self.positions))

    # ---- what pyarrow.Table has -------------------------------------------------------
    @property
    def num_rows(self) -> int:
        return int(self.derived.num_rows)

    @property
    def num_columns(self) -> int:
        return len(self.columns)

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    @property
    def schema(self) -> pa.Schema:
        fields = [self._owner(c).schema.field(c) for c in self.columns]
        return pa.schema(fields, metadata=self.metadata or None)  # type: ignore[arg-type]

    @property
    def nbytes(self) -> int:
        """The derived bytes, and the in-place bytes in proportion to the rows joined."""
        share = self.num_rows / max(1, self.base.num_rows)
        return int(self.derived.nbytes + self.base.nbytes * share)

    def _owner(self, name: str) -> Any:
        return self.base if name in self._in_base else self.derived

    def _with(self, columns: Sequence[str], names: Sequence[str] | None = None) -> Any:
        """Only ``columns`` (renamed to ``names``); a plain Arrow table when none is in place."""
        names = list(columns) if names is None else list(names)
        rename = dict(zip(columns, names, strict=True))
        kept = [c for c in columns if c in self._in_base]
        derived = self.derived.select([c for c in columns if c not in self._in_base])
        derived = derived.rename_columns([rename[c] for c in derived.column_names])
        if not kept:
            return derived.replace_schema_metadata(self.metadata or None)
        base = self.base.select(kept).rename_columns([rename[c] for c in kept])
        return JoinedTable(base, self.start, derived, names, self.metadata, self.positions)

    def select(self, columns: Sequence[str]) -> Any:
        unknown = [c for c in columns if c not in self.columns]
        if unknown:
            raise KeyError(f"no column {unknown[0]!r}; the rows have columns {self.column_names}.")
        return self._with(list(columns))

    def drop_columns(self, columns: Sequence[str]) -> Any:
        drop = set(columns)
        return self._with([c for c in self.columns if c not in drop])

    def rename_columns(self, names: Sequence[str]) -> Any:
        return self._with(list(self.columns), list(names))

    def replace_schema_metadata(self, metadata: Any = None) -> JoinedTable:
        return JoinedTable(
            self.base, self.start, self.derived, self.columns, metadata, self.positions
        )

    # ---- reads (table positions) ------------------------------------------------------
    def _assemble(self, base: pa.Table | None, derived: pa.Table) -> pa.Table:
        owner = [base if c in self._in_base else derived for c in self.columns]
        fields = [t.schema.field(c) for t, c in zip(owner, self.columns, strict=True)]  # type: ignore[union-attr]
        arrays = [t.column(c) for t, c in zip(owner, self.columns, strict=True)]  # type: ignore[union-attr]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def slice(self, start: int, stop: int, reads: Sequence[str] | None = None) -> pa.Table:
        stop = max(start, min(stop, self.num_rows))
        derived = self._local.slice(start, stop, reads)
        if self.positions is None:
            base = self.base.slice(self.start + start, self.start + stop, reads)
        else:  # increasing rows: read row group by row group
            base = self.base.take(np.asarray(self.positions[start:stop], dtype=np.int64))
        return self._assemble(base, derived)

    def take(self, positions: np.ndarray) -> pa.Table:
        idx = np.asarray(positions, dtype=np.int64)
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= self.num_rows):
            bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
            raise IndexError(f"Row {bad} is out of range for a table of {self.num_rows} rows.")
        derived = self._local.take(idx)
        return self._assemble(self.base.take(self.base_rows(idx)), derived)

    # ---- facts --------------------------------------------------------------------------
    arrow = None  # partly read on demand
    by_reference = True
    map_joins = True
    layout_tag = "joined"  # earlier versions stored the same map whole, cut elsewhere

    @property
    def storage_bytes(self) -> int:
        share = self.num_rows / max(1, self.base.num_rows)
        return int(self._local.storage_bytes + self.base.storage_bytes * share)

    @property
    def bounded(self) -> bool:
        return self.base.bounded

    @property
    def opened_as(self) -> str:
        return f"a map result joined with {self.base.opened_as}"

    def pickled(self) -> JoinedTable:
        """Itself: it pickles as its parts (see the module docstring)."""
        return self

    def reading(self, read_ahead: int | str | None, mapper: Mapper) -> JoinedReading:
        return JoinedReading(self, read_ahead, mapper)

    def stats(self) -> dict[str, Any]:
        """The in-place table's counters (its decode cache), if it keeps any."""
        stats = getattr(self.base, "stats", None)
        return stats() if stats is not None else {}


def _reopen(
    base: Any,
    start: int,
    derived: Any,
    rows: int,
    columns: tuple[str, ...],
    metadata: dict[bytes, bytes],
    positions: np.ndarray | None = None,
) -> JoinedTable:
    """Unpickle: the in-place table reopened by its description, the cache files mapped again."""
    from arrowmix._storage.mapped import TableRef

    table = derived.open() if isinstance(derived, TableRef) else derived
    if table.num_columns == 0:  # no derived column left: only its row count travels
        table = pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
    return JoinedTable(base, start, table, columns, metadata, positions)


class JoinedReading:
    """A stream's reading of a :class:`JoinedTable`: each column read by its own part."""

    def __init__(self, table: JoinedTable, read_ahead: int | str | None, mapper: Mapper) -> None:
        self.table = table
        self._start = table.start
        self._mapper = mapper
        self._derived = table._local.reading(read_ahead, mapper)
        self._base: TableReading = table.base.reading(read_ahead, self._base_mapper(mapper))
        self.hooks = tuple(dict.fromkeys((*self._base.hooks, *self._derived.hooks)))

    def _base_mapper(self, mapper: Mapper) -> Mapper:
        """View positions to in-place rows."""
        rows = self.table.base_rows
        if mapper is None:
            return None if self.table.positions is None and self._start == 0 else rows
        return lambda p: rows(mapper(p))

    def _parts(self) -> list[TableReading]:
        return [self._base, self._derived]

    def read_ahead(self, upcoming: Upcoming) -> None:
        for part in self._parts():
            if "read_ahead" in part.hooks:
                part.read_ahead(upcoming)

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in self._parts():
            if "stats" in part.hooks:
                out.update(part.stats())
        return out

    def close(self) -> None:
        for part in self._parts():
            if "close" in part.hooks:
                part.close()

    def counting(self) -> AbstractContextManager[Any]:
        stack = contextlib.ExitStack()
        for part in self._parts():
            stack.enter_context(part.counting())
        return stack

    def _split(self, names: Sequence[str]) -> tuple[list[str], list[str]]:
        in_base = self.table._in_base
        return [n for n in names if n in in_base], [n for n in names if n not in in_base]

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        pos = np.asarray(positions, dtype=np.int64)
        if name in self.table._in_base:
            return self._base.take_column(self.table.base_rows(pos), name)
        return self._derived.take_column(pos, name)

    def take_lists(
        self, positions: np.ndarray, others: Sequence[str], lists: Mapping[str, ListSpec]
    ) -> tuple[pa.Table | None, dict[str, list[Any]]]:
        pos = np.asarray(positions, dtype=np.int64)
        base_others, derived_others = self._split(others)
        base_lists, derived_lists = self._split(list(lists))
        values: dict[str, list[Any]] = {}
        tables: dict[str, pa.Table | None] = {}
        for part, at, names, listed in (
            (self._base, self.table.base_rows(pos), base_others, base_lists),
            (self._derived, pos, derived_others, derived_lists),
        ):
            if names or listed:
                table, got = part.take_lists(at, names, {n: lists[n] for n in listed})
                values.update(got)
                for n in names:
                    tables[n] = table
        if not others:
            return None, values
        arrays = [tables[n].column(n) for n in others]  # type: ignore[union-attr]
        fields = [tables[n].schema.field(n) for n in others]  # type: ignore[union-attr]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), values

    def token_column(self, name: str, mapper: Mapper, view_rows: int) -> TokenColumn:
        if name in self.table._in_base:
            return self._base.token_column(name, self._base_mapper(mapper), view_rows)
        return self._derived.token_column(name, mapper, view_rows)

    def prefetch_ranges(
        self, starts: np.ndarray, stops: np.ndarray, columns: Sequence[str]
    ) -> None:
        in_base, derived = self._split(columns)
        if in_base and self.table.positions is None:  # (scattered rows: no ranges)
            self._base.prefetch_ranges(starts + self._start, stops + self._start, in_base)
        if derived:
            self._derived.prefetch_ranges(starts, stops, derived)


def join(
    parent: Table,
    rows: int | np.ndarray,
    stored: pa.Table,
    columns: Sequence[str],
    kept: Sequence[str],
) -> pa.Table | JoinedTable:
    """A map result over rows of ``parent`` (which joins), from ``rows`` on or at ``rows``.

    ``rows``: the parent row of the result's row 0 (a contiguous view), or the parent rows of
    every result row (increasing: a filtered view). ``stored``: the derived columns, from the
    cache files; ``kept``: the input columns the map keeps unchanged, read from ``parent``;
    ``columns``: the result's order. Over a joined parent and a contiguous view, its in-place
    columns stay in place and its derived ones are zero-copy slices of its cache files; over
    a scattered view of a joined parent, the parent is the in-place part (read at ``rows``).
    A plain Arrow table when no kept column is read in place.
    """
    n = stored.num_rows
    positions = None if isinstance(rows, int) else np.asarray(rows[:n], dtype=np.int64)
    if isinstance(parent, JoinedTable) and positions is None:  # one in-place part, merged
        base, at = parent.base, parent.start + int(rows)
        earlier: pa.Table | None = parent.derived.slice(int(rows), n)
        in_base = parent._in_base
        if parent.positions is not None:
            positions, at = parent.positions[int(rows) : int(rows) + n], 0
    else:
        base, at, earlier, in_base = parent, int(rows) if positions is None else 0, None, None
    in_base = frozenset(parent.column_names) if in_base is None else in_base
    from_base = [c for c in kept if c in in_base and c not in stored.column_names]
    arrow = [c for c in columns if c not in from_base]
    owner = [stored if c in stored.column_names else earlier for c in arrow]
    fields = [t.schema.field(c) for t, c in zip(owner, arrow, strict=True)]  # type: ignore[union-attr]
    arrays = [t.column(c) for t, c in zip(owner, arrow, strict=True)]  # type: ignore[union-attr]
    derived = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    if not arrow:  # only in-place columns kept: the rows still count
        derived = stored.select([])
    if not from_base:
        return derived
    return JoinedTable(base.select(from_base), at, derived, columns, None, positions)
