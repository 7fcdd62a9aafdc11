"""``IterableDataset.from_generator``: a generator read lazily, sharded by its list arguments.

HF ``datasets``' rule: the list values of ``gen_kwargs`` are the data sources (all lists of
one length ``n``: ``n`` shards; no list: one shard); each shard is one call of the generator
with every list cut to that shard's item. DataLoader workers and nodes read whole shards,
``set_epoch`` reorders them with HF's generator, as for a Dataset's shards. Nothing is read
ahead or written to disk. A checkpoint records the rows yielded; a resume calls the
generator again and skips them (a generator must give the same rows when called again).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._hf.iterable_plan import worker_shards

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream

__all__ = ["GeneratorSource", "shard_kwargs"]


def shard_kwargs(gen_kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The generator's arguments of each shard (HF's ``_split_gen_kwargs``, one per shard).

    Raises:
        RuntimeError: lists of different lengths (HF's message: sharding is ambiguous).
    """
    lengths = {k: len(v) for k, v in gen_kwargs.items() if isinstance(v, list)}
    if len(set(lengths.values())) > 1:
        raise RuntimeError(
            "Sharding is ambiguous for this dataset: we found several data sources lists of "
            f"different lengths ({lengths}). Use lists only for data sources, and tuples "
            "otherwise, so that there is one list, or several lists of one length."
        )
    n = max(lengths.values(), default=0)
    if n == 0:
        return (dict(gen_kwargs),)
    return tuple(
        {k: [v[i]] if isinstance(v, list) else v for k, v in gen_kwargs.items()} for i in range(n)
    )


class _Calls:
    """Re-iterable: the rows of ``generator(**kwargs)`` for each shard's kwargs, in order."""

    def __init__(self, generator: Callable[..., Any], shards: tuple[dict[str, Any], ...]):
        self.generator, self.shards = generator, shards

    def __iter__(self) -> Iterator[Any]:
        for kwargs in self.shards:
            yield from self.generator(**kwargs)


@dataclass(frozen=True)
class GeneratorSource:
    """A recipe leaf: ``generator`` called once per shard (``shards``: their kwargs)."""

    generator: Callable[..., Any]
    shards: tuple[dict[str, Any], ...]

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def typed(self) -> bool:
        """Rows are Python values (no Arrow types), as HF's generator rows."""
        return False

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> GeneratorSource:
        order = list(range(len(self.shards)))
        copy.deepcopy(rng).shuffle(order)
        return replace(self, shards=tuple(self.shards[i] for i in order))

    def shard(self, num_shards: int, index: int, contiguous: bool) -> GeneratorSource:
        keep = worker_shards(len(self.shards), num_shards, index, contiguous)
        return replace(self, shards=tuple(self.shards[i] for i in keep))

    def shift_rngs(self, value: int) -> GeneratorSource:
        return self

    def reshard(self) -> GeneratorSource:
        """The same shards: HF cannot cut a generator's shards either."""
        return self

    def build(self) -> Stream[Any]:
        from arrowmix._stream.sources.iterable import from_iterable

        return from_iterable(_Calls(self.generator, self.shards))
