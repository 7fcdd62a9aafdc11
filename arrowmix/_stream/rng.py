"""Seeds and random generators derived from counters.

No stream stores random-generator state: every random choice comes from
``np.random.default_rng([seed, *counters])`` (epoch, window number, step), so a
state made of integers is enough to replay it. ``seed=None`` draws a seed from OS
entropy once; that seed travels in the state so a fresh pipeline built with
``seed=None`` resumes exactly.
"""

from __future__ import annotations

import secrets

import numpy as np

from arrowmix.exceptions import StateError

__all__ = ["SeedHolder", "derive_rng"]

_MAX_SEED = 2**63 - 1


def derive_rng(seed: int, *counters: int) -> np.random.Generator:
    """A generator that depends only on ``seed`` and the counters."""
    return np.random.default_rng([seed, *counters])


class SeedHolder:
    """A validated seed that remembers whether the user chose it.

    Example:
        >>> SeedHolder(7).value, SeedHolder(7).explicit
        (7, True)
        >>> SeedHolder(None).explicit
        False
    """

    __slots__ = ("explicit", "value")

    def __init__(self, seed: int | None) -> None:
        if seed is None:
            self.value = secrets.randbelow(_MAX_SEED)
            self.explicit = False
            return
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"`seed` must be an int or None, got {seed!r}.")
        if not 0 <= int(seed) <= _MAX_SEED:
            raise ValueError(f"`seed` must be in [0, 2**63 - 1], got {seed!r}.")
        self.value = int(seed)
        self.explicit = True

    def describe(self) -> int | None:
        """The seed for the pipeline fingerprint (``None`` when drawn at random)."""
        return self.value if self.explicit else None

    def load(self, owner: object, seed: object) -> None:
        """Adopt the seed of a checkpoint, or raise when an explicit seed differs."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise StateError(f"{type(owner).__name__}: bad seed in state: {seed!r}.")
        if self.explicit and seed != self.value:
            raise StateError(
                f"{type(owner).__name__}: checkpoint seed {seed} differs from this "
                f"pipeline's seed {self.value}."
            )
        self.value = seed
