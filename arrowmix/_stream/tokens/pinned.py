"""A token column read chunk by chunk from storage that pins each chunk only while it is read.

Over a bounded cache of remote chunks (``from_chunks(..., cache_limit=...)``) the chunks of
a corpus are not all present, so a :class:`~arrowmix._stream.tokens.column.TokenColumn`
cannot hold views of every buffer. :class:`PinnedTokenColumn` answers the same calls
(``spans``, ``lengths``, ``gather_spans``, ``pad_spans``, ``check_fits``) by asking its
storage for the chunks a call touches, in the order the call first touches them: each
chunk's offsets and values buffers are wrapped as numpy views (no copy), read, and
dropped before the storage moves to the next chunk and unpins this one. No view outlives
the pin, so a chunk is evicted only once nothing reads it.

A span's ``owner`` is the storage chunk holding the document and its ``start`` counts
tokens from the beginning of that chunk's values (over its record batches), so spans
looked up in one call may be gathered in a later one, after their chunk was unpinned.

Example:
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> chunks = [pa.chunked_array([[[1, 2], [3]]]), pa.chunked_array([[[4, 5, 6]]])]
    >>> def read(which):
    ...     for c in which:
    ...         yield c, chunks[c]
    >>> col = PinnedTokenColumn(read, np.array([0, 2, 3]), pa.list_(pa.int32()), "ids")
    >>> col.lengths(np.array([2, 0])).tolist()
    [3, 2]
    >>> col.gather(np.array([2, 1])).tolist()
    [4, 5, 6, 3]
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._storage.distinct import distinct
from arrowmix._stream.tokens.column import (
    TokenColumn,
    check_id_range,
    check_rows,
    is_token_type,
    padded_frame,
)

__all__ = ["KNOWN_BYTES", "ChunkReader", "PinnedTokenColumn"]

#: ``read(chunks)``: the token column of each of ``chunks``, in that order, as
#: ``(chunk, column)``; a column may be read only until the next one is asked for.
#: Bytes of document starts and lengths a column keeps copied (beyond those of one read).
KNOWN_BYTES = 64 << 20

ChunkReader = Callable[[Sequence[int]], Generator[tuple[int, "pa.ChunkedArray[Any]"], None, None]]


class PinnedTokenColumn(TokenColumn):
    """Token-id documents of one ``list<int*>`` column, read one pinned chunk at a time.

    Args:
        read: the storage (see :data:`ChunkReader`).
        chunk_offsets: first row of every chunk, and the row count (int64).
        type: the column's Arrow type.
        name: the column's name, for error messages.
        mapper: maps row positions of the caller to storage rows (a view's indices).
        view_rows: the number of rows the caller's positions address (with ``mapper``).

    Raises:
        TypeError: the column is not a list of integers (naming it and its type).
        ValueError: on read, a chunk holds a null document or a null token id.
    """

    def __init__(
        self,
        read: ChunkReader,
        chunk_offsets: np.ndarray,
        type: pa.DataType,
        name: str,
        mapper: Callable[[np.ndarray], np.ndarray] | None = None,
        view_rows: int | None = None,
    ) -> None:
        if not is_token_type(type):
            raise TypeError(f"column {name!r} must hold token ids as list<int*>, got {type}.")
        self.name = name
        self.dtype = np.dtype(str(type.value_type))  # type: ignore[attr-defined]
        self._mapper = mapper
        self._read = read
        self._rows = np.asarray(chunk_offsets, dtype=np.int64)
        self._offsets: list[np.ndarray] = []  # no views are kept between calls
        self._values: list[np.ndarray] = []
        self.num_rows = int(self._rows[-1]) if view_rows is None else int(view_rows)
        self._bases: dict[int, np.ndarray] = {}  # chunk -> first token of each record batch
        self._ranges: dict[int, tuple[int, int]] = {}  # chunk -> (smallest, largest) id
        self._narrow: list[np.dtype[Any]] = []  # dtypes check_fits was asked about
        # chunk -> (start, length) of its documents, copied out; least recently used first
        self._known: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._known_bytes = 0

    has_buffers = False

    def buffers(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        raise TypeError(
            f"the token column {self.name!r} reads its chunks one at a time through a bounded "
            "cache: it has no buffers of the whole column."
        )

    # ------------------------------------------------------------------ reading
    def _chunks(
        self, owner: np.ndarray, keep: np.ndarray | None = None
    ) -> Iterator[tuple[TokenColumn, np.ndarray, np.ndarray]]:
        """``(column of a chunk, its token bases, indices into owner)`` per chunk touched.

        Chunks come in the order ``owner`` first touches them; ``keep`` selects entries.
        The column (views of the pinned chunk) is valid until the next one is yielded.
        """
        idx = np.arange(len(owner)) if keep is None else np.flatnonzero(keep)
        if not len(idx):
            return
        order = np.argsort(owner[idx], kind="stable")
        grouped = owner[idx][order]
        cuts = [0, *(np.flatnonzero(np.diff(grouped)) + 1).tolist(), len(idx)]
        groups = sorted(itertools.pairwise(cuts), key=lambda g: int(order[g[0]]))
        chunks = [int(grouped[a]) for a, _ in groups]
        reads = self._read(chunks)
        try:
            for (a, b), (c, column) in zip(groups, reads, strict=True):
                col = TokenColumn(column, self.name)
                values, _ = col.buffers()
                bases = self._bases.get(c)
                if bases is None:
                    sizes = [len(v) for v in values]
                    bases = self._bases[c] = np.cumsum([0, *sizes], dtype=np.int64)
                if self._narrow:
                    self._check_chunk(c, values)
                yield col, bases, idx[order[a:b]]
        finally:
            reads.close()

    def _check_chunk(self, c: int, values: list[np.ndarray]) -> None:
        span = self._ranges.get(c)
        if span is None:
            vals = [v for v in values if len(v)]
            lo = min((int(v.min()) for v in vals), default=0)
            hi = max((int(v.max()) for v in vals), default=0)
            span = self._ranges[c] = (lo, hi)
        for dtype in self._narrow:
            check_id_range(self.name, span[0], span[1], dtype)

    def spans(self, positions: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(chunk, start, length)`` of the documents at ``positions`` (int64 arrays).

        ``start`` counts tokens from the beginning of the chunk's values. The documents'
        starts and lengths of a chunk are copied out once, when a read first touches it
        (16 bytes a row, the most recent ones up to :data:`KNOWN_BYTES`), so looking
        spans up again needs no pin.
        """
        pos = np.asarray(positions, dtype=np.int64)
        check_rows(pos, self.num_rows, self.name)
        if self._mapper is not None:
            pos = np.asarray(self._mapper(pos), dtype=np.int64)
        owner = np.searchsorted(self._rows, pos, side="right") - 1
        local = pos - self._rows[owner]
        known = self._known
        touched = distinct(owner)
        missing = np.isin(owner, [c for c in touched.tolist() if c not in known])
        for col, bases, sel in self._chunks(owner, missing) if missing.any() else ():
            c = int(owner[sel[0]])
            batch, st, n = col.spans(np.arange(col.num_rows, dtype=np.int64))
            starts_c = st if batch is None else st + bases[batch]
            known[c] = (starts_c, n)
            self._known_bytes += starts_c.nbytes + n.nbytes
        starts = np.empty(len(pos), dtype=np.int64)
        lengths = np.empty(len(pos), dtype=np.int64)
        for c in touched.tolist():
            rows: Any = np.flatnonzero(owner == c) if len(touched) > 1 else slice(None)
            first, size = known[c]
            known.move_to_end(c)
            starts[rows] = first[local[rows]]
            lengths[rows] = size[local[rows]]
        while self._known_bytes > KNOWN_BYTES and len(known) > len(touched):
            _, (a, b) = known.popitem(last=False)
            self._known_bytes -= a.nbytes + b.nbytes
        return owner.astype(np.int64), starts, lengths

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

        Each chunk is pinned once, its spans copied straight into place, and unpinned.
        """
        st = np.asarray(starts, dtype=np.int64)
        ln = np.asarray(lengths, dtype=np.int64)
        size = ln if sep_after is None else ln + np.asarray(sep_after, dtype=np.int64)
        ends = np.cumsum(size)
        total = int(ends[-1]) if len(ends) else 0
        result = np.empty(total, dtype=self.dtype) if out is None else out
        if len(result) != total:
            raise ValueError(f"`out` holds {len(result)} tokens; the spans have {total}.")
        dest = ends - size
        if sep_after is not None:
            flags = np.asarray(sep_after, dtype=bool)
            result[(dest + ln)[flags]] = sep
        self._copy_spans(owner, st, ln, result, dest)
        return result

    def pad_spans(
        self,
        owner: np.ndarray | None,
        starts: np.ndarray,
        lengths: np.ndarray,
        width: int,
        *,
        pad_id: int = 0,
        left: bool = False,
        dtype: Any = np.int64,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Like ``TokenColumn.pad_spans``; each span is copied straight into its row.

        No flat copy of the tokens is made and scattered through the mask afterwards.
        """
        ln = np.minimum(np.asarray(lengths, dtype=np.int64), width)
        ids, mask = padded_frame(ln, width, pad_id=pad_id, left=left, dtype=dtype)
        dest = np.arange(len(ln), dtype=np.int64) * width + ((width - ln) if left else 0)
        self._copy_spans(owner, np.asarray(starts, dtype=np.int64), ln, ids.reshape(-1), dest)
        return ids, mask

    def _copy_spans(
        self,
        owner: np.ndarray | None,
        st: np.ndarray,
        ln: np.ndarray,
        result: np.ndarray,
        dest: np.ndarray,
    ) -> None:
        """Copy span ``k`` (``ln[k]`` tokens from ``st[k]``) to ``result[dest[k]:]``.

        Each chunk is pinned once, its spans copied (cast to ``result``'s type), unpinned.
        """
        own = np.zeros(len(st), dtype=np.int64) if owner is None else np.asarray(owner)
        for col, bases, sel in self._chunks(own, ln > 0):
            values, _ = col.buffers()
            if len(values) == 1:
                v = values[0]
                spans = zip(dest[sel].tolist(), st[sel].tolist(), ln[sel].tolist(), strict=True)
                for d, a, n in spans:
                    result[d : d + n] = v[a : a + n]
                continue
            batch = np.searchsorted(bases, st[sel], side="right") - 1
            local = st[sel] - bases[batch]
            where = (batch.tolist(), dest[sel].tolist(), local.tolist(), ln[sel].tolist())
            for b, d, a, n in zip(*where, strict=True):
                result[d : d + n] = values[b][a : a + n]

    def check_fits(self, dtype: Any) -> None:
        """Raise unless every token id read fits ``dtype`` (no silent wrap).

        Free when ``dtype`` holds every value of the column's type; otherwise each chunk's
        smallest and largest ids are computed once, when the chunk is first read (the
        whole column is never read up front), and checked on every read.
        """
        target = np.dtype(dtype)
        if np.can_cast(self.dtype, target, casting="safe") or target in self._narrow:
            return
        self._narrow.append(target)
        for lo, hi in self._ranges.values():
            check_id_range(self.name, lo, hi, target)
