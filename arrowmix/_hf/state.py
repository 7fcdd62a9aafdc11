"""The HF layer's one way to a dataset's state: read it, and (for HF's setters) replace it.

HF's ``ds._fingerprint = ...`` and ``with ds.formatted_as(...):`` change the object they are
called on, so this layer replaces the state of its host; everything else only reads it.
Both go through here, so that the layer touches ``Dataset``'s private state in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset, DatasetState

__all__ = ["set_state", "state_of"]


def state_of(ds: Dataset) -> DatasetState:
    """The state of ``ds``."""
    return ds._s


def set_state(ds: Dataset, state: DatasetState) -> None:
    """Give ``ds`` the state ``state`` (HF's setters change the dataset in place)."""
    ds._s = state
