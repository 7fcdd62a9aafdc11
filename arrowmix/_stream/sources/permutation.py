"""A seeded bijection on ``[0, n)``: a small Feistel network with cycle walking.

It maps a position to a row in O(1) time and memory, so a global shuffle of any size
needs no permutation array and its checkpoint is just a position. The network permutes
``[0, 4**h)`` (the smallest power of four not below ``n``); values that land outside
``[0, n)`` are encrypted again until they fall inside (cycle walking), which keeps the
map a bijection on ``[0, n)`` and costs fewer than four rounds trips on average.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FeistelPermutation"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix_into(z: np.ndarray, tmp: np.ndarray) -> None:
    """The splitmix64 finaliser of ``z``, in place: a cheap, well-mixing 64-bit hash.

    ``z = (z ^ z >> 30) * M1; z = (z ^ z >> 27) * M2; z ^= z >> 31`` (wrapping), written
    into ``z`` with ``tmp`` (same shape) as scratch: no temporary arrays.
    """
    np.right_shift(z, _S30, out=tmp)
    z ^= tmp
    z *= _M1
    np.right_shift(z, _S27, out=tmp)
    z ^= tmp
    z *= _M2
    np.right_shift(z, _S31, out=tmp)
    z ^= tmp


class FeistelPermutation:
    """Seeded permutation of ``range(n)`` evaluated on arrays of indices.

    Example:
        >>> p = FeistelPermutation(10, seed=3)
        >>> sorted(p(np.arange(10)).tolist()) == list(range(10))
        True
    """

    ROUNDS = 4

    def __init__(self, n: int, seed: int | list[int]) -> None:
        self.n = int(n)
        half = max(1, ((max(self.n - 1, 1)).bit_length() + 1) // 2)
        self._half = np.uint64(half)
        self._mask = np.uint64((1 << half) - 1)
        rng = np.random.default_rng(seed)
        self._keys = rng.integers(0, 2**63, size=self.ROUNDS, dtype=np.uint64)

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        # each round: left, right = right, left ^ (mix(right ^ key) & mask), in place
        left: np.ndarray = x >> self._half
        right: np.ndarray = x & self._mask
        f, tmp = np.empty_like(x), np.empty_like(x)
        for key in self._keys:
            np.bitwise_xor(right, key, out=f)
            _mix_into(f, tmp)
            f &= self._mask
            f ^= left
            left, right, f = right, f, left
        left <<= self._half
        left |= right
        return left

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        """The images of ``idx`` (int64 array with values in ``[0, n)``)."""
        x = self._encrypt(np.asarray(idx, dtype=np.uint64))
        n = np.uint64(self.n)
        out_of_range = np.flatnonzero(x >= n)
        while out_of_range.size:
            x[out_of_range] = self._encrypt(x[out_of_range])
            out_of_range = out_of_range[x[out_of_range] >= n]
        return x.astype(np.int64)
