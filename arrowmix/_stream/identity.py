"""What identifies a pipeline in its checkpoints: functions by value, stages by field.

A checkpoint's ``pipeline`` hash covers the ``describe()`` of every node. Functions
passed to stages enter it *by value* (code, constants, closures, globals, helpers, as
``Dataset.map`` fingerprints them), so a checkpoint is refused by a pipeline whose
lambda changed; a function that cannot be hashed by value is identified by its name
and loading warns (``FingerprintWarning``) naming the stage.

The checkpoint also carries ``nodes``: per node, 4-hex digests of its class and of each
of its fields, so that a refused checkpoint names the first node and field that differ
instead of two long reprs, at about 5 bytes per field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arrowmix._fingerprint.functions import FunctionHasher
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._warn import warn
from arrowmix.exceptions import FingerprintWarning

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream

__all__ = [
    "describe_mismatch",
    "fn_identity",
    "name_digest",
    "node_difference",
    "node_summaries",
    "node_summary",
    "source_names",
    "warn_unhashed",
]

_CACHE = "_fn_ids"  # per node: {id(fn): (fn, identity, problem)}; never pickled
_DIGITS = 4
_HINT_SHARDING = (
    " The checkpoint was taken on another number of instances (ranks x DataLoader "
    "workers): to resume on another count, collect the state of every old instance "
    "(arrowmix.integrations.torch.worker_stream_states for a StatefulDataLoader) and "
    "load arrowmix.stream.merge_states(states) instead."
)


def fn_identity(owner: Stream[Any], fn: Any) -> str:
    """``qualname@digest`` of ``fn`` hashed by value (cached on ``owner``).

    A function that cannot be hashed by value gives its name alone and is remembered,
    for :func:`warn_unhashed`.
    """
    cache: dict[int, tuple[Any, str, str | None]] = owner.__dict__.setdefault(_CACHE, {})
    hit = cache.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    name = str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)
    hasher = FunctionHasher()
    try:
        digest = hasher.callable_digest(fn, name)
    except Exception as exc:  # noqa: BLE001 - any failure: identify by name
        problem: str | None = f"{type(exc).__name__}: {exc}"
    else:
        problem = "; ".join(p.message() for p in hasher.problems) or None
    identity = name if problem else f"{name}@{digest[:8]}"
    cache[id(fn)] = (fn, identity, problem)
    return identity


def warn_unhashed(root: Stream[Any]) -> None:
    """Warn once per stage whose functions are matched by name only (on load)."""
    from arrowmix._stream.topology import walk

    for node in walk(root):
        for _, identity, problem in node.__dict__.get(_CACHE, {}).values():
            if problem:
                warn(
                    f"{type(node).__name__}: function {identity!r} cannot be hashed by "
                    f"value ({problem}); the checkpoint is matched to it by its name only, "
                    "so a changed body would go unnoticed.",
                    FingerprintWarning,
                )


def _digest(value: Any) -> str:
    return hash_value(value)[:_DIGITS]


def source_names(node: Stream[Any]) -> list[str] | None:
    """The source names of a named mix (None for any other node)."""
    return node.child_names()


def name_digest(name: str) -> str:
    """8-hex digest of a source name, as a named mix's summary records it."""
    return hash_value(name)[:8]


def node_summary(node: Stream[Any]) -> str:
    """Digests of ``node``'s class and of each field; a named mix adds its sources' shape.

    ``"<class>.<field 1>.<field 2>..."`` with fields in name order, each a 4-hex digest
    of its value. A named mix appends ``"|<name digest>:<nodes>"`` per source (the
    number of nodes of the source's sub-pipeline), so that a checkpoint's stages can be
    matched source by source when the mixture changed.
    """
    from arrowmix._stream.topology import walk

    fields = node.describe()
    parts = [_digest(type(node).__qualname__)]
    parts += [_digest([k, fields[k]]) for k in sorted(fields)]
    out = ".".join(parts)
    names = source_names(node)
    if names is not None:
        shape = zip(names, node.children(), strict=True)
        out += "".join(f"|{name_digest(n)}:{len(walk(c))}" for n, c in shape)
    return out


def node_summaries(root: Stream[Any]) -> list[str]:
    """One :func:`node_summary` per node, depth-first: about 5 characters per field."""
    from arrowmix._stream.topology import walk

    return [node_summary(node) for node in walk(root)]


def describe_mismatch(saved: Any, root: Stream[Any], *, hint: bool = True) -> str:
    """The first node and field where a checkpoint's ``nodes`` and this pipeline differ.

    ``hint=False`` leaves out the advice on what to do about it.
    """
    from arrowmix._stream.topology import walk

    nodes = walk(root)
    mine = node_summaries(root)
    if not isinstance(saved, list) or not all(isinstance(x, str) for x in saved):
        return (
            "the checkpoint does not record its stages (an older format); this pipeline "
            f"is {root.explain():.300}"
        )
    for k, (old, new, node) in enumerate(zip(saved, mine, nodes, strict=False)):
        if old != new and ("|" in old or old != new.split("|")[0]):  # older: no shape
            return node_difference(k, old, node, hint=hint)
    if len(saved) != len(mine):
        return f"the checkpoint has {len(saved)} nodes, this pipeline {len(mine)}"
    return "the stages match field by field; a value hashed in full differs"


def node_difference(k: int, old: str, node: Stream[Any], *, hint: bool = True) -> str:
    """What differs between node ``k`` of a checkpoint (its summary ``old``) and ``node``."""
    name = type(node).__qualname__
    old_parts, new_parts = old.split("|")[0].split("."), node_summary(node).split("|")[0].split(".")
    if old_parts[0] != new_parts[0]:
        return f"node {k} is another stage in the checkpoint than {name} here" + (
            " (map(fn) and map(fn, num_workers=N) keep different states)"
            if name in ("MapIterator", "ParallelMapIterator")
            else ""
        )
    fields = node.describe()
    keys = sorted(fields)
    if len(old_parts) != len(new_parts):
        return f"node {k} ({name}) has other fields in the checkpoint: {keys} here"
    for key, a, b in zip(keys, old_parts[1:], new_parts[1:], strict=True):
        if a != b:
            what = f"node {k} ({name}) differs in `{key}` (here: {fields[key]!r:.60})"
            if not hint:
                return what
            if key == "num_instances":
                what += "." + _HINT_SHARDING
            elif key == "instance_rank":
                what += (
                    ": the state belongs to another instance (rank or DataLoader "
                    "worker); load each instance's own state, and pass merge_states "
                    "the states of every instance in instance order"
                )
            elif key in ("weights", "names") and name == "WeightedMixIterator":
                what += (
                    ": load_state_dict(state, allow_changes=True) resumes a named mix "
                    "(mix({name: stream})) into another mixture"
                    if "names" in fields
                    else ": only a named mix (mix({name: stream})) resumes into another mixture"
                )
            elif isinstance(fields[key], str) and "@" in fields[key]:
                what += ": the function's code, constants or globals changed"
            return what
    return f"node {k} ({name}) has other sources in the checkpoint"
