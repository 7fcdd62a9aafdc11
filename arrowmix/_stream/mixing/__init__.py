"""Mixing: several inputs in, one stream out.

Mixing: several inputs in, one stream out (``mix``, ``zip``), the schedules that choose
the next input, and the row source of a mix of index streams (``mixed_rows``).
"""

from arrowmix._stream.mixing.mix import WeightedMixIterator, ZipIterator

__all__ = ["WeightedMixIterator", "ZipIterator"]
