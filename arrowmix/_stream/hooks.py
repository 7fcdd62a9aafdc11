"""The optional hooks of a stage, declared in one class with their defaults.

A stage (:class:`~arrowmix._stream.stage.Stage`) implements the contract (``next``,
``get_state``, ``reset``, ``describe``, ``children``, ``ELASTIC_ROLE``) and may override
any hook of :class:`StageHooks`. ``Stage`` inherits ``StageHooks``, so every stage has
every hook, with a default that means "nothing to do" or "not offered": the stream layer
calls the hooks directly and never looks a member up by name. Where the default cannot
say "not offered" (a stage that counts tokens, follows a schedule or merges its own
state), :func:`offers` tells whether the stage's class overrides the hook.

Define the hooks on the stage class (or on a mixin listed before ``Stream`` in its
bases): ``StageHooks`` comes right after ``Stage`` in the method resolution order, so its
defaults shadow a mixin listed after ``Stream``.

``StageHooks`` is a plain class (its metaclass is ``type``), not a ``typing.Protocol``: a
user stage may have a metaclass of its own (``abc.ABCMeta`` or any other) without a
metaclass conflict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from arrowmix._stream.stage import ElasticMode

__all__ = ["HOOKS", "StageHooks", "offers"]


class StageHooks:
    """The optional hooks of a stage, each with its default (every stage inherits them).

    Restoring and epochs: ``replay_open_window``, ``begin_epoch``. Elastic resume:
    ``set_elastic_mode``, ``elastic_state`` / ``merge_elastic_states`` /
    ``load_elastic_state`` (a stage's own state across N -> M), ``sharding``,
    ``ELASTIC_REFUSAL``. Mixture changes and schedules: ``allow_changes``,
    ``child_names``, ``schedule_step`` / ``start_schedule_at``, ``REPLAYS_ON_RESTORE``.
    Observability: ``stats``, ``stats_below``, ``count_tokens``.
    """

    #: Why elastic resume refuses a ``REFUSING`` stage (its error message says it).
    ELASTIC_REFUSAL: ClassVar[str] = "it cannot be re-dealt"
    #: The stage reads again items it had read when it is restored (``window``): a
    #: changed mix before it is refused as a buffering stage would be.
    REPLAYS_ON_RESTORE: ClassVar[bool] = False

    # ------------------------------------------------------- restoring and epochs
    def replay_open_window(self) -> None:
        """Re-read the partially emitted window of a freshly restored node, yielding nothing.

        Afterwards the node's inputs stand where they stood when the checkpoint was
        taken (after every item it had read). Buffering stages override it; for the
        others there is nothing to replay.
        """
        return None

    def begin_epoch(self, epoch: int) -> None:
        """Hook of ``set_epoch``, called on every node before the restart.

        Row and chunk sources then start at ``epoch`` (its order); window stages mix it
        into their random draws (``WindowReplayStage.window_rng``). The default ignores it.
        """
        return None

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """Called on every node by elastic resume before it runs a task (a hook).

        Stages that behave differently while draining an old instance's buffered
        items (``mix``) or that read ahead in the background (``prefetch``) override
        it; the default ignores it.
        """
        return None

    # ---------------------------------------------------- own state across a resize
    def elastic_state(self) -> Any:
        """This stage's own state as elastic resume merges it (JSON-able; a hook).

        Read once the stage is restored to an old instance's checkpoint (and its open
        windows replayed), and during an elastic run (after ``load_elastic_state``).
        """
        return None

    @classmethod
    def merge_elastic_states(cls, states: list[Any], num_instances: int) -> list[Any] | None:
        """Merge the ``elastic_state()`` of N old instances into ``num_instances`` (a hook).

        Returns one state per new instance, in instance order. The default returns
        ``None``: the stage declares no merge, and elastic resume refuses it if it keeps
        state of its own. ``take`` shares its remaining count: N -> M instances yield the
        total of the uninterrupted run.
        """
        return None

    def load_elastic_state(self, state: Any) -> None:
        """Hold ``state`` (one of ``merge_elastic_states``) for an elastic run (a hook).

        Called after each task of the run is restored, so that the state carries from an
        old instance's drain to the new main task; ``None`` ends the run (back to the
        stage's plain state).
        """
        return None

    # ------------------------------------------------------------ sharding, changes
    @property
    def sharding(self) -> tuple[int, int] | None:
        """``(num_instances, instance_rank)`` of a stage that deals rows to instances.

        Row and chunk sources (``SOURCE``) and ``budget_bucket`` (``DEALER``) report
        their share; ``None`` for every other stage.
        """
        return None

    def allow_changes(self, allowed: bool) -> None:
        """Let the next restore resume a checkpoint of a changed configuration (a hook).

        ``load_state_dict(state, allow_changes=True)`` calls it on every node; a named
        ``mix`` then accepts other weights and sources. The default ignores it.
        """
        return None

    def child_names(self) -> list[str] | None:
        """The names of this stage's inputs (a named ``mix``), or ``None``.

        They key the inputs' stats paths, the checkpoint's per-source records and the
        sources of an elastic checkpoint.
        """
        return None

    def schedule_step(self) -> int | None:
        """The step a weight schedule stands at (offered by ``mix``; see :func:`offers`).

        Elastic resume continues the schedules of the stages that offer it where the
        old instances were.
        """
        return None

    def start_schedule_at(self, step: int) -> None:
        """Make the next fresh start stand at ``step`` of the schedule (with ``schedule_step``)."""
        return None

    # ---------------------------------------------------------------- observability
    def stats(self) -> dict[str, Any] | None:
        """This stage's counters for ``pipeline_stats()`` (``None``: it reports none).

        Process-local and never checkpointed (see ``docs/observability.md``).
        """
        return None

    def stats_below(self) -> dict[str, dict[str, Any]] | None:
        """The stats of the stages below, when they run elsewhere (a worker process).

        Keyed by path below this stage; ``None`` (the default): the stages below are
        asked themselves.
        """
        return None

    def count_tokens(self, positions: np.ndarray, lengths: np.ndarray) -> None:
        """Count ``lengths`` tokens for the rows at ``positions`` of this stage's rows.

        Offered by ``mix`` (see :func:`offers`): a token stage above it reports the
        tokens of each batch it built, so that the mix reports tokens per input.
        """
        return None


#: The names of the hooks :func:`offers` answers for.
HOOKS = frozenset(name for name in vars(StageHooks) if not name.startswith("_") and name.islower())


def offers(node: object, hook: str) -> bool:
    """Whether ``node``'s class overrides ``hook`` (a name of :data:`HOOKS`).

    A class before :class:`StageHooks` in the method resolution order defines it.
    """
    if hook not in HOOKS:
        raise AttributeError(f"{hook!r} is not a hook of StageHooks.")
    for cls in type(node).__mro__:
        if cls is StageHooks:
            return False
        if hook in vars(cls):
            return True
    return False
