"""Which row positions a rank reads in which order, per epoch.

Modes: ``None`` (sequential), ``"global"`` (a Feistel bijection per epoch), ``"chunks"``
(a seeded permutation of storage chunks per epoch, then a shuffle inside windows of
``window_chunks`` consecutive chunks of that order), ``"blocks"`` (a Feistel bijection on
blocks of ``block_size`` contiguous rows, then a shuffle inside windows of ``window_blocks``
blocks: see :mod:`arrowmix._stream.sources.blocks`). The epoch's order is one sequence
of ``num_rows`` positions; rank ``r`` of ``N`` reads its elements ``r, r + N, ...``, so
the ranks of an epoch are disjoint, their union is every row, and a rank only ever
asks storage for its own rows.

``shard="chunks"`` (with the ``"chunks"`` or ``None`` modes) deals chunks instead of rows:
each rank reads one contiguous span of the epoch's chunk order, so it downloads only its own
chunks (see :mod:`arrowmix._stream.sources.spans`: equal counts, the ``num_rows % N`` last rows of
the order unread). The epoch order is then the interleaving of the spans, laid out for the
instances that began the epoch, so the strided and elastic dealings apply unchanged. With
one instance both shardings give the same order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from arrowmix._storage.distinct import distinct
from arrowmix._stream.dealing import Dealing, Generation
from arrowmix._stream.rng import derive_rng
from arrowmix._stream.sources.blocks import BlockOrder, Prefetch
from arrowmix._stream.sources.permutation import FeistelPermutation
from arrowmix._stream.sources.spans import ChunkSpans

__all__ = ["MODES", "SHARDS", "PositionOrder"]

MODES = ("global", "chunks", "blocks", None)
SHARDS = ("rows", "chunks")
#: Ranges of the global order kept for a read-ahead's repeated asks, and their largest size.
_RECENT, _RECENT_ROWS = 3, 1 << 16


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
        shard: str = "rows",
        block_shape: tuple[int, int] = (1024, 256),
        prefetch: Prefetch | None = None,
    ) -> None:
        if shard not in SHARDS:
            raise ValueError(f"`shard` must be one of {SHARDS!r}, got {shard!r}.")
        if shard == "chunks" and mode in ("global", "blocks"):
            raise ValueError(
                f"shard='chunks' deals whole chunks to the ranks, but shuffle={mode!r} reads "
                "rows of every chunk in every epoch; use shuffle='chunks' (or None) with it, "
                "or shard='rows'."
            )
        self.num_rows = int(num_rows)
        self.offsets = np.asarray(chunk_offsets, dtype=np.int64)
        self.mode = mode
        self.seed = seed
        self.num_instances = num_instances
        self.rank = instance_rank
        self.window_chunks = window_chunks
        self.shard = shard
        self.block_shape = block_shape
        self.prefetch = prefetch
        self.generations = generations or []
        self._spans: ChunkSpans | None = None
        if shard == "chunks":
            self._spans = ChunkSpans(self.offsets, seed, mode is not None, window_chunks)
            # Rows of every rank per epoch: floor(n / N); the rest of the order is unread.
            self.count = self.num_rows // num_instances
            units: int | Callable[[int], int] = self._epoch_units
        else:
            # Rows of this rank per epoch: ceil((n - r) / N).
            self.count = max(0, -(-(self.num_rows - instance_rank) // num_instances))
            units = self.num_rows
        self.dealing = Dealing(units, self.generations, num_instances, instance_rank)
        self._cache_key: tuple[int, ...] | None = None
        self._feistel: FeistelPermutation | None = None
        self._blocks: BlockOrder | None = None
        self._windows: tuple[np.ndarray, np.ndarray] | None = None
        self._window_pos: dict[int, np.ndarray] = {}
        # ranges of the "global" order computed lately: (epoch, start, positions)
        self._recent: list[tuple[int, int, np.ndarray]] = []

    def __getstate__(self) -> dict[str, object]:
        # the recent ranges are a cache (up to a few MB): a pickled order recomputes them
        return {**self.__dict__, "_recent": []}

    @property
    def dropped(self) -> int:
        """Rows of each epoch that no rank reads (``shard="chunks"``: ``num_rows % N``)."""
        return self.num_rows - self.count * self.num_instances if self._spans else 0

    def layout(self, epoch: int) -> int:
        """Instances whose spans define ``epoch``'s order: those that began it."""
        for g in self.generations:
            if epoch <= g.last_epoch:
                return g.n
        return self.num_instances

    def _epoch_units(self, epoch: int) -> int:
        n = self.layout(epoch)
        return n * (self.num_rows // n)

    def count_for(self, epoch: int) -> int:
        """Rows of this rank in ``epoch`` (fewer in an epoch resumed on a resized cluster)."""
        return self.count if self.dealing.plain else self.dealing.count(epoch)

    def positions(self, epoch: int, start: int, stop: int) -> np.ndarray:
        """Positions of the rank-local indices ``[start, stop)`` of ``epoch``."""
        if self.dealing.plain:
            g = np.arange(start, stop, dtype=np.int64) * self.num_instances + self.rank
        else:
            g = self.dealing.units(epoch, start, stop)
        if self._spans is not None and (n := self.layout(epoch)) > 1:
            return self._span_positions(epoch, n, g)
        if self.mode is None:
            return g
        if self.mode == "global":
            if self._cache_key != (epoch,):
                self._cache_key = (epoch,)
                self._feistel = FeistelPermutation(self.num_rows, [self.seed, epoch])
            assert self._feistel is not None
            return self._global_positions(epoch, start, stop, g)
        if self.mode == "blocks":
            return self.block_order(epoch)(g)
        return self._chunk_positions(epoch, g)

    def _global_positions(self, epoch: int, start: int, stop: int, g: np.ndarray) -> np.ndarray:
        """The Feistel images of ``g`` (indices ``[start, stop)``), computed once per index.

        A stream's read-ahead asks for the positions ahead of the rows it reads (their
        pages), then the stream asks for the same positions again: the last ranges
        computed are kept (at most ``_RECENT`` of up to ``_RECENT_ROWS`` each), and a range
        they cover, or extend, is sliced from them. Copies: callers own what they get.
        """
        assert self._feistel is not None
        if not self.dealing.plain or stop - start > _RECENT_ROWS:
            return self._feistel(g)
        for e, s, arr in self._recent:
            if e == epoch and s <= start and stop <= s + len(arr):
                hit: np.ndarray = arr[start - s : stop - s].copy()
                return hit
        head = None
        for e, s, arr in self._recent:
            if e == epoch and s <= start < s + len(arr):  # a prefix is known: compute the rest
                head = arr[start - s :]
                break
        if head is None:
            out: np.ndarray = self._feistel(g)
        else:
            out = np.concatenate([head, self._feistel(g[len(head) :])])
        self._recent = [*self._recent[-(_RECENT - 1) :], (epoch, start, out)]
        copied: np.ndarray = out.copy()
        return copied

    def block_order(self, epoch: int) -> BlockOrder:
        """The ``"blocks"`` order of ``epoch`` (kept for the epoch being read)."""
        if self._blocks is None or self._blocks.epoch != epoch:
            size, width = self.block_shape
            self._blocks = BlockOrder(
                self.num_rows,
                block_size=size,
                window_blocks=width,
                seed=self.seed,
                epoch=epoch,
                prefetch=self.prefetch,
            )
        return self._blocks

    def _span_positions(self, epoch: int, n: int, g: np.ndarray) -> np.ndarray:
        """Unit ``i * n + k`` of the interleaved order is row ``i`` of span ``k``."""
        assert self._spans is not None
        k, i = g % n, g // n
        if len(g) and bool((k == k[0]).all()):
            return self._spans.local(epoch, n, int(k[0]), i)
        out = np.empty_like(g)
        for kk in distinct(k):
            sel = k == kk
            out[sel] = self._spans.local(epoch, n, int(kk), i[sel])
        return out

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
        for w in distinct(win):
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
