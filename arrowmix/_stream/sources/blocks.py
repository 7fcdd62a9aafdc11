"""The ``"blocks"`` order: a permutation of small contiguous blocks, shuffled in windows.

The rows are cut into blocks of ``block_size`` consecutive positions (the ``n % block_size``
rows past the last whole block form a short *tail* block). Each epoch, a seeded Feistel
bijection on the whole blocks' ids orders them (O(1) memory, as ``"global"`` orders rows);
consecutive groups of ``window_blocks`` blocks of that order form windows, and the rows of a
window are shuffled together. The tail block joins one window chosen by the epoch's seed, so
no row is always last. Every window is a handful of contiguous row ranges, which a reader
fetches at near-sequential speed, while a batch drawn from it mixes rows of
``window_blocks`` places of the corpus (a window is the counterpart of Mosaic Streaming's
``shuffle_block_size`` and of Grain's ``window_size``; a block plays the part of their shard).

Window ``w`` holds the epoch-order indices ``[start(w), start(w + 1))``, with
``start(w) = w * window_blocks * block_size``, plus the tail's rows for the windows after
the one that holds it: finding the window of an index, and its rows, costs O(1) and
O(window) whatever the corpus size.

Reads: when a window's rows are first needed, the order tells the row source (its optional
``prefetch``) the row ranges of that window and of the next one, so a source over memory-mapped
files asks the kernel for exactly those ranges (a few hundred KB each) ahead of the gather,
many reads in flight, instead of one synchronous page read per fault in a random place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from arrowmix._storage.distinct import distinct
from arrowmix._stream.rng import derive_rng
from arrowmix._stream.sources.permutation import FeistelPermutation

__all__ = ["DEFAULT_BLOCK_SIZE", "DEFAULT_WINDOW_BLOCKS", "BlockOrder", "BlockShape", "Prefetch"]

#: A row source's optional ``prefetch(starts, stops)``: rows ``[starts[i], stops[i])`` are
#: read soon (a hint; see :class:`~arrowmix._stream.row_source.RowSourceHooks`).
Prefetch = Callable[[np.ndarray, np.ndarray], None]

#: Rows per block: a few hundred KB of a tokenized corpus, one read at near-sequential speed.
DEFAULT_BLOCK_SIZE = 1024
#: Blocks per window: 262,144 rows shuffled together (Mosaic's default shuffle_block_size).
DEFAULT_WINDOW_BLOCKS = 256

# Counters that keep the block order's random streams apart from the other modes'.
_BLOCKS_STREAM = 0x426C6B73  # "Blks"


@dataclass(frozen=True)
class BlockShape:
    """The sizes of ``shuffle="blocks"``, validated: rows per block, blocks per window.

    ``None`` takes the default (:data:`DEFAULT_BLOCK_SIZE`, :data:`DEFAULT_WINDOW_BLOCKS`).

    Example:
        >>> BlockShape(window_blocks=8).shape()
        (1024, 8)
    """

    block_size: int | None = None
    window_blocks: int | None = None

    def __post_init__(self) -> None:
        for name in ("block_size", "window_blocks"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"`{name}` must be a positive int, got {v!r}.")

    def shape(self) -> tuple[int, int]:
        """``(block_size, window_blocks)`` with the defaults filled in."""
        return (
            DEFAULT_BLOCK_SIZE if self.block_size is None else self.block_size,
            DEFAULT_WINDOW_BLOCKS if self.window_blocks is None else self.window_blocks,
        )

    @classmethod
    def for_mode(
        cls, shuffle: str | None, block_size: int | None, window_blocks: int | None
    ) -> BlockShape | None:
        """The shape of a ``to_stream`` call; sizes given to another mode are an error."""
        if shuffle != "blocks":
            if block_size is not None or window_blocks is not None:
                raise ValueError(
                    "`block_size` and `window_blocks` set the blocks of shuffle='blocks', "
                    f"got them with shuffle={shuffle!r}; pass shuffle='blocks' or drop them."
                )
            return None
        return cls(block_size, window_blocks)


class BlockOrder:
    """The ``"blocks"`` order of one epoch: epoch-order indices -> row positions.

    Example:
        >>> o = BlockOrder(10, block_size=2, window_blocks=2, seed=0, epoch=0)
        >>> sorted(o(np.arange(10)).tolist()) == list(range(10))
        True
        >>> starts, stops = o.window_ranges(0)  # the first window: two blocks of 2 rows
        >>> (stops - starts).tolist()
        [2, 2]
    """

    def __init__(
        self,
        num_rows: int,
        *,
        block_size: int,
        window_blocks: int,
        seed: int,
        epoch: int,
        prefetch: Prefetch | None = None,
    ) -> None:
        self.num_rows = int(num_rows)
        self.block_size = int(block_size)
        self.window_blocks = int(window_blocks)
        self.seed, self.epoch = seed, epoch
        self.full_blocks, self.tail = divmod(self.num_rows, self.block_size)
        self.window_rows = self.window_blocks * self.block_size
        self.num_windows = max(1, -(-self.full_blocks // self.window_blocks))
        rng = derive_rng(seed, _BLOCKS_STREAM, epoch)
        self.tail_window = int(rng.integers(self.num_windows))
        self._blocks = FeistelPermutation(max(self.full_blocks, 1), [seed, _BLOCKS_STREAM, epoch])
        self._cache: dict[int, np.ndarray] = {}
        self._prefetch = prefetch
        self._announced = -1  # windows up to this one were handed to ``prefetch``

    def __getstate__(self) -> dict[str, object]:
        # A pickled stream stays small: the windows are recomputed (and announced) on use.
        return {**self.__dict__, "_cache": {}, "_announced": -1}

    def window_of(self, g: np.ndarray) -> np.ndarray:
        """The window holding each epoch-order index of ``g``."""
        k, wr = self.tail_window, self.window_rows
        before_tail_end = g < (k + 1) * wr + self.tail
        return np.where(before_tail_end, np.minimum(g // wr, k), (g - self.tail) // wr)

    def start(self, w: int) -> int:
        """The epoch-order index of window ``w``'s first row."""
        return w * self.window_rows + (self.tail if w > self.tail_window else 0)

    def window_ranges(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, stops)``: the row ranges of window ``w``'s blocks, in block order."""
        first = w * self.window_blocks
        slots = np.arange(first, min(first + self.window_blocks, self.full_blocks), dtype=np.int64)
        starts = self._blocks(slots) * self.block_size if len(slots) else slots
        stops = starts + self.block_size
        if w == self.tail_window and self.tail:
            tail_start = self.full_blocks * self.block_size
            starts = np.append(starts, np.int64(tail_start))
            stops = np.append(stops, np.int64(self.num_rows))
        return starts, stops

    def window(self, w: int) -> np.ndarray:
        """The row positions of window ``w`` in the epoch's order (cached: the last two)."""
        pos = self._cache.get(w)
        if pos is None:
            self._announce(w)
            starts, stops = self.window_ranges(w)
            lengths = stops - starts
            firsts = np.cumsum(lengths) - lengths  # where each range begins in ``rows``
            rows = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(
                starts - firsts, lengths
            )
            pos = rows[derive_rng(self.seed, _BLOCKS_STREAM, self.epoch, w).permutation(len(rows))]
            # A rank moves forward through the epoch: keep only the windows it may revisit.
            self._cache = {k: v for k, v in self._cache.items() if k >= w - 1}
            self._cache[w] = pos
        return pos

    def _announce(self, w: int) -> None:
        """Hand the row ranges of windows ``w`` and ``w + 1`` to ``prefetch`` (once each)."""
        if self._prefetch is None:
            return
        stop = min(w + 2, self.num_windows)
        for v in range(max(w, self._announced + 1), stop):
            self._prefetch(*self.window_ranges(v))
        self._announced = max(self._announced, stop - 1)

    def __call__(self, g: np.ndarray) -> np.ndarray:
        """The row positions of the epoch-order indices ``g``."""
        g = np.asarray(g, dtype=np.int64)
        win = self.window_of(g)
        if len(g) and bool((win == win[0]).all()):
            w = int(win[0])
            out: np.ndarray = self.window(w)[g - self.start(w)]
            return out
        out = np.empty_like(g)
        for w in distinct(win).tolist():
            sel = win == w
            out[sel] = self.window(w)[g[sel] - self.start(w)]
        return out
