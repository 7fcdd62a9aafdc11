"""What both packing strategies share: argument checks, the documents of a read, packed rows.

:mod:`arrowmix._stream.tokens.pack` builds its two stages (concat-then-split and bin packing)
on these: ``Docs`` (a read of documents as token spans), ``Packed`` (rows being filled and
their segment and position ids) and ``PackStage`` (the arguments and output both stages take).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.base import Stream
from arrowmix._stream.positions import Positions, no_positions
from arrowmix._stream.provenance import SEGMENT_SOURCES, SOURCE_KEY, carries_sources, sources_reader
from arrowmix._stream.tokens.collate import check_dtype
from arrowmix._stream.tokens.column import (
    TokenColumn,
    is_token_type,
    token_column,
)
from arrowmix._stream.tokens.packed_fields import (
    DEFAULT_OUTPUTS,
    add_fields,
    as_tensors,
    check_labels,
    check_outputs,
    needs_runs,
)
from arrowmix._validate import check_int

__all__ = [
    "LONG_DOCS",
    "STRATEGIES",
    "TAILS",
    "Docs",
    "PackStage",
    "Packed",
    "choice",
    "positive",
    "row_positions",
]

STRATEGIES = ("concat", "first_fit", "best_fit")
TAILS = ("drop", "pad")
LONG_DOCS = ("split", "truncate", "error")


def positive(name: str, v: object) -> int:
    n: int = check_int(name, v, minimum=1)
    return n


def choice(name: str, v: object, allowed: Sequence[Any]) -> Any:
    if v not in allowed:
        raise ValueError(f"`{name}` must be one of {list(allowed)}, got {v!r}.")
    return v


class Docs:
    """Documents of a source: row positions of an index stream, or token-id lists."""

    def __init__(self, source: Stream[Any], column: str) -> None:
        self.source, self.column = source, column
        self.rows = source.row_source()
        self._input: Positions | None = None
        if self.rows is not None:
            names = self.rows.schema.names
            if column not in names:
                raise KeyError(f"no column {column!r} to pack; the rows have {names}.")
            ftype = self.rows.schema.field(column).type
            if not is_token_type(ftype):
                raise TypeError(
                    f"column {column!r} must hold token ids as list<int*>, got {ftype}."
                )
            self._input = source.as_positions()
            if self._input is None:
                raise no_positions(source)
        # provenance: each document's source reference (None: the items carry none)
        self._refs = sources_reader(self.rows)
        self.sourced = self._refs is not None or carries_sources(source)

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("_tokens", None)  # numpy views of the mapped chunks: rebuilt on use
        return d

    def pull(self, n: int) -> Any:
        if self._input is not None:
            return self._input.pull(n)
        return self.source.pull(n)

    def spans(self, block: Any) -> tuple[TokenColumn, np.ndarray | None, np.ndarray, np.ndarray]:
        """``(column, owner, starts, lengths)`` of the block's documents."""
        if self.rows is not None:
            col = self.__dict__.get("_tokens")
            if col is None:
                col = self._tokens = token_column(self.rows, self.column)
            return (col, *col.spans(block))
        docs = [self._doc(x) for x in block]
        col = TokenColumn(pa.array(docs, type=pa.list_(pa.int64())), self.column)
        return (col, *col.spans(np.arange(len(docs), dtype=np.int64)))

    def refs(self, block: Any) -> Any:
        """What names the block's documents (when ``sourced``): their positions, or refs.

        An index stream's positions (an int64 array), turned into references only for the
        pieces of a batch (:meth:`sources`); the source references of row dicts otherwise.
        """
        if self._refs is not None:
            return np.asarray(block, dtype=np.int64)
        return [x.get(SOURCE_KEY) if isinstance(x, dict) else None for x in block]

    def sources(self, refs: Any, doc: np.ndarray, start: np.ndarray) -> list[Any]:
        """The references of pieces of documents ``doc`` of a window's ``refs``, with start."""
        if self._refs is not None:
            return self._refs(refs[doc], start)
        return [
            None if refs[d] is None else {**refs[d], "start": t}
            for d, t in zip(doc.tolist(), start.tolist(), strict=True)
        ]

    def doc(self, item: Any) -> Any:
        """The token ids of ``item`` (a list, an array, or a row with the column)."""
        return self._doc(item)

    def _doc(self, item: Any) -> Any:
        if isinstance(item, dict):
            if self.column not in item:
                raise KeyError(f"an item has no column {self.column!r} to pack: {sorted(item)}.")
            item = item[self.column]
        if isinstance(item, np.ndarray):
            return item.tolist()
        if not isinstance(item, Sequence) or isinstance(item, (str, bytes)):
            raise TypeError(f"a document must be a list of token ids, got {type(item).__name__}.")
        return item


class Packed:
    """The batches of one window, built when read: pieces of documents laid into rows.

    A piece is ``doc`` (index into the window's spans), ``off`` (its first token in the
    document, counting the separator), ``length`` (tokens, separator included), ``row``
    and ``dest`` (its first column in the row).
    """

    def __init__(
        self,
        stage: Any,
        spans: Any,
        pieces: tuple[np.ndarray, ...],
        nrows: int,
        stream: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None,
        full: bool | None = None,
    ):
        self.stage = stage
        self.full = stage.full_batches if full is None else full  # pad to batch_size rows
        self.col, self.owner, self.starts, self.lengths = spans
        self.doc, self.off, self.length, self.row, self.dest = pieces
        self.nrows = nrows
        b = stage.batch_size
        self.count = int(-(-nrows // b))
        self._cuts = np.searchsorted(self.row, np.arange(0, self.count * b + 1, b))
        # concat: the non-empty documents, their (start, end) in the window's token
        # stream and the tokens kept; a full batch is one contiguous range of it
        self.stream = stream
        # provenance: what names each document (``Docs.refs``), and the window's Docs
        self.refs: Any = None
        self.docs: Docs | None = None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.count))]
        return self._batch(i)

    def filled(self, i: int) -> tuple[int, int]:
        """``(rows, real tokens)`` of batch ``i`` (separators count as tokens)."""
        b, s = self.stage.batch_size, self.stage.seq_len
        if self.stream is not None and (i + 1) * b * s <= self.stream[3]:
            return b, b * s
        rows = b if self.full else min(b, self.nrows - i * b)
        return rows, int(self.length[int(self._cuts[i]) : int(self._cuts[i + 1])].sum())

    def _batch(self, i: int) -> dict[str, Any]:
        st = self.stage
        b, s = st.batch_size, st.seq_len
        if self.stream is not None and (i + 1) * b * s <= self.stream[3]:
            full = self._full_range(i * b * s, (i + 1) * b * s)
            return as_tensors(full) if st.return_tensors == "pt" else full
        rows = b if self.full else min(b, self.nrows - i * b)
        lo, hi = int(self._cuts[i]), int(self._cuts[i + 1])
        doc, off, plen = self.doc[lo:hi], self.off[lo:hi], self.length[lo:hi]
        row = self.row[lo:hi] - i * b
        dlen = self.lengths[doc]
        tok = np.clip(np.minimum(plen, dlen - off), 0, None)  # tokens read from values
        sep_after = None if st.separator is None else (off + plen == dlen + 1)
        owner = None if self.owner is None else self.owner[doc]
        flat = self.col.gather_spans(
            owner,
            self.starts[doc] + off,
            tok,
            sep_after=sep_after,
            sep=0 if st.separator is None else st.separator,
        )
        # pieces fill each row from its first column: a row's tokens are a prefix
        fill = np.bincount(row, weights=plen, minlength=rows).astype(np.int64)
        ids = np.full((rows, s), st.pad_id, dtype=st.dtype)
        total = int(plen.sum())
        prefix = bool((fill[:-1] == s).all())  # full rows (concat): the tokens are a prefix
        mask = None if prefix else np.arange(s) < fill[:, None]
        out: dict[str, Any] = {"input_ids": ids}
        if prefix:
            ids.reshape(-1)[:total] = flat
        else:
            ids[mask] = flat
        if "segment_ids" in st.outputs:
            # segment number of each piece inside its row: 1, 2, ...
            seg_of_piece = np.arange(len(row)) - np.searchsorted(row, row, side="left") + 1
            out["segment_ids"] = _spread(np.repeat(seg_of_piece, plen), (rows, s), st.dtype, mask)
        if "position_ids" in st.outputs:
            pos_flat = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(plen) - plen, plen)
            out["position_ids"] = _spread(pos_flat, (rows, s), st.dtype, mask)
        if self.refs is not None:
            out[SEGMENT_SOURCES] = self._segment_sources(doc, off, row, rows)
        if needs_runs(st.labels, st.outputs):
            # runs: the pieces, then each row's padding (rows are filled from column 0)
            part = np.flatnonzero(fill < s)
            starts = np.concatenate([row * s + self.dest[lo:hi], part * s + fill[part]])
            real = np.arange(len(starts)) < len(row)
            order = np.argsort(starts, kind="stable")
            add_fields(out, starts[order], real[order], st.labels, st.outputs)
        return as_tensors(out) if st.return_tensors == "pt" else out

    def _segment_sources(
        self, doc: np.ndarray, off: np.ndarray, row: np.ndarray, rows: int
    ) -> list[list[Any]]:
        """Per row, the source reference of each piece (in row order), with its start."""
        assert self.docs is not None
        refs = self.docs.sources(self.refs, doc, off)
        cuts = np.searchsorted(row, np.arange(rows + 1)).tolist()  # pieces are in row order
        return [refs[a:b] for a, b in itertools.pairwise(cuts)]

    def _full_range(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """The batch of stream tokens ``[lo, hi)``: full rows, no padding.

        Vectorised per batch: the documents' pieces of the batch are cut again where the
        rows begin, so each piece starts a segment or continues one at a row start, and
        ``position_ids`` is the offset from the piece's start (one ``repeat``, one
        subtraction) and ``segment_ids`` the piece's number in its row (one ``repeat``).
        """
        st = self.stage
        b, s = st.batch_size, st.seq_len
        docs, dstart, dend, _ = self.stream  # type: ignore[misc]
        first = int(dend.searchsorted(lo, side="right"))
        last = int(dstart.searchsorted(hi, side="left"))
        doc = docs[first:last]
        ds = dstart[first:last]
        a = np.maximum(ds, lo)
        take = np.minimum(dend[first:last], hi) - a  # stream tokens of each document
        off = a - ds  # first of them in the document
        if st.separator is None:  # every stream token is a document token
            tok, sep_after = take, None
        else:
            dlen = self.lengths[doc]
            tok = np.clip(np.minimum(take, dlen - off), 0, None)  # read from the values
            sep_after = off + take == dlen + 1
        owner = None if self.owner is None else self.owner[doc]
        ids = np.empty((b, s), dtype=st.dtype)
        # into ``ids`` when numpy casts the ids there (same kind); an unsigned dtype
        # takes them by assignment (the ids were checked to fit: check_fits)
        direct = np.can_cast(np.int64, st.dtype, casting="same_kind")
        flat = self.col.gather_spans(
            owner,
            self.starts[doc] + off,
            tok,
            out=ids.reshape(-1) if direct else None,
            sep_after=sep_after,
            sep=0 if st.separator is None else st.separator,
        )
        if not direct:
            ids.reshape(-1)[:] = flat
        out: dict[str, Any] = {"input_ids": ids}
        # pieces: the documents' starts and the rows' starts, in order
        bounds = np.union1d(a - lo, row_positions(b * s + 1)[::s])
        pstart, plen = bounds[:-1], np.diff(bounds)
        if "segment_ids" in st.outputs:
            row = pstart // s
            number = np.arange(len(row)) - row.searchsorted(row, side="left") + 1
            seg = out["segment_ids"] = np.empty((b, s), dtype=st.dtype)
            seg.reshape(-1)[:] = number.repeat(plen)  # checked: fits (<= seq_len)
        if "position_ids" in st.outputs:
            pos = out["position_ids"] = np.empty((b, s), dtype=st.dtype)
            np.subtract(
                row_positions(b * s), pstart.repeat(plen), out=pos.reshape(-1), casting="unsafe"
            )
        if needs_runs(st.labels, st.outputs):
            add_fields(out, pstart, None, st.labels, st.outputs)
        if self.refs is not None:  # each piece's document: the last to start at or before it
            j = np.searchsorted(a - lo, pstart, side="right") - 1
            poff = off[j] + pstart - (a - lo)[j]
            out[SEGMENT_SOURCES] = self._segment_sources(doc[j], poff, pstart // s, b)
        return out


def _spread(
    values: np.ndarray, shape: tuple[int, int], dtype: Any, mask: np.ndarray | None
) -> np.ndarray:
    """Zeros of ``shape`` with ``values`` laid over the rows' tokens (a prefix if no mask)."""
    arr = np.zeros(shape, dtype=dtype)
    if mask is None:
        arr.reshape(-1)[: len(values)] = values
    else:
        arr[mask] = values
    return arr


_ROW_POSITIONS: dict[int, np.ndarray] = {}


def row_positions(seq_len: int) -> np.ndarray:
    """``arange(seq_len)`` (kept: every packed batch needs it)."""
    out = _ROW_POSITIONS.get(seq_len)
    if out is None:
        out = _ROW_POSITIONS[seq_len] = np.arange(seq_len, dtype=np.int64)
        out.flags.writeable = False
    return out


class PackStage:
    """Options shared by the packing stages."""

    def _configure(
        self,
        column: str,
        seq_len: int,
        batch_size: int,
        read_ahead: int,
        pad_id: int,
        return_tensors: str,
        dtype: Any,
        labels: str | None = None,
        outputs: Sequence[str] = DEFAULT_OUTPUTS,
    ) -> None:
        if not isinstance(column, str):
            raise TypeError(f"`column` must be a column name, got {column!r}.")
        self.column = column
        self.seq_len = positive("seq_len", seq_len)
        self.batch_size = positive("batch_size", batch_size)
        self.read_ahead = positive("read_ahead", read_ahead)
        self.pad_id = int(check_int("pad_id", pad_id))
        self.return_tensors = choice("return_tensors", return_tensors, ("np", "pt"))
        self.labels = check_labels(labels)
        self.outputs = check_outputs(outputs)
        ids = {"segment_ids", "position_ids"} & set(self.outputs)
        self.dtype = check_dtype(
            dtype, pad_id=self.pad_id, labels=self.labels, seq_len=self.seq_len if ids else None
        )

    def _common(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "read_ahead": self.read_ahead,
            "pad_id": self.pad_id,
            "return_tensors": self.return_tensors,
            "dtype": str(self.dtype),
            # the training fields enter the fingerprint when set (older pipelines keep theirs)
            **({} if self.labels is None else {"labels": self.labels}),
            **({} if self.outputs == DEFAULT_OUTPUTS else {"outputs": list(self.outputs)}),
        }
