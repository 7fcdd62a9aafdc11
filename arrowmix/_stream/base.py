"""The checkpointable stream base class (template method, torchdata style).

User API: ``next(s)``, ``s.state_dict()``, ``s.load_state_dict(state)``, ``s.close()``
and the context-manager protocol. Subclass API: ``next()``, ``get_state()`` and
``reset(state | None)``. The base calls ``reset(None)`` lazily before the first item or
state is requested, so starting and restoring share one code path.

Checkpointing: a node's state is a small JSON dict of integers (and nested source
states); only the root ``state_dict()`` wraps it as
``{"format": 1, "pipeline": <16 hex>, "state": {...}}``. ``pipeline`` hashes the
configuration of every node (class, sizes, explicit seeds, function names, source
fingerprints), so a checkpoint loaded into a
different pipeline raises :class:`~arrowmix.exceptions.StateError` instead of silently
yielding other data. Pickling a stream pickles its configuration and its state, never
its buffers: the unpickled copy resumes where the original stood.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np
import pyarrow as pa

from arrowmix._fingerprint.hasher import hash_value
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

if TYPE_CHECKING:
    from types import TracebackType

    from arrowmix._stream.positions import PositionBatches, Positions
    from arrowmix._stream.row_source import RowSource

__all__ = [
    "FORMAT_VERSION",
    "CheckpointableIterator",
    "ElasticMode",
    "PassThrough",
    "State",
    "Stream",
    "check_keys",
]

T = TypeVar("T")
U = TypeVar("U")
F = TypeVar("F")
State = dict[str, Any]
FORMAT_VERSION = 1

_FORMAT_KEY = "format"
_PIPELINE_KEY = "pipeline"
_STATE_KEY = "state"
_EPOCH_KEY = "epoch"  # present when set_epoch chose an epoch other than 0
_NODES_KEY = "nodes"  # per node: class and compact fields (names a mismatch)


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


def checked_fn(fn: F) -> F:
    """Return ``fn`` if it is callable, else raise TypeError naming it."""
    if not callable(fn):
        raise TypeError(f"`fn` must be callable, got {fn!r}.")
    return fn


def fn_name(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)


def fn_id(owner: Stream[Any], fn: Any) -> str:
    """``fn`` for ``describe()``: its name and its digest by value (see ``identity``)."""
    from arrowmix._stream.identity import fn_identity

    return fn_identity(owner, fn)


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


class Stream(Generic[T]):
    """A checkpointable iterator; every arrowmix stage is one.

    Subclasses implement ``next()``, ``get_state()`` and ``reset(state)`` (calling
    ``super().__init__()`` and ``super().reset(state)``), list their state keys in
    ``STATE_KEYS`` (``None`` for nodes that return their source's state unchanged) and
    describe their configuration in ``describe()``.

    Example:
        >>> from arrowmix.stream import from_iterable
        >>> s = from_iterable(range(5)).map(lambda x: x * 10)
        >>> next(s), next(s)
        (0, 10)
        >>> state = s.state_dict()
        >>> rest = list(s)
        >>> s.load_state_dict(state)
        >>> list(s) == rest == [20, 30, 40]
        True
    """

    STATE_KEYS: ClassVar[tuple[str, ...] | None] = ()
    #: Attributes rebuilt by ``reset`` (buffers, threads); never pickled.
    TRANSIENT: ClassVar[tuple[str, ...]] = ()
    #: What elastic resume does with this stage (see ``ElasticRole``); ``None``:
    #: undeclared, so elastic resume refuses the pipeline with a clear error.
    ELASTIC_ROLE: ClassVar[ElasticRole | None] = None

    def __init__(self) -> None:
        self._started = False
        self._reset_called = False
        self._pending: State | None = None

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
        self._pending = None

    def describe(self) -> dict[str, Any]:
        """JSON-able configuration of this node (not of its sources)."""
        return {}

    def children(self) -> list[Stream[Any]]:
        """The streams this node reads from."""
        return []

    def replay_open_window(self) -> None:
        """Re-read the partially emitted window of a freshly restored node, yielding nothing.

        Afterwards the node's inputs stand where they stood when the checkpoint was
        taken (after every item it had read). Buffering stages override it; for the
        others there is nothing to replay.
        """

    def begin_epoch(self, epoch: int) -> None:
        """Hook of ``set_epoch``, called on every node before the restart.

        Row and chunk sources then start at ``epoch`` (its order); window stages mix it
        into their random draws (``WindowReplayStage.window_rng``). The default ignores it.
        """

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """Called on every node by elastic resume before it runs a task (a hook).

        Stages that behave differently while draining an old instance's buffered
        items (``mix``) or that read ahead in the background (``prefetch``) override
        it; the default ignores it.
        """

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

    # --------------------------------------------------------------------- user API
    def _ensure_started(self) -> None:
        try:
            started = self._started
        except AttributeError:
            raise RuntimeError(
                f"{type(self).__name__} was not initialised: did you call "
                "`super().__init__()` in its __init__?"
            ) from None
        if not started:
            self._do_reset(self._pending)
            elastic = self.__dict__.pop("_pending_elastic", None)
            if elastic is not None:
                self.load_state_dict(elastic)

    def _do_reset(self, state: State | None) -> None:
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
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"`epoch` must be an int >= 0, got {epoch!r}.")
        self._ensure_started()
        run = self.__dict__.pop("_elastic", None)
        if run is not None:
            run.leave()
        self._apply_epoch(epoch)
        self._do_reset(None)

    @property
    def chosen_epoch(self) -> int:
        """The epoch of the last ``set_epoch`` (or loaded checkpoint); 0 by default."""
        epoch: int = self.__dict__.get("_epoch_set", 0)
        return epoch

    def _apply_epoch(self, epoch: int) -> None:
        from arrowmix._stream.topology import walk

        self._epoch_set = epoch
        for node in walk(self):
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

    def load_state_dict(self, state: State | None) -> None:
        """Restore a checkpoint of ``state_dict()``; ``None`` restarts.

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
                run = ElasticRun.from_merged(self, state["merged"])
            else:
                run = ElasticRun.from_instance(self, state)
            self._elastic = run
            return
        if state is None:
            self._do_reset(None)
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
            raise StateError(
                f"checkpoint was taken from a different pipeline (fingerprint "
                f"{state[_PIPELINE_KEY]!r}, this one is {mine!r}): "
                f"{describe_mismatch(state.get(_NODES_KEY), self)}."
            )
        warn_unhashed(self)
        epoch = state.get(_EPOCH_KEY, 0)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise StateError(f"checkpoint `epoch` must be an int >= 0, got {epoch!r}.")
        if epoch != self.chosen_epoch:
            self._apply_epoch(epoch)
        self._do_reset(state[_STATE_KEY])

    def pipeline_fingerprint(self) -> str:
        """16-hex hash of the configuration of this node and everything it reads."""
        return self._identity()[0]

    def _identity(self) -> tuple[str, list[str]]:
        """``(pipeline fingerprint, node digests)``, hashed again only when it changed."""
        from arrowmix._stream.identity import node_summaries

        tree = self._config_tree()
        cached = self.__dict__.get("_identity_cache")
        if cached is not None and cached[0] == tree:
            return cached[1], cached[2]
        out = (hash_value(tree), node_summaries(self))
        self._identity_cache = (tree, *out)
        return out

    def _config_tree(self) -> list[Any]:
        return [
            type(self).__qualname__,
            self.describe(),
            [c._config_tree() for c in self.children()],
        ]

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

    def __enter__(self) -> Stream[T]:
        return self

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

    # -------------------------------------------------------------- fluent stages
    # Each stage module imports this base, so they are imported lazily here.
    def map(self, fn: Callable[[T], U], num_workers: int | None = None) -> Stream[U]:
        """Apply ``fn`` to every item, in order.

        Args:
            fn: Called with each item; its return value is the new item.
            num_workers: Threads calling ``fn`` concurrently (the order is kept); None
                calls it inline.
        """
        from arrowmix._stream.map import MapIterator, ParallelMapIterator

        if num_workers is None:
            return MapIterator(self, fn)
        return ParallelMapIterator(self, fn, num_workers=num_workers)

    def filter(self, fn: Callable[[T], bool]) -> Stream[T]:
        """Keep the items for which ``fn`` is true."""
        from arrowmix._stream.map import FilterIterator

        return FilterIterator(self, fn)

    def flat_map(self, fn: Callable[[T], Iterable[U]]) -> Stream[U]:
        """Replace every item by the items of ``fn(item)``."""
        from arrowmix._stream.flat_map import FlatMapIterator

        return FlatMapIterator(self, fn)

    def window(self, width: int) -> Stream[tuple[T, ...]]:
        """Sliding windows: tuples of ``width`` consecutive items."""
        from arrowmix._stream.window import WindowIterator

        return WindowIterator(self, width)

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Stream[T]:
        """Shuffle inside consecutive windows of ``buffer_size`` items.

        Args:
            buffer_size: Items per window; a resume re-reads at most one window.
            seed: Seed of the shuffle; None draws one (stored in the state).
        """
        from arrowmix._stream.shuffle import BufferShuffleIterator

        return BufferShuffleIterator(self, buffer_size, seed=seed)

    def batch(
        self, batch_size: int, drop_last: bool = False, *, columnar: bool = False
    ) -> Stream[Any]:
        """Group items into lists of ``batch_size`` (Arrow tables with ``columnar=True``)."""
        from arrowmix._stream.batch import BatchIterator

        return BatchIterator(self, batch_size, drop_last=drop_last, columnar=columnar)

    def collate(
        self,
        column: str = "input_ids",
        *,
        pad_id: int = 0,
        padding_side: str = "right",
        pad_to_multiple_of: int | None = None,
        max_length: int | None = None,
        labels: str | None = None,
        return_tensors: str = "np",
        dtype: Any = np.int64,
        keep: Sequence[str] = (),
    ) -> Stream[dict[str, Any]]:
        """Pad each batch of token-id documents into ``input_ids`` and ``attention_mask``.

        Behind ``batch(columnar=True)``, ``bucket(columnar=True)`` or ``budget_bucket``
        over an index stream, token ids are copied once, from the memory-mapped chunks
        into the output. ``keep`` passes other columns through as numpy arrays (a source
        name, a document id). See :class:`arrowmix._stream.collate.Collator` for the options.
        """
        from arrowmix._stream.collate import CollateIterator, Collator

        collator = Collator(
            column,
            pad_id=pad_id,
            padding_side=padding_side,
            pad_to_multiple_of=pad_to_multiple_of,
            max_length=max_length,
            labels=labels,
            return_tensors=return_tensors,
            dtype=dtype,
            keep=keep,
        )
        return CollateIterator(self, collator)

    def bucket(
        self,
        key: str | Callable[[T], float],
        batch_size: int | Callable[[T], int],
        read_ahead: int,
        *,
        boundary_key: str | Callable[[T], Any] | None = None,
        shuffle: bool = True,
        seed: int | None = None,
        columnar: bool = False,
    ) -> Stream[Any]:
        """Length-bucketed batches from sorted read-ahead windows.

        Args:
            key: Column name or ``callable(item) -> number``: the length to sort by.
            batch_size: Items per batch, or ``callable(longest_item) -> int`` for a token
                budget, e.g. ``lambda longest: 16384 // longest["n_tokens"]``.
            read_ahead: Items read and sorted at a time; a resume re-reads at most one
                window.
            boundary_key: Column name or callable; a batch also ends where its value
                changes between consecutive sorted items.
            shuffle: Yield the batches of a window in a seeded random order (else sorted).
            seed: Seed of that order; None draws one (stored in the state).
            columnar: Yield each batch as a ``pyarrow.Table`` instead of a list of row
                dicts (index streams over a Dataset, with a column ``key``).
        """
        from arrowmix._stream.bucket import LengthBucketIterator

        return LengthBucketIterator(
            self,
            key,
            batch_size,
            read_ahead,
            boundary_key=boundary_key,
            shuffle=shuffle,
            seed=seed,
            columnar=columnar,
        )

    def budget_bucket(
        self,
        key: str | Callable[[T], int],
        budget: int,
        read_ahead: int,
        *,
        num_instances: int = 1,
        instance_rank: int = 0,
        remainder: str = "drop",
        max_batch_size: int | None = None,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> Stream[list[T]]:
        """Token-budget batches, the same number on each of ``num_instances`` ranks.

        Every rank reads this same (unsharded) stream, plans the same batches per
        read-ahead window (``len(batch) * longest <= budget``) and takes every
        ``num_instances``-th one. See ``docs/multi-node.md``.

        Args:
            key: Column name or ``callable(item) -> int``: an item's length in tokens.
            budget: Most padded tokens per batch (``len(batch) * longest``).
            read_ahead: Items planned at a time; a resume re-reads at most one window.
            num_instances: Ranks sharing the batches.
            instance_rank: This rank, in ``range(num_instances)``.
            remainder: ``"drop"`` or ``"pad"``: what happens to the batches of a window that
                do not divide evenly among the ranks.
            max_batch_size: Most items per batch, whatever the budget allows.
            shuffle: Yield the batches of a window in a seeded random order.
            seed: Seed of that order; None draws one (stored in the state).
        """
        from arrowmix._stream.balanced import BudgetBucketIterator

        return BudgetBucketIterator(
            self,
            key,
            budget,
            read_ahead,
            num_instances=num_instances,
            instance_rank=instance_rank,
            remainder=remainder,
            max_batch_size=max_batch_size,
            shuffle=shuffle,
            seed=seed,
        )

    def pack(
        self,
        column: str,
        seq_len: int,
        *,
        strategy: str = "concat",
        batch_size: int = 1,
        separator: int | None = None,
        tail: str = "drop",
        long_docs: str = "split",
        read_ahead: int = 4096,
        pad_id: int = 0,
        return_tensors: str = "np",
        dtype: Any = np.int64,
    ) -> Stream[dict[str, Any]]:
        """Pack token-id documents into ``[batch_size, seq_len]`` rows.

        Yields ``{"input_ids", "segment_ids", "position_ids"}``. ``strategy``:
        ``"concat"`` (concatenate, optionally with ``separator`` after every document,
        and cut; ``tail`` ``"drop"`` or ``"pad"`` settles the end), ``"first_fit"`` or
        ``"best_fit"`` (whole documents per read-ahead window; ``long_docs``
        ``"split"``, ``"truncate"`` or ``"error"`` for documents longer than
        ``seq_len``). See :mod:`arrowmix._stream.pack`.
        """
        from arrowmix._stream.pack import BinPackIterator, ConcatPackIterator

        if strategy == "concat":
            if long_docs != "split":
                raise ValueError("`long_docs` applies to bin packing; concat splits documents.")
            return ConcatPackIterator(
                self,
                column,
                seq_len,
                batch_size=batch_size,
                separator=separator,
                tail=tail,
                read_ahead=read_ahead,
                pad_id=pad_id,
                return_tensors=return_tensors,
                dtype=dtype,
            )
        if separator is not None or tail != "drop":
            raise ValueError(
                "`separator` and `tail` apply to strategy='concat'; bin packing keeps "
                "documents whole and pads every row."
            )
        return BinPackIterator(
            self,
            column,
            seq_len,
            strategy=strategy,
            batch_size=batch_size,
            long_docs=long_docs,
            read_ahead=read_ahead,
            pad_id=pad_id,
            return_tensors=return_tensors,
            dtype=dtype,
        )

    def prefetch(self, buffer_size: int, *, processes: bool = False) -> Stream[T]:
        """Compute items in a background thread (or forked process).

        Args:
            buffer_size: Items computed ahead.
            processes: Use a forked process instead of a thread (for CPU-bound Python
                stages that hold the GIL).
        """
        from arrowmix._stream.prefetch import PrefetchIterator

        return PrefetchIterator(self, buffer_size, processes=processes)

    def take(self, n: int) -> Stream[T]:
        """Stop after ``n`` items."""
        from arrowmix._stream.limit import LimitIterator

        return LimitIterator(self, n)

    def to_torch(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` over this pipeline (needs torch).

        It splits the pipeline across DataLoader workers (and distributed ranks) and
        its iterator's ``state_dict`` plugs into torchdata's ``StatefulDataLoader``.
        """
        from arrowmix.integrations.torch import to_torch

        return to_torch(self)


class PassThrough(Stream[T]):
    """Base of the stages without state of their own (public stage kit).

    Subclasses set ``self.source`` through ``super().__init__(source)`` and implement
    ``next()`` by reading ``self.source.next()`` (or ``self.source.pull(n)``); they
    must never keep an item they read for a later call, since their state is the
    source's state. Such a stage is transparent to elastic resume.

    State:
        The source's state, unchanged (no keys of its own). Replay cost: none.

    Example:
        >>> from arrowmix.stream import PassThrough, from_iterable
        >>> class Upper(PassThrough):
        ...     def next(self):
        ...         return self.source.next().upper()
        >>> list(Upper(from_iterable("ab")))
        ['A', 'B']
    """

    STATE_KEYS = None
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        if not isinstance(source, Stream):
            raise TypeError(f"`source` must be a Stream, got {type(source).__name__}.")
        self.source = source

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self.source.reset(state)

    def get_state(self) -> State:
        return self.source.get_state()


#: The name used in the style guide; the same class.
CheckpointableIterator = Stream
