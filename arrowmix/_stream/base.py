"""The checkpointable stream base class (template method, torchdata style).

User API: ``next(s)``, ``s.state_dict()``, ``s.load_state_dict(state)``, ``s.close()``
and the context-manager protocol; each is one call to the pipeline's root
(:class:`~arrowmix._stream.root.PipelineRoot`, the wrapper that holds the run). Subclass
API (:class:`~arrowmix._stream.stage.Stage`): ``next()``, ``get_state()`` and
``reset(state | None)``. The root calls ``reset(None)`` lazily before the first item or
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
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from arrowmix._stream.root import FORMAT_VERSION, root_of
from arrowmix._stream.stage import PLAIN, ROOT, ElasticMode, Stage, State, check_keys
from arrowmix._validate import check_callable

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "FORMAT_VERSION",
    "PLAIN",
    "ElasticMode",
    "State",
    "Stream",
    "check_keys",
]

T = TypeVar("T")
U = TypeVar("U")
F = TypeVar("F")


def checked_fn(fn: F) -> F:
    """Return ``fn`` if it is callable, else raise TypeError naming it."""
    checked: F = check_callable("fn", fn)
    return checked


def fn_id(owner: Stream[Any], fn: Any) -> str:
    """``fn`` for ``describe()``: its name and its digest by value (see ``identity``)."""
    from arrowmix._stream.identity import fn_identity

    return fn_identity(owner, fn)


class Stream(Stage[T]):
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

    # ------------------------------------------- the pipeline read through this stage
    # What belongs to a run lives in its root (``root_of(self)``); each method is one call.
    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        d = self.__dict__
        root = d.get(ROOT)
        try:
            if root is None or root.elastic is not None or not d.get("_started"):
                item: T = root_of(self).next()
                return item
            return self.next()
        except StopIteration:
            # The end of the pipeline: nothing runs on after it (read-ahead downloads,
            # workers); a later restart (set_epoch, load_state_dict) starts them again.
            self.close()
            raise

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
        root_of(self).set_epoch(epoch)

    @property
    def chosen_epoch(self) -> int:
        """The epoch of the last ``set_epoch`` (or loaded checkpoint); 0 by default."""
        root = self.__dict__.get(ROOT)
        return 0 if root is None else root.epoch

    def state_dict(self) -> State:
        """The checkpoint of the whole pipeline: small and JSON-serialisable."""
        return root_of(self).state_dict()

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
        root_of(self).load_state_dict(state, allow_changes)

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
        return root_of(self).pipeline_stats(flat)

    def pipeline_fingerprint(self) -> str:
        """16-hex hash of the configuration of this node and everything it reads."""
        return root_of(self).fingerprint()

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def to_torch(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` over this pipeline (needs torch).

        It splits the pipeline across DataLoader workers (and distributed ranks) and
        its iterator's ``state_dict`` plugs into torchdata's ``StatefulDataLoader``.
        """
        from arrowmix.integrations.torch import to_torch

        return to_torch(self)

    # -------------------------------------------------------------- fluent stages
    # Each stage module imports this base, so they are imported lazily here.
    def map(self, fn: Callable[[T], U], num_workers: int | None = None) -> Stream[U]:
        """Apply ``fn`` to every item, in order.

        Args:
            fn: Called with each item; its return value is the new item.
            num_workers: Threads calling ``fn`` concurrently (the order is kept); None
                calls it inline.
        """
        from arrowmix._stream.stages.map import MapIterator, ParallelMapIterator

        if num_workers is None:
            return MapIterator(self, fn)
        return ParallelMapIterator(self, fn, num_workers=num_workers)

    def filter(self, fn: Callable[[T], bool]) -> Stream[T]:
        """Keep the items for which ``fn`` is true."""
        from arrowmix._stream.stages.map import FilterIterator

        return FilterIterator(self, fn)

    def flat_map(self, fn: Callable[[T], Iterable[U]]) -> Stream[U]:
        """Replace every item by the items of ``fn(item)``."""
        from arrowmix._stream.stages.flat_map import FlatMapIterator

        return FlatMapIterator(self, fn)

    def window(self, width: int) -> Stream[tuple[T, ...]]:
        """Sliding windows: tuples of ``width`` consecutive items."""
        from arrowmix._stream.stages.window import WindowIterator

        return WindowIterator(self, width)

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Stream[T]:
        """Shuffle inside consecutive windows of ``buffer_size`` items.

        Args:
            buffer_size: Items per window; a resume re-reads at most one window.
            seed: Seed of the shuffle; None draws one (stored in the state).
        """
        from arrowmix._stream.stages.shuffle import BufferShuffleIterator

        return BufferShuffleIterator(self, buffer_size, seed=seed)

    def batch(
        self, batch_size: int, drop_last: bool = False, *, columnar: bool = False
    ) -> Stream[Any]:
        """Group items into lists of ``batch_size`` (Arrow tables with ``columnar=True``)."""
        from arrowmix._stream.stages.batch import BatchIterator

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

        Behind ``batch(n)`` (with or without ``columnar=True``), ``bucket(columnar=True)``
        or ``budget_bucket`` over an index stream, token ids are copied once, from the
        memory-mapped chunks (or the pinned chunks of a bounded remote cache) into the
        output, and no row dicts are built. ``keep`` passes other columns through as numpy
        arrays (a source name, a document id). See
        :class:`arrowmix._stream.tokens.collate.Collator` for the options.
        """
        from arrowmix._stream.tokens.collate import CollateIterator, Collator

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
        from arrowmix._stream.stages.bucket import LengthBucketIterator

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
        from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator

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
        labels: str | None = None,
        outputs: Sequence[str] = ("segment_ids", "position_ids"),
    ) -> Stream[dict[str, Any]]:
        """Pack token-id documents into ``[batch_size, seq_len]`` rows.

        Yields ``{"input_ids", "segment_ids", "position_ids"}``. ``strategy``:
        ``"concat"`` (concatenate, optionally with ``separator`` after every document,
        and cut; ``tail`` ``"drop"`` or ``"pad"`` settles the end), ``"first_fit"`` or
        ``"best_fit"`` (whole documents per read-ahead window; ``long_docs``
        ``"split"``, ``"truncate"`` or ``"error"`` for documents longer than
        ``seq_len``). See :mod:`arrowmix._stream.tokens.pack`.

        ``labels``: ``None``, ``"shift"`` (``labels[:, t]`` is the token at ``t + 1`` of
        the same document piece, ``-100`` at each piece's last position and on padding)
        or ``"copy"`` (the ids with ``-100`` at each piece's first position and on
        padding, for models that shift). ``outputs``: the arrays built beside
        ``input_ids``, among ``"segment_ids"``, ``"position_ids"``, ``"cu_seqlens"``
        (with ``"max_seqlen"``) and ``"segment_mask"``; ``()`` builds the ids only. See
        :mod:`arrowmix._stream.tokens.packed_fields`.
        """
        from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator

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
                labels=labels,
                outputs=outputs,
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
            labels=labels,
            outputs=outputs,
        )

    def prefetch(self, buffer_size: int, *, processes: bool = False) -> Stream[T]:
        """Compute items in a background thread (or forked process).

        Args:
            buffer_size: Items computed ahead.
            processes: Use a forked process instead of a thread (for CPU-bound Python
                stages that hold the GIL).
        """
        from arrowmix._stream.stages.prefetch import PrefetchIterator

        return PrefetchIterator(self, buffer_size, processes=processes)

    def take(self, n: int) -> Stream[T]:
        """Stop after ``n`` items."""
        from arrowmix._stream.stages.limit import LimitIterator

        return LimitIterator(self, n)
