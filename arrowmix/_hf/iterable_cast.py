"""HF ``IterableDataset``'s ``cast``, ``cast_column``, ``add_column`` and constructors.

As in HF ``datasets``: a cast changes the features, and every row read afterwards is encoded
then decoded with them (``Features.encode_example``/``decode_example``: ``1`` becomes ``1.0``
in a ``float32`` column, ``"1"`` in a string one); ``add_column`` is a ``map`` with indices
taking the row's value from the list. ``from_dict``/``from_list`` build a
:class:`~arrowmix.Dataset` and give its ``to_iterable_dataset(num_shards)``;
``from_generator`` reads its generator lazily (:mod:`arrowmix._hf.iterable_generator`).
Every one resumes exactly, as any stage.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arrowmix._stream.base import Stream

if TYPE_CHECKING:
    from arrowmix._hf.iterable import IterableDataset

__all__ = ["IterableCasts", "make_cast"]


def _cast_row(row: Mapping[str, Any], features: Any) -> Any:
    return features.decode_example(features.encode_example(dict(row)))


def make_cast(stream: Stream[Any], features: Any) -> Stream[Any]:
    """The rows of ``stream`` encoded and decoded with ``features`` (HF's feature types)."""
    return stream.map(functools.partial(_cast_row, features=features))


def _add_column_row(row: Mapping[str, Any], idx: int, name: str, column: Sequence[Any]) -> Any:
    if name in row:
        raise ValueError(f"Error when adding {name}: column {name} is already in the dataset.")
    return {name: column[idx]}


class IterableCasts:
    """The methods of this module, mixed into :class:`~arrowmix.IterableDataset`."""

    _features: Any

    def cast_column(self, column: str, feature: Any) -> IterableDataset:
        """Column ``column`` read as HF ``feature`` (values encoded and decoded with it).

        Raises:
            TypeError: the features are unknown (after ``map``), as in HF.
        """
        if self._features is None:
            raise TypeError("'NoneType' object does not support item assignment")
        features = copy.copy(self._features)
        features[column] = feature
        return self._cast(features)

    def cast(self, features: Any) -> IterableDataset:
        """Rows read as HF ``features`` (the same column names as the dataset's).

        Raises:
            ValueError: the names differ from the dataset's columns.
        """
        if self._features is not None and sorted(features) != sorted(self._features):
            raise ValueError(
                f"Couldn't cast to {features} because column names don't match: the dataset "
                f"has {list(self._features)}."
            )
        return self._cast(features)

    def _cast(self, features: Any) -> IterableDataset:
        ds: Any = self  # an IterableDataset
        out = ds._derive(ds._op("cast", make_cast, features=features), features=features)
        return out  # type: ignore[no-any-return]

    def add_column(self, name: str, column: Sequence[Any]) -> IterableDataset:
        """A column ``name`` whose value at row ``i`` is ``column[i]`` (HF: a ``map``).

        Raises:
            ValueError: while reading, the dataset already has a column ``name``.
        """
        values = list(column)
        ds: Any = self  # an IterableDataset
        return ds.map(  # type: ignore[no-any-return]
            functools.partial(_add_column_row, name=name, column=values), with_indices=True
        )

    @classmethod
    def from_generator(
        cls,
        generator: Callable[..., Any],
        features: Any = None,
        gen_kwargs: Mapping[str, Any] | None = None,
        split: Any = "train",
    ) -> IterableDataset:
        """Rows of ``generator(**gen_kwargs)``, read lazily while iterating, as HF's.

        The list values of ``gen_kwargs`` are the shards (see
        :mod:`arrowmix._hf.iterable_generator`); ``features`` applies to each row as
        :meth:`cast` does. A resume calls the generator again and skips the rows read.
        """
        from arrowmix._dataset.inputs.file_splits import split_name
        from arrowmix._hf.iterable import IterableDataset
        from arrowmix._hf.iterable_generator import GeneratorSource, shard_kwargs

        node = GeneratorSource(generator, shard_kwargs(gen_kwargs or {}))
        ds = IterableDataset(node, split=str(split_name(split)))
        return ds if features is None else ds._cast(features)

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Any],
        features: Any = None,
        info: Any = None,
        split: Any = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """``Dataset.from_dict(...).to_iterable_dataset(num_shards)``, as HF builds it."""
        from arrowmix._dataset.dataset import Dataset

        ds = Dataset.from_dict(mapping, features=features, info=info, split=split)
        return ds.to_iterable_dataset(num_shards=num_shards)

    @classmethod
    def from_list(
        cls,
        mapping: Sequence[Mapping[str, Any]],
        features: Any = None,
        info: Any = None,
        split: Any = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """``Dataset.from_list(...).to_iterable_dataset(num_shards)``, as HF builds it."""
        from arrowmix._dataset.dataset import Dataset

        ds = Dataset.from_list(mapping, features=features, info=info, split=split)
        return ds.to_iterable_dataset(num_shards=num_shards)
