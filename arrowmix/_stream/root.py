"""The pipeline root: what belongs to a whole pipeline, not to one stage.

Whichever stage a user iterates is the root of its pipeline. The root owns the checkpoint
format (``{"format": 1, "pipeline": <16 hex>, "state": {...}}``, see
:mod:`arrowmix._stream.base`) and its fingerprint, the epoch (``set_epoch``), elastic
resume (an :class:`~arrowmix._stream.elastic.ElasticRun` drains old instances first),
pickling and ``to_torch``. It starts the pipeline lazily: the first item or state
request calls ``reset(None)`` (or the pending restore).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.consumers import CONSUMER
from arrowmix._stream.stage import Stage, State, check_keys, config_tree
from arrowmix._validate import check_int
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from types import TracebackType

    from arrowmix._stream.base import Stream

__all__ = ["FORMAT_VERSION", "PipelineRoot"]

T = TypeVar("T")
FORMAT_VERSION = 1

_FORMAT_KEY = "format"
_PIPELINE_KEY = "pipeline"
_STATE_KEY = "state"
_EPOCH_KEY = "epoch"  # present when set_epoch chose an epoch other than 0
_NODES_KEY = "nodes"  # per node: class and compact fields (names a mismatch)


class PipelineRoot(Stage[T]):
    """The pipeline-wide half of a stream: iteration, checkpoints, epochs, elastic resume."""

    def _as_stream(self) -> Stream[Any]:
        return cast("Stream[Any]", self)

    def _ensure_started(self) -> None:
        try:
            started = self._started
        except AttributeError:
            raise RuntimeError(
                f"{type(self).__name__} was not initialised: did you call "
                "`super().__init__()` in its __init__?"
            ) from None
        if not started:
            self.reset_pipeline(self._pending)
            elastic = self.__dict__.pop("_pending_elastic", None)
            if elastic is not None:
                self.load_state_dict(elastic)

    def reset_pipeline(self, state: State | None) -> None:
        """``reset(state)`` of this node, checking that it reached ``Stage.reset``."""
        self._reset_called = False
        self.reset(state)
        if not self._reset_called:
            raise RuntimeError(
                f"{type(self).__name__}.reset() did not call `super().reset(state)`."
            )

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if not self.__dict__.get("_started"):
            self._ensure_started()
        run = self.__dict__.get("_elastic")
        if run is not None:  # elastic resume: the run drains old instances first
            item: T = run.next()
            return item
        return self.next()

    def set_epoch(self, epoch: int) -> None:
        """Restart at the beginning of epoch ``epoch`` (as torch samplers' ``set_epoch``).

        A finite stream (``infinite=False``) otherwise yields the same order on every
        pass; with ``set_epoch(e)`` its row and chunk sources read the order of epoch
        ``e`` and its shuffle and bucketing windows draw from ``(seed, window, e)``.
        ``state_dict()`` records the epoch, so loading a checkpoint resumes inside it.

        Example:
            >>> from arrowmix.stream import from_iterable
            >>> s = from_iterable(range(8)).shuffle(8, seed=0)
            >>> s.set_epoch(0); a = list(s)
            >>> s.set_epoch(1); b = list(s)
            >>> a != b and sorted(a) == sorted(b) == list(range(8))
            True
        """
        epoch = check_int("epoch", epoch, minimum=0)
        self._ensure_started()
        run = self.__dict__.pop("_elastic", None)
        if run is not None:
            run.leave()
        self.apply_epoch(epoch)
        self.reset_pipeline(None)

    @property
    def chosen_epoch(self) -> int:
        """The epoch of the last ``set_epoch`` (or loaded checkpoint); 0 by default."""
        epoch: int = self.__dict__.get("_epoch_set", 0)
        return epoch

    def apply_epoch(self, epoch: int) -> None:
        """Record ``epoch`` as the chosen one and begin it in every node (no reset)."""
        from arrowmix._stream.topology import walk

        self._epoch_set = epoch
        for node in walk(self._as_stream()):
            node.begin_epoch(epoch)

    def state_dict(self) -> State:
        """The checkpoint of the whole pipeline: small and JSON-serialisable."""
        self._ensure_started()
        run = self.__dict__.get("_elastic")
        if run is not None:
            state: State = run.state_dict()
            return state
        fingerprint, nodes = self._identity()
        out = {
            _FORMAT_KEY: FORMAT_VERSION,
            _PIPELINE_KEY: fingerprint,
            _STATE_KEY: self.get_state(),
            _NODES_KEY: list(nodes),
        }
        if self.chosen_epoch:
            out[_EPOCH_KEY] = self.chosen_epoch
        return out

    def load_state_dict(self, state: State | None, *, allow_changes: bool = False) -> None:
        """Restore a checkpoint of ``state_dict()``; ``None`` restarts.

        ``allow_changes=True`` resumes a checkpoint of a pipeline whose named mixes
        (``mix({name: stream, ...})``) have other weights or sources: each kept source
        continues where it stopped, a new one starts at its beginning, a removed one is
        reported. Every other stage must be the same, stage by stage, and so must each
        kept source (a source under a kept name that is another sub-pipeline is
        refused: give it a new name to read it from its beginning). A changed mix followed by a
        buffering stage (``shuffle``, ``map(num_workers=N)``, ``prefetch``, bucketing,
        ``pack``) is refused with a ``StateError``: that stage would replay its open
        window under the new mixture, i.e. other rows.

        Also accepts ``arrowmix.stream.merge_states`` of the checkpoints of every
        instance of a run with another number of instances (elastic resume, see
        :mod:`arrowmix._stream.elastic`).
        """
        self._ensure_started()
        run = self.__dict__.pop("_elastic", None)
        if run is not None:
            run.leave()
        if isinstance(state, dict) and ("merged" in state or "elastic" in state):
            from arrowmix._stream.elastic import ElasticRun

            if "merged" in state:
                run = ElasticRun.from_merged(self._as_stream(), state["merged"], allow_changes)
            else:
                run = ElasticRun.from_instance(self._as_stream(), state, allow_changes)
            self._elastic = run
            return
        if state is None:
            self.reset_pipeline(None)
            return
        keys = [_FORMAT_KEY, _PIPELINE_KEY, _STATE_KEY]
        keys += [k for k in (_EPOCH_KEY, _NODES_KEY) if k in state]  # optional
        check_keys(self, state, keys)
        if state[_FORMAT_KEY] != FORMAT_VERSION:
            raise StateError(
                f"checkpoint format {state[_FORMAT_KEY]!r} is not supported; "
                f"this arrowmix reads format {FORMAT_VERSION}."
            )
        from arrowmix._stream.identity import describe_mismatch, warn_unhashed

        mine = self.pipeline_fingerprint()
        if state[_PIPELINE_KEY] != mine:
            from arrowmix._stream.stages.map import adopt_map_forms

            if adopt_map_forms(self._as_stream(), state[_PIPELINE_KEY], state.get(_NODES_KEY)):
                mine = state[_PIPELINE_KEY]  # only maps' worker counts differ
        if state[_PIPELINE_KEY] != mine and not allow_changes:
            raise StateError(
                f"checkpoint was taken from a different pipeline (fingerprint "
                f"{state[_PIPELINE_KEY]!r}, this one is {mine!r}): "
                f"{describe_mismatch(state.get(_NODES_KEY), self._as_stream())}."
            )
        warn_unhashed(self._as_stream())
        epoch = state.get(_EPOCH_KEY, 0)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise StateError(f"checkpoint `epoch` must be an int >= 0, got {epoch!r}.")
        if epoch != self.chosen_epoch:
            self.apply_epoch(epoch)
        if allow_changes:
            from arrowmix._stream.mixing.changes import check_changes
            from arrowmix._stream.topology import open_for_changes

            if state[_PIPELINE_KEY] != mine:
                check_changes(state.get(_NODES_KEY), self._as_stream())
            open_for_changes(self._as_stream())
        self.reset_pipeline(state[_STATE_KEY])

    def pipeline_stats(self, *, flat: bool = False) -> dict[str, Any]:
        """Every stage's ``stats()``, keyed by its path from this root.

        Paths name the stages top-down (``"collate/budget_bucket/mix"``; an input of a
        node with several is named by its mix name or index: ``"mix/web:source"``).
        Batching stages report rows, tokens, padding efficiency, dropped rows and
        tokens and ``wait_seconds``; a mix reports its ratios and tokens per source
        (see ``docs/observability.md``). The counters are not part of the checkpoint.
        ``flat=True`` gives ``{"collate/tokens": 123, ...}`` for a logger.

        Example:
            >>> from arrowmix.stream import from_iterable
            >>> s = from_iterable(range(5)).batch(2, drop_last=True)
            >>> _ = list(s)
            >>> s.pipeline_stats()["batch"]["dropped_rows"]
            1
        """
        from arrowmix._stream.counters import collect, flatten

        self._ensure_started()
        stats = collect(self._as_stream())
        return flatten(stats) if flat else stats

    def pipeline_fingerprint(self) -> str:
        """16-hex hash of the configuration of this node and everything it reads."""
        return self._identity()[0]

    def _identity(self) -> tuple[str, list[str]]:
        """``(pipeline fingerprint, node digests)``, hashed again only when it changed."""
        from arrowmix._stream.identity import node_summaries

        tree = config_tree(self)
        cached = self.__dict__.get("_identity_cache")
        if cached is not None and cached[0] == tree:
            return cached[1], cached[2]
        out = (hash_value(tree), node_summaries(self._as_stream()))
        self._identity_cache = (tree, *out)
        return out

    def __enter__(self) -> Stream[T]:
        return cast("Stream[T]", self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("_fn_ids", None)  # function digests: recomputed from the code where loaded
        d.pop("_identity_cache", None)
        d.pop(CONSUMER, None)  # a weak reference; the consumer claims it again
        for cls in type(self).__mro__:
            for name in getattr(cls, "TRANSIENT", ()):
                d.pop(name, None)
        if d.get("_started"):
            d["_pending"] = self.get_state()
        if d.pop("_elastic", None) is not None:
            d["_pending_elastic"] = self.state_dict()
            d["_pending"] = None
        d["_started"] = False
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        for child in self.children():
            child.__dict__[CONSUMER] = weakref.ref(self)

    def to_torch(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` over this pipeline (needs torch).

        It splits the pipeline across DataLoader workers (and distributed ranks) and
        its iterator's ``state_dict`` plugs into torchdata's ``StatefulDataLoader``.
        """
        from arrowmix.integrations.torch import to_torch

        return to_torch(self._as_stream())
