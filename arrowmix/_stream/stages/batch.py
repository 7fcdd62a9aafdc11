"""Fixed-size batches and a collate helper that pads token-id lists.

Checkpointing: a batch is cut from consecutive items and yielded whole, so the batch
stage returns its source's state unchanged; restore costs nothing extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from arrowmix._stream.base import Stream
from arrowmix._stream.counters import Tally, wait_clock
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.positions import PositionBatches, Positions
from arrowmix._stream.sources.rows import table_to_rows
from arrowmix._stream.tokens.column import is_token_type
from arrowmix._validate import check_int

__all__ = ["BatchIterator", "pad_batch"]

T = TypeVar("T")


def _positive_int(name: str, v: object) -> int:
    n: int = check_int(name, v, minimum=1)
    return n


class BatchIterator(PassThrough[Any]):
    """Lists of ``batch_size`` consecutive items (the last one shorter unless dropped).

    With ``columnar=True`` (index streams: read from a Dataset or row source through
    shuffle and mix), each batch is a ``pyarrow.Table`` taken with one gather, or, for
    ``collate``, the array of its row positions.

    State:
        The source's state, unchanged. Replay cost: none.
    """

    def __init__(
        self,
        source: Stream[T],
        batch_size: int,
        *,
        drop_last: bool = False,
        columnar: bool = False,
    ):
        super().__init__(source)
        self.batch_size = _positive_int("batch_size", batch_size)
        self.drop_last = bool(drop_last)
        self.columnar = bool(columnar)
        self._tally = Tally(tokens=False)
        self._input: Positions | None = None
        if self.columnar:
            self._input = source.as_positions()
            if self._input is None:
                raise ValueError(
                    "`columnar=True` needs an index stream (read straight from a Dataset or "
                    "row source, through shuffle, mix or filter, not map); this stream "
                    "carries Python objects."
                )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"batch_size": self.batch_size, "drop_last": self.drop_last}
        if self.columnar:  # only then: fingerprints of row batches stay as they were
            out["columnar"] = True
        return out

    def as_position_batches(self, column: str | None = None) -> PositionBatches | None:
        """Each batch as an array of row positions (for collation).

        Columnar batches always offer it. Batches of row dicts over an index stream offer
        it when ``column`` is a token column of the rows (``batch(256).collate(...)``):
        the consumer then copies the token ids straight out of the storage, and must
        produce what it would have produced from the row dicts (``PositionBatches.row_dicts``).
        """
        if self._input is None:
            if not self._token_column(column):
                return None
            self._input = self.source.as_positions()
            if self._input is None:
                return None
        return PositionBatches(self._input.rows, self._next_positions, row_dicts=not self.columnar)

    def _token_column(self, column: str | None) -> bool:
        rows = self.source.row_source()
        if column is None or rows is None or column not in rows.schema.names:
            return False
        return is_token_type(rows.schema.field(column).type)

    def stats(self) -> dict[str, Any]:
        """Batches and rows yielded, rows dropped by ``drop_last``, time waiting on the source.

        Process-local, not checkpointed (see ``docs/observability.md``).
        """
        return self._tally.as_dict()

    def _next_positions(self) -> np.ndarray:
        assert self._input is not None
        t0 = wait_clock()
        pos = self._input.pull(self.batch_size)
        self._tally.wait += wait_clock() - t0
        counted: np.ndarray = self._count(pos)
        return counted

    def _count(self, items: Any) -> Any:
        n = len(items)
        if not n or (self.drop_last and n < self.batch_size):
            self._tally.drop(rows=n)
            raise StopIteration
        self._tally.add(n)
        return items

    def next(self) -> Any:
        if self._input is not None:
            table = self._input.rows.take(self._next_positions())
            return table if self.columnar else table_to_rows(table)
        t0 = wait_clock()
        items = self.source.pull(self.batch_size)
        self._tally.wait += wait_clock() - t0
        return self._count(items)


def pad_batch(
    sequences: Sequence[Sequence[int]],
    *,
    pad_id: int = 0,
    max_length: int | None = None,
    dtype: Any = np.int64,
) -> np.ndarray:
    """Pad token-id lists into a ``(batch, longest)`` array (right padding).

    Args:
        sequences: token ids, one list per example.
        pad_id: value used for padding.
        max_length: pad (and truncate) to this length instead of the longest.
        dtype: numpy dtype of the result.

    Example:
        >>> from arrowmix.stream import pad_batch
        >>> pad_batch([[5, 6, 7], [8]], pad_id=-1).tolist()
        [[5, 6, 7], [8, -1, -1]]
    """
    lengths = [len(s) for s in sequences]
    width = max(lengths, default=0) if max_length is None else max_length
    out = np.full((len(sequences), width), pad_id, dtype=dtype)
    for i, seq in enumerate(sequences):
        n = min(len(seq), width)
        out[i, :n] = seq[:n]
    return out
