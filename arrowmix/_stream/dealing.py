"""Which units of an epoch's global order an instance reads, across cluster resizes.

Normally instance ``r`` of ``n`` reads the units ``r, r + n, ...`` of the epoch's global
order (rows in the order of :mod:`arrowmix._stream.sources.order`). After an elastic restore the
order that remains of an epoch is the *remainder*: the units that no old instance had
read. A :class:`Generation` records one resize: the old instance count ``n`` and, per old
instance, its frontier ``(epoch, index)`` (rows of its share it had read, in its own
dealing). The remainder of epoch ``e`` in the parent unit space is

* a ragged head: the units ``k + n * i`` with ``s_k <= i < max(s)``, in ascending order,
  where ``s_k`` is where old instance ``k`` stopped in epoch ``e`` (0 in later epochs,
  its whole share in earlier ones), then
* a dense tail: every parent unit from ``n * max(s)`` on.

Generations chain (a resize of a resized run): each maps its remainder indices to its
parent's units, down to the global order. The head holds at most ``n * (max(s) -
min(s))`` units, so memory follows the spread of the old instances, not the epoch size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._stream.topology import check_sharding
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from arrowmix._stream.rng import SeedHolder

__all__ = ["DealtSource", "Dealing", "Generation", "ShareReader"]


class Generation:
    """One resize: ``n`` old instances and their frontiers ``(epoch, index)``."""

    def __init__(self, frontiers: Sequence[Sequence[int]]) -> None:
        self.frontiers = [(int(e), int(i)) for e, i in frontiers]
        if not self.frontiers or any(e < 0 or i < 0 for e, i in self.frontiers):
            raise StateError(f"bad elastic frontiers {frontiers!r}.")
        self.n = len(self.frontiers)
        self.last_epoch = max(e for e, _ in self.frontiers)

    def to_json(self) -> list[list[int]]:
        return [[e, i] for e, i in self.frontiers]

    def remainder(self, epoch: int, parent_size: int) -> tuple[np.ndarray, int, int]:
        """``(head, tail_start, size)`` of the remainder of ``epoch`` in parent units."""
        n = self.n
        counts = np.array([len(range(k, parent_size, n)) for k in range(n)], dtype=np.int64)
        starts = np.empty(n, dtype=np.int64)
        for k, (e, i) in enumerate(self.frontiers):
            starts[k] = counts[k] if epoch < e else (min(i, counts[k]) if epoch == e else 0)
        s_max = int(starts.max())
        s_min = int(starts.min())
        ii = np.arange(s_min, s_max, dtype=np.int64)
        kk = np.arange(n, dtype=np.int64)
        units = kk[None, :] + n * ii[:, None]
        keep = (ii[:, None] >= starts[None, :]) & (units < parent_size)
        head = units[keep]  # row-major: ascending units
        tail_start = min(n * s_max, parent_size)
        return head, tail_start, len(head) + parent_size - tail_start


class Dealing:
    """Units of instance ``rank`` of ``num_instances`` per epoch, through resizes.

    Example:
        >>> d = Dealing(10, [], 3, 1)
        >>> d.count(0), d.units(0, 0, 3).tolist()
        (3, [1, 4, 7])
        >>> # two old instances had read 2 and 4 of their 5 units of epoch 0
        >>> d = Dealing(10, [Generation([(0, 2), (0, 4)])], 1, 0)
        >>> d.units(0, 0, d.count(0)).tolist()
        [4, 6, 8, 9]
    """

    def __init__(
        self,
        num_units: int | Callable[[int], int],
        generations: Sequence[Generation],
        num_instances: int,
        rank: int,
    ) -> None:
        # Units of an epoch's global order: a number, or a function of the epoch (the
        # chunk-aligned order drops a remainder that depends on the epoch's instances).
        self._units = num_units if callable(num_units) else int(num_units)
        self.generations = list(generations)
        self.num_instances = num_instances
        self.rank = rank
        self.last_epoch = max((g.last_epoch for g in self.generations), default=-1)
        self._cache: dict[int, list[tuple[np.ndarray, int, int]]] = {}

    def _units_of(self, epoch: int) -> int:
        return self._units if isinstance(self._units, int) else int(self._units(epoch))

    @property
    def plain(self) -> bool:
        """True when no resize is recorded (the plain strided dealing)."""
        return not self.generations

    def to_json(self) -> list[Any]:
        return [g.to_json() for g in self.generations]

    def _levels(self, epoch: int) -> list[tuple[np.ndarray, int, int]] | None:
        if epoch > self.last_epoch:
            return None  # every resize is in the past: the whole epoch remains
        levels = self._cache.get(epoch)
        if levels is None:
            levels, size = [], self._units_of(epoch)
            for g in self.generations:
                head, tail, size = g.remainder(epoch, size)
                levels.append((head, tail, size))
            self._cache = {epoch: levels}
        return levels

    def epoch_size(self, epoch: int) -> int:
        """Units of ``epoch`` left to deal among the current instances."""
        levels = self._levels(epoch)
        return self._units_of(epoch) if levels is None else levels[-1][2]

    def count(self, epoch: int) -> int:
        """Units of this instance in ``epoch``."""
        return len(range(self.rank, self.epoch_size(epoch), self.num_instances))

    def units(self, epoch: int, start: int, stop: int) -> np.ndarray:
        """Global-order units of this instance's local indices ``[start, stop)``."""
        u = np.arange(start, stop, dtype=np.int64) * self.num_instances + self.rank
        levels = self._levels(epoch)
        if levels is None:
            return u
        for head, tail, _ in reversed(levels):
            nh = len(head)
            in_head = u < nh
            u = np.where(in_head, head[np.minimum(u, max(nh - 1, 0))] if nh else 0, u - nh + tail)
        return u


class ShareReader:
    """Mixin of the stages that read one share of an input dealt among instances.

    Sources and ``budget_bucket`` share one ``reshard`` (DataLoader workers and
    distributed ranks, elastic resume): validate, apply, restart. A subclass implements
    ``apply_share`` (store the share, rebuild what depends on it).
    """

    def apply_share(self, num_instances: int, instance_rank: int) -> None:
        """Store the new share and rebuild what depends on it (subclass hook)."""
        raise NotImplementedError

    restart: Callable[[], None]  # provided by Stage

    def reshard(self, num_instances: int, instance_rank: int) -> None:
        """Read another share (DataLoader workers, elastic resume); restarts the stream."""
        check_sharding(num_instances, instance_rank)
        self.apply_share(num_instances, instance_rank)
        self.restart()


class DealtSource(ShareReader):
    """Mixin of the sources whose order elastic resume re-deals (rows, chunks).

    ``deal`` records the past resizes and the drain limit, then calls ``apply_deal``
    (rebuild the order) and restarts.
    """

    _seed: SeedHolder
    _generations: list[Generation]
    _limit: tuple[int, int] | None

    def apply_deal(self) -> None:
        """Rebuild the order after ``_generations`` or ``_limit`` changed (subclass hook)."""
        raise NotImplementedError

    def dealt_generations(self) -> list[list[list[int]]]:
        """The resizes this source deals the remainder of (JSON), as ``deal`` takes them."""
        return [g.to_json() for g in self._generations]

    def deal(
        self,
        generations: list[Generation],
        limit: tuple[int, int] | None,
        seed: int | None = None,
    ) -> None:
        """Deal the remainder of resized epochs; stop at ``limit`` (drains). Restarts.

        ``seed``: the order's seed of the old instances (``None`` keeps this one's).
        """
        if seed is not None:
            self._seed.value = int(seed)
        self._generations = list(generations)
        self._limit = limit
        self.apply_deal()
        self.restart()
