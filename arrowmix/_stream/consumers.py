"""One consumer per stage: a stream read by two stages would deal its items between them.

Every stage claims its inputs (``children()``) when it is built. A stream already claimed
by another stage that is still alive is refused with a ``ValueError`` naming both: two
pipelines reading one stage share its position, so each sees part of its items and a
checkpoint of either holds the other's progress (rows lost or repeated). The claim is a
weak reference, so a consumer that was dropped frees its input, and it is not pickled
(an unpickled pipeline claims its inputs again).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arrowmix._stream.stage import Stage

__all__ = ["BUILDING", "CONSUMER", "claim_inputs"]

#: The attribute holding a weak reference to the stage that reads a stream.
CONSUMER = "_consumer"
BUILDING = "_building"  # nesting depth of __init__ calls (super().__init__ chains)


def _short(node: Stage[Any]) -> str:
    from arrowmix._stream.topology import stage_name

    args = ", ".join(f"{k}={v!r}" for k, v in node.describe().items())
    text = f"{type(node).__name__}({args})"
    return f"`{stage_name(node)}` ({text[:160]}{'...' if len(text) > 160 else ''})"


def claim_inputs(node: Stage[Any], inputs: Sequence[Stage[Any]]) -> None:
    """Record ``node`` as the one consumer of each of ``inputs``, the streams it reads.

    Raises:
        ValueError: an input is read by another live stage, or twice by ``node``.
    """
    seen: list[Any] = []
    for child in inputs:
        if any(child is s for s in seen):
            raise ValueError(
                f"{_short(node)} reads the same stream {_short(child)} twice: each read "
                "would take part of its items. Build that stream once per input."
            )
        seen.append(child)
        ref = child.__dict__.get(CONSUMER)
        other = ref() if ref is not None else None
        if other is not None and other is not node:
            raise ValueError(
                f"the stream {_short(child)} already feeds {_short(other)}; it cannot also "
                f"feed {_short(node)}. A stream has one consumer: two stages reading it "
                "would share its position, each seeing part of its items, and a checkpoint "
                "of one would hold the other's progress. To read the same data twice, build "
                "the stream twice (call the code that builds it again)."
            )
    for child in seen:
        child.__dict__[CONSUMER] = weakref.ref(node)
