"""``IterableDataset.map`` and ``filter``: HF's calls of the user's function, as stream stages.

:class:`Call` is what HF does around the function: the inputs (the row, a batch, or some
``input_columns``), the indices (``with_indices``: the rows the stage has read, counted from
the start of the pass), ``fn_kwargs``, and the format of the inputs (a format set by
``with_format`` before the ``map`` applies to what the function receives, typed by the
features known then, as HF encodes them).

Four stages use it, so that each pays only for what it needs:

- :class:`MapRows` and :class:`FilterRows` (unbatched): a row in, a row (or nothing) out. The
  state is the source's state plus ``index``, the rows read; no replay.
- :class:`MapBatches` and :class:`FilterBatches` (``batched=True``): a window is one batch
  of the function; the state is the source's state at the batch start, the batch number and
  the outputs of the batch already yielded. Replay cost: one call of the function. The first
  index of batch ``w`` is ``w * batch_size``.

An ``async`` function's calls run concurrently (:mod:`arrowmix._hf.iterable_async`).

:func:`hf_map` and :func:`hf_filter` pick the stage.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._hf.iterable_stages import (
    CountingStage,
    batch_to_examples,
    examples_to_batch,
    format_example,
    format_examples_batch,
    format_typed_rows,
    plain,
)
from arrowmix._hf.iterable_tensorize import TENSOR_FORMATS, tensorize
from arrowmix._stream.base import Stream, fn_id
from arrowmix._stream.replay import WindowReplayStage
from arrowmix._stream.topology import ElasticRole

__all__ = [
    "Call",
    "FilterBatches",
    "FilterRows",
    "MapBatches",
    "MapRows",
    "PerBatch",
    "hf_filter",
    "hf_map",
    "run_awaitables",
]


class Call:
    """The user's function and how HF calls it (inputs, indices, ``fn_kwargs``, format)."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        with_indices: bool = False,
        input_columns: Sequence[str] | None = None,
        fn_kwargs: Mapping[str, Any] | None = None,
        input_format: str | None = None,
        input_schema: pa.Schema | None = None,
        input_typed: bool = True,
    ) -> None:
        self.function = function
        self.input_schema = input_schema
        self.input_typed = input_typed
        self.with_indices = with_indices
        self.input_columns = list(input_columns) if input_columns is not None else None
        self.fn_kwargs = dict(fn_kwargs or {})
        self.input_format = input_format

    def describe(self, owner: Stream[Any]) -> dict[str, Any]:
        return {
            "fn": fn_id(owner, self.function),
            "with_indices": self.with_indices,
            "input_columns": self.input_columns,
            "fn_kwargs": sorted(self.fn_kwargs),
            "input_format": self.input_format,
        }

    def __call__(self, inputs: Any, indices: Any) -> Any:
        """The function's result (an ``async`` function's is awaited, as HF does)."""
        out = self.start(inputs, indices)
        return run_awaitables([out])[0] if inspect.isawaitable(out) else out

    def start(self, inputs: Any, indices: Any) -> Any:
        """The function called: its result, or its coroutine for an ``async`` function."""
        cols = self.input_columns
        args = [inputs] if cols is None else [inputs[c] for c in cols]
        if self.with_indices:
            args.append(indices)
        return self.function(*args, **self.fn_kwargs)

    def each(self, inputs: list[Any], indices: Sequence[Any]) -> list[Any]:
        """The function's result for each input: an ``async`` function's run concurrently."""
        outs = [self.start(x, i) for x, i in zip(inputs, indices, strict=True)]
        if any(inspect.isawaitable(o) for o in outs):
            return run_awaitables(outs)
        return outs

    def rows(self, rows: list[Any]) -> list[Any]:
        """The rows as the function receives them (copies; formatted in a format, as HF).

        Rows still read from Arrow are formatted as one batch and cut again; rows a
        function produced are tensorized one by one (numpy and torch).
        """
        fmt = self.input_format
        if fmt is None:
            return [dict(r) for r in rows]
        if fmt in TENSOR_FORMATS and not self.input_typed:
            return [tensorize(r, fmt) for r in rows]
        if fmt in TENSOR_FORMATS:
            return format_typed_rows(rows, fmt, self.input_schema)
        return [format_example(r, fmt, self.input_schema) for r in rows]

    def row(self, row: Any) -> Any:
        """One row as the function receives it."""
        return self.rows([row])[0]

    def batch(self, rows: list[Any]) -> Any:
        """The rows as one batch, as the function receives it (tensorized in a format)."""
        fmt = self.input_format
        if fmt is None:
            return examples_to_batch(self.rows(rows))
        if fmt in TENSOR_FORMATS:
            return tensorize(examples_to_batch(self.rows(rows)), fmt)
        return format_examples_batch(rows, fmt, self.input_schema)  # a table, as HF's


def table_output(out: Any) -> dict[str, list[Any]] | None:
    """The columns of a table ``out`` (``pyarrow``, ``pandas``, ``polars``), else None.

    Read through Arrow as HF reads a returned table (``pa.Table.from_pandas``, ``to_arrow``).
    """
    if isinstance(out, pa.Table):
        return out.to_pydict()
    if type(out).__module__.startswith("pandas"):
        return pa.Table.from_pandas(out).to_pydict()
    if type(out).__module__.startswith("polars") and hasattr(out, "to_arrow"):
        arrow = out.to_arrow()
        return (arrow if isinstance(arrow, pa.Table) else pa.table({out.name: arrow})).to_pydict()
    return None


def merge(
    inputs: Any, out: Any, remove_columns: Sequence[str], *, same: bool, row: bool = False
) -> dict[str, Any]:
    """HF's map output: the inputs without ``remove_columns``, updated with ``out``.

    ``same``: the function returned its input object (its removed columns go too, as in HF).
    A table returned (a table format's function) replaces the inputs, as in HF; ``row``:
    it holds one row.
    """
    table = table_output(out)
    if table is not None:
        cols = {k: (v[0] if row else v) for k, v in table.items() if k not in remove_columns}
        return cols
    if out is None:
        out = {}
    if not isinstance(out, Mapping):
        raise TypeError(
            f"map: the function must return a dict (or None), got {type(out).__name__}."
        )
    inputs = dict(inputs) if isinstance(inputs, Mapping) else {}  # a table: not merged (HF)
    if remove_columns:
        inputs = {k: v for k, v in inputs.items() if k not in remove_columns}
        if same:
            out = {k: v for k, v in out.items() if k not in remove_columns}
    return {**inputs, **out}


class _PerRow(CountingStage):
    """A stage calling the function once per row; it counts the rows it read.

    Elastic resume passes through it and restarts the count (it only numbers the rows of
    ``with_indices``, whose pipelines an ``IterableDataset`` never re-deals).

    State:
        ``source``: the source's state. ``index``: rows read (the next row's index).
        Replay cost: none.
    """

    COUNT_KEY = "index"
    STATE_KEYS = ("source", COUNT_KEY)
    ELASTIC_ROLE = ElasticRole.TRANSPARENT
    ELASTIC_STATE_RESTARTS = True

    def __init__(self, source: Stream[Any], call: Call) -> None:
        super().__init__(source)
        self.call = call

    def describe(self) -> dict[str, Any]:
        return self.call.describe(self)

    def _read(self) -> tuple[Any, int]:
        row = self.call.row(self.source.next())
        self.count += 1
        return row, self.count - 1


class MapRows(_PerRow):
    """HF's unbatched ``map``: each row updated with the function's output."""

    def __init__(
        self, source: Stream[Any], call: Call, remove_columns: Sequence[str] | None = None
    ) -> None:
        super().__init__(source, call)
        self.remove_columns = list(remove_columns or ())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "remove_columns": self.remove_columns}

    def next(self) -> dict[str, Any]:
        example, index = self._read()
        out = self.call(example, index)
        return merge(example, out, self.remove_columns, same=out is example, row=True)


class FilterRows(_PerRow):
    """HF's unbatched ``filter``: the rows for which the function is true."""

    def next(self) -> Any:
        while True:
            example, index = self._read()
            if self.call(example, index):
                return example


async def _gather(items: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*(_value(x) for x in items)))


async def _value(item: Any) -> Any:
    return await item if inspect.isawaitable(item) else item


def run_awaitables(items: list[Any]) -> list[Any]:
    """The results of ``items`` (coroutines and values), awaited concurrently, in order.

    In a thread that already runs an event loop (a notebook), they run on a new loop in
    another thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_gather(items))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _gather(items)).result()


class PerBatch(WindowReplayStage[dict[str, Any]]):
    """A stage calling the function once per batch of ``batch_size`` rows (None: all rows)."""

    def __init__(self, source: Stream[Any], call: Call, batch_size: int | None) -> None:
        super().__init__(source)
        self.call = call
        self.batch_size = batch_size if batch_size and batch_size > 0 else None

    def describe(self) -> dict[str, Any]:
        return {**self.call.describe(self), "batch_size": self.batch_size}

    def _read(self, window: int) -> tuple[list[Any], list[int]] | None:
        """The window's rows and their indices, or None at the end."""
        if self.batch_size is None:  # the whole pass is one batch
            if window > 0:
                return None
            rows: list[Any] = []
            while part := self.source.pull(4096):
                rows.extend(part)
        else:
            rows = self.source.pull(self.batch_size)
        first = window * (self.batch_size or 0)
        return (rows, list(range(first, first + len(rows)))) if rows else None


class MapBatches(PerBatch):
    """HF's batched ``map``: the batch updated with the function's output, cut into rows."""

    def __init__(
        self,
        source: Stream[Any],
        call: Call,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: Sequence[str] | None = None,
    ) -> None:
        super().__init__(source, call, batch_size)
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
        rows, indices = read
        if self.drop_last_batch and self.batch_size is not None and len(rows) < self.batch_size:
            return None
        batch = self.call.batch(rows)
        return self.output_rows(batch, self.call(batch, indices))

    def output_rows(self, batch: Any, out: Any) -> list[dict[str, Any]]:
        """The rows of ``batch`` updated with the function's output ``out`` (checked)."""
        _check_lengths(out)
        merged = merge(batch, out, self.remove_columns, same=out is batch)
        _check_kept(out, merged)
        return batch_to_examples(merged)


class FilterBatches(PerBatch):
    """HF's batched ``filter``: the function returns one bool per row of the batch."""

    def compute(self, window: int) -> list[Any] | None:
        read = self._read(window)
        if read is None:
            return None
        rows, indices = read
        batch = self.call.batch(rows)
        mask = list(plain(self.call(batch, indices)))
        if len(mask) != len(rows):
            raise ValueError(
                f"filter: the batched function returned {len(mask)} values for a batch of "
                f"{len(rows)} rows; it must return one bool per row."
            )
        kept = rows if self.call.input_format is None else batch_to_examples(batch)
        return [r for r, keep in zip(kept, mask, strict=True) if keep]


def _check_lengths(out: Any) -> None:
    if not isinstance(out, Mapping) or not out:
        return
    first = next(iter(out))
    bad = [c for c in out if len(out[c]) != len(out[first])]
    if bad:
        raise ValueError(
            f"Column lengths mismatch: columns {bad} have length {[len(out[c]) for c in bad]} "
            f"while {first} has length {len(out[first])}."
        )


def _check_kept(out: Any, merged: Mapping[str, Any]) -> None:
    if not isinstance(out, Mapping) or not out:
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


def hf_map(
    source: Stream[Any],
    function: Callable[..., Any],
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    drop_last_batch: bool = False,
    remove_columns: Sequence[str] | None = None,
    **call: Any,
) -> Stream[Any]:
    """The stage of ``map(function, ...)``; ``call``: :class:`Call`'s keyword arguments."""
    from arrowmix._hf.iterable_async import ASYNC_WINDOW, MapBatchesConcurrent, MapConcurrent

    c = Call(function, **call)
    concurrent = inspect.iscoroutinefunction(function)
    if batched and concurrent and batch_size:
        return MapBatchesConcurrent(source, c, batch_size, drop_last_batch, remove_columns)
    if batched:
        return MapBatches(source, c, batch_size, drop_last_batch, remove_columns)
    if concurrent:
        return MapConcurrent(source, c, ASYNC_WINDOW, remove_columns)
    return MapRows(source, c, remove_columns)


def hf_filter(
    source: Stream[Any],
    function: Callable[..., Any],
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    **call: Any,
) -> Stream[Any]:
    """The stage of ``filter(function, ...)``; ``call``: :class:`Call`'s keyword arguments."""
    from arrowmix._hf.iterable_async import ASYNC_WINDOW, FilterConcurrent

    c = Call(function, **call)
    if batched:
        return FilterBatches(source, c, batch_size)
    if inspect.iscoroutinefunction(function):
        return FilterConcurrent(source, c, ASYNC_WINDOW)
    return FilterRows(source, c)
