"""``concatenate_datasets`` over iterable datasets: HF's rows, shards and features.

As HF ``datasets``: ``axis=0`` reads the datasets one after the other; its shards are all the
inputs' shards (DataLoader workers, nodes and ``shuffle`` share them out and reorder them as
one list, HF's order). ``axis=1`` merges the i-th rows of every input into one row; it is one
shard (cutting it would misalign the rows), and an input that runs out leaves its columns
None. The features are the inputs' features (inferred from their first rows when unknown:
``_resolve_features``) put together, and the rows are cast to them, so a column an input lacks
reads as None.

:class:`ChainRows` and :class:`MergeRows` are the stages; both resume exactly.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._dataset.views.concatenate import concatenate_datasets as concatenate_rows_or_columns
from arrowmix._hf.iterable_plan import Op, worker_shards
from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from arrowmix._hf.iterable import IterableDataset

__all__ = [
    "ChainRows",
    "Chained",
    "MergeRows",
    "Merged",
    "concatenate_datasets",
    "concatenate_iterable",
    "joined_features",
]


class _OverStreams(Stream[Any]):
    """A stage over several streams (its children, in order)."""

    def __init__(self, streams: Sequence[Stream[Any]]) -> None:
        super().__init__()
        self.streams = list(streams)

    def children(self) -> list[Stream[Any]]:
        return list(self.streams)

    def describe(self) -> dict[str, Any]:
        return {"streams": len(self.streams)}


class ChainRows(_OverStreams):
    """The rows of ``streams``, one stream after the other.

    State:
        ``index``: the stream being read. ``source``: its state. Replay cost: none.
    """

    INDEX_KEY = "index"
    SOURCE_KEY = "source"
    STATE_KEYS = (INDEX_KEY, SOURCE_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "concatenated streams are read one after the other"

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        for s in self.streams:
            s.reset(None)
        self._index = 0
        if state is None:
            return
        index = state[self.INDEX_KEY]
        if (
            isinstance(index, bool)
            or not isinstance(index, int)
            or not 0 <= index <= len(self.streams)
        ):
            raise StateError(f"ChainRows: bad `index` {index!r} for {len(self.streams)} streams.")
        self._index = index
        if index < len(self.streams):
            self.streams[index].reset(state[self.SOURCE_KEY])

    def get_state(self) -> State:
        i = self._index
        return {
            self.INDEX_KEY: i,
            self.SOURCE_KEY: self.streams[i].get_state() if i < len(self.streams) else None,
        }

    def next(self) -> Any:
        while self._index < len(self.streams):
            try:
                return self.streams[self._index].next()
            except StopIteration:
                self._index += 1
        raise StopIteration


class MergeRows(_OverStreams):
    """Row ``i`` of every stream merged into one (HF's ``axis=1``), until all have ended.

    A stream that ended adds nothing to the later rows. Two streams giving the same column
    raise ``ValueError`` (HF's check).

    State:
        ``sources``: each stream's state. ``ended``: which streams have ended. Replay cost:
        none.
    """

    SOURCES_KEY = "sources"
    ENDED_KEY = "ended"
    STATE_KEYS = (SOURCES_KEY, ENDED_KEY)
    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "merged rows must come from the same position of every stream"

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        n = len(self.streams)
        self._ended = [False] * n
        if state is None:
            for s in self.streams:
                s.reset(None)
            return
        sources, ended = state[self.SOURCES_KEY], state[self.ENDED_KEY]
        if len(sources) != n or len(ended) != n:
            raise StateError(f"MergeRows: the state holds {len(sources)} streams, this has {n}.")
        self._ended = [bool(e) for e in ended]
        for s, sub in zip(self.streams, sources, strict=True):
            s.reset(sub)

    def get_state(self) -> State:
        return {
            self.SOURCES_KEY: [s.get_state() for s in self.streams],
            self.ENDED_KEY: list(self._ended),
        }

    def next(self) -> Any:
        row: dict[str, Any] = {}
        got = False
        for i, s in enumerate(self.streams):
            if self._ended[i]:
                continue
            try:
                part = s.next()
            except StopIteration:
                self._ended[i] = True
                continue
            got = True
            twice = [c for c in part if c in row]
            if twice:
                raise ValueError(
                    "The examples iterables can't have duplicated columns but columns "
                    f"{twice} are duplicated."
                )
            row.update(part)
        if not got:
            raise StopIteration
        return row


@dataclass(frozen=True)
class Chained:
    """A recipe node: ``children`` read one after the other (HF's vertical concatenation)."""

    children: tuple[Any, ...]
    same_rows: bool  # every child yields typed rows of the same features

    @property
    def num_shards(self) -> int:
        return sum(c.num_shards for c in self.children)

    @property
    def typed(self) -> bool:
        return self.same_rows and all(c.typed for c in self.children)

    def _single_shards(self) -> list[Any]:
        return [c.shard(c.num_shards, j, True) for c in self.children for j in range(c.num_shards)]

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> Chained:
        """Every child's shards, reordered as one list (HF's)."""
        shards = self._single_shards()
        copy.deepcopy(rng).shuffle(shards)
        return replace(self, children=tuple(shards))

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Chained:
        shards = self._single_shards()
        keep = worker_shards(len(shards), num_shards, index, contiguous)
        return replace(self, children=tuple(shards[i] for i in keep))

    def shift_rngs(self, value: int) -> Chained:
        return replace(self, children=tuple(c.shift_rngs(value) for c in self.children))

    def reshard(self) -> Chained:
        return replace(self, children=tuple(c.reshard() for c in self.children))

    def build(self) -> Stream[Any]:
        return ChainRows([c.build() for c in self.children])


@dataclass(frozen=True)
class Merged:
    """A recipe node: the rows of ``children`` side by side; one shard, as in HF."""

    children: tuple[Any, ...]

    @property
    def num_shards(self) -> int:
        return 1

    @property
    def typed(self) -> bool:
        return False

    def shuffle_sources(self, rng: np.random.Generator, seed: int) -> Merged:
        return self  # reordering would misalign the rows

    def shard(self, num_shards: int, index: int, contiguous: bool) -> Merged:
        return self

    def shift_rngs(self, value: int) -> Merged:
        return replace(self, children=tuple(c.shift_rngs(value) for c in self.children))

    def reshard(self) -> Merged:
        return self

    def build(self) -> Stream[Any]:
        return MergeRows([c.build() for c in self.children])


def _is_null(feature: Any) -> bool:
    return getattr(feature, "dtype", None) == "null"


def joined_features(features_list: Sequence[Any]) -> Any:
    """The features of every input in one; a shared column must have one feature (or null).

    Raises:
        ValueError: a column has two non-null features (HF's message).
    """
    chosen: dict[str, Any] = {}
    for features in features_list:
        for k, v in features.items():
            if k not in chosen or _is_null(chosen[k]):
                chosen[k] = v
    for features in features_list:
        for k, v in features.items():
            if not _is_null(v) and chosen[k] != v:
                raise ValueError(
                    f"The features can't be aligned because the key {k} of features {features} "
                    f'has unexpected type - {v} (expected either {chosen[k]} or Value("null").'
                )
    return type(features_list[0])(chosen)


def concatenate_iterable(
    dsets: Sequence[IterableDataset], info: Any = None, split: Any = None, axis: int = 0
) -> IterableDataset:
    """``concatenate_datasets`` of iterable datasets (see the module docs)."""
    if axis not in (0, 1):
        raise ValueError(f"`axis` must be 0 (rows) or 1 (columns), got {axis!r}.")
    dsets = [d._resolve_features() for d in dsets]
    all_features = [d.features for d in dsets]
    if axis == 1:
        names = [c for f in all_features for c in f]
        twice = sorted({c for c in names if names.count(c) > 1})
        if twice:
            raise ValueError(
                "The examples iterables can't have duplicated columns but columns "
                f"{twice} are duplicated."
            )
        features = type(all_features[0])({k: v for f in all_features for k, v in f.items()})
    else:
        features = joined_features(all_features)
    first = dsets[0]
    for i, d in enumerate(dsets):
        if d._distributed != first._distributed:
            raise ValueError(
                "Datasets should be identically split_by_node before concatenating, but got "
                f"{first._distributed}!={d._distributed} at index 0 and {i}"
            )
    formats = {d._format for d in dsets}
    format_type = formats.pop() if len(formats) == 1 else None
    kids = tuple(d._node for d in dsets)
    node: Any
    if axis == 0:
        node = Chained(kids, same_rows=all(f == features for f in all_features))
    else:
        node = Merged(kids)
    if not node.typed:
        from arrowmix._hf.iterable_cast import make_cast

        node = Op(node, "cast", make_cast, {"features": features})
    return type(first)(
        node,
        info if info is not None else first._info,
        split,
        features=features,
        format_type=format_type,
        distributed=first._distributed,
    )


@functools.wraps(concatenate_rows_or_columns)
def concatenate_datasets(datasets: Sequence[Any], axis: int = 0) -> Any:
    """``arrowmix.concatenate_datasets``: iterable datasets here, map-style ones in the core."""
    iterable = _iterable_inputs(datasets)
    if iterable is None:
        return concatenate_rows_or_columns(datasets, axis)
    return concatenate_iterable(iterable, axis=axis)


def _iterable_inputs(datasets: Sequence[Any]) -> list[Any] | None:
    """``datasets`` when they are all ``IterableDataset``s, None when none is one.

    Raises:
        ValueError: some are and some are not (HF's message).
    """
    from arrowmix._hf.iterable import IterableDataset

    flags = [isinstance(d, IterableDataset) for d in datasets]
    if not any(flags):
        return None
    if not all(flags):
        this, other = ("IterableDataset", "Dataset") if flags[0] else ("Dataset", "IterableDataset")
        raise ValueError(
            f"Unable to concatenate a {this} with a {other}. Expected a list of {this} objects."
        )
    return list(datasets)
