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

The protocol is joinable: a stage between a producer and a consumer passes the view on,
changed. A filter-like stage (``filter``, a user's dedup) returns
``self.source.as_positions().filtered(keep)``: ``keep`` sees the items of each block of
positions, as the stage would see them one by one, and the kept positions pass on, so
``batch(columnar=True)``, ``shuffle``, bucketing and ``collate`` after it keep their
fast path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from arrowmix._stream.row_source import RowSource

__all__ = ["KeptPositions", "PositionBatches", "Positions", "no_positions"]


@dataclass(frozen=True)
class Positions:
    """A stream as row positions (what ``Stream.as_positions()`` returns).

    A stage over an index stream offers it so that the stages after it gather only the
    columns they need, once; see "Writing a stage" in ``docs/streams.md``.

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

    def filtered(self, keep: Callable[[list[Any]], Sequence[bool]]) -> Positions:
        """The positions of this view whose items ``keep`` keeps (for filter-like stages).

        ``keep(items)`` gets the items of a block of positions, in order (rows gathered
        and turned into items as the stream yields them) and returns one truth value
        per item; it may record what it saw (a dedup's seen set). Blocks are never
        larger than what could still be kept, so the stream's state stays exact.

        Example:
            >>> import pyarrow as pa
            >>> from arrowmix.stream import PassThrough, TableRowSource, from_row_source
            >>> class Odd(PassThrough):
            ...     def next(self):
            ...         while (row := self.source.next())["x"] % 2 == 0:
            ...             pass
            ...         return row
            ...     def row_source(self):
            ...         return self.source.row_source()
            ...     def as_positions(self):
            ...         inner = self.source.as_positions()
            ...         return None if inner is None else inner.filtered(self.keeps)
            ...     def keeps(self, rows):
            ...         return [row["x"] % 2 == 1 for row in rows]
            >>> rows = TableRowSource(pa.table({"x": list(range(10))}))
            >>> s = Odd(from_row_source(rows, seed=None, shuffle=None, infinite=False))
            >>> [t["x"].to_pylist() for t in s.batch(3, columnar=True)]
            [[1, 3, 5], [7, 9]]
        """
        return Positions(self.rows, KeptPositions(self, keep).pull, self.to_rows)


@dataclass(frozen=True)
class KeptPositions:
    """The positions of ``view`` whose items ``keep`` keeps (see ``Positions.filtered``).

    A class, not a closure, so that a pipeline holding the view pickles.
    """

    view: Positions
    keep: Callable[[list[Any]], Sequence[bool]]

    def pull(self, n: int) -> np.ndarray:
        """Up to ``n`` next kept positions, fewer only at the end."""
        view, keep = self.view, self.keep
        parts: list[np.ndarray] = []
        got = 0
        while got < n:
            # Never pull more than could still be kept: the source state stays exact.
            pos = view.pull(n - got)
            if not len(pos):
                break
            mask = np.asarray(keep(view.items(view.rows.take(pos))), dtype=bool)
            if mask.shape != pos.shape:
                raise ValueError(
                    f"`keep` returned {mask.shape[0] if mask.ndim else 'a scalar'} values "
                    f"for {len(pos)} items; it must return one per item."
                )
            parts.append(pos[mask])
            got += int(mask.sum())
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


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
