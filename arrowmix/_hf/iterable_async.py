"""``map``/``filter`` of an ``async`` function: its calls run concurrently, as HF runs them.

- :class:`MapConcurrent` and :class:`FilterConcurrent` (unbatched): windows of
  :data:`ASYNC_WINDOW` rows whose calls run at once (HF runs at most 1,000 at a time).
- :class:`MapBatchesConcurrent` (batched ``map``): the batches that fit in
  :data:`ASYNC_WINDOW` rows (at least one) run at once. A batched ``async`` filter awaits
  one batch at a time (:class:`~arrowmix._hf.iterable_calls.FilterBatches`).

The state is a window's (:class:`~arrowmix._stream.replay.WindowReplayStage`): a resume
inside a window calls the function again on that window's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arrowmix._hf.iterable_calls import Call, MapBatches, PerBatch, merge
from arrowmix._stream.base import Stream

__all__ = ["ASYNC_WINDOW", "FilterConcurrent", "MapBatchesConcurrent", "MapConcurrent"]

#: Rows whose calls of an ``async`` function run at once (HF's limit of running calls).
ASYNC_WINDOW = 1000


class MapConcurrent(PerBatch):
    """HF's unbatched ``map`` of an ``async`` function: the calls of a window run concurrently.

    A window is ``window`` rows (HF runs at most 1,000 calls at once); a resume inside a
    window calls the function again on the window's rows.
    """

    def __init__(
        self,
        source: Stream[Any],
        call: Call,
        window: int = ASYNC_WINDOW,
        remove_columns: Sequence[str] | None = None,
    ) -> None:
        super().__init__(source, call, window)
        self.remove_columns = list(remove_columns or ())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "remove_columns": self.remove_columns}

    def compute(self, window: int) -> list[dict[str, Any]] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, indices = read
        inputs = self.call.rows(rows)
        outs = self.call.each(inputs, indices)
        return [
            merge(x, out, self.remove_columns, same=out is x, row=True)
            for x, out in zip(inputs, outs, strict=True)
        ]


class MapBatchesConcurrent(MapBatches):
    """HF's batched ``map`` of an ``async`` function: a window's batches run concurrently.

    A window is as many batches of ``batch_size`` rows as fit in :data:`ASYNC_WINDOW` rows
    (at least one); a resume inside a window calls the function again on its batches.
    """

    def __init__(
        self,
        source: Stream[Any],
        call: Call,
        batch_size: int,
        drop_last_batch: bool = False,
        remove_columns: Sequence[str] | None = None,
    ) -> None:
        window = batch_size * max(1, ASYNC_WINDOW // batch_size)
        super().__init__(source, call, window, drop_last_batch, remove_columns)
        self.inner = batch_size

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "inner": self.inner}

    def compute(self, window: int) -> list[dict[str, Any]] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, indices = read
        cuts = range(0, len(rows), self.inner)
        parts = [(rows[i : i + self.inner], indices[i : i + self.inner]) for i in cuts]
        if self.drop_last_batch and len(parts[-1][0]) < self.inner:
            parts.pop()
            if not parts:
                return None
        batches = [self.call.batch(r) for r, _ in parts]
        outs = self.call.each(batches, [i for _, i in parts])
        return [r for b, out in zip(batches, outs, strict=True) for r in self.output_rows(b, out)]


class FilterConcurrent(PerBatch):
    """HF's unbatched ``filter`` of an ``async`` function, a window of calls at once."""

    def compute(self, window: int) -> list[Any] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, indices = read
        inputs = self.call.rows(rows)
        keep = self.call.each(inputs, indices)
        return [x for x, k in zip(inputs, keep, strict=True) if k]
