"""The bridge from a Dataset to the stream layer: ``Dataset.to_stream``.

The Dataset's rows reach the stream layer as a ``RowSource``, :class:`DatasetRows`
(:mod:`arrowmix._dataset.rows`); this module picks the sharding and builds the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset.rows import DatasetRows
from arrowmix._dataset.state import state_of
from arrowmix._dataset.tables import Table, as_table
from arrowmix._stream.sources import ArrowSource, NumpyRows, from_row_source
from arrowmix._stream.sources.blocks import BlockShape

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["NUMPY_BLOCK_BYTES", "DatasetRows", "numpy_block_rows", "to_stream"]

#: Storage bytes a block of numpy rows holds: blocks of small rows get more than 1024 rows
#: (up to 8192), so each block's fixed cost (pinning the chunks it touches, planning the
#: downloads, one gather per chunk) is spread over more rows.
NUMPY_BLOCK_BYTES = 4 << 20


def to_stream(
    ds: Dataset,
    read_ahead: int | str | None = None,
    shard: str | None = None,
    block_size: int | None = None,
    window_blocks: int | None = None,
    **kwargs: Any,
) -> ArrowSource:
    """``from_row_source(DatasetRows(ds, read_ahead), shard=..., **kwargs)``.

    ``block_size`` and ``window_blocks`` go to ``shuffle="blocks"`` (an error with the
    other modes).

    ``shard=None`` picks ``"chunks"`` for a bounded remote corpus read in chunk or storage
    order (each rank then downloads only its share), ``"rows"`` otherwise: over local or
    fully copied chunks nothing is downloaded, and row dealing reads every row each epoch;
    the global and block orders read rows of every chunk whatever the dealing.

    The ``"numpy"`` format (``ds.with_format("numpy").to_stream()``) gives rows with numpy
    values (:class:`NumpyRows`); the rows of the other formats are plain row dicts.
    """
    mode = kwargs.get("shuffle", "global")
    kwargs["blocks"] = BlockShape.for_mode(mode, block_size, window_blocks)
    if shard is None:
        bounded = state_of(ds).reader.bounded
        by_chunks = mode not in ("global", "blocks")  # these read rows of every chunk
        shard = "chunks" if bounded and by_chunks else "rows"
    fmt = state_of(ds).format
    if fmt.type == "numpy" and "row_format" not in kwargs:
        kwargs["row_format"] = NumpyRows(fmt.columns, dict(fmt.kwargs))
        kwargs.setdefault("block_rows", numpy_block_rows(state_of(ds).reader))
    return from_row_source(DatasetRows(ds, read_ahead), shard=shard, **kwargs)


def numpy_block_rows(table: pa.Table | Table) -> int:
    """Rows per block of a numpy stream over ``table``: about :data:`NUMPY_BLOCK_BYTES`.

    From the bytes of the storage (chunk file sizes, or Arrow buffers; nothing is read),
    between 1024 rows (as for plain rows) and 8192.
    """
    size = as_table(table).storage_bytes
    per_row = max(1, size // max(1, table.num_rows))
    return int(min(8192, max(1024, NUMPY_BLOCK_BYTES // per_row)))
