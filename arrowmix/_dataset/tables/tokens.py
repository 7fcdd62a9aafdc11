"""The token-file kind of :class:`~arrowmix._dataset.tables.protocol.Table`: Megatron and numpy.

A Megatron ``.bin``/``.idx`` pair or a flat numpy token file, read in place. Its rows are an
Arrow table whose one ``list<dtype>`` column has the files' memory maps as values
(:mod:`arrowmix._storage.token_files`), so every read is the local kind's
(:class:`~arrowmix._dataset.tables.local.LocalTable`, which this class extends): zero-copy
slices, batch-aware gathers, token columns as views of the map. What differs is what a
pickle carries (:meth:`TokenTable.pickled`): the table's description (the files, their
versions, how rows are cut), reopened on the other side (the offsets rebuilt, the files
mapped again), never the tokens. A projection that drops the column is an ordinary
(empty-columned) local table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from arrowmix._dataset.tables.local import LocalTable
from arrowmix._storage.token_arrays import TokenSource

__all__ = ["TokenTable"]


class TokenTable(LocalTable):
    """Token files as a :class:`Table`: a :class:`LocalTable` pickled as its description.

    Args:
        sources: the files, in row order (one source per prefix or file).
        table: their one column, as built from ``sources`` (projected or renamed since).
        opened_as: how the user opened them, for error messages.
    """

    def __init__(self, sources: Sequence[TokenSource], table: pa.Table, opened_as: str) -> None:
        super().__init__(table)
        self.sources = tuple(sources)
        self.opened_as = opened_as

    def _same(self, table: pa.Table) -> LocalTable:
        if not table.num_columns:
            return LocalTable(table)
        return TokenTable(self.sources, table, self.opened_as)

    def select(self, columns: Sequence[str]) -> LocalTable:
        return self._same(self.table.select(list(columns)))

    def drop_columns(self, columns: Sequence[str]) -> LocalTable:
        return self._same(self.table.drop_columns(list(columns)))

    def rename_columns(self, names: Sequence[str]) -> LocalTable:
        return self._same(self.table.rename_columns(list(names)))

    def replace_schema_metadata(self, metadata: Any = None) -> LocalTable:
        return self._same(self.table.replace_schema_metadata(metadata))

    def pickled(self) -> Any:
        """Itself: it pickles as its description (see :meth:`__reduce__`)."""
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen, (self.sources, self.table.schema, self.opened_as))


def _reopen(sources: tuple[TokenSource, ...], schema: pa.Schema, opened_as: str) -> TokenTable:
    """Unpickle: map the files again (ChunkFileError if one changed since it was opened)."""
    chunks = [c for s in sources for c in s.chunks()]
    column = pa.chunked_array(chunks, type=schema.field(0).type)
    return TokenTable(sources, pa.Table.from_arrays([column], schema=schema), opened_as)
