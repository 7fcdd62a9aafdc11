"""The row source of a ``mix`` of index streams: its inputs' rows, one after the other.

``mix`` over streams that move row positions (sources read from a Dataset or a row
source, through shuffles) moves positions too: position ``bases[k] + p`` stands for row
``p`` of input ``k``. Consumers (columnar bucketing, collation, packing) read the rows
they need through this source: one ``take`` per input touched, and zero-copy token
views for ``list<int*>`` columns. The rows have the inputs' common schema
(:func:`~arrowmix._stream.mixing.schemas.common_schema`: an integer column of different
widths in different inputs has one type that holds them all); the rows of an input of
another type are cast as they are taken, those of the others are returned as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage.distinct import distinct
from arrowmix._stream.mixing.schemas import common_schema
from arrowmix._stream.provenance import RefIndex, sources_reader
from arrowmix._stream.row_source import RowSource
from arrowmix._stream.tokens.column import TokenColumn, take_values, token_column
from arrowmix._stream.tokens.concat import ConcatTokenColumn

__all__ = ["MixedRows"]


class MixedRows:
    """A :class:`RowSource` concatenating the rows of several row sources.

    Example:
        >>> import pyarrow as pa
        >>> from arrowmix._stream.row_source import TableRowSource
        >>> a, b = TableRowSource(pa.table({"x": [0, 1]})), TableRowSource(pa.table({"x": [7]}))
        >>> rows = MixedRows([a, b])
        >>> rows.take(np.array([2, 0])).column("x").to_pylist()
        [7, 0]
    """

    def __init__(self, sources: Sequence[RowSource]) -> None:
        self.sources = list(sources)
        if not self.sources:
            raise ValueError("MixedRows needs at least one row source.")
        self.bases = np.cumsum([0, *(s.num_rows for s in self.sources)], dtype=np.int64)
        self._tokens: dict[str, TokenColumn] = {}
        self._schema = common_schema([(str(k), s.schema) for k, s in enumerate(self.sources)])
        #: Whether input ``k``'s rows are cast to the common schema when taken.
        self._cast = [not s.schema.equals(self._schema) for s in self.sources]

    @property
    def num_rows(self) -> int:
        return int(self.bases[-1])

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def _take(self, k: int, local: np.ndarray) -> pa.Table:
        """Rows ``local`` of input ``k``, in the common schema."""
        table = self.sources[k].take(local)
        return table.cast(self._schema) if self._cast[k] else table

    @property
    def fingerprint(self) -> str:
        return hash_value([s.fingerprint for s in self.sources])

    def chunk_offsets(self) -> np.ndarray:
        parts = [
            s.chunk_offsets()[1:] + base
            for s, base in zip(self.sources, self.bases[:-1], strict=True)
        ]
        return np.concatenate([np.zeros(1, dtype=np.int64), *parts]).astype(np.int64)

    def _split(self, positions: np.ndarray) -> tuple[np.ndarray, list[int]]:
        pos = np.asarray(positions, dtype=np.int64)
        if pos.size and (int(pos.min()) < 0 or int(pos.max()) >= self.num_rows):
            bad = int(pos.min()) if int(pos.min()) < 0 else int(pos.max())
            raise IndexError(f"row {bad} is out of range for mixed rows of {self.num_rows}.")
        which = np.searchsorted(self.bases, pos, side="right") - 1
        return which, distinct(which).tolist()

    def take(self, positions: np.ndarray) -> pa.Table:
        """The rows at ``positions`` in that order (one ``take`` per input touched)."""
        pos = np.asarray(positions, dtype=np.int64)
        which, inputs = self._split(pos)
        if len(inputs) == 1:
            k = inputs[0]
            return self._take(k, pos - self.bases[k])
        if not inputs:
            return self.schema.empty_table()
        order = np.argsort(which, kind="stable")
        parts = [self._take(k, pos[order[which[order] == k]] - self.bases[k]) for k in inputs]
        table = pa.concat_tables([p.cast(self.schema) for p in parts])
        return table.take(_inverse(order))

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        """One column at ``positions``: each input touched gathers that column alone.

        An input over a bounded remote cache then reads only that column of its cached
        chunks, never the token ids of whole rows.
        """
        if name not in self.schema.names:
            raise KeyError(f"no column {name!r}; the rows have columns {self.schema.names}.")
        pos = np.asarray(positions, dtype=np.int64)
        which, inputs = self._split(pos)
        kind = self.schema.field(name).type
        if len(inputs) == 1:
            k = inputs[0]
            values = take_values(self.sources[k], pos - self.bases[k], name)
            return values.cast(kind) if self._cast[k] and values.type != kind else values
        if not inputs:
            return self.schema.empty_table().column(name)
        order = np.argsort(which, kind="stable")
        parts = [
            take_values(self.sources[k], pos[order[which[order] == k]] - self.bases[k], name)
            for k in inputs
        ]
        chunks = [c.cast(kind) for p in parts for c in p.chunks]
        return pa.chunked_array(chunks, type=kind).take(_inverse(order))

    @property
    def carries_sources(self) -> bool:
        """Every input's rows carry their source references (provenance)."""
        return all(sources_reader(s) is not None for s in self.sources)

    def leaves(self) -> list[tuple[int, Any]]:
        """``[(first position, SourcedRows)]``: every input's sourced rows, in order."""
        return [
            (int(base) + start, rows)
            for s, base in zip(self.sources, self.bases[:-1], strict=True)
            for start, rows in s.leaves()  # type: ignore[attr-defined]
        ]

    def sources_of(
        self, positions: np.ndarray, starts: np.ndarray | None = None
    ) -> list[dict[str, Any]]:
        """The source references of the rows at ``positions`` (each input's own)."""
        index = self.__dict__.get("_ref_index")
        if index is None:
            index = self._ref_index = RefIndex(self.leaves())
        refs: list[dict[str, Any]] = index(positions, starts)
        return refs

    def token_column(self, name: str) -> TokenColumn:
        """The inputs' token columns ``name``, seen as one (no copy)."""
        col = self._tokens.get(name)
        if col is None:
            col = ConcatTokenColumn([token_column(s, name) for s in self.sources])
            self._tokens[name] = col
        return col


def _inverse(order: np.ndarray) -> np.ndarray:
    """The permutation undoing ``order``: where each sorted item goes back to."""
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.arange(len(order), dtype=np.int64)
    return inverse
