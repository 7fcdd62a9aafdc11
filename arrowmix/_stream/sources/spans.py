"""Chunk-aligned dealing: each instance reads one contiguous span of the epoch's chunk order.

With ``shard="chunks"`` the epoch's chunks are put in their seeded order (the permutation of
``shuffle="chunks"``, or storage order for ``shuffle=None``) and their rows laid end to end;
instance ``k`` of ``n`` takes the span ``[k * C, (k + 1) * C)`` of that sequence, where
``C = num_rows // n``. So every instance yields exactly ``C`` rows per epoch (what DDP
needs), reads whole chunks except at most the two at the ends of its span (which it shares
with its neighbours), and the ``num_rows % n`` rows after the last span are not read that
epoch (:class:`~arrowmix.exceptions.DroppedDataWarning`; other rows each epoch when the
chunks are shuffled). Within its span an instance shuffles rows inside windows of
``window_chunks`` consecutive pieces (chunks, or the part of a chunk in its span).

The epoch's *global order* that the dealing layer (:mod:`arrowmix._stream.dealing`) deals
strided is the interleaving of the spans: unit ``i * n + k`` is row ``i`` of span ``k``. The
plain strided dealing ``k, k + n, ...`` thus gives instance ``k`` exactly its span, and an
elastic resize re-deals the units no old instance read, like any other order.
"""

from __future__ import annotations

import numpy as np

from arrowmix._storage.distinct import distinct
from arrowmix._stream.rng import derive_rng

__all__ = ["ChunkSpans"]

_Pieces = tuple[np.ndarray, np.ndarray, np.ndarray]  # chunk, first row, end row (chunk-local)


class ChunkSpans:
    """Positions of instance spans of the chunk order, per epoch and instance count.

    Args:
        offsets: int64 chunk boundaries ``[0, ..., num_rows]``.
        seed: the order's seed.
        shuffle: permute the chunks per epoch and shuffle rows within windows.
        window_chunks: pieces per shuffle window.

    Example:
        >>> spans = ChunkSpans(np.array([0, 4, 8, 12]), seed=0, shuffle=False)
        >>> [spans.local(0, 2, k, np.arange(6)).tolist() for k in range(2)]
        [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    """

    def __init__(
        self, offsets: np.ndarray, seed: int, shuffle: bool, window_chunks: int = 4
    ) -> None:
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.num_rows = int(self.offsets[-1]) if len(self.offsets) else 0
        self.seed = seed
        self.shuffle = shuffle
        self.window_chunks = window_chunks
        self._epoch: int | None = None
        self._order: tuple[np.ndarray, np.ndarray] | None = None
        self._spans: dict[tuple[int, int], tuple[_Pieces, np.ndarray]] = {}
        self._windows: dict[tuple[int, int, int], np.ndarray] = {}

    def per_instance(self, n: int) -> int:
        """Rows of each of ``n`` instances per epoch."""
        return self.num_rows // n

    def _chunk_order(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """The epoch's chunk order and the start of each chunk in the laid-out sequence."""
        if self._epoch != epoch or self._order is None:
            self._epoch = epoch
            self._spans, self._windows = {}, {}
            sizes = np.diff(self.offsets)
            perm = (
                derive_rng(self.seed, epoch).permutation(len(sizes))
                if self.shuffle
                else np.arange(len(sizes))
            )
            starts = np.concatenate([[0], np.cumsum(sizes[perm])]).astype(np.int64)
            self._order = (perm, starts)
        return self._order

    def pieces(self, epoch: int, n: int, k: int) -> _Pieces:
        """``(chunk, first, end)`` of the pieces of span ``k`` of ``n``, in reading order."""
        return self._span(epoch, n, k)[0]

    def _span(self, epoch: int, n: int, k: int) -> tuple[_Pieces, np.ndarray]:
        perm, starts = self._chunk_order(epoch)
        got = self._spans.get((n, k))
        if got is None:
            size = self.per_instance(n)
            a, b = k * size, (k + 1) * size
            lo = np.clip(a - starts[:-1], 0, None)
            hi = np.minimum(b, starts[1:]) - starts[:-1]
            keep = hi > lo
            pieces = (perm[keep], lo[keep], hi[keep])
            w = self.window_chunks
            lengths = pieces[2] - pieces[1]
            cut = np.arange(0, len(lengths), w)
            win_rows = np.add.reduceat(lengths, cut) if len(lengths) else lengths
            win_starts = np.concatenate([[0], np.cumsum(win_rows)]).astype(np.int64)
            got = (pieces, win_starts)
            self._spans[(n, k)] = got
        return got

    def local(self, epoch: int, n: int, k: int, idx: np.ndarray) -> np.ndarray:
        """Positions of rows ``idx`` of span ``k`` of ``n`` in ``epoch``."""
        idx = np.asarray(idx, dtype=np.int64)
        (chunks, lo, hi), win_starts = self._span(epoch, n, k)
        if not self.shuffle:
            # One piece after another, rows in storage order.
            piece_starts = np.concatenate([[0], np.cumsum(hi - lo)])
            p = np.searchsorted(piece_starts, idx, side="right") - 1
            out: np.ndarray = self.offsets[chunks[p]] + lo[p] + idx - piece_starts[p]
            return out
        win = np.searchsorted(win_starts, idx, side="right") - 1
        out = np.empty_like(idx)
        for w in distinct(win):
            sel = win == w
            out[sel] = self._window(epoch, n, k, int(w))[idx[sel] - win_starts[w]]
        return out

    def _window(self, epoch: int, n: int, k: int, w: int) -> np.ndarray:
        pos = self._windows.get((n, k, w))
        if pos is None:
            chunks, lo, hi = self._span(epoch, n, k)[0]
            sl = slice(w * self.window_chunks, (w + 1) * self.window_chunks)
            parts = [
                np.arange(self.offsets[c] + a, self.offsets[c] + b)
                for c, a, b in zip(chunks[sl], lo[sl], hi[sl], strict=True)
            ]
            pos = derive_rng(self.seed, epoch, n, k, w).permutation(np.concatenate(parts))
            # A span is read forward: keep its last two windows (and other spans' ones).
            self._windows = {
                key: v for key, v in self._windows.items() if key[:2] != (n, k) or key[2] >= w - 1
            }
            self._windows[(n, k, w)] = pos
        return pos
