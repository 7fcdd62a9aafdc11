"""The Python protocols of a Dataset, on its state: length, indexing, iteration, copy, pickle.

``Dataset`` (``dataset.py``) is the public class, with the documented methods; this base
holds what Python calls implicitly (``len``, ``ds[key]``, ``iter``, ``copy``, ``pickle``,
``with``, ``repr``). Each is one call to the functions that own the state (``state``,
``access``, ``pickling``); other modules read rows through those functions too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arrowmix._dataset import access, state
from arrowmix._dataset.state import DatasetState

__all__ = ["DatasetBase"]


class DatasetBase:
    """A Dataset's state and the protocols Python calls on it."""

    _s: DatasetState

    def __len__(self) -> int:
        return state.num_rows(self._s)

    def __getitem__(self, key: Any) -> Any:
        return access.item(self._s, key)

    def __iter__(self) -> Iterator[Any]:
        return access.iter_rows(self._s)

    def __fingerprint__(self) -> tuple[str, str | None, tuple[str, ...] | None]:
        """How a function capturing this dataset is hashed: its fingerprint and format."""
        return (self._s.fingerprint, self._s.fmt, self._s.fmt_columns)

    def __enter__(self) -> Any:
        """``with ds:`` as in HF ``datasets``; nothing to release (files stay mapped)."""
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by reference to the memory-mapped files (a few KB), not with the rows.

        The unpickled dataset reopens the same files, memory-mapped, and registers as their
        reader; a dataset built in memory is pickled with its data. See
        ``arrowmix._dataset.pickling`` and "Pickling and worker processes" in
        ``docs/datasets.md``.
        """
        from arrowmix._dataset.pickling import reduce_dataset

        return reduce_dataset(self)  # type: ignore[arg-type]  # always a Dataset

    def __copy__(self) -> Any:
        return type(self)(self._s)  # type: ignore[call-arg]  # the state is immutable: share it

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return type(self)(self._s)  # type: ignore[call-arg]  # reopen nothing

    def __repr__(self) -> str:
        s = self._s
        return (
            f"Dataset(num_rows={state.num_rows(s)}, columns={state.column_names(s)}, "
            f"fingerprint={s.fingerprint!r}" + (f", format={s.fmt!r}" if s.fmt else "") + ")"
        )
