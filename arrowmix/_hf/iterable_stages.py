"""The row stages behind :class:`~arrowmix.IterableDataset`'s methods, with HF's semantics.

Each is a checkpointable stage of the stream kit (:mod:`arrowmix.stream`), so an iterable
dataset resumes exactly wherever it stands (``map`` and ``filter`` are in
:mod:`arrowmix._hf.iterable_calls`):

- :class:`SkipRows` (``skip``): the state is the source's plus the rows skipped so far.
- :class:`RepeatRows` (``repeat``): the state is the source's plus the repetitions done.
- :class:`EveryNth` (``split_dataset_by_node`` by examples): row ``offset`` of every ``step``.
- :class:`FormatRows` and :class:`ColumnOp`: per-row conversions with no state of their own.

Rows are Python dicts, as HF's examples are; a format (``"torch"``, ``"numpy"``...) is applied
as HF applies it: to the inputs of ``map``/``filter`` and to the rows yielded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._dataset.formats import format_batch, format_rows
from arrowmix._hf.iterable_tensorize import TENSOR_FORMATS, tensorize
from arrowmix._stream.base import State, Stream
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = [
    "ColumnOp",
    "CountingStage",
    "EveryNth",
    "FormatRows",
    "RepeatRows",
    "SkipRows",
    "batch_to_examples",
    "examples_to_batch",
    "format_example",
    "format_examples_batch",
    "format_typed_rows",
    "infer_features",
    "plain",
    "schema_of",
]


def examples_to_batch(examples: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """A batch (dict of lists) of rows; columns in order of first appearance, gaps ``None``."""
    cols = {col: None for example in examples for col in example}
    return {col: [example.get(col) for example in examples] for col in cols}


def infer_features(examples: Sequence[Mapping[str, Any]]) -> Any:
    """HF ``Features`` of ``examples`` as HF infers them (``pyarrow``'s types of the batch)."""
    from datasets import Features  # type: ignore[import-untyped, import-not-found, unused-ignore]

    return Features.from_arrow_schema(pa.Table.from_pydict(examples_to_batch(examples)).schema)


def batch_to_examples(batch: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The rows of a batch (the first column gives the row count)."""
    if not batch:
        return []
    n = len(next(iter(batch.values())))
    return [{col: values[i] for col, values in batch.items()} for i in range(n)]


def plain(value: Any) -> Any:
    """Tensors and numpy values as Python objects (HF encodes them the same way)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def schema_of(features: Any) -> pa.Schema | None:
    """The Arrow schema of HF ``features`` (None when unknown)."""
    schema = getattr(features, "arrow_schema", None)
    return schema.remove_metadata() if isinstance(schema, pa.Schema) else None


def _table(examples: Sequence[Mapping[str, Any]], schema: pa.Schema | None) -> pa.Table:
    """The rows as a table of ``schema``, or of the types Arrow infers.

    ``schema`` (the dataset's features, as HF encodes rows with them) applies when the rows
    have its columns; without features the types are inferred, as HF infers them.
    """
    batch = {k: [plain(v) for v in vs] for k, vs in examples_to_batch(examples).items()}
    if schema is not None and list(batch) == schema.names:
        try:
            return pa.Table.from_pydict(batch, schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            pass  # values the features do not describe: inferred, as without features
    return pa.Table.from_pydict(batch)


def format_example(
    example: Mapping[str, Any], fmt: str | None, schema: pa.Schema | None = None
) -> Any:
    """``example`` in format ``fmt`` (HF's formatter on a one-row table of ``schema``)."""
    if fmt is None:
        return dict(example)
    return format_rows(_table([example], schema), fmt)[0]


def format_examples_batch(
    examples: Sequence[Mapping[str, Any]], fmt: str | None, schema: pa.Schema | None = None
) -> Any:
    """A batch of ``examples`` in format ``fmt`` (tensors stacked, as HF's ``iter`` gives)."""
    if fmt is None:
        return examples_to_batch(examples)
    return format_batch(_table(examples, schema), fmt)


def format_typed_rows(
    rows: Sequence[Mapping[str, Any]], fmt: str, schema: pa.Schema | None
) -> list[Any]:
    """Rows read from Arrow, formatted as one batch and cut again (HF's formatted inputs)."""
    return batch_to_examples(format_batch(_table(rows, schema), fmt))


class FormatRows(PassThrough[Any]):
    """Every row in format ``fmt``, as HF formats the rows it yields.

    ``typed`` rows (still the source's Arrow rows) are formatted from a table of ``schema``
    (the features), with each column's type; the rows a function produced are tensorized
    value by value (:mod:`arrowmix._hf.iterable_tensorize`).

    State: the source's, unchanged (no replay).
    """

    def __init__(
        self, source: Stream[Any], fmt: str, schema: pa.Schema | None = None, typed: bool = True
    ) -> None:
        super().__init__(source)
        self.fmt, self.types, self.typed = fmt, schema, typed

    def describe(self) -> dict[str, Any]:
        types = None if self.types is None else str(self.types)
        return {"format": self.fmt, "types": types, "typed": self.typed}

    def next(self) -> Any:
        row = self.source.next()
        if not self.typed and self.fmt in TENSOR_FORMATS:
            return tensorize(row, self.fmt)
        return format_example(row, self.fmt, self.types)


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


class CountingStage(Stream[Any]):
    """Base of the stages whose state is their source's plus one counter, ``COUNT_KEY``.

    Subclasses set ``COUNT_KEY`` and ``STATE_KEYS = ("source", COUNT_KEY)``, keep the count in
    ``self.count`` and implement ``next()``.

    State:
        ``source``: the source's state. ``COUNT_KEY``: the counter. Replay cost: none.
    """

    SOURCE_KEY = "source"
    COUNT_KEY = "count"
    STATE_KEYS = (SOURCE_KEY, COUNT_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING  # the counter counts one instance's rows

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        self.source = source

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self.count = 0
        if state is None:
            self.source.reset(None)
            return
        count = state[self.COUNT_KEY]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise StateError(f"{type(self).__name__}: bad `{self.COUNT_KEY}` {count!r} in state.")
        self.source.reset(state[self.SOURCE_KEY])
        self.count = count

    def get_state(self) -> State:
        return {self.SOURCE_KEY: self.source.get_state(), self.COUNT_KEY: self.count}


class SkipRows(CountingStage):
    """Every row of ``source`` after the first ``n`` (HF's ``skip``).

    State:
        ``source``: the source's state. ``skipped``: rows skipped so far. Replay cost: none.
    """

    COUNT_KEY = "skipped"
    STATE_KEYS = ("source", COUNT_KEY)

    def __init__(self, source: Stream[Any], n: int) -> None:
        super().__init__(source)
        self.n = n

    def describe(self) -> dict[str, Any]:
        return {"n": self.n}

    def next(self) -> Any:
        while self.count < self.n:
            self.source.next()
            self.count += 1
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


class RepeatRows(CountingStage):
    """The rows of ``source`` ``num_times`` times over (None: forever), as HF's ``repeat``.

    Each repetition reads the source from its start, in the same order. Forever stops when a
    whole repetition gives no row.

    State:
        ``source``: the source's state. ``repeat``: repetitions finished. Replay cost: none.
    """

    COUNT_KEY = "repeat"
    STATE_KEYS = ("source", COUNT_KEY)

    def __init__(self, source: Stream[Any], num_times: int | None) -> None:
        super().__init__(source)
        self.num_times = num_times

    def describe(self) -> dict[str, Any]:
        return {"num_times": self.num_times}

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._got, self._first = False, True  # a resumed repetition may be at its end

    def next(self) -> Any:
        while self.num_times is None or self.count < self.num_times:
            try:
                item = self.source.next()
            except StopIteration:
                if self.num_times is None and not self._got and not self._first:
                    break  # a whole repetition without a row: forever would never yield
                self._first, self._got = False, False
                self.count += 1
                self.source.reset(None)
                continue
            self._got = True
            return item
        raise StopIteration
