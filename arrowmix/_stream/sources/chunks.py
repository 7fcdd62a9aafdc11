"""A stream over arbitrary chunk references and a reader function (Infinibatch form).

Each epoch, the chunk references are permuted (``shuffle=True``, seeded by the epoch);
rank ``r`` of ``N`` takes the chunks ``r, r + N, ...`` of that order, so it only reads
its own chunks. The items of a chunk are shuffled with a generator derived from
``(seed, epoch, chunk)``.

Checkpointing: the state is ``(epoch, chunk, item, seed)``; restoring reads the current
chunk again and skips ``item`` items, so the replay cost is at most one chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.base import State, Stream, fn_id
from arrowmix._stream.dealing import Dealing, DealtSource, Generation
from arrowmix._stream.rng import SeedHolder, derive_rng
from arrowmix._stream.topology import ElasticRole, check_sharding
from arrowmix.exceptions import StateError

__all__ = ["ChunkSource", "from_chunks"]

T = TypeVar("T")


class ChunkSource(Stream[T], DealtSource):
    """Items of chunks read by ``read_chunk_fn``, chunk-permuted per epoch.

    State:
        ``epoch``, ``chunk`` (index in this rank's chunk order), ``item`` (items of
        that chunk yielded), ``seed``. Replay cost: one chunk.
    """

    EPOCH_KEY = "epoch"
    CHUNK_KEY = "chunk"
    ITEM_KEY = "item"
    SEED_KEY = "seed"
    ELASTIC_ROLE = ElasticRole.SOURCE
    STATE_KEYS = (EPOCH_KEY, CHUNK_KEY, ITEM_KEY, SEED_KEY)
    TRANSIENT = ("_items",)

    def __init__(
        self,
        chunk_refs: Sequence[Any],
        read_chunk_fn: Callable[[Any], Iterable[T]],
        *,
        shuffle: bool = True,
        seed: int | None = None,
        infinite: bool = True,
        num_instances: int = 1,
        instance_rank: int = 0,
    ) -> None:
        super().__init__()
        check_sharding(num_instances, instance_rank)
        self.chunk_refs = list(chunk_refs)
        self.read_chunk_fn = read_chunk_fn
        self.shuffle_chunks = bool(shuffle)
        self._seed = SeedHolder(seed)
        self.infinite = infinite
        self.num_instances = num_instances
        self.instance_rank = instance_rank
        # Elastic restores (see arrowmix._stream.elastic): past resizes of the chunk
        # order, and the chunk before which a drain stops.
        self._generations: list[Generation] = []
        self._limit: tuple[int, int] | None = None
        self._check_chunks()

    def _check_chunks(self) -> None:
        n, r = self.num_instances, self.instance_rank
        self._dealing = Dealing(len(self.chunk_refs), self._generations, n, r)
        self._num_mine = len(range(r, len(self.chunk_refs), n))
        if self.infinite and self._num_mine == 0:
            raise ValueError(
                f"an infinite stream needs chunks for every rank: rank {r} of {n} gets "
                f"none of the {len(self.chunk_refs)} chunks."
            )

    @property
    def sharding(self) -> tuple[int, int]:
        """``(num_instances, instance_rank)``."""
        return self.num_instances, self.instance_rank

    def apply_share(self, num_instances: int, instance_rank: int) -> None:
        """Read another share of the chunks (see ``ShareReader.reshard``)."""
        self.num_instances, self.instance_rank = num_instances, instance_rank
        self._check_chunks()

    def apply_deal(self) -> None:
        self._check_chunks()

    @property
    def order_seed(self) -> int:
        """The seed of the epoch orders (drawn once when none was given)."""
        return self._seed.value

    def begin_epoch(self, epoch: int) -> None:
        """A reset without state starts at ``epoch`` (``set_epoch``)."""
        self._first_epoch = epoch

    def frontier(self) -> tuple[int, int]:
        """``(epoch, chunk)``: chunks of this rank's order begun so far (a drain ends them)."""
        return self._epoch, self._chunk + (self._item > 0)

    def describe(self) -> dict[str, Any]:
        return {
            "chunks": hash_value([str(r) for r in self.chunk_refs]),
            "reader": fn_id(self, self.read_chunk_fn),
            "shuffle": self.shuffle_chunks,
            "seed": self._seed.describe(),
            "infinite": self.infinite,
            "num_instances": self.num_instances,
            "instance_rank": self.instance_rank,
        }

    def _my_chunks(self, epoch: int) -> np.ndarray:
        n = len(self.chunk_refs)
        order = (
            derive_rng(self._seed.value, epoch).permutation(n)
            if self.shuffle_chunks
            else np.arange(n)
        )
        if self._dealing.plain:
            return order[self.instance_rank :: self.num_instances]
        mine: np.ndarray = order[self._dealing.units(epoch, 0, self._dealing.count(epoch))]
        return mine

    def _load_chunk(self) -> None:
        ref = self.chunk_refs[int(self._mine[self._chunk])]
        items = list(self.read_chunk_fn(ref))
        if self.shuffle_chunks:
            perm = derive_rng(self._seed.value, self._epoch, self._chunk).permutation(len(items))
            items = [items[i] for i in perm]
        self._items: list[T] | None = items

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._epoch, self._chunk, self._item = self.__dict__.get("_first_epoch", 0), 0, 0
        if state is not None:
            self._seed.load(self, state[self.SEED_KEY])
            vals = [state[k] for k in (self.EPOCH_KEY, self.CHUNK_KEY, self.ITEM_KEY)]
            if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in vals):
                raise StateError(f"ChunkSource: bad counters in state {state!r}.")
            self._epoch, self._chunk, self._item = vals
        self._mine = self._my_chunks(self._epoch)
        self._items = None
        self._empty_run = 0

    def get_state(self) -> State:
        return {
            self.EPOCH_KEY: self._epoch,
            self.CHUNK_KEY: self._chunk,
            self.ITEM_KEY: self._item,
            self.SEED_KEY: self._seed.value,
        }

    def next(self) -> T:
        while True:
            if self._limit is not None and (self._epoch, self._chunk) >= self._limit:
                raise StopIteration
            if self._chunk >= len(self._mine):
                if not self.infinite:
                    raise StopIteration
                self._epoch += 1
                self._chunk, self._item = 0, 0
                self._mine = self._my_chunks(self._epoch)
            if self._items is None:
                self._load_chunk()
                # Guard against an endless loop over chunks that are all empty.
                self._empty_run = 0 if self._items else self._empty_run + 1
                if self._empty_run > self._num_mine:
                    raise ValueError("from_chunks: every chunk of this rank is empty.")
            assert self._items is not None
            if self._item < len(self._items):
                item = self._items[self._item]
                self._item += 1
                return item
            self._chunk += 1
            self._item = 0
            self._items = None


def from_chunks(
    chunk_refs: Sequence[Any],
    read_chunk_fn: Callable[[Any], Iterable[T]],
    *,
    shuffle: bool = True,
    seed: int | None = None,
    infinite: bool = True,
    num_instances: int = 1,
    instance_rank: int = 0,
) -> Stream[T]:
    """A stream over chunks (any references) read by ``read_chunk_fn``.

    Args:
        chunk_refs: One reference per chunk (paths, indices...), passed to ``read_chunk_fn``.
        read_chunk_fn: ``read_chunk_fn(ref) -> iterable of items``; called again on resume,
            so it must return the same items for the same reference.
        shuffle: Visit the chunks in a seeded random order, new every epoch.
        seed: Seed of that order; None draws one (stored in the state).
        infinite: Start a new epoch after the last chunk instead of stopping.
        num_instances: Ranks splitting the chunks between them.
        instance_rank: This rank, in ``range(num_instances)``: it reads its share only.

    Example:
        >>> from arrowmix.stream import from_chunks
        >>> chunks = [[0, 1], [2, 3], [4]]
        >>> s = from_chunks(range(3), chunks.__getitem__, shuffle=False,
        ...                 infinite=False)
        >>> list(s)
        [0, 1, 2, 3, 4]
    """
    return ChunkSource(
        chunk_refs,
        read_chunk_fn,
        shuffle=shuffle,
        seed=seed,
        infinite=infinite,
        num_instances=num_instances,
        instance_rank=instance_rank,
    )
