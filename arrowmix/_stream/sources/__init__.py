"""Sources: where a pipeline's items come from.

``rows`` (:class:`ArrowSource`, an index stream over a row source, and its epoch orders in
``order``, ``spans`` and ``permutation``), ``chunks`` (``from_chunks``) and ``iterable``
(``from_iterable``). The names of ``rows`` are re-exported here for the Dataset layer.
"""

from arrowmix._stream.sources.chunks import ChunkSource
from arrowmix._stream.sources.iterable import IterableSource
from arrowmix._stream.sources.numpy_rows import NumpyRows
from arrowmix._stream.sources.rows import ArrowSource, Upcoming, from_row_source, table_to_rows

__all__ = [
    "ArrowSource",
    "ChunkSource",
    "IterableSource",
    "NumpyRows",
    "Upcoming",
    "from_row_source",
    "table_to_rows",
]
