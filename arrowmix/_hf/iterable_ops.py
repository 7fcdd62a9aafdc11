"""The stage makers of :class:`~arrowmix.IterableDataset`'s methods, and their features.

A recipe node (:class:`arrowmix._hf.iterable_plan.Op`) holds one of these functions and its
arguments, and calls it on its parent's stream when the recipe is built. They are module-level
functions so that a recipe pickles (DataLoader workers receive the dataset pickled).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from arrowmix._hf.iterable_calls import hf_filter, hf_map, table_output
from arrowmix._hf.iterable_stages import ColumnOp, EveryNth, RepeatRows, SkipRows
from arrowmix._stream.base import Stream

__all__ = [
    "IterableColumn",
    "batch_fn",
    "identity",
    "keep",
    "listed",
    "make_columns",
    "make_filter",
    "make_map",
    "make_repeat",
    "make_shuffle",
    "make_skip",
    "make_step",
    "make_take",
    "subset",
]


def identity(x: Any) -> Any:
    """``map()`` without a function (HF's ``identity_func``)."""
    return x


def keep(x: Any) -> bool:
    """``filter()`` without a function."""
    return True


def batch_fn(batch: Any) -> dict[str, list[Any]]:
    """``batch``'s function: a batch (a dict, or a table in a table format) becomes one row."""
    columns = table_output(batch)
    return {k: [v] for k, v in (batch if columns is None else columns).items()}


def make_map(stream: Stream[Any], function: Callable[..., Any], **kwargs: Any) -> Stream[Any]:
    return hf_map(stream, function, **kwargs)


def make_filter(stream: Stream[Any], function: Callable[..., Any], **kwargs: Any) -> Stream[Any]:
    return hf_filter(stream, function, **kwargs)


def make_take(stream: Stream[Any], n: int) -> Stream[Any]:
    return stream.take(n)


def make_skip(stream: Stream[Any], n: int) -> Stream[Any]:
    return SkipRows(stream, n)


def make_columns(stream: Stream[Any], how: str, arg: Any) -> Stream[Any]:
    return ColumnOp(stream, how, arg)


def make_shuffle(stream: Stream[Any], buffer_size: int, seed: int) -> Stream[Any]:
    return stream.shuffle(buffer_size, seed=seed)


def make_repeat(stream: Stream[Any], num_times: int | None) -> Stream[Any]:
    return RepeatRows(stream, num_times)


def make_step(stream: Stream[Any], step: int, offset: int) -> Stream[Any]:
    return EveryNth(stream, step, offset)


def subset(features: Any, cols: Sequence[str]) -> Any:
    """``features`` of the columns ``cols``, in that order."""
    return type(features)({c: features[c] for c in cols})


def listed(features: Any) -> Any:
    """The features of ``batch``: each column a list of the column's feature (HF's ``List``)."""
    if features is None:
        return None
    try:
        from datasets import List  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return None
    return type(features)({k: List(v) for k, v in features.items()})


class IterableColumn:
    """``ids["col"]``: the values of one column, row after row (``["a"]["b"]`` for nested)."""

    def __init__(self, source: Iterable[Any], column_name: str) -> None:
        self.source, self.column_name = source, column_name

    def __iter__(self) -> Iterator[Any]:
        for row in self.source:
            yield row[self.column_name]

    def __getitem__(self, column_name: str) -> IterableColumn:
        return IterableColumn(self, column_name)
