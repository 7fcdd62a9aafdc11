"""Which row positions a rank reads in which order, per epoch.

Modes: ``None`` (sequential), ``"global"`` (a Feistel bijection per epoch), ``"chunks"``
(a seeded permutation of storage chunks per epoch, then a shuffle inside windows of
``window_chunks`` consecutive chunks of that order). The epoch's order is one sequence
of ``num_rows`` positions; rank ``r`` of ``N`` reads its elements ``r, r + N, ...``, so
the ranks of an epoch are disjoint, their union is every row, and a rank only ever
asks storage for its own rows.
"""

from __future__ import annotations

import numpy as np

from arrowmix._stream.dealing import Dealing, Generation
from arrowmix._stream.permutation import FeistelPermutation
from arrowmix._stream.rng import derive_rng

__all__ = ["MODES", "PositionOrder"]

MODES = ("global", "chunks", None)


class PositionOrder:
    """Positions of a rank's share of an epoch, computed block by block.

    Example:
        >>> o = PositionOrder(10, np.array([0, 5, 10]), None, seed=0)
        >>> o.count, o.positions(0, 2, 5).tolist()
        (10, [2, 3, 4])
    """

    def __init__(
        self,
        num_rows: int,
        chunk_offsets: np.ndarray,
        mode: str | None,
        seed: int,
        num_instances: int = 1,
        instance_rank: int = 0,
        window_chunks: int = 4,
        generations: list[Generation] | None = None,
    ) -> None:
        self.num_rows = int(num_rows)
        self.offsets = np.asarray(chunk_offsets, dtype=np.int64)
        self.mode = mode
        self.seed = seed
        self.num_instances = num_instances
        self.rank = instance_rank
        self.window_chunks = window_chunks
        # Rows of this rank per epoch: ceil((n - r) / N).
        self.count = max(0, -(-(self.num_rows - instance_rank) // num_instances))
        self.dealing = Dealing(self.num_rows, generations or [], num_instances, instance_rank)
        self._cache_key: tuple[int, ...] | None = None
        self._feistel: FeistelPermutation | None = None
        self._windows: tuple[np.ndarray, np.ndarray] | None = None
        self._window_pos: dict[int, np.ndarray] = {}

    def count_for(self, epoch: int) -> int:
        """Rows of this rank in ``epoch`` (fewer in an epoch resumed on a resized cluster)."""
        return self.count if self.dealing.plain else self.dealing.count(epoch)

    def positions(self, epoch: int, start: int, stop: int) -> np.ndarray:
        """Positions of the rank-local indices ``[start, stop)`` of ``epoch``."""
        if self.dealing.plain:
            g = np.arange(start, stop, dtype=np.int64) * self.num_instances + self.rank
        else:
            g = self.dealing.units(epoch, start, stop)
        if self.mode is None:
            return g
        if self.mode == "global":
            if self._cache_key != (epoch,):
                self._cache_key = (epoch,)
                self._feistel = FeistelPermutation(self.num_rows, [self.seed, epoch])
            assert self._feistel is not None
            return self._feistel(g)
        return self._chunk_positions(epoch, g)

    def _chunk_positions(self, epoch: int, g: np.ndarray) -> np.ndarray:
        if self._cache_key != (epoch,) or self._windows is None:
            self._cache_key = (epoch,)
            self._window_pos = {}
            sizes = np.diff(self.offsets)
            perm = derive_rng(self.seed, epoch).permutation(len(sizes))
            starts = np.arange(0, len(perm), self.window_chunks)
            win_rows = np.add.reduceat(sizes[perm], starts) if len(perm) else sizes[:0]
            self._windows = (perm, np.concatenate([[0], np.cumsum(win_rows)]))
        perm, win_offsets = self._windows
        win = np.searchsorted(win_offsets, g, side="right") - 1
        out = np.empty_like(g)
        for w in np.unique(win):
            sel = win == w
            out[sel] = self._window(epoch, int(w), perm)[g[sel] - win_offsets[w]]
        return out

    def _window(self, epoch: int, w: int, perm: np.ndarray) -> np.ndarray:
        pos = self._window_pos.get(w)
        if pos is None:
            chunks = perm[w * self.window_chunks : (w + 1) * self.window_chunks]
            parts = [np.arange(self.offsets[c], self.offsets[c + 1]) for c in chunks]
            pos = derive_rng(self.seed, epoch, w).permutation(np.concatenate(parts))
            # Keep only the last windows: a rank moves forward through the epoch.
            self._window_pos = {k: v for k, v in self._window_pos.items() if k >= w - 1}
            self._window_pos[w] = pos
        return pos
