"""The bridge from a Dataset to the stream layer: ``Dataset.to_stream``.

The Dataset's rows reach the stream layer as a ``RowSource``, :class:`DatasetRows`
(:mod:`arrowmix._dataset.rows`); this module picks the sharding and builds the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arrowmix._dataset.rows import DatasetRows
from arrowmix._dataset.state import state_of
from arrowmix._remote.table import RemoteTable
from arrowmix._stream.sources import ArrowSource, NumpyRows, from_row_source

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetRows", "to_stream"]


def to_stream(
    ds: Dataset, read_ahead: int | str | None = None, shard: str | None = None, **kwargs: Any
) -> ArrowSource:
    """``from_row_source(DatasetRows(ds, read_ahead), shard=..., **kwargs)``.

    ``shard=None`` picks ``"chunks"`` for a bounded remote corpus read in chunk or storage
    order (each rank then downloads only its share), ``"rows"`` otherwise: over local or
    fully copied chunks nothing is downloaded, and row dealing reads every row each epoch.

    The ``"numpy"`` format (``ds.with_format("numpy").to_stream()``) gives rows with numpy
    values (:class:`NumpyRows`); the rows of the other formats are plain row dicts.
    """
    if shard is None:
        bounded = isinstance(state_of(ds).table, RemoteTable)
        shard = "chunks" if bounded and kwargs.get("shuffle", "global") != "global" else "rows"
    fmt = state_of(ds).format
    if fmt.type == "numpy" and "row_format" not in kwargs:
        kwargs["row_format"] = NumpyRows(fmt.columns, dict(fmt.kwargs))
    return from_row_source(DatasetRows(ds, read_ahead), shard=shard, **kwargs)
