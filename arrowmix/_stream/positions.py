"""The positions protocol: a stream seen as row positions instead of rows.

An *index stream* (read from a Dataset or a row source, through shuffle, mix or
``batch(columnar=True)``) can hand its consumer row positions into its
:class:`~arrowmix._stream.row_source.RowSource` instead of rows: the consumer then
gathers the rows, or only the columns it needs, once. A stage offers this with
``Stream.as_positions()`` (a :class:`Positions` view of single positions) or
``Stream.as_position_batches(column)`` (a :class:`PositionBatches` view, one batch of
positions per call); both return ``None`` when the stage cannot.

A consumer asks once, when it is built, and from then on reads that input through the
view only (taking the view is how the consumer claims the input; the producer may then
keep positions in its buffers instead of rows). Nobody calls another stage's private
methods or flips its mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from arrowmix._stream.row_source import RowSource

__all__ = ["PositionBatches", "Positions", "no_positions"]


@dataclass(frozen=True)
class Positions:
    """A stream as row positions.

    Attributes:
        rows: the row source the positions index.
        pull: ``pull(n)``: up to ``n`` next positions (an int64 array), fewer only at
            the end; they advance the stream exactly as ``n`` rows would.
        to_rows: ``to_rows(table)``: the items of gathered rows, as the stream would
            yield them (``None``: plain row dicts).
    """

    rows: RowSource
    pull: Callable[[int], np.ndarray]
    to_rows: Callable[[pa.Table], list[Any]] | None = None

    def items(self, table: pa.Table) -> list[Any]:
        """The items of ``table`` (rows gathered at positions of this view)."""
        if self.to_rows is not None:
            return self.to_rows(table)
        from arrowmix._stream.sources.rows import table_to_rows  # the sources import this

        return table_to_rows(table)


@dataclass(frozen=True)
class PositionBatches:
    """A batching stream as batches of row positions.

    Attributes:
        rows: the row source the positions index.
        next: ``next()``: the next batch, an int64 array of positions (or a
            :class:`~arrowmix._stream.tokens.column.TokenSpans` when the view was asked for
            the token column the batches were planned by); raises StopIteration at
            the end.
        row_dicts: the stream would otherwise yield each batch as a list of row dicts
            (``batch(n)`` without ``columnar``): a consumer taking the view must produce
            what it would have produced from those rows (Python values of kept columns).
    """

    rows: RowSource
    next: Callable[[], Any]
    row_dicts: bool = False


def no_positions(owner: object) -> TypeError:
    """The error of a consumer that needs row positions from ``owner``, which has none."""
    return TypeError(f"{type(owner).__name__} does not stream row positions.")
