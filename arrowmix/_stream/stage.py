"""The stage base: what every node of a pipeline implements (torchdata ``BaseNode``'s size).

A :class:`Stage` yields items (``next``, ``pull``), reports and restores its own state
(``get_state``, ``reset``), describes its configuration (``describe``), names its
inputs (``children``) and declares what elastic resume does with it (``ELASTIC_ROLE``).
It may offer its items as row positions (``as_positions``, ``as_position_batches``: see
:mod:`arrowmix._stream.positions`). A stage holds no run state: what belongs to a run of
the pipeline (the checkpoint format, the epoch, elastic resume, a pending restore) lives
in one :class:`~arrowmix._stream.root.PipelineRoot` beside the stage that is iterated;
the fluent builders and the user methods that delegate to that root are in
:mod:`arrowmix._stream.base`.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import pyarrow as pa

from arrowmix._stream.consumers import BUILDING, CONSUMER, claim_inputs
from arrowmix._stream.hooks import StageHooks
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream
    from arrowmix._stream.positions import PositionBatches, Positions
    from arrowmix._stream.row_source import RowSource

__all__ = [
    "PLAIN",
    "ROOT",
    "ElasticMode",
    "Stage",
    "State",
    "attribute_streams",
    "check_keys",
    "config_tree",
]

T = TypeVar("T")
State = dict[str, Any]

#: The attribute of a stage holding its :class:`~arrowmix._stream.root.PipelineRoot`.
ROOT = "_root"


def check_keys(owner: object, state: State, keys: Iterable[str]) -> None:
    """Raise StateError naming ``owner``'s class when ``state`` lacks or adds keys."""
    if not isinstance(state, dict):
        raise StateError(
            f"{type(owner).__name__}: a state must be a dict, got {type(state).__name__}."
        )
    expected = set(keys)
    missing = sorted(expected - state.keys())
    extra = sorted(state.keys() - expected)
    if missing or extra:
        raise StateError(
            f"{type(owner).__name__} cannot load this state: missing keys {missing}, "
            f"unexpected keys {extra}. Was it taken from a different pipeline?"
        )


@dataclass(frozen=True)
class ElasticMode:
    """What elastic resume tells every node before it runs a task.

    Attributes:
        draining: the sources stop where an old instance had read (an input that
            ends is dropped, whatever the stopping rule).
        synchronous: no background read-ahead (frontiers are being computed).
    """

    draining: bool = False
    synchronous: bool = False


#: The mode of a pipeline outside elastic resume.
PLAIN = ElasticMode()


class Stage(StageHooks, Generic[T]):
    """One node of a pipeline: the per-node contract every arrowmix stage implements.

    Subclasses implement ``next()``, ``get_state()`` and ``reset(state)`` (calling
    ``super().__init__()`` and ``super().reset(state)``), list their state keys in
    ``STATE_KEYS`` and describe their configuration in ``describe()``; they may override
    the optional hooks declared in :class:`~arrowmix._stream.hooks.StageHooks`. Users
    subclass :class:`~arrowmix.stream.Stream` (this plus the fluent builders and the user
    methods, which delegate to the pipeline's root).
    """

    STATE_KEYS: ClassVar[tuple[str, ...] | None] = ()
    #: Attributes rebuilt by ``reset`` (buffers, threads); never pickled.
    TRANSIENT: ClassVar[tuple[str, ...]] = ()
    #: What elastic resume does with this stage (see ``ElasticRole``); ``None``:
    #: undeclared, so elastic resume refuses the pipeline with a clear error.
    ELASTIC_ROLE: ClassVar[ElasticRole | None] = None

    #: Elastic resume starts this stage's own state afresh on the new instances (a
    #: ``TRANSPARENT`` stage whose state is counters the new run may restart). Otherwise
    #: a ``TRANSPARENT`` stage with state keys of its own must
    #: merge it (``merge_elastic_states``) or elastic resume refuses it.
    ELASTIC_STATE_RESTARTS: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every stage claims its inputs once built (one consumer per stream)."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _claiming_init(init)  # type: ignore[method-assign]

    def _claim_inputs(self) -> None:
        """Claim this stage's inputs (one consumer per stream), once it is built."""
        inputs = self.children()
        if type(self).children is Stage.children:  # found in attributes: held twice?
            inputs = attribute_streams(self, unique=False)
        claim_inputs(self, inputs)

    def __init__(self) -> None:
        self._started = False  # this stage's reset ran (since it was built or restarted)
        self._reset_called = False

    def restart(self) -> None:
        """Start again lazily: the next item or state request calls ``reset(None)``.

        For stages whose configuration changed (``reshard``, ``deal``).
        """
        self._started = False
        root = self.__dict__.get(ROOT)
        if root is not None:
            root.forget_pending()

    # ----------------------------------------------------------------- subclass API
    def next(self) -> T:
        """Return the next item or raise StopIteration (subclass hook)."""
        raise StopIteration

    def get_state(self) -> State:
        """Return this node's state as a fresh JSON-able dict (subclass hook)."""
        return {}

    def reset(self, state: State | None = None) -> None:
        """Start from the beginning (``None``) or from ``state`` (subclass hook).

        Overrides must call ``super().reset(state)`` first; it validates the keys.
        """
        if state is not None and self.STATE_KEYS is not None:
            check_keys(self, state, self.STATE_KEYS)
        self._started = True
        self._reset_called = True

    def describe(self) -> dict[str, Any]:
        """JSON-able configuration of this node (not of its sources)."""
        return {}

    def children(self) -> list[Stream[Any]]:
        """The streams this node reads from.

        The default finds them: every stream held in an attribute (``self.source``) or
        in a list or tuple attribute (``self.streams``), in attribute order. The epoch
        (``set_epoch``), the pipeline fingerprint, ``close`` and elastic resume reach the
        stages below through it, so an override must name every stream the node reads.
        """
        return attribute_streams(self)

    @property
    def schema(self) -> pa.Schema | None:
        """The Arrow schema of the rows, when known."""
        return None

    def row_source(self) -> RowSource | None:
        """The row source whose positions this stream can yield (index streams)."""
        return None

    def as_positions(self) -> Positions | None:
        """This stream as row positions (the positions protocol), or ``None``.

        Index streams (``row_source()`` is not ``None``) return a
        :class:`~arrowmix._stream.positions.Positions` view; a consumer asks for it
        once, when it is built, and then reads this stream through the view only.
        """
        return None

    def as_position_batches(self, column: str | None = None) -> PositionBatches | None:
        """This batching stream as batches of row positions, or ``None``.

        ``collate`` asks for it (``column``: the token column it pads); see
        :class:`~arrowmix._stream.positions.PositionBatches`.
        """
        return None

    def pull(self, n: int) -> list[T]:
        """Up to ``n`` next items, fewer only at the end (how a stage reads its input).

        Stages call it on their source (``self.source.pull(n)``), never on a pipeline's
        root: iterate the root instead. The default calls ``next()``; stages may
        override it to read a block at once.
        """
        out: list[T] = []
        nxt = self.next
        try:
            for _ in range(n):
                out.append(nxt())
        except StopIteration:
            pass
        return out

    def __repr__(self) -> str:
        return f"<Stream {self.explain()}>"

    def explain(self) -> str:
        """One-line description of the pipeline (for error messages)."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items())
        inner = ", ".join(c.explain() for c in self.children())
        return f"{type(self).__name__}({args})" + (f" <- [{inner}]" if inner else "")

    def close(self) -> None:
        """Release background workers of this stream and of its sources."""
        for c in self.children():
            c.close()

    def __getstate__(self) -> dict[str, Any]:
        """The configuration and the state, never buffers: the copy resumes where this stood."""
        d = dict(self.__dict__)
        d.pop("_fn_ids", None)  # function digests: recomputed from the code where loaded
        d.pop(CONSUMER, None)  # a weak reference; the consumer claims it again
        for cls in type(self).__mro__:
            for name in cls.__dict__.get("TRANSIENT", ()):
                d.pop(name, None)
        root = d.pop(ROOT, None)
        if root is not None or d.get("_started"):  # the restore its copy owes
            from arrowmix._stream.root import PipelineRoot

            d[ROOT] = (root if root is not None else PipelineRoot(self)).owed()
        d["_started"] = False
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        owed = d.pop(ROOT, None)
        self.__dict__.update(d)
        if owed is not None:
            from arrowmix._stream.root import PipelineRoot

            self.__dict__[ROOT] = PipelineRoot.from_owed(self, owed)
        for child in self.children():
            child.__dict__[CONSUMER] = weakref.ref(self)


def attribute_streams(node: object, *, unique: bool = True) -> list[Any]:
    """The stages held by ``node``'s attributes (directly, or in a list or tuple).

    ``unique=False`` lists a stage held twice twice (one consumer per stream checks it).
    """
    out: list[Any] = []
    for value in vars(node).values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            fresh = not unique or all(item is not o for o in out)
            if isinstance(item, Stage) and item is not node and fresh:
                out.append(item)
    return out


def config_tree(node: Stage[Any], names: dict[int, str] | None = None) -> list[Any]:
    """``[class, describe(), [children's trees]]``: what a pipeline fingerprint hashes.

    ``names`` replaces the class name of the nodes whose ``id`` it holds.
    """
    name = type(node).__qualname__ if names is None else names.get(id(node))
    return [
        name or type(node).__qualname__,
        node.describe(),
        [config_tree(c, names) for c in node.children()],
    ]


def _claiming_init(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a stage class's ``__init__`` so that the outermost call claims the inputs."""
    if getattr(init, "_claims_inputs", False):
        return init

    @functools.wraps(init)
    def wrapped(self: Stage[Any], *args: Any, **kwargs: Any) -> None:
        d = self.__dict__
        depth = d.get(BUILDING, 0)
        d[BUILDING] = depth + 1
        try:
            init(self, *args, **kwargs)
        finally:
            if depth:
                d[BUILDING] = depth
            else:
                d.pop(BUILDING, None)
        if not depth:
            self._claim_inputs()

    wrapped._claims_inputs = True  # type: ignore[attr-defined]
    return wrapped
