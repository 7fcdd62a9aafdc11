"""HF ``datasets``' access-time transforms and row helpers (a mixin of ``Dataset``).

``with_transform``/``set_transform``, ``take``, ``skip``, ``batch`` and
``to_iterable_dataset``.

A transform is a format (``"custom"``, as in HF): it runs when rows are read (``ds[i]``,
``ds[a:b]``, ``ds["col"]``, iteration, and the batches a ``map`` receives), on a batch of Python
objects, and nothing is cached. The fingerprint rolls with the function, as with any format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from arrowmix._hf.state import set_state, state_of
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.iterable import IterableDataset

__all__ = ["HFTransforms"]


def _dataset(obj: HFTransforms) -> Dataset:
    return cast("Dataset", obj)


class HFTransforms:
    """Mixin of :class:`~arrowmix.Dataset`: HF's transforms and row helpers."""

    def with_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], dict[str, Any]] | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> Dataset:
        """A view whose rows pass through ``transform`` when read (HF's ``with_transform``).

        ``transform`` takes a batch (a dict of lists) and returns a dict of columns; a row is
        a batch of one. ``columns`` restricts what it receives; with
        ``output_all_columns=True`` the other columns are returned as Python objects too.
        ``None`` removes the transform (Python objects again).

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"text": ["a b", "c"]})
            >>> up = ds.with_transform(lambda b: {"n": [len(t.split()) for t in b["text"]]})
            >>> up[0], up[:2], list(up)
            ({'n': 2}, {'n': [2, 1]}, [{'n': 2}, {'n': 1}])
        """
        if transform is None:
            return _dataset(self).with_format(None, columns, output_all_columns)
        return _dataset(self).with_format(
            "custom", columns, output_all_columns, transform=transform
        )

    def set_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], dict[str, Any]] | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> None:
        """HF's in-place :meth:`with_transform`: this object switches to the new view."""
        view = self.with_transform(transform, columns, output_all_columns)
        set_state(_dataset(self), state_of(view))

    def take(self, n: int) -> Dataset:
        """The first ``n`` rows (all of them if there are fewer), as a view: HF's ``take``.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).take(2)["x"]
            [1, 2]
        """
        check_int("n", n, minimum=0)
        ds = _dataset(self)
        return ds.select(range(min(n, ds.num_rows)))

    def skip(self, n: int) -> Dataset:
        """Every row after the first ``n``, as a view: HF's ``skip``.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).skip(2)["x"]
            [3]
        """
        check_int("n", n, minimum=0)
        ds = _dataset(self)
        return ds.select(range(min(n, ds.num_rows), ds.num_rows))

    def batch(
        self, batch_size: int, drop_last_batch: bool = False, num_proc: int | None = None
    ) -> Dataset:
        """One row per ``batch_size`` rows, each column a list of their values: HF's ``batch``.

        A cached ``map`` (``drop_last_batch`` drops a last shorter batch).

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).batch(2)["x"]
            [[1, 2], [3]]
        """
        check_int("batch_size", batch_size, minimum=1)
        return _dataset(self).map(
            _batch_rows,
            batched=True,
            batch_size=batch_size,
            drop_last_batch=drop_last_batch,
            num_proc=num_proc,
            desc="Batching examples",
        )

    def to_iterable_dataset(self, num_shards: int = 1) -> IterableDataset:
        """An :class:`~arrowmix.IterableDataset` of this view, cut in ``num_shards`` shards.

        HF's ``to_iterable_dataset``: contiguous shards (DataLoader workers read whole
        shards), the view's format kept; built on ``to_stream``, so it resumes exactly.

        Example:
            >>> import arrowmix as am
            >>> ids = am.Dataset.from_dict({"x": [1, 2, 3]}).to_iterable_dataset()
            >>> [r["x"] for r in ids.map(lambda r: {"x": r["x"] + 1})]
            [2, 3, 4]
        """
        from arrowmix._hf.iterable import to_iterable_dataset

        return to_iterable_dataset(_dataset(self), num_shards)


def _batch_rows(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {k: [v] for k, v in batch.items()}
