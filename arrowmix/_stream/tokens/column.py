"""Zero-copy numpy views of a token column, and one-pass gathers out of it.

A tokenized corpus keeps its documents in a ``list<int*>`` column: per record batch, an
offsets buffer and a values buffer, memory-mapped from the chunk files.
:class:`TokenColumn` wraps those buffers as numpy arrays without copying them, so that
stages moving row *positions* (shuffle, mix, bucketing, packing) can turn positions into
``(start, length)`` spans with a few vectorised lookups, and copy token ids exactly once:
from the mapped values buffer straight into the output array.

Example:
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> col = TokenColumn(pa.chunked_array([[[1, 2, 3], [4]], [[5, 6]]]), "ids")
    >>> col.lengths(np.array([2, 0, 1])).tolist()
    [2, 3, 1]
    >>> col.gather(np.array([2, 1])).tolist()
    [5, 6, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from arrowmix._storage.distinct import distinct
from arrowmix._storage.resident import AROUND, touched

__all__ = [
    "TokenColumn",
    "TokenSpans",
    "check_id_range",
    "check_rows",
    "column_values",
    "common_int_dtype",
    "is_token_type",
    "key_values",
    "split_rows",
    "take_values",
    "token_column",
]


def is_token_type(t: pa.DataType) -> bool:
    """Whether ``t`` is a list (or large list) of integers."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)


def common_int_dtype(dtypes: Any) -> np.dtype[Any] | None:
    """The integer type numpy promotes ``dtypes`` to (``uint16``, ``int32``: ``int32``), or None.

    None when the promotion is not an integer type (``uint64`` with a signed type).
    """
    kind: np.dtype[Any] = np.result_type(*dtypes)
    return kind if kind.kind in "iu" else None


class TokenColumn:
    """Token-id documents of one ``list<int*>`` column, read by row position.

    Args:
        column: the column (an array or a chunked array of lists of integers).
        name: the column's name, for error messages.
        mapper: maps row positions of the caller to positions in ``column`` (a
            Dataset view's indices), when they differ.
        view_rows: the number of rows the caller's positions address (with ``mapper``).

    Raises:
        TypeError: the column is not a list of integers (naming it and its type).
        ValueError: the column holds a null document or a null token id.
    """

    #: Whether :meth:`buffers` views every record batch of the column (a column read one
    #: pinned chunk at a time has no such buffers).
    has_buffers = True
    #: Called before tokens are copied out of the views, with the chunks read (as
    #: :meth:`spans` returns them; None: every chunk): a column over files read in place
    #: checks there that they did not change (:mod:`arrowmix._storage.in_place`).
    guard: Callable[[np.ndarray | None], None] | None = None

    def __init__(
        self,
        column: pa.ChunkedArray[Any] | pa.Array[Any],
        name: str,
        mapper: Callable[[np.ndarray], np.ndarray] | None = None,
        view_rows: int | None = None,
    ) -> None:
        if isinstance(column, pa.Array):
            column = pa.chunked_array([column], type=column.type)
        if not is_token_type(column.type):
            raise TypeError(
                f"column {name!r} must hold token ids as list<int*>, got {column.type}."
            )
        self.name = name
        self.dtype = np.dtype(str(column.type.value_type))  # "int32", ...: no pandas import
        self._mapper = mapper
        off_dtype = np.dtype(np.int64 if pa.types.is_large_list(column.type) else np.int32)
        offsets, values, rows = [], [], [0]
        for chunk in column.chunks:
            if len(chunk) == 0:
                continue
            if chunk.null_count:
                bad = int(np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False))[0])
                raise ValueError(
                    f"column {name!r} holds a null document (row {rows[-1] + bad}); "
                    "filter or fill it before collating tokens."
                )
            vals = chunk.values  # type: ignore[attr-defined]
            if vals.null_count:
                raise ValueError(f"column {name!r} holds null token ids.")
            offsets.append(_buffer_view(chunk, off_dtype, len(chunk) + 1))
            values.append(_buffer_view(vals, self.dtype, len(vals)))
            rows.append(rows[-1] + len(chunk))
        self._offsets: list[np.ndarray] = offsets
        self._values: list[np.ndarray] = values
        self._rows = np.asarray(rows, dtype=np.int64)
        self.num_rows = int(self._rows[-1]) if view_rows is None else int(view_rows)

    def buffers(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``(values, offsets)``: the zero-copy views, one of each per record batch."""
        return self._values, self._offsets

    def owners(self) -> int:
        """How many ``owner`` values :meth:`spans` may return: chunks of the column."""
        return len(self._rows) - 1

    # --------------------------------------------------------------------- spans
    def _locate(self, positions: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """``(chunk of each row or None when single-chunk, row within its chunk)``."""
        pos = np.asarray(positions, dtype=np.int64)
        check_rows(pos, self.num_rows, self.name)
        if self._mapper is not None:
            pos = np.asarray(self._mapper(pos), dtype=np.int64)
        if len(self._offsets) == 1:
            return None, pos
        owner = np.searchsorted(self._rows, pos, side="right") - 1
        return owner, pos - self._rows[owner]

    def spans(self, positions: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(chunk, start, length)`` of the documents at ``positions`` (int64 arrays).

        ``chunk`` is None when the column has a single chunk (the usual case: chunk
        files hold few, large record batches).
        """
        owner, local = self._locate(positions)
        if owner is None:
            if not self._offsets:
                return None, np.empty(0, np.int64), np.empty(0, np.int64)
            off = self._offsets[0]
            starts = off[local].astype(np.int64)
            touched(len(local) * AROUND)  # a fault's worth of offsets a row, at most
            return None, starts, off[local + 1] - starts
        starts = np.empty(len(local), dtype=np.int64)
        ends = np.empty(len(local), dtype=np.int64)
        for c in distinct(owner).tolist():
            sel = owner == c
            off, loc = self._offsets[c], local[sel]
            starts[sel] = off[loc]
            ends[sel] = off[loc + 1]
        touched(len(local) * AROUND)
        return owner, starts, ends - starts

    def lengths(self, positions: np.ndarray) -> np.ndarray:
        """Number of tokens of each document at ``positions`` (int64)."""
        return self.spans(positions)[2]

    # ------------------------------------------------------------------- gathers
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
        """The tokens of the spans, concatenated in order: one copy out of the views.

        Each span is a zero-copy slice of its chunk's values; one ``np.concatenate``
        copies them all (a memory copy per span, faster than an index array per token).

        Args:
            owner: chunk of each span, as returned by :meth:`spans`.
            starts: first token of each span in its chunk's values.
            lengths: tokens of each span (may be shorter than the documents: their
                heads are taken).
            out: optional 1-D array receiving the tokens (its length is the total).
            sep_after: optional booleans: write ``sep`` after these spans.
            sep: the separator token.
        """
        if self.guard is not None:
            self.guard(owner)
        st = np.asarray(starts, dtype=np.int64)
        span = np.asarray(lengths, dtype=np.int64)
        begin, end = st.tolist(), (st + span).tolist()
        if owner is None:
            v = self._values[0] if self._values else np.empty(0, self.dtype)
            parts = [v[a:b] for a, b in zip(begin, end, strict=True)]
        else:
            vs = self._values
            parts = [vs[o][a:b] for o, a, b in zip(owner.tolist(), begin, end, strict=True)]
        if sep_after is not None and bool(np.any(sep_after)):
            mark = np.array([sep], dtype=np.int64)
            with_sep: list[np.ndarray] = []
            for part, flag in zip(parts, np.asarray(sep_after).tolist(), strict=True):
                with_sep.append(part)
                if flag:
                    with_sep.append(mark)
            parts = with_sep
        if not parts:
            return out if out is not None else np.empty(0, dtype=self.dtype)
        result: np.ndarray = np.concatenate(parts, out=out)
        # the pages just read may be handed back (a fault's worth a span, beyond its bytes)
        touched(int(span.sum()) * self.dtype.itemsize + len(st) * AROUND)
        return result

    def gather_each(self, positions: np.ndarray, dtype: Any) -> list[np.ndarray]:
        """Each document at ``positions`` as its own ``dtype`` array, in one copy.

        The arrays are views of new arrays (cast while copying), never of the column's
        buffers, so they outlive the storage they were read from.
        """
        owner, starts, lengths = self.spans(positions)
        out = np.empty(int(lengths.sum()), dtype=dtype)
        self.gather_spans(owner, starts, lengths, out=out)
        return split_rows(out, lengths)

    def gather(self, positions: np.ndarray) -> np.ndarray:
        """All tokens of the documents at ``positions``, concatenated."""
        owner, starts, lengths = self.spans(positions)
        return self.gather_spans(owner, starts, lengths)

    def gather_padded(
        self,
        positions: np.ndarray,
        width: int,
        *,
        pad_id: int = 0,
        left: bool = False,
        dtype: Any = np.int64,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, mask)``: the documents as rows of a ``[len(positions), width]`` array.

        Documents longer than ``width`` keep their first ``width`` tokens. ``mask`` is
        a boolean array, true on token positions; ``left`` pads on the left.
        """
        return self.pad_spans(*self.spans(positions), width, pad_id=pad_id, left=left, dtype=dtype)

    def check_fits(self, dtype: Any) -> None:
        """Raise unless every token id of the column fits ``dtype`` (no silent wrap).

        Free when ``dtype`` holds every value of the column's type (``int32`` ids into
        ``int64``); otherwise the column's smallest and largest ids are computed once
        (one pass over the values buffers) and kept.
        """
        if dtype is self.__dict__.get("_fits"):  # the last dtype that held every id
            return
        target = np.dtype(dtype)
        if np.can_cast(self.dtype, target, casting="safe"):
            self._fits = dtype
            return
        span = self.__dict__.get("_id_range")
        if span is None:
            if self.guard is not None:
                self.guard(None)
            vals = [v for v in self._values if len(v)]
            lo = min((int(v.min()) for v in vals), default=0)
            hi = max((int(v.max()) for v in vals), default=0)
            span = self._id_range = (lo, hi)
        check_id_range(self.name, span[0], span[1], target)
        self._fits = dtype

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
        """Like :meth:`gather_padded`, for spans already looked up."""
        lengths = np.minimum(lengths, width)
        ids, mask = padded_frame(lengths, width, pad_id=pad_id, left=left, dtype=dtype)
        ids[mask] = self.gather_spans(owner, starts, lengths)
        return ids, mask


def padded_frame(
    lengths: np.ndarray, width: int, *, pad_id: int, left: bool, dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, mask)`` of a padded batch before its tokens are copied in.

    ``ids`` holds ``pad_id`` everywhere; ``mask`` covers each row's ``lengths[k]`` tokens
    (at the right end of the row when ``left``).
    """
    shape = (len(lengths), width)
    ids = np.zeros(shape, dtype=dtype) if pad_id == 0 else np.full(shape, pad_id, dtype=dtype)
    cols = np.arange(width)
    mask = (cols >= (width - lengths)[:, None]) if left else (cols < lengths[:, None])
    return ids, mask


def split_rows(values: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """``values`` cut into consecutive views of ``lengths`` items each."""
    stops = np.cumsum(lengths).tolist()
    return [values[a:b] for a, b in zip([0, *stops[:-1]], stops, strict=True)]


def check_id_range(name: str, lo: int, hi: int, dtype: np.dtype[Any]) -> None:
    """Raise ValueError naming ``name`` and the id when ``[lo, hi]`` does not fit ``dtype``."""
    info = np.iinfo(dtype)
    if lo >= info.min and hi <= info.max:
        return
    bad, which = (hi, "largest") if hi > info.max else (lo, "smallest")
    raise ValueError(
        f"column {name!r} holds token id {bad} (its {which}), which {dtype} cannot hold "
        f"(range [{info.min}, {info.max}]): the ids would wrap. Use a wider `dtype` "
        "(int32 or int64)."
    )


def check_rows(pos: np.ndarray, num_rows: int, name: str) -> None:
    """IndexError naming the first position of ``pos`` outside ``[0, num_rows)``."""
    # one reduction: negative positions are huge as unsigned
    if pos.size and int(pos.view(np.uint64).max()) >= num_rows:
        bad = int(pos.min()) if int(pos.min()) < 0 else int(pos.max())
        raise IndexError(f"row {bad} is out of range for column {name!r} of {num_rows} rows.")


def _buffer_view(arr: Any, dtype: np.dtype[Any], n: int) -> np.ndarray:
    """Zero-copy numpy view of the data buffer of ``arr`` (offsets, or integer values)."""
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        return np.zeros(n, dtype=dtype)
    view = np.frombuffer(buf, dtype=dtype)
    out: np.ndarray = view[arr.offset : arr.offset + n]
    return out


def token_column(rows: Any, name: str) -> TokenColumn:
    """The :class:`TokenColumn` ``name`` of a row source (its own, or from a full take).

    Row sources may provide ``token_column(name)`` (zero copy from their storage);
    otherwise the column is taken whole once.
    """
    from arrowmix._stream.row_source import optional_member

    getter = optional_member(rows, "token_column")
    if getter is not None:
        col: TokenColumn = getter(name)
        return col
    schema = rows.schema
    if name not in schema.names:
        raise KeyError(f"no column {name!r}; the rows have columns {schema.names}.")
    table = rows.take(np.arange(rows.num_rows, dtype=np.int64))
    return TokenColumn(table.column(name), name)


class TokenSpans(NamedTuple):
    """A batch of documents already looked up in ``column``.

    What a stage that planned its batches from the token lengths hands to collation,
    so that the offsets are not looked up a second time.
    """

    positions: np.ndarray
    column: TokenColumn
    owner: np.ndarray | None
    starts: np.ndarray
    lengths: np.ndarray
    #: ``(spans of the window, indices into it)`` when taken from a window's spans: a
    #: consumer reading other columns reads them once per window, not once per batch.
    within: tuple[TokenSpans, np.ndarray] | None = None

    def take(self, idx: np.ndarray) -> TokenSpans:
        """The documents ``idx`` of this batch."""
        owner = None if self.owner is None else self.owner[idx]
        within = (self, idx) if self.within is None else (self.within[0], self.within[1][idx])
        return TokenSpans(
            self.positions[idx], self.column, owner, self.starts[idx], self.lengths[idx], within
        )


def key_values(rows: Any, positions: np.ndarray, name: str, cache: dict[str, Any]) -> np.ndarray:
    """The values of column ``name`` at ``positions``; a token column gives lengths.

    ``cache`` keeps the :class:`TokenColumn` between calls (one per stage).
    """
    if name not in rows.schema.names:
        raise KeyError(f"no column {name!r}; the rows have columns {rows.schema.names}.")
    if is_token_type(rows.schema.field(name).type):
        col = cache.get(name)
        if col is None:
            col = cache[name] = token_column(rows, name)
        return col.lengths(positions)
    return column_values(rows, positions, name)


def key_spans(
    rows: Any, positions: np.ndarray, name: str, cache: dict[str, Any]
) -> tuple[np.ndarray, TokenSpans | None]:
    """Like :func:`key_values`; for a token column, also the documents' spans."""
    if name not in rows.schema.names:
        raise KeyError(f"no column {name!r}; the rows have columns {rows.schema.names}.")
    if is_token_type(rows.schema.field(name).type):
        col = cache.get(name)
        if col is None:
            col = cache[name] = token_column(rows, name)
        owner, starts, lengths = col.spans(positions)
        return lengths, TokenSpans(positions, col, owner, starts, lengths)
    return column_values(rows, positions, name), None


def column_values(rows: Any, positions: np.ndarray, name: str) -> np.ndarray:
    """The values of a (non-token) column ``name`` at ``positions``, as a numpy array."""
    if name not in rows.schema.names:
        raise KeyError(f"no column {name!r}; the rows have columns {rows.schema.names}.")
    return arrow_to_numpy(take_values(rows, positions, name))


def take_values(rows: Any, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
    """Column ``name`` at ``positions`` (``take_column`` when the row source has it)."""
    from arrowmix._stream.row_source import optional_member

    take_column = optional_member(rows, "take_column")
    if take_column is not None:
        values: pa.ChunkedArray[Any] = take_column(positions, name)
    else:
        values = rows.take(positions)[name]
    return values


_FLOATS = {"halffloat": np.float16, "float": np.float32, "double": np.float64}


def arrow_to_numpy(values: pa.ChunkedArray[Any] | pa.Array[Any]) -> np.ndarray:
    """A column as numpy: numbers without nulls from their buffer, others as objects.

    Avoids pyarrow's ``to_numpy``, which imports pandas on first use.
    """
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        dtype = np.dtype(_FLOATS.get(str(t), str(t)))
        data: Any = arr.buffers()[1]  # a pyarrow Buffer: it has the buffer protocol
        if data is None:
            return np.empty(0, dtype=dtype)
        flat = np.frombuffer(data, dtype=dtype, count=arr.offset + len(arr))
        out: np.ndarray = flat[arr.offset :]
        return out
    if arr.null_count == 0 and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return np.array(arr.to_pylist(), dtype=object)
    converted: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return converted
