"""numpy's permutation of ``n`` rows replayed out of core, bit for bit, in bounded memory.

``np.random.default_rng(seed).permutation(n)`` is ``arange(n)`` shuffled by one
Fisher-Yates pass: for ``i`` from ``n - 1`` down to 1, ``j = random_interval(i)`` and
``a[i], a[j] = a[j], a[i]``. For ``i < 2**32``, ``random_interval(i)`` masks 32-bit words of
the generator with the smallest ``2**b - 1 >= i`` until one is ``<= i``; the 32-bit words
are the low then the high half of each 64-bit draw of the PCG64 bit generator (which keeps a
pending high half in its ``has_uint32``/``uinteger`` state). Run in place, the pass touches a
random row of the whole array at every step: 8 bytes a row resident, or, over a file
mapping, every page of it.

Here the same pass runs in three parts:

1. :class:`Draws` computes the ``j`` of the top steps from the raw 64-bit draws, a block at a
   time with numpy: the steps of one mask are solved together (a candidate is accepted when
   it is ``<= i`` where ``i`` drops by one per earlier acceptance: a fixed point found by
   iterating an exclusive cumulative sum, exact and fast as only candidates near the bound
   change), and it counts the 32-bit words it consumed.
2. :func:`replay` applies those steps a batch at a time to the array, kept in an unlinked
   scratch file (32-bit values stored as their offset from their own position, so the file
   starts as zeros). In a batch, the final value of position ``i_k`` is what ``j_k`` held
   before step ``k`` (the value written there by the batch's last earlier step with the same
   ``j``, or the file's) and ``j_k`` receives what ``i_k`` held (written by an earlier step
   whose ``j`` was ``i_k``, a short chain resolved by pointer jumping). Sorting the batch's
   ``(j, k)`` pairs finds both; the file is read and written in sorted order a window at a
   time, each window's pages handed back, and the final values go to the output, in order.
3. Once the rows left, ``[0, m)``, fit ``prefix_rows``, a bit generator is set to the state
   the top steps left (the draws consumed, a pending half if their count is odd) and numpy's
   own ``shuffle`` runs the remaining steps on those rows in memory: it draws exactly the
   ``j`` of steps ``m - 1`` down to 1.

Only ``n <= 2**32`` (32-bit draws) is replayed; larger ``n`` keeps numpy's pass.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from arrowmix._storage import windows

__all__ = ["BATCH_ROWS", "MIN_ROWS", "PREFIX_ROWS", "Draws", "replay", "replayable"]

#: Rows below which numpy's pass runs over the scratch mapping itself (8 bytes a row).
MIN_ROWS = 8 * 2**20
#: Rows left to numpy's own in-memory shuffle at the end (4 bytes a row: 64 MiB).
PREFIX_ROWS = 16 * 2**20
#: Steps applied per batch (about 40 bytes a step while it is applied: 60 MiB).
BATCH_ROWS = 3 * 2**19
#: Rows of the scratch file read or written per window (their pages handed back after).
_WINDOW_ROWS = windows.WINDOW // 4
#: Candidates solved together by :func:`_accepted`.
_SOLVE = 1 << 16
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def replayable(n: int) -> bool:
    """Whether :func:`replay` is used: more than :data:`MIN_ROWS` rows, at most ``2**32``."""
    return MIN_ROWS < n <= 2**32


class Draws:
    """The ``j`` of numpy's Fisher-Yates steps, in order, from a fresh ``default_rng(seed)``.

    ``take(i, count)`` returns the ``j`` of steps ``i, i - 1, ..., i - count + 1`` (each
    ``<= 2**32 - 1`` and ``>= 1``); :meth:`generator` returns a generator in the state those
    draws left, whose ``shuffle`` of the remaining rows draws the next steps.
    """

    def __init__(self, seed: Any, chunk: int = 1 << 20) -> None:
        self._start: dict[str, Any] = dict(np.random.default_rng(seed).bit_generator.state)
        self._source: Any = np.random.PCG64()
        self._source.state = cast(Any, self._start)
        self._chunk = chunk
        self._buf = np.empty(0, dtype=np.uint32)  # the 32-bit words not yet consumed
        self.consumed = 0  # 32-bit words consumed so far

    def _words(self, count: int) -> np.ndarray:
        """The next ``count`` (or more) unconsumed 32-bit words, without consuming them."""
        if len(self._buf) < count:
            raws = max(self._chunk, (count - len(self._buf) + 1) // 2)
            fresh = self._source.random_raw(raws).view(np.uint32)  # low half first
            self._buf = np.concatenate([self._buf, fresh])
        return self._buf

    def _consume(self, count: int) -> None:
        self._buf = self._buf[count:]
        self.consumed += count

    def take(self, i: int, count: int) -> np.ndarray:
        """The ``j`` of steps ``i`` down to ``i - count + 1`` (uint32)."""
        if count and not (i - count + 1 >= 1 and i < 2**32):
            raise ValueError(f"steps {i} down to {i - count + 1} are not all in [1, 2**32)")
        out = np.empty(count, dtype=np.uint32)
        filled = 0
        while filled < count:
            mask = (1 << i.bit_length()) - 1
            need = min(count - filled, i - (mask + 1) // 2 + 1)  # steps with this mask
            low = i - need + 1
            # candidates for `need` acceptances at the lowest rate, and some margin
            size = min(int(need * (mask + 1) / (low + 1) * 1.01) + 256, 4 * self._chunk)
            v = self._words(size)[:size] & np.uint32(mask)
            accepted = np.flatnonzero(_accepted(v, i))
            got = min(len(accepted), need)
            out[filled : filled + got] = v[accepted[:got]]
            self._consume(int(accepted[got - 1]) + 1 if got == need else size)
            filled += got
            i -= got
        return out

    def generator(self) -> np.random.Generator:
        """A generator in the state the consumed draws left (as numpy's own pass would)."""
        bit: Any = np.random.PCG64()
        bit.state = self._start
        bit.advance((self.consumed + 1) // 2)
        state: dict[str, Any] = dict(bit.state)
        odd = self.consumed % 2
        state["has_uint32"] = odd
        state["uinteger"] = int(self._words(1)[0]) if odd else 0  # the pending high half
        bit.state = state
        return np.random.Generator(bit)


def _accepted(v: np.ndarray, i: int) -> np.ndarray:
    """Which masked candidates ``v`` are accepted, the first one's bound being ``i``.

    Candidate ``t`` is accepted when ``v[t] <= i - (acceptances before t)``. The answer for
    ``t`` depends on those before it only, so iterating ``acc = v <= i - exclusive_cumsum(acc)``
    from a guess settles at least one more candidate per round (all before the first
    change, and that one): it stops at the exact answer. Solved a small block at a time
    (each starting from the exact count of the blocks before), it takes two rounds but
    rarely more for random draws.
    """
    acc = np.empty(len(v), dtype=bool)
    rate = (i + 1) / (2 ** max(int(i).bit_length(), 1))
    guess = np.arange(min(len(v), _SOLVE), dtype=np.float64) * rate
    bound = i  # the bound of the next unsettled candidate
    for lo in range(0, len(v), _SOLVE):
        block = v[lo : lo + _SOLVE]
        a = acc[lo : lo + len(block)]
        np.less_equal(block, bound - guess[: len(block)], out=a)
        start = 0  # candidates of the block settled (their acceptances: bound moved)
        while start < len(block):
            seg = a[start:]
            taken = np.cumsum(seg, dtype=np.int64)
            taken -= seg  # exclusive
            np.subtract(bound, taken, out=taken)
            new = block[start:] <= taken
            changed = np.flatnonzero(new != seg)
            if not len(changed):
                bound -= int(np.count_nonzero(seg))
                break
            first = int(changed[0])
            seg[:] = new
            bound -= int(np.count_nonzero(new[: first + 1]))
            start += first + 1
    return acc


def replay(
    n: int,
    seed: Any,
    out: np.ndarray,
    directory: str,
    *,
    prefix_rows: int | None = None,
    batch_rows: int | None = None,
) -> None:
    """Write ``np.random.default_rng(seed).permutation(n)`` into ``out`` (int64, ``n``).

    ``out`` is normally a scratch mapping (its pages are handed back as it is written);
    ``directory`` holds the unlinked scratch file of the array being shuffled. At most
    ``prefix_rows`` rows are shuffled in memory at the end (4 bytes each) and
    ``batch_rows`` steps applied at a time (:data:`PREFIX_ROWS`, :data:`BATCH_ROWS` when
    None).
    """
    prefix_rows = PREFIX_ROWS if prefix_rows is None else prefix_rows
    batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
    if not (1 <= n <= 2**32 and prefix_rows >= 1 and batch_rows >= 1):
        raise ValueError(f"cannot replay a permutation of {n} rows (at most 2**32)")
    draws = Draws(seed)
    if n <= prefix_rows:  # no step to replay: numpy's pass over 4 bytes a row
        prefix = np.arange(n, dtype=np.uint32)
    else:
        prefix = _top_steps(n, draws, out, directory, prefix_rows, batch_rows)
    draws.generator().shuffle(prefix)  # steps m - 1 down to 1, numpy's own pass
    _put(out, 0, prefix)


def _top_steps(
    n: int, draws: Draws, out: np.ndarray, directory: str, prefix_rows: int, batch_rows: int
) -> np.ndarray:
    """Apply the steps down to ``prefix_rows`` over a scratch file; the rows left (uint32)."""
    state = np.frombuffer(windows.scratch(directory, n * 4), dtype=np.uint32)
    top = n - 1
    while top >= prefix_rows:
        count = min(batch_rows, top - prefix_rows + 1)
        finals = _apply(state, top, draws.take(top, count))
        _put(out, top - count + 1, finals[::-1])
        del finals
        top -= count
    m = top + 1
    prefix = np.empty(m, dtype=np.uint32)
    for lo in range(0, m, _WINDOW_ROWS):
        part = state[lo : min(m, lo + _WINDOW_ROWS)]
        into = prefix[lo : lo + len(part)]
        for a in range(0, len(part), 1 << 20):
            b = min(len(part), a + (1 << 20))
            np.add(part[a:b], np.arange(lo + a, lo + b, dtype=np.uint32), out=into[a:b])
        windows.release_array(part)
    return prefix


def _put(out: np.ndarray, lo: int, values: np.ndarray) -> None:
    """``out[lo : lo + len(values)] = values``, handing back ``out``'s pages as written."""
    step = windows.WINDOW // 8
    for a in range(0, len(values), step):
        dest = out[lo + a : lo + min(len(values), a + step)]
        dest[:] = values[a : a + step]
        windows.release_array(dest)


def _apply(state: np.ndarray, top: int, j: np.ndarray) -> np.ndarray:
    """Apply steps ``top, top - 1, ...`` (their ``j``) to ``state``; their final values.

    ``state[p]`` holds ``value - p`` (mod 2**32) for every position not yet final. Returns
    the final values of positions ``top, top - 1, ...`` (uint32, one per step).
    """
    count = len(j)
    low = top - count + 1
    key = j.astype(np.uint64)
    key <<= _SHIFT
    key |= np.arange(count, dtype=np.uint64)
    key.sort()  # by position, then by step
    pos = (key >> _SHIFT).astype(np.uint32)  # positions written, sorted
    key &= _LOW
    step = key.view(np.int64)  # the step writing each
    head = np.ones(count, dtype=bool)  # the first write of its position in the batch
    np.not_equal(pos[1:], pos[:-1], out=head[1:])
    tail = np.ones(count, dtype=bool)  # the last write of its position
    tail[:-1] = head[1:]

    # What position i_k held at step k: the value the last earlier step wrote there, if any.
    # Writers of i_k all come before (or are) step k, so they end its group in `pos`.
    start = int(np.searchsorted(pos, low))
    ends = start + np.flatnonzero(tail[start:])  # one entry per final position written
    k_of = top - pos[ends].astype(np.int64)
    own = step[ends] == k_of  # a step whose j is its own i: the writer before it counts
    ok = ~own | ~head[ends]
    parent = np.full(count, -1, dtype=np.int64)
    parent[k_of[ok]] = step[ends[ok] - own[ok]]
    del ends, k_of, own, ok
    rows = state[low : top + 1]
    held = rows[::-1] + np.arange(top, low - 1, -1, dtype=np.int64).astype(np.uint32)
    windows.release_array(rows)
    chained = np.flatnonzero(parent >= 0)
    up = parent[chained]
    del parent
    while len(chained):  # each round settles one more link of every chain
        nxt = held[up]
        if np.array_equal(nxt, held[chained]):
            break
        held[chained] = nxt
    del chained, up

    # Positions below the batch's steps keep the last value written to them; the final
    # value of i_k is what j_k held before step k.
    tail[start:] = False
    final_sorted = _exchange(state, pos, tail, held, step)
    later = np.flatnonzero(~head)
    final_sorted[later] = held[step[later - 1]]
    finals = np.empty(count, dtype=np.uint32)
    finals[step] = final_sorted
    return finals


def _exchange(
    state: np.ndarray, pos: np.ndarray, keep: np.ndarray, held: np.ndarray, step: np.ndarray
) -> np.ndarray:
    """What ``state`` held at the sorted ``pos``; then ``held[step]`` written where ``keep``.

    One pass over the file in windows (values stored as offsets from their position).
    """
    got = np.empty(len(pos), dtype=np.uint32)
    if not len(pos):
        return got
    last = int(pos[-1])
    bounds = np.arange(0, last + _WINDOW_ROWS + 1, _WINDOW_ROWS, dtype=np.int64)
    cuts = np.searchsorted(pos, bounds)
    for w in range(len(bounds) - 1):
        a, b, lo = int(cuts[w]), int(cuts[w + 1]), int(bounds[w])
        if a == b:
            continue
        view = state[lo : lo + _WINDOW_ROWS]
        where, at = pos[a:b] - np.uint32(lo), pos[a:b]
        np.add(view[where], at, out=got[a:b])
        mask = keep[a:b]
        view[where[mask]] = held[step[a:b][mask]] - at[mask]
        windows.release_array(view)
    return got
