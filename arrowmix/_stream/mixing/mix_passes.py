"""The passes a mix makes over its inputs: cycling, caps, and the passes in a checkpoint.

An input that ends is started again while it has passes left: up to its cap
(``max_epochs``), or without limit under ``"longest_cycle"``. The mix counts the pass each
input is in. A capped mix records it in every checkpoint (``epochs``, one per input); an
uncapped ``"longest_cycle"`` mix records it once an input has begun its second pass, so
that checkpoints taken before any input cycled keep their form, and older checkpoints
(without ``epochs``) load as every input in its first pass. Elastic resume compares the
old instances' passes (:mod:`~arrowmix._stream.mixing.mix_elastic`): instances in
different passes of an input are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arrowmix._stream.dealing import DealtSource
from arrowmix._stream.stage import State
from arrowmix._stream.topology import walk
from arrowmix.exceptions import StateError

__all__ = ["MixPasses", "NOTHING"]

#: "No item": an input with no pass left, or an empty one.
NOTHING: Any = object()


class MixPasses:
    """The pass bookkeeping of :class:`~arrowmix._stream.mixing.mix.WeightedMixIterator`."""

    EPOCHS_KEY = "epochs"  # the pass each input is in

    names: list[str] | None
    streams: list[Any]
    caps: list[int | None] | None
    stopping: str
    _epochs: list[int]
    _exhausted: list[bool]
    _pre: list[Any]
    _held: list[Any]

    if TYPE_CHECKING:  # defined by the mix

        def _fetch(self, i: int) -> Any: ...

        def _mask(self) -> tuple[list[bool], bool]: ...

    def counts_passes(self) -> bool:
        """Whether the pass of each input matters: capped, or cycled without limit."""
        return self.caps is not None or self.stopping == "longest_cycle"

    def _passes_state(self, names: list[str] | None) -> State:
        """``{"epochs": ...}`` for an uncapped cycling mix past a first pass, else ``{}``.

        (A capped mix lists ``epochs`` with its per-input keys.)
        """
        if self.caps is not None or not any(e > 1 for e in self._epochs):
            return {}
        epochs = list(self._epochs)
        return {self.EPOCHS_KEY: epochs if names is None else dict(zip(names, epochs, strict=True))}

    def _split_passes(self, state: Any) -> tuple[Any, Any]:
        """``(state without uncapped passes, those passes or None)`` (see the module)."""
        if self.caps is not None or not isinstance(state, dict) or self.EPOCHS_KEY not in state:
            return state, None
        rest = {k: v for k, v in state.items() if k != self.EPOCHS_KEY}
        return rest, state[self.EPOCHS_KEY]

    def _load_passes(self, passes: Any) -> None:
        """Restore the passes split off a checkpoint (by name for a named mix)."""
        k = len(self.streams)
        if isinstance(passes, dict) and self.names is not None:
            passes = [passes.get(n, 1) for n in self.names]  # a new source: its first pass
        ok = isinstance(passes, list) and len(passes) == k
        if not ok or not all(type(e) is int and e >= 1 for e in passes):
            raise StateError(
                f"WeightedMixIterator: checkpoint `{self.EPOCHS_KEY}` must be {k} ints >= 1 "
                f"(by source name for a named mix), got {passes!r:.80}."
            )
        self._epochs = list(passes)

    def _first_pass_over(self) -> bool:
        """Look ahead the inputs still in their first pass; True when all have ended.

        Inputs a schedule gives weight 0 at this step do not count.
        """
        drawn = self._mask()[0]
        for j, done in enumerate(self._exhausted):
            if done or not drawn[j]:
                continue
            if self._pre[j] is not None:
                if self._held[j] is NOTHING:
                    self._held[j] = self._fetch(j)  # restored: read it again
                continue
            pre = self.streams[j].get_state()
            try:
                self._held[j] = self._fetch(j)
            except StopIteration:
                self._exhausted[j] = True
                continue
            self._pre[j] = pre
        return all(e or not d for e, d in zip(self._exhausted, drawn, strict=True))

    def _again(self, i: int) -> Any:
        """The first item of input ``i``'s next pass (``NOTHING``: no pass, or empty).

        The mix starts an ended input again while it has passes left (``max_epochs``;
        by default only under ``"longest_cycle"``).
        """
        cap = None if self.caps is None else self.caps[i]
        if cap is None and self.stopping != "longest_cycle":
            return NOTHING
        if cap is not None and self._epochs[i] >= cap:
            return NOTHING
        self._full_pass(i)
        self.streams[i].reset(None)
        self._epochs[i] += 1
        try:
            return self._fetch(i)
        except StopIteration:  # an empty input cannot be cycled
            return NOTHING

    def _full_pass(self, i: int) -> None:
        """Input ``i`` starts a pass: its sources read their whole share, not a remainder."""
        for node in walk(self.streams[i]):
            if isinstance(node, DealtSource) and node._generations and node._limit is None:
                node.deal([], None)
