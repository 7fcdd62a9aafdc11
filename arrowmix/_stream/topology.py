"""The shape of a pipeline: one walk, the elastic roles, sharding and its validation.

Every stage declares its *elastic role* (:class:`ElasticRole`) in the class attribute
``ELASTIC_ROLE``; elastic resume (:mod:`arrowmix._stream.elastic`) and the DataLoader
split (:mod:`arrowmix.integrations.torch`) read the pipeline only through the functions
here:

* :func:`walk`: every node, depth-first, parents before children;
* :func:`check_sharding`: the one validation of ``num_instances`` / ``instance_rank``
  (:class:`~arrowmix.exceptions.ShardingError`);
* :func:`shard_points` / :func:`split`: the nodes that deal rows to instances (row and
  chunk sources, or a stage that deals its outputs) and their re-sharding;
* :func:`elastic_sources`: the same nodes for elastic resume, after checking that every
  node declares a role that allows it (:class:`~arrowmix.exceptions.ElasticResumeError`).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from arrowmix._stream.hooks import offers
from arrowmix._validate import check_int
from arrowmix.exceptions import ElasticResumeError, ShardingError, StateError

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream

__all__ = [
    "ElasticRole",
    "check_sharding",
    "elastic_sources",
    "merges",
    "own_entries",
    "own_state_keys",
    "replay_open_windows",
    "shard_points",
    "source_keys",
    "split",
    "stage_name",
    "walk",
]


class ElasticRole(str, Enum):
    """What a stage does when checkpoints of N instances are resumed on M.

    Declared by every stage class as ``ELASTIC_ROLE``; the public bases declare it for
    their subclasses (``PassThrough``: transparent, ``WindowReplayStage``: buffering).

    * ``SOURCE``: deals positions to instances. Implements ``sharding``,
      ``reshard(n, r)``, ``deal(generations, limit, seed)``, ``frontier()`` and
      ``order_seed`` (row and chunk sources).
    * ``TRANSPARENT``: never holds an item it has read but not yet yielded between two
      calls of ``next()`` (its state is its sources' state plus counters): ``map``,
      ``filter``, ``batch``, ``take``, ``mix``.
    * ``BUFFERING``: holds read-but-unyielded items and replays its open window:
      ``replay_open_window()`` re-reads it without yielding, so that the sources then
      stand after every row the instance had read; restored on an old instance's
      sharding with its sources stopped there, it yields its buffered items and ends.
    * ``DEALER``: every instance reads the same stream and the stage deals its outputs
      (``budget_bucket``): ``sharding``, ``reshard``, ``deal_remaining``.
    * ``REFUSING``: cannot be resumed elastically (``zip`` pairs items, ``window``
      repeats them); elastic resume raises ``ElasticResumeError`` naming it.

    A stage class that declares no role (``None``) is refused like ``REFUSING``.
    """

    SOURCE = "source"
    TRANSPARENT = "transparent"
    BUFFERING = "buffering"
    DEALER = "dealer"
    REFUSING = "refusing"


def walk(root: Stream[Any]) -> list[Stream[Any]]:
    """Every node of a pipeline, depth-first, parents before children, inputs in order."""
    out: list[Stream[Any]] = []
    todo = [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(reversed(node.children()))
    return out


def open_for_changes(root: Stream[Any]) -> None:
    """Let the next restore of every node that can resume a changed configuration do so.

    Nodes opt in by overriding the ``allow_changes(allowed)`` hook (named mixes).
    """
    for node in walk(root):
        node.allow_changes(True)


_NAMES = {
    "ArrowSource": "source",
    "BatchIterator": "batch",
    "BinPackIterator": "pack",
    "BudgetBucketIterator": "budget_bucket",
    "CollateIterator": "collate",
    "ConcatPackIterator": "pack",
    "FilterIterator": "filter",
    "FlatMapIterator": "flat_map",
    "LengthBucketIterator": "bucket",
    "LimitIterator": "take",
    "MapIterator": "map",
    "ParallelMapIterator": "map",
    "PrefetchIterator": "prefetch",
    "BufferShuffleIterator": "shuffle",
    "WeightedMixIterator": "mix",
    "WindowIterator": "window",
    "ZipIterator": "zip",
}


def stage_name(node: object) -> str:
    """The short name of ``node`` in stats paths (the builder's name, else the class's)."""
    cls = type(node).__name__
    return _NAMES.get(cls, cls)


def check_sharding(num_instances: object, instance_rank: object) -> None:
    """Raise ShardingError unless ``0 <= instance_rank < num_instances`` (both ints)."""
    n = check_int("num_instances", num_instances)  # a wrong type is a TypeError
    r = check_int("instance_rank", instance_rank)
    if n < 1:
        raise ShardingError(f"`num_instances` must be >= 1, got {num_instances!r}.")
    if not 0 <= r < n:
        raise ShardingError(
            f"`instance_rank` must be an int in [0, {num_instances}), got {instance_rank!r}."
        )


def _role(node: Stream[Any]) -> ElasticRole | None:
    role = type(node).ELASTIC_ROLE
    return None if role is None else ElasticRole(role)


def shard_points(root: Stream[Any]) -> tuple[list[Any], list[Stream[Any]]]:
    """The nodes that deal rows to instances, and the leaves that cannot be sharded.

    A ``DEALER`` stage counts as a shard point and its inputs stay unsharded (every
    instance reads them whole). Order: depth-first, inputs in order.
    """
    points: list[Any] = []
    other: list[Stream[Any]] = []
    todo = [root]
    while todo:
        node = todo.pop()
        role = _role(node)
        if role in (ElasticRole.DEALER, ElasticRole.SOURCE):
            points.append(node)
            if role is ElasticRole.DEALER:
                continue
        elif not node.children():
            other.append(node)
        todo.extend(reversed(node.children()))
    return points, other


def split(root: Stream[Any], base: list[tuple[int, int]], parts: int, index: int) -> None:
    """Re-shard the shard points of ``root`` into ``parts`` and keep part ``index``.

    ``base`` holds each shard point's ``(num_instances, instance_rank)`` before any
    split. A point that was instance ``r`` of ``n`` becomes instance ``r + n * index``
    of ``n * parts``: the parts are disjoint and their union is the original share.
    """
    check_sharding(parts, index)
    points, other = shard_points(root)
    if parts > 1 and other:
        names = sorted({type(s).__name__ for s in other})
        raise ShardingError(
            f"the pipeline cannot be split across {parts} DataLoader workers/ranks: "
            f"its sources {names} cannot be sharded; use a row source or from_chunks, "
            "or num_workers=0."
        )
    if len(points) != len(base):
        raise ShardingError(
            f"the pipeline has {len(points)} shard points but {len(base)} base shardings."
        )
    for node, (n, r) in zip(points, base, strict=True):
        node.reshard(n * parts, r + n * index)


def elastic_sources(root: Stream[Any]) -> tuple[list[Any], list[Any]]:
    """``(sources, dealers)`` of a pipeline that elastic resume may re-deal.

    Raises:
        ElasticResumeError: a node refuses elastic resume or declares no role (naming
            its class and what to do), a leaf is not a row or chunk source, or a row
            source does not feed the dealer of a pipeline that has one.
    """
    sources: list[Any] = []
    dealers: list[Any] = []
    under_dealer: set[int] = set()
    for node in walk(root):
        role = _role(node)
        name = type(node).__qualname__
        if not node.children() and role is not ElasticRole.SOURCE:
            raise ElasticResumeError(
                f"elastic resume needs row or chunk sources (Dataset.to_stream, "
                f"from_chunks); {name} cannot be re-dealt."
            )
        if role is None:
            raise ElasticResumeError(
                f"elastic resume cannot go through {name}: the stage declares no elastic "
                "role, so its buffered items could be lost or yielded twice. Subclass "
                "arrowmix.stream.WindowReplayStage (buffering) or PassThrough (no state "
                "of its own), or set ELASTIC_ROLE to an arrowmix.stream.ElasticRole; "
                "resume on the same number of instances meanwhile."
            )
        if role is ElasticRole.REFUSING:
            why = node.ELASTIC_REFUSAL
            raise ElasticResumeError(
                f"elastic resume cannot re-deal the rows of {name}: {why}. Resume on the "
                "same number of instances."
            )
        if role is ElasticRole.SOURCE:
            sources.append(node)
        elif role is ElasticRole.DEALER:
            dealers.append(node)
            under_dealer.update(id(x) for x in walk(node))
        elif role is ElasticRole.TRANSPARENT and own_state_keys(node) and not merges(node):
            raise ElasticResumeError(
                f"elastic resume cannot carry the state of {name}: it keeps state of its "
                f"own ({', '.join(own_state_keys(node))}) that the old instances' "
                "checkpoints hold N times. Declare how N states become M: implement "
                "elastic_state(), merge_elastic_states(states, num_instances) and "
                "load_elastic_state(state) (see 'Writing a stage'), or set "
                "ELASTIC_STATE_RESTARTS = True if the new run may start it afresh; "
                "resume on the same number of instances meanwhile."
            )
        elif role is ElasticRole.BUFFERING and _inherits_replay(node):
            raise ElasticResumeError(
                f"{name} declares ElasticRole.BUFFERING but does not implement "
                "replay_open_window(); elastic resume cannot find what it had read."
            )
    if dealers and any(id(s) not in under_dealer for s in sources):
        raise ElasticResumeError(
            "elastic resume: every row source must feed a budget_bucket stage when the "
            "pipeline has one."
        )
    if len(dealers) > 1:
        raise ElasticResumeError("elastic resume supports one budget_bucket stage per pipeline.")
    return sources, dealers


def source_keys(root: Stream[Any]) -> list[str] | None:
    """A key per row source, in :func:`walk` order, from the names of the mixes above it.

    A node that names its inputs (``child_names()``: a mix built from ``{name: stream}``)
    puts the name into the key of every source below that input; ``#k`` tells apart the
    sources that share a path. None when no node names its inputs, so that elastic
    checkpoints of such pipelines stay positional.
    """
    keys: list[str] = []
    seen: dict[str, int] = {}
    named = False
    todo: list[tuple[Stream[Any], str]] = [(root, "")]
    while todo:
        node, path = todo.pop()
        names = node.child_names()
        named = named or names is not None
        if _role(node) is ElasticRole.SOURCE:
            k = seen.get(path, 0)
            seen[path] = k + 1
            keys.append(f"{path}#{k}")
        kids = node.children()
        paths = [path if names is None else f"{path}/{names[i]}" for i in range(len(kids))]
        todo.extend(reversed(list(zip(kids, paths, strict=True))))
    return keys if named else None


#: State keys that hold the inputs' states, not a stage's own.
_INPUT_KEYS = frozenset({"source", "sources"})


def own_state_keys(node: Stream[Any]) -> list[str]:
    """The state keys of ``node`` beyond its inputs' (none if it restarts them)."""
    keys = node.STATE_KEYS
    if keys is None or type(node).ELASTIC_STATE_RESTARTS:
        return []
    return [k for k in keys if k not in _INPUT_KEYS]


def merges(node: Stream[Any]) -> bool:
    """Whether ``node`` declares how elastic resume merges its own state."""
    return offers(node, "merge_elastic_states")


def own_entries(merging: list[Any], own: list[Any] | None) -> list[Any] | None:
    """``own`` by merging stage (None for a mix missing from an older checkpoint).

    A checkpoint written before a mix merged its state lacks the mix's entry; the mix
    then continues with its own counters.
    """
    if own is None or len(own) == len(merging):
        return own
    older = {id(n) for n in merging if not getattr(type(n), "ELASTIC_OWN_SINCE_MIX", False)}
    if len(own) != len(older):
        raise StateError(
            f"elastic checkpoint holds {len(own)} merged stage states, this pipeline "
            f"merges {len(merging)}."
        )
    entries = iter(own)
    return [next(entries) if id(n) in older else None for n in merging]


def _inherits_replay(node: Stream[Any]) -> bool:
    return not offers(node, "replay_open_window")


def replay_open_windows(root: Stream[Any]) -> None:
    """Replay every partially emitted window of a freshly restored pipeline.

    Parents first: a parent's replay pulls from its inputs, which replay their own
    window on the way; an input left with an open window replays it afterwards.
    """
    for node in walk(root):
        node.replay_open_window()
