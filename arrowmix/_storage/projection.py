"""Column projections of a table whose rows are read on demand (remote chunks, Parquet).

Such a table exposes its stored columns under names of its own: ``names`` holds
``(stored column, exposed name)`` pairs, and selecting, dropping or renaming columns builds
another table over the same storage with other pairs (``_with``), reading nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = ["NamedColumns"]

T = TypeVar("T", bound="NamedColumns")


class NamedColumns:
    """Row count, column names and projections from ``names`` and ``offsets``."""

    names: tuple[tuple[str, str], ...]
    #: First row of each storage unit (chunk, row group), then the row count.
    offsets: np.ndarray

    def _with(self: T, names: Sequence[tuple[str, str]]) -> T:
        raise NotImplementedError

    @property
    def num_rows(self) -> int:
        """Rows of every storage unit."""
        return int(self.offsets[-1])

    @property
    def num_columns(self) -> int:
        """Columns exposed."""
        return len(self.names)

    @property
    def column_names(self) -> list[str]:
        """Exposed column names."""
        return [out for _, out in self.names]

    def select(self: T, columns: Sequence[str]) -> T:
        """Only ``columns``, in that order."""
        by_name = {out: src for src, out in self.names}
        return self._with([(by_name[c], c) for c in columns])

    def drop_columns(self: T, columns: Sequence[str]) -> T:
        """Without ``columns``."""
        drop = set(columns)
        return self._with([(s, o) for s, o in self.names if o not in drop])

    def rename_columns(self: T, names: Sequence[str]) -> T:
        """Exposed columns renamed to ``names`` (one per column)."""
        return self._with([(s, new) for (s, _), new in zip(self.names, names, strict=True)])

    def stored_name(self, name: str) -> str:
        """The stored name of the exposed column ``name``."""
        for src, out in self.names:
            if out == name:
                return src
        raise KeyError(f"no column {name!r}; the rows have columns {self.column_names}.")
