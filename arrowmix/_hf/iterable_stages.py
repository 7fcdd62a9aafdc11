"""The stream stages behind :class:`~arrowmix.IterableDataset`'s methods, with HF's semantics.

Each is a checkpointable stage of the stream kit (:mod:`arrowmix.stream`), so an iterable
dataset resumes exactly wherever it stands:

- :class:`HFMap` and :class:`HFFilter` (``map``/``filter``/``batch``): a window is one batch of
  the function (one row when unbatched); the state is the source's state at the batch start,
  the batch number and the rows of it already yielded. ``with_indices`` counts the rows the
  stage has read, as HF counts them (``window * batch_size + i``).
- :class:`SkipRows` (``skip``): the state is the source's plus the rows skipped so far.
- :class:`EveryNth` (``split_dataset_by_node`` by examples): row ``offset`` of every ``step``.
- :class:`FormatRows` and :class:`ColumnOp`: per-row conversions with no state of their own.

Rows are Python dicts, as HF's examples are; a format (``"torch"``, ``"numpy"``...) is applied
as HF applies it: to the inputs of ``map``/``filter`` and to the rows yielded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._dataset.formats import format_batch, format_rows
from arrowmix._stream.anchored import WindowReplayStage
from arrowmix._stream.base import PassThrough, State, Stream, fn_id
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = [
    "ColumnOp",
    "EveryNth",
    "FormatRows",
    "HFFilter",
    "HFMap",
    "SkipRows",
    "examples_to_batch",
    "format_example",
]


def examples_to_batch(examples: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """A batch (dict of lists) of rows; columns in order of first appearance, gaps ``None``."""
    cols = {col: None for example in examples for col in example}
    return {col: [example.get(col) for example in examples] for col in cols}


def batch_to_examples(batch: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The rows of a batch (the first column gives the row count)."""
    if not batch:
        return []
    n = len(next(iter(batch.values())))
    return [{col: values[i] for col, values in batch.items()} for i in range(n)]


def _plain(value: Any) -> Any:
    """Tensors and numpy values as Python objects (HF encodes them the same way)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def _table(examples: Sequence[Mapping[str, Any]]) -> pa.Table:
    batch = {k: [_plain(v) for v in vs] for k, vs in examples_to_batch(examples).items()}
    return pa.Table.from_pydict(batch)


def format_example(example: Mapping[str, Any], fmt: str | None) -> Any:
    """``example`` in format ``fmt`` (HF's formatter on a one-row table)."""
    if fmt is None:
        return dict(example)
    return format_rows(_table([example]), fmt)[0]


def format_examples_batch(examples: Sequence[Mapping[str, Any]], fmt: str | None) -> Any:
    """A batch of ``examples`` in format ``fmt`` (tensors stacked, as HF's ``iter`` gives)."""
    if fmt is None:
        return examples_to_batch(examples)
    return format_batch(_table(examples), fmt)


class FormatRows(PassThrough[Any]):
    """Every row in format ``fmt``. State: the source's, unchanged (no replay)."""

    def __init__(self, source: Stream[Any], fmt: str) -> None:
        super().__init__(source)
        self.fmt = fmt

    def describe(self) -> dict[str, Any]:
        return {"format": self.fmt}

    def next(self) -> Any:
        return format_example(self.source.next(), self.fmt)


class ColumnOp(PassThrough[dict[str, Any]]):
    """``select_columns``, ``remove_columns`` or ``rename_columns`` on every row.

    ``kind`` is ``"select"`` (``arg``: the names, in their order), ``"remove"`` (the names)
    or ``"rename"`` (``{old: new}``; the renamed columns move to the end, as in HF).
    State: the source's, unchanged (no replay).
    """

    def __init__(self, source: Stream[Any], kind: str, arg: Any) -> None:
        super().__init__(source)
        self.kind, self.arg = kind, arg

    def describe(self) -> dict[str, Any]:
        arg = sorted(self.arg.items()) if isinstance(self.arg, dict) else list(self.arg)
        return {"kind": self.kind, "arg": arg}

    def next(self) -> dict[str, Any]:
        row = self.source.next()
        if self.kind == "select":
            return {c: row[c] for c in self.arg}
        if self.kind == "remove":
            return {k: v for k, v in row.items() if k not in self.arg}
        olds, news = list(self.arg), list(self.arg.values())
        missing = [c for c in olds if c not in row]
        taken = [c for c in news if c in row]
        if missing or taken:
            problem = (
                f"columns {missing} are not in the dataset"
                if missing
                else f"columns {taken} are already in the dataset"
            )
            raise ValueError(f"Error when renaming {olds} to {news}: {problem}.")
        kept = {k: v for k, v in row.items() if k not in self.arg}
        return {**kept, **{new: row[old] for old, new in self.arg.items()}}


class _FunctionStage(WindowReplayStage[dict[str, Any]]):
    """What ``map`` and ``filter`` share: the call of the user's function on a batch or row."""

    def __init__(
        self,
        source: Stream[Any],
        function: Callable[..., Any],
        *,
        with_indices: bool = False,
        input_columns: Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        fn_kwargs: Mapping[str, Any] | None = None,
        input_format: str | None = None,
    ) -> None:
        super().__init__(source)
        self.function = function
        self.with_indices = with_indices
        self.input_columns = list(input_columns) if input_columns is not None else None
        self.batched = batched
        self.batch_size = batch_size if batched and batch_size and batch_size > 0 else None
        self.fn_kwargs = dict(fn_kwargs or {})
        self.input_format = input_format

    def describe(self) -> dict[str, Any]:
        return {
            "fn": fn_id(self, self.function),
            "with_indices": self.with_indices,
            "input_columns": self.input_columns,
            "batched": self.batched,
            "batch_size": self.batch_size,
            "fn_kwargs": sorted(self.fn_kwargs),
            "input_format": self.input_format,
        }

    def _read(self, window: int) -> tuple[list[Any], int] | None:
        """The window's input rows and the index of its first, or None at the end."""
        if not self.batched:
            rows = self.source.pull(1)
            return (rows, window) if rows else None
        if self.batch_size is None:  # the whole stream is one batch
            if window > 0:
                return None
            rows = []
            while part := self.source.pull(4096):
                rows.extend(part)
            return (rows, 0) if rows else None
        rows = self.source.pull(self.batch_size)
        return (rows, window * self.batch_size) if rows else None

    def _call(self, inputs: Any, indices: Any) -> Any:
        cols = self.input_columns
        args = [inputs] if cols is None else [inputs[c] for c in cols]
        if self.with_indices:
            args.append(indices)
        return self.function(*args, **self.fn_kwargs)

    def _batch(self, rows: list[Any]) -> Any:
        if self.input_format is None:
            return examples_to_batch(rows)
        return format_examples_batch(rows, self.input_format)

    def _row(self, row: Any) -> Any:
        return dict(row) if self.input_format is None else format_example(row, self.input_format)


class HFMap(_FunctionStage):
    """HF's iterable ``map``: each output row is the input row updated with the function's.

    State:
        ``source`` at the batch start, ``window`` (the batch number) and ``emitted`` (rows
        of the batch yielded). Replay cost: one call of the function.
    """

    def __init__(
        self,
        source: Stream[Any],
        function: Callable[..., Any],
        *,
        drop_last_batch: bool = False,
        remove_columns: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(source, function, **kwargs)
        self.drop_last_batch = drop_last_batch
        self.remove_columns = list(remove_columns or ())

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "drop_last_batch": self.drop_last_batch,
            "remove_columns": self.remove_columns,
        }

    def compute(self, window: int) -> list[dict[str, Any]] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, first = read
        if not self.batched:
            example = self._row(rows[0])
            out = self._call(example, first)
            return [self._merge(example, out, same=out is example)]
        if self.drop_last_batch and self.batch_size is not None and len(rows) < self.batch_size:
            return None
        batch = self._batch(rows)
        out = self._call(batch, list(range(first, first + len(rows))))
        _check_lengths(out)
        merged = self._merge(batch, out, same=out is batch)
        _check_kept(batch, out, merged)
        return batch_to_examples(merged)

    def _merge(self, inputs: Any, out: Any, *, same: bool) -> dict[str, Any]:
        if out is None:
            out = {}
        if not isinstance(out, Mapping):
            raise TypeError(
                f"map: the function must return a dict (or None), got {type(out).__name__}."
            )
        inputs = dict(inputs)
        if self.remove_columns:
            inputs = {k: v for k, v in inputs.items() if k not in self.remove_columns}
            if same:
                out = {k: v for k, v in out.items() if k not in self.remove_columns}
        return {**inputs, **out}


def _check_lengths(out: Any) -> None:
    if not out or not isinstance(out, Mapping):
        return
    first = next(iter(out))
    bad = [c for c in out if len(out[c]) != len(out[first])]
    if bad:
        raise ValueError(
            f"Column lengths mismatch: columns {bad} have length {[len(out[c]) for c in bad]} "
            f"while {first} has length {len(out[first])}."
        )


def _check_kept(batch: Mapping[str, Any], out: Any, merged: Mapping[str, Any]) -> None:
    if not out or not isinstance(out, Mapping):
        return
    first = next(iter(out))
    n = len(out[first])
    bad = [c for c in merged if c not in out and len(merged[c]) != n]
    if bad:
        raise ValueError(
            f"Column lengths mismatch: columns {bad} have length "
            f"{[len(merged[c]) for c in bad]} while {first} has length {n}. Make sure the "
            "mapped function returns all columns at the same length, or drop the offending "
            "input columns with `remove_columns`."
        )


class HFFilter(_FunctionStage):
    """HF's iterable ``filter``: the rows for which the function is true.

    With ``batched=True`` the function returns one bool per row of the batch.

    State:
        ``source`` at the batch start, ``window`` and ``emitted`` (kept rows of the batch
        yielded). Replay cost: one call of the function.
    """

    def compute(self, window: int) -> list[Any] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, first = read
        if not self.batched:
            row = self._row(rows[0])
            return [row] if self._call(row, first) else []
        batch = self._batch(rows)
        mask = self._call(batch, list(range(first, first + len(rows))))
        mask = list(_plain(mask))
        if len(mask) != len(rows):
            raise ValueError(
                f"filter: the batched function returned {len(mask)} values for a batch of "
                f"{len(rows)} rows; it must return one bool per row."
            )
        if self.input_format is None:
            return [r for r, keep in zip(rows, mask, strict=True) if keep]
        return [r for r, keep in zip(batch_to_examples(batch), mask, strict=True) if keep]


class SkipRows(Stream[Any]):
    """Every row of ``source`` after the first ``n`` (HF's ``skip``).

    State:
        ``source``: the source's state. ``skipped``: rows skipped so far. Replay cost: none.
    """

    SOURCE_KEY = "source"
    SKIPPED_KEY = "skipped"
    STATE_KEYS = (SOURCE_KEY, SKIPPED_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING  # the rows to skip are counted on one instance

    def __init__(self, source: Stream[Any], n: int) -> None:
        super().__init__()
        self.source = source
        self.n = n

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {"n": self.n}

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._skipped = 0
        if state is None:
            self.source.reset(None)
            return
        skipped = state[self.SKIPPED_KEY]
        if isinstance(skipped, bool) or not isinstance(skipped, int) or not 0 <= skipped <= self.n:
            raise StateError(f"SkipRows: bad `skipped` {skipped!r} (n={self.n}).")
        self.source.reset(state[self.SOURCE_KEY])
        self._skipped = skipped

    def get_state(self) -> State:
        return {self.SOURCE_KEY: self.source.get_state(), self.SKIPPED_KEY: self._skipped}

    def next(self) -> Any:
        while self._skipped < self.n:
            self.source.next()
            self._skipped += 1
        return self.source.next()


class EveryNth(PassThrough[Any]):
    """Row ``offset`` of every ``step`` rows (``split_dataset_by_node`` by examples).

    State: the source's, unchanged (a call reads a whole group of ``step`` rows).
    """

    ELASTIC_ROLE = ElasticRole.REFUSING  # the groups are cut on one instance's rows

    def __init__(self, source: Stream[Any], step: int, offset: int) -> None:
        super().__init__(source)
        self.step, self.offset = step, offset

    def describe(self) -> dict[str, Any]:
        return {"step": self.step, "offset": self.offset}

    def next(self) -> Any:
        group = self.source.pull(self.step)
        if len(group) <= self.offset:
            raise StopIteration
        return group[self.offset]
