"""``IterableDataset.batch(by_column=...)``: each run of rows sharing the columns' values.

As HF ``datasets``: consecutive rows whose ``by_column`` values are equal make one batch (one
row whose columns are lists), whatever shard or ``batch_size`` they come from; a value seen
again later starts a new batch.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from arrowmix._hf.iterable_stages import examples_to_batch
from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole

__all__ = ["RunBatches", "make_runs"]

_END = object()


class RunBatches(Stream[dict[str, list[Any]]]):
    """One batch per run of rows with equal ``columns`` values (HF's ``batch(by_column=)``).

    A run ends at the first row with other values, which is read ahead and starts the next.

    State:
        ``source``: the source's state before the row read ahead (the source's state when
        none is). Replay cost: one row.
    """

    SOURCE_KEY = "source"
    STATE_KEYS = (SOURCE_KEY,)
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "a run of rows must be read by one instance"

    def __init__(self, source: Stream[Any], columns: Sequence[str]) -> None:
        super().__init__()
        self.source = source
        self.columns = list(columns)

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {"columns": self.columns}

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._held: Any = None
        self._anchor: State | None = None
        self.source.reset(None if state is None else state[self.SOURCE_KEY])

    def get_state(self) -> State:
        held = self._held is not None and self._held is not _END
        return {self.SOURCE_KEY: self._anchor if held else self.source.get_state()}

    def _fetch(self) -> Any:
        self._anchor = copy.deepcopy(self.source.get_state())
        try:
            return self.source.next()
        except StopIteration:
            return _END

    def _key(self, row: dict[str, Any]) -> list[Any]:
        try:
            return [row[c] for c in self.columns]
        except KeyError as exc:
            raise ValueError(
                f"batch(by_column=...): column {exc.args[0]!r} is not in the row "
                f"(columns: {list(row)})."
            ) from None

    def next(self) -> dict[str, list[Any]]:
        first = self._fetch() if self._held is None else self._held
        if first is _END:
            self._held = _END
            raise StopIteration
        run, key = [first], self._key(first)
        while True:
            row = self._fetch()
            if row is _END or self._key(row) != key:
                self._held = row
                return examples_to_batch(run)
            run.append(row)


def make_runs(stream: Stream[Any], columns: Sequence[str]) -> Stream[Any]:
    return RunBatches(stream, columns)
