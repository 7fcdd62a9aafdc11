"""HF ``datasets``' ``ExamplesIterable`` and its protocol, as a source of an ``IterableDataset``.

HF builds an ``IterableDataset`` over an "examples iterable": an object whose ``__iter__``
yields ``(key, example)`` pairs and which answers ``num_shards``,
``shuffle_data_sources(generator)`` and ``shard_data_sources(num_shards, index,
contiguous)``. :class:`ExamplesIterable` is HF's leaf, ``generate_examples_fn`` called once
per shard (the list values of ``kwargs`` are the shards, HF's rule:
:func:`~arrowmix._hf.iterable_generator.shard_kwargs`). ``IterableDataset(ex_iterable)``
takes it, or any object with that protocol (HF's own included), through
:class:`ExamplesSource`: a recipe leaf whose stream yields the examples without their keys,
so DataLoader workers, nodes and epochs share its shards out and reorder them as HF does.

A checkpoint records the examples yielded; a resume iterates the shards again and skips them
(the generator must give the same examples when called again, as for ``from_generator``).
HF's other examples iterables (its map, filter, shuffle buffer, interleave stages...) are
not provided: the dataset's methods build arrowmix's stages instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._hf.iterable_generator import shard_kwargs
from arrowmix._hf.iterable_plan import worker_shards

if TYPE_CHECKING:
    from arrowmix._stream.base import State, Stream

__all__ = ["ExamplesIterable", "ExamplesSource", "as_source", "merge_kwargs"]

_PROTOCOL = ("__iter__", "num_shards", "shuffle_data_sources", "shard_data_sources")


def merge_kwargs(shards: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The kwargs of several shards in one (HF's ``_merge_gen_kwargs``): lists joined."""
    first = shards[0]
    return {
        k: [x for s in shards for x in s[k]] if isinstance(v, list) else v for k, v in first.items()
    }


class _Pairs:
    """Re-iterable: the ``(key, example)`` pairs of ``ex``'s shards, from the start each time."""

    def __init__(self, ex: ExamplesIterable) -> None:
        self.ex = ex

    def __iter__(self) -> Iterator[Any]:
        for kwargs in self.ex.shards:
            yield from self.ex.generate_examples_fn(**kwargs)


class ExamplesIterable:
    """HF's ``ExamplesIterable``: ``generate_examples_fn(**kwargs)`` yields ``(key, example)``.

    The list values of ``kwargs`` are the shards (one call of the function each). Iterating
    yields the pairs; :meth:`state_dict` after any pair and :meth:`load_state_dict` resume
    exactly. ``IterableDataset(ExamplesIterable(fn, kwargs))`` is a dataset of its examples.

    Example:
        >>> from arrowmix.iterable_dataset import ExamplesIterable, IterableDataset
        >>> def gen(paths):
        ...     for p in paths:
        ...         yield p, {"path": p}
        >>> ex = ExamplesIterable(gen, {"paths": ["a", "b"]})
        >>> ex.num_shards, list(ex)
        (2, [('a', {'path': 'a'}), ('b', {'path': 'b'})])
        >>> list(IterableDataset(ex))
        [{'path': 'a'}, {'path': 'b'}]
    """

    #: HF's Arrow path, which this iterable does not have.
    iter_arrow = None

    def __init__(self, generate_examples_fn: Callable[..., Any], kwargs: Mapping[str, Any]):
        self.generate_examples_fn = generate_examples_fn
        self.kwargs = dict(kwargs)
        self._shards: tuple[dict[str, Any], ...] | None = None  # None: those of ``kwargs``
        self._starting: State | None = None
        self._live: Stream[Any] | None = None

    @classmethod
    def _of_shards(
        cls, fn: Callable[..., Any], shards: tuple[dict[str, Any], ...]
    ) -> ExamplesIterable:
        out = cls(fn, merge_kwargs(shards) if shards else {})
        out._shards = shards
        return out

    @property
    def shards(self) -> tuple[dict[str, Any], ...]:
        """The kwargs of each shard, in order."""
        return shard_kwargs(self.kwargs) if self._shards is None else self._shards

    @property
    def num_shards(self) -> int:
        """The number of shards: the length of the list values of ``kwargs`` (at least 1)."""
        return len(self.shards)

    def shuffle_data_sources(self, generator: np.random.Generator) -> ExamplesIterable:
        """The shards reordered by ``generator`` (a copy of it: HF's order for its seed)."""
        order = list(range(self.num_shards))
        copy.deepcopy(generator).shuffle(order)
        shards = self.shards
        return self._of_shards(self.generate_examples_fn, tuple(shards[i] for i in order))

    def shard_data_sources(
        self, num_shards: int, index: int, contiguous: bool = True
    ) -> ExamplesIterable:
        """Part ``index`` of ``num_shards``: whole shards, as HF shares them out."""
        keep = worker_shards(self.num_shards, num_shards, index, contiguous)
        shards = self.shards
        return self._of_shards(self.generate_examples_fn, tuple(shards[i] for i in keep))

    def _stream(self) -> Stream[Any]:
        from arrowmix._stream.sources.iterable import from_iterable

        return from_iterable(_Pairs(self))

    def __iter__(self) -> Iterator[Any]:
        stream = self._stream()
        if self._starting is not None:
            stream.load_state_dict(self._starting)
            self._starting = None
        self._live = stream
        return iter(stream)

    def state_dict(self) -> State:
        """The position after the last pair yielded (the start before any iteration)."""
        if self._live is not None:
            return self._live.state_dict()
        if self._starting is not None:
            return copy.deepcopy(self._starting)
        return self._stream().state_dict()

    def load_state_dict(self, state_dict: State) -> None:
        """Resume from ``state_dict`` at the next iteration."""
        self._starting = copy.deepcopy(dict(state_dict))
        self._live = None

    def _init_state_dict(self) -> State:
        """Start over: the state of the start (HF's name for it)."""
        self._starting = self._live = None
        return self.state_dict()

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["_live"] = None  # a DataLoader worker builds its own stream
        return d

    def __repr__(self) -> str:
        name = getattr(self.generate_examples_fn, "__name__", self.generate_examples_fn)
        return f"ExamplesIterable({name}, num_shards={self.num_shards})"


class _Examples:
    """Re-iterable: the examples of ``ex``, without their keys, from the start each time."""

    def __init__(self, ex: Any) -> None:
        self.ex = ex

    def __iter__(self) -> Iterator[Any]:
        pairs = _Pairs(self.ex) if isinstance(self.ex, ExamplesIterable) else self.ex
        for _, example in pairs:
            yield example


@dataclass(frozen=True, eq=False)
class ExamplesSource:
    """A recipe leaf over an examples iterable ``ex`` (HF's protocol): its examples."""

    ex: Any

    @property
    def num_shards(self) -> int:
        return int(self.ex.num_shards)

    @property
    def typed(self) -> bool:
        """Examples are Python values, as a generator's."""
        return False

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> ExamplesSource:
        return ExamplesSource(self.ex.shuffle_data_sources(copy.deepcopy(rng)))

    def shard(self, num_shards: int, index: int, contiguous: bool) -> ExamplesSource:
        if not worker_shards(self.num_shards, num_shards, index, contiguous):
            return ExamplesSource(ExamplesIterable._of_shards(_no_examples, ()))
        return ExamplesSource(self.ex.shard_data_sources(num_shards, index, contiguous=contiguous))

    def shift_rngs(self, value: int) -> ExamplesSource:
        return self

    def reshard(self) -> ExamplesSource:
        """The same shards (an examples iterable is not cut further)."""
        return self

    def build(self) -> Stream[Any]:
        from arrowmix._stream.sources.iterable import from_iterable

        return from_iterable(_Examples(self.ex))


def _no_examples() -> Iterator[Any]:
    return iter(())


def as_source(ex_iterable: Any) -> ExamplesSource | None:
    """``ex_iterable`` as a recipe leaf if it has HF's examples-iterable protocol, else None."""
    if all(hasattr(ex_iterable, name) for name in _PROTOCOL):
        return ExamplesSource(ex_iterable)
    return None
