"""Packing token-id documents into fixed-length rows: concat-then-split and bin packing.

Both stages read documents (a ``list<int*>`` column of an index stream, or token-id lists
/ row dicts of any stream) and yield batches ``{"input_ids", "segment_ids",
"position_ids"}`` of shape ``[batch_size, seq_len]``:

- ``segment_ids``: 1, 2, ... for the document pieces of a row, in order; 0 on padding.
  A model masks attention across segments with ``segment_ids[:, :, None] ==
  segment_ids[:, None, :]`` (and ``> 0``).
- ``position_ids``: 0, 1, ... inside each piece (they restart at every piece, so a
  document continued from the previous row restarts at 0); 0 on padding.

``strategy="concat"`` (Hugging Face's ``group_texts``): the documents, each followed by
``separator`` when given, are one token stream cut into rows of ``seq_len``; a document
spans as many rows as it needs, and a read-ahead window's unfinished row continues in the
next window, so no token is lost between windows. ``tail`` settles the end of a finite
stream, the only place where a partial batch occurs: ``"drop"`` drops it (fewer than
``batch_size * seq_len`` tokens, with a ``DroppedDataWarning`` giving the count),
``"pad"`` yields it as a last batch of as many rows as it fills, its last row padded.

``strategy="first_fit"`` / ``"best_fit"``: whole documents are packed into rows of
``seq_len``: the window's documents are taken longest first and each goes into the
first row it fits in (first fit decreasing) or the row it leaves the least room in (best
fit decreasing); rows are yielded in the order they were opened. A document longer than
``seq_len`` is handled by ``long_docs``: ``"split"`` cuts it into pieces of ``seq_len``
tokens (the last one shorter) packed as documents of their own, ``"truncate"`` keeps its
first ``seq_len`` tokens, ``"error"`` raises ``ValueError`` naming it. The last batch of
a window is completed with empty rows (all padding), so every batch has ``batch_size``
rows.

Token ids are copied once, from the memory-mapped values buffer into ``input_ids``.
``outputs`` chooses the arrays built beside them (``()``: ids only) and ``labels`` adds
causal-LM labels that never cross a document; see
:mod:`arrowmix._stream.tokens.packed_fields`.

Checkpointing: bin packing is a window-replay stage
(:class:`~arrowmix.stream.WindowReplayStage`): the state is the source's state at the
window start, the window number and the batches of the window yielded; restoring re-reads
one window of ``read_ahead`` documents. Concat packing records where the first token not
yielded lies (the source's state before the read holding it, the documents of that read
before it, its offset, the documents read since); restoring re-reads those documents.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from arrowmix._stream.base import ElasticMode, State, Stream
from arrowmix._stream.counters import SourceTokens, Tally, wait_clock
from arrowmix._stream.replay import WindowReplayStage
from arrowmix._stream.tokens.column import (
    TokenColumn,
    check_id_range,
)
from arrowmix._stream.tokens.packed_fields import DEFAULT_OUTPUTS
from arrowmix._stream.tokens.packing import (
    LONG_DOCS,
    STRATEGIES,
    TAILS,
    Docs,
    Packed,
    PackStage,
    choice,
)
from arrowmix._stream.topology import ElasticRole
from arrowmix._warn import warn
from arrowmix.exceptions import DroppedDataWarning, StateError

__all__ = ["LONG_DOCS", "STRATEGIES", "TAILS", "BinPackIterator", "ConcatPackIterator"]


class _Pending:
    """The documents read but not yet packed to the end, and where each read began.

    ``reads`` holds ``[source state before the read, documents read]`` for every read
    whose documents are still here, oldest first; ``start`` is the first token (in the
    concatenation of these documents, separators included) not packed yet.
    """

    def __init__(self, docs: Docs, separator: bool) -> None:
        self.docs, self.separator = docs, separator
        self.reads: list[tuple[Any, int]] = []
        self.items: list[Any] = []  # token-id lists (streams that are not index streams)
        self.owner: np.ndarray | None = None
        self.starts = np.empty(0, dtype=np.int64)
        self.lengths = np.empty(0, dtype=np.int64)
        self.col: TokenColumn | None = None
        self.cum = np.zeros(1, dtype=np.int64)  # token offsets of the documents
        self.start = 0
        self.refs: Any = None  # provenance: what names each document (``Docs.refs``)

    @property
    def tokens(self) -> int:
        """Tokens not packed yet."""
        return int(self.cum[-1]) - self.start

    def add(self, anchor: Any, block: Any) -> None:
        self.reads.append((anchor, len(block)))
        if self.docs.sourced:
            refs = self.docs.refs(block)
            self.refs = refs if self.refs is None else _joined(self.refs, refs)
        if self.docs.rows is not None:
            col, owner, starts, lengths = self.docs.spans(block)
            self.col = col
            if owner is not None:
                self.owner = owner if self.owner is None else np.concatenate([self.owner, owner])
            self.starts = np.concatenate([self.starts, starts])
            self.lengths = np.concatenate([self.lengths, lengths])
        else:
            self.items.extend(block)
            self.col = None
            self.lengths = np.concatenate(
                [self.lengths, np.fromiter((len(self.docs.doc(x)) for x in block), np.int64)]
            )
        sized = self.lengths + self.separator
        self.cum = np.concatenate([[0], np.cumsum(sized)]).astype(np.int64)

    def spans(self) -> tuple[TokenColumn, np.ndarray | None, np.ndarray, np.ndarray]:
        if self.docs.rows is None and self.col is None:
            self.col, self.owner, self.starts, self.lengths = self.docs.spans(self.items)
        assert self.col is not None
        return self.col, self.owner, self.starts, self.lengths

    def drop_packed(self) -> None:
        """Forget the reads whose documents are packed to the end (keeps state small)."""
        first = int(np.searchsorted(self.cum, self.start, side="right")) - 1
        n = 0
        while self.reads and n + self.reads[0][1] <= first:
            n += self.reads.pop(0)[1]
        if not n:
            return
        if self.refs is not None:
            self.refs = self.refs[n:]  # a new list or view: a window's Packed keeps its own
        if self.docs.rows is not None:
            self.owner = None if self.owner is None else self.owner[n:]
            self.starts = self.starts[n:]
        else:
            del self.items[:n]
            self.col = None
        self.lengths = self.lengths[n:]
        self.start -= int(self.cum[n])
        self.cum = self.cum[n:] - self.cum[n]

    def locate(self, token: int) -> tuple[Any, int, int, int] | None:
        """``(source state, documents to skip, tokens to skip, documents to read)``.

        Where token ``token`` lies: the state before the read holding its document, the
        documents of that read before it, its offset in the document, and how many
        documents were read from that state on. None when ``token`` is past them all.
        """
        if token >= int(self.cum[-1]):
            return None
        j = int(np.searchsorted(self.cum, token, side="right")) - 1
        first = 0
        for anchor, n in self.reads:
            if j < first + n:
                total = sum(m for _, m in self.reads)
                return anchor, j - first, token - int(self.cum[j]), total - first
            first += n
        raise AssertionError("a pending document outside every read")  # pragma: no cover


class ConcatPackIterator(PackStage, Stream[dict[str, Any]]):
    """Documents concatenated (with an optional separator) and cut into rows of ``seq_len``.

    The documents are one token stream: a batch is the next ``batch_size * seq_len``
    tokens of it, whatever read-ahead window they were read in, so no token is left
    behind at the end of a window. ``tail`` settles the end of a finite stream, the
    only place a partial batch can occur: ``"drop"`` drops it (with a
    ``DroppedDataWarning`` giving the count), ``"pad"`` yields it padded.

    State:
        ``source``: the source's state before the read that holds the first token not
        yielded; ``skip``: the documents of that read before it; ``offset``: its place
        in its document; ``read``: the documents read from that state on. Replay
        cost: those ``read`` documents (about one read-ahead window).
    """

    SOURCE_KEY, SKIP_KEY, OFFSET_KEY, READ_KEY = "source", "skip", "offset", "read"
    STATE_KEYS = (SOURCE_KEY, SKIP_KEY, OFFSET_KEY, READ_KEY)
    TRANSIENT = ("_pend", "_buf", "_pos", "_restore")
    ELASTIC_ROLE = ElasticRole.BUFFERING

    def __init__(
        self,
        source: Stream[Any],
        column: str,
        seq_len: int,
        *,
        batch_size: int = 1,
        separator: int | None = None,
        tail: str = "drop",
        read_ahead: int = 4096,
        pad_id: int = 0,
        return_tensors: str = "np",
        dtype: Any = np.int64,
        labels: str | None = None,
        outputs: Sequence[str] = DEFAULT_OUTPUTS,
    ) -> None:
        Stream.__init__(self)
        if not isinstance(source, Stream):
            raise TypeError(f"`source` must be a Stream, got {type(source).__name__}.")
        self.source: Stream[Any] = source
        self._configure(
            column, seq_len, batch_size, read_ahead, pad_id, return_tensors, dtype, labels, outputs
        )
        if separator is not None and (
            isinstance(separator, bool) or not isinstance(separator, (int, np.integer))
        ):
            raise TypeError(f"`separator` must be a token id or None, got {separator!r}.")
        self.separator = None if separator is None else int(separator)
        if self.separator is not None:
            check_id_range("separator", self.separator, self.separator, self.dtype)
        self.tail = choice("tail", tail, TAILS)
        self.full_batches = False
        self._docs = Docs(source, column)
        self._tally = Tally(tokens=True)
        self._sources = SourceTokens(source, self._docs.rows)

    def stats(self) -> dict[str, Any]:
        """Packed rows and tokens yielded, tail tokens dropped, time waiting on the source.

        Process-local, not checkpointed (see ``docs/observability.md``).
        """
        return self._tally.as_dict()

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def describe(self) -> dict[str, Any]:
        return {**self._common(), "separator": self.separator, "tail": self.tail}

    # ------------------------------------------------------------------ state
    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._pend = _Pending(self._docs, self.separator is not None)
        self._buf: Packed | None = None
        self._pos = 0
        self._restore: State | None = None
        if state is None:
            self.source.reset(None)
            return
        for key in (self.SKIP_KEY, self.OFFSET_KEY, self.READ_KEY):
            v = state[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise StateError(f"{type(self).__name__}: bad `{key}` {v!r} in state.")
        if state[self.SKIP_KEY] > state[self.READ_KEY]:
            raise StateError(f"{type(self).__name__}: `skip` is beyond `read` in {state!r:.80}.")
        self.source.reset(state[self.SOURCE_KEY])
        self._restore = copy.deepcopy(state)

    def get_state(self) -> State:
        if self._restore is not None:
            return copy.deepcopy(self._restore)
        pend = self._pend
        batch = self.batch_size * self.seq_len
        where = pend.locate(pend.start + self._pos * batch)
        if where is None:
            return {
                self.SOURCE_KEY: self.source.get_state(),
                self.SKIP_KEY: 0,
                self.OFFSET_KEY: 0,
                self.READ_KEY: 0,
            }
        anchor, skip, offset, read = where
        return {
            self.SOURCE_KEY: copy.deepcopy(anchor),
            self.SKIP_KEY: skip,
            self.OFFSET_KEY: offset,
            self.READ_KEY: read,
        }

    def replay_open_window(self) -> None:
        """Re-read the documents a restored state had read (no output)."""
        state = self._restore
        if state is None:
            return
        self._restore = None
        anchor = self.source.get_state()
        block = self._docs.pull(state[self.READ_KEY]) if state[self.READ_KEY] else []
        if len(block):
            self._pend.add(anchor, block)
        skip = min(state[self.SKIP_KEY], len(self._pend.cum) - 1)
        self._pend.start = min(
            int(self._pend.cum[skip]) + state[self.OFFSET_KEY], int(self._pend.cum[-1])
        )

    # ------------------------------------------------------------------ packing
    def next(self) -> dict[str, Any]:
        if self._buf is None or self._pos >= len(self._buf):
            self._fill()
        assert self._buf is not None
        item: dict[str, Any] = self._buf[self._pos]
        self._tally.add(*_slots(self._buf, self._pos))
        self._pos += 1
        return item

    def _fill(self) -> None:
        self.replay_open_window()
        pend = self._pend
        batch = self.batch_size * self.seq_len
        if self._buf is not None:
            pend.start = min(pend.start + self._pos * batch, int(pend.cum[-1]))
            self._buf, self._pos = None, 0
        pend.drop_packed()
        while pend.tokens < batch:
            anchor = self.source.get_state()
            t0 = wait_clock()
            block = self._docs.pull(self.read_ahead)
            self._tally.wait += wait_clock() - t0
            if not len(block):
                break
            pend.add(anchor, block)
            if self._docs.rows is not None:
                self._sources.add(block, pend.lengths[len(pend.lengths) - len(block) :])
        avail = pend.tokens - pend.tokens % batch
        if not avail:
            left = pend.tokens
            if not left:
                raise StopIteration
            if self.tail == "drop" and not self.__dict__.get("_draining"):
                pend.start = int(pend.cum[-1])
                self._tally.drop(tokens=left)
                warn(
                    f"pack(tail='drop') dropped the last {left} tokens of the stream: they "
                    f"do not fill a batch of {self.batch_size} x {self.seq_len}. "
                    "Use tail='pad' to yield them padded.",
                    DroppedDataWarning,
                )
                raise StopIteration
            avail = left
        # an elastic drain ends where the old instance stood, not at the stream's end:
        # its partial batch is yielded padded to full shape, never dropped
        full = self.tail == "drop" and avail % batch != 0
        self._buf = self._pack(avail, full)

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """While draining an old instance, the partial batch at the end is padded."""
        self._draining = mode.draining

    def _pack(self, avail: int, full: bool = False) -> Packed:
        """The batches of the next ``avail`` tokens (whole batches, or the padded tail)."""
        pend = self._pend
        spans = pend.spans()
        spans[0].check_fits(self.dtype)
        s = self.seq_len
        start = pend.cum[:-1] - pend.start  # document starts, from the first token to pack
        end = pend.cum[1:] - pend.start
        docs = np.flatnonzero((end > start) & (end > 0) & (start < avail))
        b, e = np.maximum(start[docs], 0), np.minimum(end[docs], avail)
        r0, r1 = b // s, (e - 1) // s
        count = r1 - r0 + 1
        doc = np.repeat(docs, count)
        k = np.arange(len(doc)) - np.repeat(np.cumsum(count) - count, count)
        row = np.repeat(r0, count) + k
        pb = np.maximum(np.repeat(b, count), row * s)
        pe = np.minimum(np.repeat(e, count), (row + 1) * s)
        pieces = (doc, pb - start[doc], pe - pb, row, pb - row * s)
        rows = int(-(-avail // s))
        out = Packed(self, spans, pieces, rows, (docs, start[docs], e, avail), full or None)
        out.refs, out.docs = pend.refs, self._docs
        return out


class BinPackIterator(PackStage, WindowReplayStage[dict[str, Any]]):
    """Whole documents packed into rows of ``seq_len`` (first or best fit, per window).

    State:
        ``source`` (at the window start), ``window``, ``emitted``. Replay cost: one
        window of ``read_ahead`` documents.
    """

    def __init__(
        self,
        source: Stream[Any],
        column: str,
        seq_len: int,
        *,
        strategy: str = "first_fit",
        batch_size: int = 1,
        long_docs: str = "split",
        read_ahead: int = 4096,
        pad_id: int = 0,
        return_tensors: str = "np",
        dtype: Any = np.int64,
        labels: str | None = None,
        outputs: Sequence[str] = DEFAULT_OUTPUTS,
    ) -> None:
        WindowReplayStage.__init__(self, source)
        self._configure(
            column, seq_len, batch_size, read_ahead, pad_id, return_tensors, dtype, labels, outputs
        )
        self.strategy = choice("strategy", strategy, ("first_fit", "best_fit"))
        self.long_docs = choice("long_docs", long_docs, LONG_DOCS)
        self.separator = None
        self.full_batches = True
        self._docs = Docs(source, column)
        self._tally = Tally(tokens=True)
        self._sources = SourceTokens(source, self._docs.rows)

    def stats(self) -> dict[str, Any]:
        """Packed rows and tokens yielded, tokens cut by ``long_docs="truncate"``, wait time.

        Process-local, not checkpointed (see ``docs/observability.md``); truncated tokens
        are counted when their window is packed.
        """
        return self._tally.as_dict()

    def next(self) -> dict[str, Any]:
        item = super().next()
        self._tally.add(*_slots(self._buf, self._pos - 1))
        return item

    def pull(self, n: int) -> list[dict[str, Any]]:
        return Stream.pull(self, n)  # through next(), which counts

    def describe(self) -> dict[str, Any]:
        return {**self._common(), "strategy": self.strategy, "long_docs": self.long_docs}

    def compute(self, window: int) -> Any:
        t0 = wait_clock()
        block = self._docs.pull(self.read_ahead)
        self._tally.wait += wait_clock() - t0
        if not len(block):
            return None
        spans = self._docs.spans(block)
        spans[0].check_fits(self.dtype)
        lengths = spans[3]
        s = self.seq_len
        if not self.pending_skip:  # a window replayed by a restore was counted before
            kept = np.minimum(lengths, s) if self.long_docs == "truncate" else lengths
            self._tally.drop(tokens=int(lengths.sum() - kept.sum()))
            if self._docs.rows is not None:
                self._sources.add(block, kept)
        if int(lengths.max()) > s and self.long_docs == "error":
            bad = int(np.flatnonzero(lengths > s)[0])
            raise ValueError(
                f"document {bad} of window {window} has {int(lengths[bad])} tokens, more "
                f"than seq_len={s}; use long_docs='split' or 'truncate'."
            )
        if self.long_docs == "truncate":
            count = np.ones(len(lengths), dtype=np.int64)
        else:
            count = np.maximum(-(-lengths // s), 1)
        # items: whole documents, or the seq_len pieces of long ones
        doc = np.repeat(np.arange(len(lengths)), count)
        k = np.arange(len(doc)) - np.repeat(np.cumsum(count) - count, count)
        off = k * s
        size = np.minimum(lengths[doc] - off, s)
        keep = size > 0
        doc, off, size = doc[keep], off[keep], size[keep]
        row, dest, nrows = _fit(size, s, best=self.strategy == "best_fit")
        order = np.lexsort((dest, row))
        pieces = (doc[order], off[order], size[order], row[order], dest[order])
        out = Packed(self, spans, pieces, nrows)
        out.refs = self._docs.refs(block) if self._docs.sourced else None
        out.docs = self._docs
        return out


def _joined(a: Any, b: Any) -> Any:
    """Two blocks' ``Docs.refs`` one after the other (arrays or lists)."""
    return np.concatenate([a, b]) if isinstance(a, np.ndarray) else [*a, *b]


def _fit(size: np.ndarray, capacity: int, *, best: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows (and columns) for items of ``size`` (all ``<= capacity``), decreasing sizes."""
    order = np.argsort(-size, kind="stable")
    room = np.empty(len(size), dtype=np.int64)  # room left in each opened row
    nrows = 0
    row = np.empty(len(size), dtype=np.int64)
    dest = np.empty(len(size), dtype=np.int64)
    big = np.int64(capacity + 1)
    for i in order.tolist():
        n = int(size[i])
        r = -1
        if nrows:
            open_rooms = room[:nrows]
            if best:
                cand = np.where(open_rooms >= n, open_rooms, big)
                j = int(cand.argmin())
                r = j if cand[j] <= capacity else -1
            else:
                fits = open_rooms >= n
                j = int(fits.argmax())
                r = j if fits[j] else -1
        if r < 0:
            r, nrows = nrows, nrows + 1
            room[r] = capacity
        row[i], dest[i] = r, capacity - room[r]
        room[r] -= n
    return row, dest, nrows


def _slots(packed: Packed, i: int) -> tuple[int, int, int]:
    """``(rows, real tokens, token slots)`` of batch ``i`` of ``packed``."""
    rows, tokens = packed.filled(i)
    return rows, tokens, rows * packed.stage.seq_len
