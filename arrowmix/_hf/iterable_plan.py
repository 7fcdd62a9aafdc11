"""The recipe of an :class:`~arrowmix.IterableDataset`: a small tree of nodes, HF's shard logic.

HF ``datasets`` describes an iterable dataset as a tree of "examples iterables" and decides
which rows each DataLoader worker and node reads by asking that tree to *shard its data
sources* (keep some of its shards) and, at each epoch, to *shuffle its data sources* (reorder
its shards). The nodes here answer the same two questions with HF's arithmetic, so that the
rows each worker, node and epoch reads, and their order without a shuffle buffer, are HF's:

- :class:`Source`: a Dataset cut into ``num_shards`` contiguous shards (``Dataset.shard``'s
  bounds); a worker reads the rows of its shards, shard after shard.
- :class:`Op`: a stage over one input (``map``, ``filter``, ``take``, ``skip``, column ops, a
  shuffle buffer, every ``step``-th row). ``take``/``skip`` fix the shard order (HF refuses to
  reorder shards under them) and split their count between workers as HF does.
- :class:`Interleave`: several recipes read in HF's interleaving order
  (:mod:`arrowmix._hf.interleave_stream`).

``shuffle_sources(rng, seed)`` takes HF's generator (``rng``, reordering shards) and the seed it
was made from (HF hands the same generator to a random interleave, which draws from it).

:func:`build` turns a recipe into a checkpointable stream (:mod:`arrowmix.stream`): the source
is ``Dataset.to_stream(shuffle=None, infinite=False)`` over the worker's rows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._stream.base import Stream

__all__ = [
    "Interleave",
    "Op",
    "Source",
    "SourcesOrderFixed",
    "build",
    "shard_bounds",
    "split_number",
    "worker_shards",
]


class SourcesOrderFixed(Exception):  # a signal between nodes, never raised to users
    """Raised by ``shuffle_sources`` under ``take``/``skip``: the shard order must not change."""


def shard_bounds(num_rows: int, num_shards: int) -> tuple[tuple[int, int], ...]:
    """``(start, stop)`` of each of ``num_shards`` contiguous shards (``Dataset.shard``'s)."""
    div, mod = divmod(num_rows, num_shards)
    out = []
    for i in range(num_shards):
        start = div * i + min(i, mod)
        out.append((start, start + div + (1 if i < mod else 0)))
    return tuple(out)


def worker_shards(total: int, num_shards: int, index: int, contiguous: bool) -> list[int]:
    """The shards of part ``index`` of ``num_shards`` among ``total`` (HF's split)."""
    if contiguous:
        div, mod = divmod(total, num_shards)
        start = div * index + min(index, mod)
        return list(range(start, start + div + (1 if index < mod else 0)))
    return list(range(index, total, num_shards))


def split_number(num: int, parts: int) -> list[int]:
    """``num`` split into ``parts`` counts, the first ones one larger (HF's split)."""
    quotient, remainder = divmod(num, parts)
    return [quotient + (1 if i < remainder else 0) for i in range(parts)]


@dataclass(frozen=True)
class Source:
    """A Dataset read shard after shard; ``bounds`` are the shards' row ranges, in order."""

    ds: Dataset
    bounds: tuple[tuple[int, int], ...]
    #: ``(num_instances, rank)`` of the rows' stream (an elastic resume deals them), or None.
    instances: tuple[int, int] | None = None
    #: Each shard's pieces, the row counts :meth:`reshard` cuts it into (HF's Parquet row
    #: groups); None when the shards cannot be cut.
    pieces: tuple[tuple[int, ...], ...] | None = None

    @property
    def num_shards(self) -> int:
        return len(self.bounds)

    @property
    def typed(self) -> bool:
        """Rows still come from Arrow tables (HF's ``iter_arrow``): formats use the types."""
        return True

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> Source:
        order = list(range(len(self.bounds)))
        copy.deepcopy(rng).shuffle(order)
        return self._keep(order)

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Source:
        return self._keep(worker_shards(len(self.bounds), num_shards, index, contiguous))

    def _keep(self, shards: list[int]) -> Source:
        """The shards ``shards``, in that order."""
        bounds = tuple(self.bounds[i] for i in shards)
        if self.pieces is None:
            return replace(self, bounds=bounds)
        return replace(self, bounds=bounds, pieces=tuple(self.pieces[i] for i in shards))

    def reshard(self) -> Source:
        """Each shard cut into its pieces, in order (HF's ``reshard_data_sources``).

        A shard of no piece (a Parquet file without row groups) is gone, as in HF; the rows
        and their order are unchanged, so a resharded stream resumes where the other was.
        """
        if self.pieces is None:
            return self
        bounds: list[tuple[int, int]] = []
        for (start, stop), counts in zip(self.bounds, self.pieces, strict=True):
            if sum(counts) != stop - start:
                return self  # pragma: no cover - the pieces are the files' own row groups
            for n in counts:
                bounds.append((start, start + n))
                start += n
        return replace(self, bounds=tuple(bounds), pieces=tuple((b - a,) for a, b in bounds))

    def shift_rngs(self, value: int) -> Source:
        return self

    def build(self) -> Stream[Any]:
        from arrowmix._stream.sources.iterable import from_iterable

        n = len(self.ds)
        if self.bounds == ((0, n),) or (len(self.bounds) > 1 and _in_order(self.bounds, n)):
            view = self.ds
        elif not self.bounds or all(a == b for a, b in self.bounds):
            return from_iterable(())
        elif len(self.bounds) == 1 or _contiguous(self.bounds):
            view = self.ds.select(range(self.bounds[0][0], self.bounds[-1][1]))
        else:
            view = self.ds.select(np.concatenate([np.arange(a, b) for a, b in self.bounds]))
        if self.instances is not None:
            n, rank = self.instances
            dealt: Stream[Any] = view.to_stream(
                shuffle=None, infinite=False, num_instances=n, instance_rank=rank
            )
            return dealt
        stream: Stream[Any] = view.to_stream(shuffle=None, infinite=False)
        return stream


def _contiguous(bounds: tuple[tuple[int, int], ...]) -> bool:
    return all(bounds[i][1] == bounds[i + 1][0] for i in range(len(bounds) - 1))


def _in_order(bounds: tuple[tuple[int, int], ...], n: int) -> bool:
    return bounds[0][0] == 0 and bounds[-1][1] == n and _contiguous(bounds)


#: Op kinds that keep HF's shard order fixed and split their count between workers.
_COUNTED = ("take", "skip")
#: Op kinds whose rows are still their source's Arrow rows in HF (the others are HF maps).
_KEEP_TYPES = ("take", "skip", "repeat", "step", "select", "shuffle", "cast")


@dataclass(frozen=True)
class Op:
    """One stage over ``parent``: ``make(stream, **params) -> stream`` when built."""

    parent: Any
    kind: str
    make: Callable[..., Stream[Any]]
    params: dict[str, Any] = field(default_factory=dict)
    #: ``take``/``skip``: split the count among the parts (HF's, unless the dataset was
    #: already split by node when ``take``/``skip`` was called: then each part counts all).
    split_count: bool = True

    @property
    def num_shards(self) -> int:
        n: int = self.parent.num_shards
        return n

    @property
    def typed(self) -> bool:
        return self.kind in _KEEP_TYPES and bool(self.parent.typed)

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> Op:
        if self.kind in _COUNTED:
            raise SourcesOrderFixed
        return replace(self, parent=self.parent.shuffle_sources(rng, seed))

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Op:
        params = self.params
        if self.kind in _COUNTED and self.split_count:  # among the parts that get shards
            parts = min(num_shards, self.num_shards)
            n = split_number(params["n"], parts)[index] if index < parts else 0
            params = {**params, "n": n}
        parent = self.parent.shard(num_shards, index, contiguous)
        return replace(self, parent=parent, params=params)

    def shift_rngs(self, value: int) -> Op:
        """Each epoch and DataLoader worker (``value``) shuffles with its own seed, as in HF."""
        parent = self.parent.shift_rngs(value)
        if self.kind != "shuffle" or not value:
            return replace(self, parent=parent)
        seed = int(np.random.default_rng(self.params["seed"]).integers(0, 1 << 63)) - value
        return replace(self, parent=parent, params={**self.params, "seed": seed % (1 << 63)})

    def reshard(self) -> Op:
        return replace(self, parent=self.parent.reshard())

    def build(self) -> Stream[Any]:
        return self.make(self.parent.build(), **self.params)


@dataclass(frozen=True)
class Interleave:
    """Recipes read in HF's interleaving order (round robin, or drawn by probabilities).

    ``seeds`` is HF's generator as a chain: ``default_rng(seeds[0])``, re-seeded once per
    ``shift_rngs(value)`` (HF shifts it per epoch and per DataLoader worker).
    """

    children: tuple[Any, ...]
    probabilities: tuple[float, ...] | None
    seeds: tuple[int, ...]
    stopping_strategy: str

    @property
    def num_shards(self) -> int:
        return min((c.num_shards for c in self.children), default=0)

    @property
    def typed(self) -> bool:
        return all(c.typed for c in self.children)

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> Interleave:
        """HF reorders the children's shards and takes the shuffle's generator (``seed``)."""
        kids = tuple(c.shuffle_sources(rng, seed) for c in self.children)
        return replace(self, children=kids, seeds=(seed,))

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Interleave:
        mine = self.num_shards
        if num_shards < mine:
            kids = tuple(c.shard(num_shards, index, contiguous) for c in self.children)
        elif index < mine:
            kids = tuple(c.shard(mine, index, contiguous) for c in self.children)
        else:
            kids = ()
        return replace(self, children=kids)

    def reshard(self) -> Interleave:
        return replace(self, children=tuple(c.reshard() for c in self.children))

    def shift_rngs(self, value: int) -> Interleave:
        kids = tuple(c.shift_rngs(value) for c in self.children)
        if self.probabilities is None:
            return replace(self, children=kids)
        return replace(self, children=kids, seeds=(*self.seeds, value))

    def build(self) -> Stream[Any]:
        from arrowmix._hf.interleave_stream import HFInterleave

        return HFInterleave(
            [c.build() for c in self.children],
            probabilities=self.probabilities,
            seeds=self.seeds,
            stopping_strategy=self.stopping_strategy,
        )


def build(node: Any) -> Stream[Any]:
    """The checkpointable stream of recipe ``node``."""
    stream: Stream[Any] = node.build()
    return stream
