"""Several token columns seen as one: what ``mix`` hands the token stages after it.

Position ``bases[k] + p`` is row ``p`` of column ``k``, and a span's ``owner`` numbers the
chunks of every column one after the other (``chunk_bases[k] + chunk``). When every column
views all its buffers (local, memory-mapped chunks), the views are simply listed side by
side and a gather is one ``np.concatenate`` over all of them, as for one column. When one
of them cannot (a :class:`~arrowmix._stream.tokens.pinned.PinnedTokenColumn` reading a
bounded remote cache one pinned chunk at a time), every call is split by column and each
column answers its own part: a gather asks each column touched for its spans' tokens
(so a pinned column pins its chunks one at a time, as it does alone) and places them.

Example:
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> from arrowmix._stream.tokens.column import TokenColumn
    >>> a = TokenColumn(pa.chunked_array([[[1, 2], [3]]]), "ids")
    >>> b = TokenColumn(pa.chunked_array([[[7, 8, 9]]]), "ids")
    >>> ConcatTokenColumn([a, b]).gather(np.array([2, 0])).tolist()
    [7, 8, 9, 1, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arrowmix._storage.distinct import distinct
from arrowmix._stream.tokens.column import TokenColumn, check_rows, common_int_dtype

__all__ = ["ConcatTokenColumn"]


class ConcatTokenColumn(TokenColumn):
    """Several token columns seen as one: rows of column ``k`` follow those of ``k - 1``.

    The values buffers stay where they are (no concatenation, no copy). Columns of
    different integer types (a ``uint16`` corpus and an ``int32`` one) have numpy's common
    type as :attr:`dtype`: a gather casts each column's tokens to it as it copies them
    (the one copy it makes anyway); columns of one type are gathered as they are.

    Raises:
        TypeError: no integer type holds every column's ids (``uint64`` with a signed
            type), naming the types.
    """

    def __init__(self, columns: list[TokenColumn]) -> None:
        if not columns:
            raise ValueError("ConcatTokenColumn needs at least one column.")
        dtype = common_int_dtype([c.dtype for c in columns])
        if dtype is None:
            raise TypeError(
                f"the token columns {sorted({c.name for c in columns})} hold ids of types "
                f"{sorted({str(c.dtype) for c in columns})}, which no one integer type holds."
            )
        self.name = columns[0].name
        self.dtype = dtype
        self._mapper = None
        self._columns = columns
        self._bases = np.cumsum([0, *(c.num_rows for c in columns)], dtype=np.int64)
        self._chunk_bases = np.cumsum([0, *(c.owners() for c in columns)], dtype=np.int64)
        # Whole views of every column: list them side by side; else split every call.
        self.has_buffers = all(c.has_buffers for c in columns)
        parts = [c.buffers() for c in columns] if self.has_buffers else []
        self._values = [v for values, _ in parts for v in values]
        self._offsets = [o for _, offsets in parts for o in offsets]
        self._rows = np.zeros(1, dtype=np.int64)  # unused: spans() is overridden
        self.num_rows = int(self._bases[-1])
        if any(c.guard is not None for c in columns):  # files read in place among them
            self.guard = self._guard_columns

    def _guard_columns(self, owner: np.ndarray | None) -> None:
        """The guard of each column whose chunks are read (``owner``; None: all)."""
        if owner is None:
            for c in self._columns:
                if c.guard is not None:
                    c.guard(None)
            return
        which = np.searchsorted(self._chunk_bases, owner, side="right") - 1
        for k in distinct(which).tolist():
            guard = self._columns[k].guard
            if guard is not None:
                guard(np.asarray(owner)[which == k] - self._chunk_bases[k])

    def buffers(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``(values, offsets)`` of every column in turn (when all have whole buffers)."""
        if not self.has_buffers:
            raise TypeError(
                f"the token column {self.name!r} reads some of its inputs one pinned chunk "
                "at a time: it has no buffers of the whole column."
            )
        return self._values, self._offsets

    def owners(self) -> int:
        """Chunks of all the columns (the ``owner`` values :meth:`spans` may return)."""
        return int(self._chunk_bases[-1])

    def spans(self, positions: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        pos = np.asarray(positions, dtype=np.int64)
        check_rows(pos, self.num_rows, self.name)
        which = np.searchsorted(self._bases, pos, side="right") - 1
        owner = np.empty(len(pos), dtype=np.int64)
        starts = np.empty(len(pos), dtype=np.int64)
        lengths = np.empty(len(pos), dtype=np.int64)
        for k in distinct(which).tolist():
            sel = which == k
            o, st, ln = self._columns[k].spans(pos[sel] - self._bases[k])
            owner[sel] = self._chunk_bases[k] + (0 if o is None else o)
            starts[sel], lengths[sel] = st, ln
        if self.has_buffers and len(self._values) == 1:
            return None, starts, lengths
        return owner, starts, lengths

    def gather_spans(
        self,
        owner: np.ndarray | None,
        starts: np.ndarray,
        lengths: np.ndarray,
        *,
        out: np.ndarray | None = None,
        sep_after: np.ndarray | None = None,
        sep: int = 0,
    ) -> np.ndarray:
        """The tokens of the spans, concatenated in order (see ``TokenColumn.gather_spans``).

        Without whole buffers, each column touched gathers its own spans (a pinned one
        pins each chunk once), and its tokens are placed where its spans go.
        """
        if self.has_buffers:
            return super().gather_spans(
                owner, starts, lengths, out=out, sep_after=sep_after, sep=sep
            )
        own = np.zeros(len(starts), dtype=np.int64) if owner is None else np.asarray(owner)
        which = np.searchsorted(self._chunk_bases, own, side="right") - 1
        touched = distinct(which).tolist()
        st = np.asarray(starts, dtype=np.int64)
        ln = np.asarray(lengths, dtype=np.int64)
        if len(touched) == 1:  # one column: it writes straight into place
            k = touched[0]
            whole: np.ndarray = self._columns[k].gather_spans(
                own - self._chunk_bases[k], st, ln, out=out, sep_after=sep_after, sep=sep
            )
            return whole
        size = ln if sep_after is None else ln + np.asarray(sep_after, dtype=np.int64)
        ends = np.cumsum(size)
        total = int(ends[-1]) if len(ends) else 0
        result = np.empty(total, dtype=self.dtype) if out is None else out
        if len(result) != total:
            raise ValueError(f"`out` holds {len(result)} tokens; the spans have {total}.")
        dest = ends - size
        for k in touched:
            sel = np.flatnonzero(which == k)
            flags = None if sep_after is None else np.asarray(sep_after)[sel]
            part = self._columns[k].gather_spans(
                own[sel] - self._chunk_bases[k], st[sel], ln[sel], sep_after=flags, sep=sep
            )
            # token i of the part goes to its span's destination plus its offset in the span
            first = np.cumsum(size[sel]) - size[sel]
            result[np.repeat(dest[sel] - first, size[sel]) + np.arange(len(part))] = part
        return result

    def check_fits(self, dtype: Any) -> None:
        """Raise unless every token id of every column fits ``dtype`` (no silent wrap)."""
        for column in self._columns:
            column.check_fits(dtype)
