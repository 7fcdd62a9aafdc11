"""The pipeline root: the one object that holds what belongs to a run, not to a stage.

Whichever stage a user iterates is the top of its pipeline; a :class:`PipelineRoot`
wraps it (as torchdata's ``Loader`` wraps its root node) and holds the run: the epoch
chosen by ``set_epoch``, the elastic run (an :class:`~arrowmix._stream.elastic.ElasticRun`
drains old instances first), the restore an unpickled pipeline still owes, and the
cached fingerprint. It owns the checkpoint format
(``{"format": 1, "pipeline": <16 hex>, "state": {...}}``, see
:mod:`arrowmix._stream.base`) and starts the pipeline lazily: the first item or state
request calls ``reset(None)`` on the stage (or the pending restore).

A stage carries no run state: ``Stream``'s user methods (``next(s)``, ``state_dict``,
``load_state_dict``, ``set_epoch``, ``pipeline_stats``) each delegate in one call to
``root_of(stage)``, created on first use and kept in the stage's ``__dict__``. Whether
the pipeline has started is the top stage's own fact (its ``reset`` ran, see
``Stage.restart``), so a stage reset directly stays where it was reset.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage.background import not_awaited
from arrowmix._stream.stage import ROOT, Stage, State, check_keys, config_tree
from arrowmix._validate import check_int
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream
    from arrowmix._stream.elastic import ElasticRun

__all__ = ["FORMAT_VERSION", "PipelineRoot", "root_of"]

T = TypeVar("T")
FORMAT_VERSION = 1

_FORMAT_KEY = "format"
_PIPELINE_KEY = "pipeline"
_STATE_KEY = "state"
_EPOCH_KEY = "epoch"  # present when set_epoch chose an epoch other than 0
_NODES_KEY = "nodes"  # per node: class and compact fields (names a mismatch)


def root_of(stage: Stage[T]) -> PipelineRoot[T]:
    """The root of the pipeline read through ``stage`` (created on first use)."""
    root: PipelineRoot[T] | None = stage.__dict__.get(ROOT)
    if root is None:
        root = stage.__dict__[ROOT] = PipelineRoot(stage)
        # Dropped without close(): its sources stop their background work then, even one
        # a worker thread still holds (a prefetch worker stops at its next step).
        weakref.finalize(stage, _release, stage.children())
    return root


def _release(children: Sequence[Stage[Any]]) -> None:
    """Close the stages under a dropped pipeline's top, waiting for nothing (any thread)."""
    with not_awaited():
        for child in children:
            with contextlib.suppress(Exception):
                child.close()


class PipelineRoot(Generic[T]):
    """The run of a pipeline read through ``stage``: checkpoints, epochs, elastic resume.

    Attributes:
        stage: the stage the pipeline is read through (its top), which holds this root
            (by a weak reference back: dropping a pipeline frees its stages at once).
        epoch: the epoch of the last ``set_epoch`` (or loaded checkpoint).
        elastic: the elastic run draining old instances, or ``None``.
        pending: a state to restore at the first use (an unpickled pipeline).
        pending_elastic: an elastic checkpoint to load at the first use.
    """

    def __init__(self, stage: Stage[T]) -> None:
        self._stage = weakref.ref(stage)
        self.epoch = 0
        self.elastic: ElasticRun | None = None
        self.pending: State | None = None
        self.pending_elastic: State | None = None
        self._identity: tuple[Any, str, list[str]] | None = None

    @property
    def stage(self) -> Stage[T]:
        stage = self._stage()
        if stage is None:  # only its stage holds a root
            raise RuntimeError("the stage of this pipeline root was garbage-collected.")
        return stage

    def _top(self) -> Stream[Any]:
        top: Stream[Any] = self.stage  # type: ignore[assignment]
        return top

    # ------------------------------------------------------------------ starting
    def ensure_started(self) -> None:
        """Reset the stage (to the pending restore) unless its ``reset`` already ran."""
        try:
            started = self.stage._started
        except AttributeError:
            raise RuntimeError(
                f"{type(self.stage).__name__} was not initialised: did you call "
                "`super().__init__()` in its __init__?"
            ) from None
        if not started:
            pending, self.pending = self.pending, None
            self.reset(pending)
            elastic, self.pending_elastic = self.pending_elastic, None
            if elastic is not None:
                self.load_state_dict(elastic)

    def reset(self, state: State | None) -> None:
        """``reset(state)`` of the stage, checking that it reached ``Stage.reset``."""
        stage = self.stage
        stage._reset_called = False
        stage.reset(state)
        if not stage._reset_called:
            raise RuntimeError(
                f"{type(stage).__name__}.reset() did not call `super().reset(state)`."
            )

    def forget_pending(self) -> None:
        """Drop the pending restore (the stage was reconfigured: ``Stage.restart``)."""
        self.pending = None

    def next(self) -> T:
        """The next item of the pipeline (the elastic run's while it drains)."""
        if not self.stage.__dict__.get("_started"):
            self.ensure_started()
        if self.elastic is not None:  # elastic resume: the run drains old instances first
            item: T = self.elastic.next()
            return item
        return self.stage.next()

    def _leave_elastic(self) -> None:
        run, self.elastic = self.elastic, None
        if run is not None:
            run.leave()

    # -------------------------------------------------------------------- epochs
    def set_epoch(self, epoch: int) -> None:
        """Restart at the beginning of epoch ``epoch`` (see ``Stream.set_epoch``)."""
        epoch = check_int("epoch", epoch, minimum=0)
        self.ensure_started()
        self._leave_elastic()
        self.apply_epoch(epoch)
        self.reset(None)

    def apply_epoch(self, epoch: int) -> None:
        """Record ``epoch`` as the chosen one and begin it in every node (no reset)."""
        from arrowmix._stream.topology import walk

        self.epoch = epoch
        for node in walk(self._top()):
            node.begin_epoch(epoch)

    # --------------------------------------------------------------- checkpoints
    def state_dict(self) -> State:
        """The checkpoint of the whole pipeline (see ``Stream.state_dict``)."""
        self.ensure_started()
        if self.elastic is not None:
            state: State = self.elastic.state_dict()
            return state
        fingerprint, nodes = self.identity()
        out = {
            _FORMAT_KEY: FORMAT_VERSION,
            _PIPELINE_KEY: fingerprint,
            _STATE_KEY: self.stage.get_state(),
            _NODES_KEY: list(nodes),
        }
        if self.epoch:
            out[_EPOCH_KEY] = self.epoch
        return out

    def load_state_dict(self, state: State | None, allow_changes: bool = False) -> None:
        """Restore a checkpoint (see ``Stream.load_state_dict``)."""
        self.ensure_started()
        self._leave_elastic()
        top = self._top()
        if isinstance(state, dict) and ("merged" in state or "elastic" in state):
            from arrowmix._stream.elastic import ElasticRun

            if "merged" in state:
                self.elastic = ElasticRun.from_merged(top, state["merged"], allow_changes)
            else:
                self.elastic = ElasticRun.from_instance(top, state, allow_changes)
            return
        if state is None:
            self.reset(None)
            return
        keys = [_FORMAT_KEY, _PIPELINE_KEY, _STATE_KEY]
        keys += [k for k in (_EPOCH_KEY, _NODES_KEY) if k in state]  # optional
        check_keys(self.stage, state, keys)
        if state[_FORMAT_KEY] != FORMAT_VERSION:
            raise StateError(
                f"checkpoint format {state[_FORMAT_KEY]!r} is not supported; "
                f"this arrowmix reads format {FORMAT_VERSION}."
            )
        from arrowmix._stream.identity import describe_mismatch, warn_unhashed

        mine = self.fingerprint()
        if state[_PIPELINE_KEY] != mine:
            from arrowmix._stream.stages.map import adopt_map_forms

            if adopt_map_forms(top, state[_PIPELINE_KEY], state.get(_NODES_KEY)):
                mine = state[_PIPELINE_KEY]  # only maps' worker counts differ
        if state[_PIPELINE_KEY] != mine and not allow_changes:
            raise StateError(
                f"checkpoint was taken from a different pipeline (fingerprint "
                f"{state[_PIPELINE_KEY]!r}, this one is {mine!r}): "
                f"{describe_mismatch(state.get(_NODES_KEY), top)}."
            )
        warn_unhashed(top)
        epoch = state.get(_EPOCH_KEY, 0)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise StateError(f"checkpoint `epoch` must be an int >= 0, got {epoch!r}.")
        if epoch != self.epoch:
            self.apply_epoch(epoch)
        if allow_changes:
            from arrowmix._stream.mixing.changes import check_changes
            from arrowmix._stream.topology import open_for_changes

            if state[_PIPELINE_KEY] != mine:
                check_changes(state.get(_NODES_KEY), top)
            open_for_changes(top)
        self.reset(state[_STATE_KEY])

    def pipeline_stats(self, flat: bool = False) -> dict[str, Any]:
        """Every stage's ``stats()`` (see ``Stream.pipeline_stats``)."""
        from arrowmix._stream.counters import collect, flatten

        self.ensure_started()
        stats = collect(self._top())
        return flatten(stats) if flat else stats

    def fingerprint(self) -> str:
        """16-hex hash of the configuration of the stage and everything it reads."""
        return self.identity()[0]

    def identity(self) -> tuple[str, list[str]]:
        """``(pipeline fingerprint, node digests)``, hashed again only when it changed."""
        from arrowmix._stream.identity import node_summaries

        tree = config_tree(self.stage)
        cached = self._identity
        if cached is not None and cached[0] == tree:
            return cached[1], cached[2]
        out = (hash_value(tree), node_summaries(self._top()))
        self._identity = (tree, *out)
        return out

    # ------------------------------------------------------------------ pickling
    def owed(self) -> dict[str, Any]:
        """What a pickled (or copied) pipeline owes at its first use: its state, never buffers."""
        stage = self.stage
        out = {"epoch": self.epoch, "pending": self.pending}
        out["pending_elastic"] = self.pending_elastic
        if stage.__dict__.get("_started"):
            out["pending"] = stage.get_state()
        if self.elastic is not None:
            out["pending_elastic"] = self.state_dict()
            out["pending"] = None
        return out

    @classmethod
    def from_owed(cls, stage: Stage[T], owed: dict[str, Any]) -> PipelineRoot[T]:
        """The root of an unpickled (or copied) ``stage``, from ``owed()``."""
        root = cls(stage)
        root.epoch = owed["epoch"]
        root.pending = owed["pending"]
        root.pending_elastic = owed["pending_elastic"]
        return root
