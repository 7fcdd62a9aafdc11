"""``Dataset.column(name)``: a lazy, list-like view of one column.

``ds["text"]`` returns the whole column as one Python list (the ``API.md`` contract, and what
HuggingFace ``datasets`` returned before its lazy ``Column``): on a corpus larger than RAM that
list does not fit. A :class:`Column` reads nothing when it is made; indexing reads the rows it
names, slicing the slice, and iteration reads blocks of rows, so memory stays bounded by the
block, whatever the column's size. Values come in the dataset's format (``with_format``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from arrowmix._dataset import state
from arrowmix._dataset.access import check_column
from arrowmix._dataset.indices import to_positions

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["Column"]

#: Rows read at a time while iterating.
BLOCK_ROWS = 8192


class Column(Sequence[Any]):
    """A read-only view of one column of a dataset (or view); values are read on access.

    Supports ``len``, ``col[i]``, ``col[i:j]`` (a list, or an array in the numpy format),
    ``col[list_of_ints]``, iteration (block by block) and ``==`` with a list or another
    column (which reads both). Negative indices count from the end, as for ``ds[i]``.

    Example:
        >>> import arrowmix as am
        >>> ds = am.Dataset.from_dict({"text": ["a", "bb", "ccc", "dddd"]})
        >>> col = ds.column("text")
        >>> len(col), col[1], col[1:3], [len(t) for t in col]
        (4, 'bb', ['bb', 'ccc'], [1, 2, 3, 4])
        >>> ds.shuffle(seed=0).column("text") == ds.shuffle(seed=0)["text"]
        True
    """

    __hash__ = None  # type: ignore[assignment]  # compares by value, like a list

    def __init__(self, dataset: Dataset, name: str) -> None:
        check_column(state.state_of(dataset), name)
        self._ds = dataset
        self._name = name

    @property
    def name(self) -> str:
        """The column's name."""
        return self._name

    def __len__(self) -> int:
        return self._ds.num_rows

    @overload
    def __getitem__(self, key: int) -> Any: ...
    @overload
    def __getitem__(self, key: slice) -> Any: ...
    def __getitem__(self, key: Any) -> Any:
        s, cols = state.state_of(self._ds), [self._name]
        fmt, n = s.format, state.num_rows(s)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key)
            if i < 0:
                i += n
            if i < 0 or i >= n:
                to_positions([int(key)], n)  # raises IndexError naming it and the length
            return fmt.column(state.view_range(s, i, i + 1, cols).column(self._name), self._name)[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return fmt.column(
                    state.view_range(s, start, stop, cols).column(self._name), self._name
                )
            key = range(start, stop, step)
        if isinstance(key, str):
            raise TypeError(
                f"Column {self._name!r} is indexed by row positions, not by name {key!r}."
            )
        pos = to_positions(key, n).to_numpy()
        return fmt.column(state.gather(s, pos, cols).column(self._name), self._name)

    def __iter__(self) -> Iterator[Any]:
        n = self._ds.num_rows
        for start in range(0, n, BLOCK_ROWS):
            yield from self[start : min(start + BLOCK_ROWS, n)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Column):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        head = list(self[: min(5, len(self))])
        more = ", ..." if len(self) > 5 else ""
        return f"Column({self._name!r}, num_rows={len(self)}, {head!r:.200}{more})"
