"""``IterableDatasetDict``: split name -> :class:`~arrowmix.IterableDataset` (HF's class).

Made by ``DatasetDict.to_iterable_dataset()`` (and ``load_dataset(..., streaming=True)``
without ``split=``). Each transform is applied to every split, as HF's does.
"""

from __future__ import annotations

from typing import Any

from arrowmix._hf.iterable import IterableDataset

__all__ = ["IterableDatasetDict"]


class IterableDatasetDict(dict[str, IterableDataset]):
    """A dict of split name -> IterableDataset whose transforms apply to every split.

    Example:
        >>> import arrowmix as am
        >>> dd = am.DatasetDict({"train": am.Dataset.from_dict({"x": [1, 2]})})
        >>> it = dd.to_iterable_dataset().map(lambda r: {"y": -r["x"]})
        >>> [r["y"] for r in it["train"]]
        [-1, -2]
    """

    def _each(self, name: str, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        return IterableDatasetDict(
            {split: getattr(ds, name)(*args, **kwargs) for split, ds in self.items()}
        )

    def map(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """``IterableDataset.map`` on every split."""
        return self._each("map", *args, **kwargs)

    def filter(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """``IterableDataset.filter`` on every split."""
        return self._each("filter", *args, **kwargs)

    def shuffle(self, *args: Any, **kwargs: Any) -> IterableDatasetDict:
        """``IterableDataset.shuffle`` on every split (the same seed for each)."""
        return self._each("shuffle", *args, **kwargs)

    def with_format(self, type: str | None = None) -> IterableDatasetDict:  # HF's name
        """``IterableDataset.with_format`` on every split."""
        return self._each("with_format", type)

    def select_columns(self, column_names: Any) -> IterableDatasetDict:
        """``IterableDataset.select_columns`` on every split."""
        return self._each("select_columns", column_names)

    def remove_columns(self, column_names: Any) -> IterableDatasetDict:
        """``IterableDataset.remove_columns`` on every split."""
        return self._each("remove_columns", column_names)

    def rename_column(self, original_column_name: str, new_column_name: str) -> IterableDatasetDict:
        """``IterableDataset.rename_column`` on every split."""
        return self._each("rename_column", original_column_name, new_column_name)

    def rename_columns(self, column_mapping: dict[str, str]) -> IterableDatasetDict:
        """``IterableDataset.rename_columns`` on every split."""
        return self._each("rename_columns", column_mapping)

    def cast(self, features: Any) -> IterableDatasetDict:
        """``IterableDataset.cast`` on every split."""
        return self._each("cast", features)

    def cast_column(self, column: str, feature: Any) -> IterableDatasetDict:
        """``IterableDataset.cast_column`` on every split."""
        return self._each("cast_column", column, feature)

    @property
    def column_names(self) -> dict[str, list[str] | None]:
        """``{split: column names}``."""
        return {split: ds.column_names for split, ds in self.items()}

    @property
    def num_columns(self) -> dict[str, int | None]:
        """``{split: number of columns}``."""
        return {split: ds.num_columns for split, ds in self.items()}
