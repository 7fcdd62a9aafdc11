"""The token path: token ids from the mapped chunks to padded or packed arrays.

Zero-copy token columns (``column``), collation into padded batches
(``collate``) and packing into fixed-length rows (``pack``). The names of ``column`` are
re-exported here for the Dataset layer.
"""

from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix._stream.tokens.column import (
    TokenColumn,
    TokenSpans,
    column_values,
    is_token_type,
    key_values,
    token_column,
)
from arrowmix._stream.tokens.concat import ConcatTokenColumn
from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator

__all__ = [
    "BinPackIterator",
    "CollateIterator",
    "ConcatPackIterator",
    "ConcatTokenColumn",
    "TokenColumn",
    "TokenSpans",
    "column_values",
    "is_token_type",
    "key_values",
    "token_column",
]
