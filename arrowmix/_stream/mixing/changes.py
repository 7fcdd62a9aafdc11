"""What ``load_state_dict(state, allow_changes=True)`` relaxes, and nothing more.

It relaxes exactly the weights (or schedule) and the sources of named mixes. The
checkpoint's ``nodes`` (a digest per stage, see :mod:`arrowmix._stream.identity`) are
matched against this pipeline stage by stage: every stage must be the same, except a
named mix's ``weights`` and ``names``; within a named mix, each source kept under its
name must be the same sub-pipeline (checked the same way, so a named mix inside it may
change too). A source under a new name starts at its beginning; a source under a kept
name that is another sub-pipeline (another corpus, another ``shuffle`` buffer) is
refused: its position in the checkpoint belongs to the old one. A changed mix after
which a buffering stage replays its open window would yield other rows: refused,
naming that mix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.identity import name_digest, node_difference, node_summary, source_names
from arrowmix._stream.topology import ElasticRole, stage_name, walk
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream

__all__ = ["check_changes"]

_RELAXED = ("names", "weights")
_MIX = hash_value("WeightedMixIterator")[:4] + "."
_PREFIX = "load_state_dict(allow_changes=True): "
_OLDER = (
    " (The checkpoint was written before arrowmix recorded the sources of its named mixes: "
    "with changes allowed it loads only into the same stages with other weights; resume it "
    "unchanged once and save a new checkpoint to change the sources.)"
)


def check_changes(saved: Any, root: Stream[Any]) -> None:
    """Refuse a checkpoint (its ``nodes``: ``saved``) that ``allow_changes`` cannot resume.

    StateError unless it differs from ``root`` only in what ``allow_changes`` relaxes,
    and no changed mix is followed by a buffering stage.
    """
    if not isinstance(saved, list) or not all(isinstance(x, str) for x in saved):
        raise StateError(
            f"{_PREFIX}the checkpoint does not record its stages (an older format), so "
            "what changed cannot be checked; load it into the same pipeline."
        )
    match = _Match(saved)
    try:
        end = match.node(root, 0, [], "")
        if end != len(saved):
            raise StateError(
                f"{_PREFIX}the checkpoint has {len(saved)} stages where this pipeline has "
                f"{end}; only the weights and sources of named mixes may change."
            )
    except StateError as exc:
        if not match.older:
            raise
        raise StateError(f"{exc}{_OLDER}") from None


def _buffer(node: Stream[Any]) -> str | None:
    """The name of ``node`` when it restores by reading again items it had buffered."""
    cls = type(node)
    if cls.ELASTIC_ROLE in (ElasticRole.BUFFERING, ElasticRole.DEALER) or cls.REPLAYS_ON_RESTORE:
        return f"`{stage_name(node)}` ({type(node).__name__})"
    return None


class _Match:
    """Walks this pipeline and the checkpoint's stage digests side by side."""

    def __init__(self, saved: list[str]) -> None:
        self.saved = saved
        # a named mix (5 digests: class, names, seed, stopping, weights) without its shape
        self.older = any(x.startswith(_MIX) and x.count(".") == 4 for x in saved)

    def refuse(self, k: int, node: Stream[Any], where: str) -> StateError:
        what = node_difference(k, self.saved[k], node, hint=False)
        return StateError(
            f"{_PREFIX}{where}{what}; only the weights and sources of named mixes may "
            "change, every other stage must be the same."
        )

    def node(self, node: Stream[Any], k: int, above: list[str], where: str) -> int:
        """The index after ``node``'s sub-pipeline in the checkpoint (matched from ``k``)."""
        if k >= len(self.saved):
            raise StateError(
                f"{_PREFIX}{where}the checkpoint has no stage where this pipeline has "
                f"{type(node).__name__}; only the weights and sources of named mixes may change."
            )
        buffer = _buffer(node)
        below = [*above, buffer] if buffer else above
        names = source_names(node)
        if names is None:
            if self.saved[k] != node_summary(node):
                raise self.refuse(k, node, where)
            k += 1
            for child in node.children():
                k = self.node(child, k, below, where)
            return k
        return self.mix(node, names, k, below, where)

    def mix(self, node: Stream[Any], names: list[str], k: int, above: list[str], where: str) -> int:
        old, mine = self.saved[k], node_summary(node)
        old_head, _, old_shape = old.partition("|")
        head, _, shape = mine.partition("|")
        keys = sorted(node.describe())
        pairs = list(zip(["class", *keys], old_head.split("."), head.split("."), strict=False))
        if len(old_head.split(".")) != len(head.split(".")) or any(
            a != b for key, a, b in pairs if key not in _RELAXED
        ):
            raise self.refuse(k, node, where)
        children = node.children()
        if old_shape:
            spans = [part.split(":") for part in old_shape.split("|")]
            sources = [(digest, int(size)) for digest, size in spans]
        else:  # older checkpoints: the same sources in the same order is all that is checked
            sources = [(name_digest(n), len(walk(c))) for n, c in zip(names, children, strict=True)]
        changed = old_head != head or (bool(old_shape) and old_shape != shape)
        if changed and above:
            what = node_difference(k, old, node, hint=False)
            raise StateError(
                f"{_PREFIX}{where}the named mix mix({names}) changed ({what}), and {above[-1]} "
                "after it restores by reading again the items it had buffered when the "
                "checkpoint was taken: under the new mixture these are other items, so rows "
                "would be lost and repeated. What works: resume with the unchanged mixture "
                "(on any number of ranks), or change the mixture in a pipeline where no "
                "buffering stage (shuffle, map with num_workers, prefetch, bucket, "
                "budget_bucket, pack, window) follows the mix, e.g. shuffle each source "
                "before mixing."
            )
        spans_at: dict[str, tuple[int, int]] = {}
        at = k + 1
        for digest, size in sources:
            spans_at[digest] = (at, at + size)
            at += size
        for name, child in zip(names, children, strict=True):
            span = spans_at.get(name_digest(name))
            if span is None:
                continue  # a new source: it starts at its beginning
            inner = f"{where}source {name!r} of mix({names}): "
            try:
                end = self.node(child, span[0], above, inner)
            except StateError as exc:
                if "new name" in str(exc) or "changed (" in str(exc):
                    raise
                raise StateError(
                    f"{exc} A source kept under its name must be the same sub-pipeline; to "
                    "read another one from its beginning, give it a new name."
                ) from None
            if end != span[1]:
                raise StateError(
                    f"{_PREFIX}{inner}it has other stages than in the checkpoint; a source kept "
                    "under its name must be the same sub-pipeline (to read another one from "
                    "its beginning, give it a new name)."
                )
        return at
