"""Token-budget batches with the same number of batches on every instance.

Every instance reads the *same* stream (not sharded) and plans the same global batches
from each read-ahead window of it: sort the window by length (longest first, stable),
cut batches so that ``batch size * longest length <= budget``, shuffle the batches
(seeded by the window number), then deal whole batches round-robin: instance ``r`` of
``N`` takes batches ``r, r + N, ...``. When the batch count of a window is not a
multiple of ``N``, ``remainder="drop"`` drops the last ``B mod N`` shuffled batches
(every row at most once per epoch) and ``remainder="pad"`` repeats the first ones
(every row at least once). Either way each instance yields exactly
``floor(B / N)`` (drop) or ``ceil(B / N)`` (pad) batches per window, so every instance
yields the same number of batches per epoch: no rank waits at a collective for a rank
that ran out of data.

Only the length column of the window is read by every instance; each instance reads the
rows of its own batches only (one gather per window).

Checkpointing: anchor and replay (see :mod:`arrowmix._stream.replay`): the state is
the source's state at the window start, the window number, the batches of this
instance already yielded and the seed; restoring re-reads and re-plans one window.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from arrowmix._stream.base import State, Stream, fn_id
from arrowmix._stream.counters import Tally, wait_clock
from arrowmix._stream.dealing import ShareReader
from arrowmix._stream.positions import PositionBatches, Positions, no_positions
from arrowmix._stream.replay import AnchoredStage
from arrowmix._stream.rng import SeedHolder
from arrowmix._stream.tokens.column import key_spans
from arrowmix._stream.topology import ElasticRole, check_sharding, walk
from arrowmix._validate import check_int
from arrowmix._warn import warn
from arrowmix.exceptions import DroppedDataWarning

__all__ = ["REMAINDERS", "BudgetBucketIterator", "deal_batches", "plan_batches"]

REMAINDERS = ("drop", "pad")


def plan_batches(
    lengths: np.ndarray | list[int],
    budget: int,
    *,
    max_batch_size: int | None = None,
) -> list[np.ndarray]:
    """Cut items into batches of similar length within a token budget.

    The items are sorted by length (longest first, stable); a batch starting at an item
    of length ``L`` holds at most ``budget // L`` items (and ``max_batch_size``), so
    ``len(batch) * max(lengths of batch) <= budget``.

    Args:
        lengths: length of every item (e.g. its number of tokens), all ``>= 1``.
        budget: the most tokens a padded batch may hold.
        max_batch_size: optional cap on the items per batch.

    Returns:
        One int64 array of item indices per batch, longest batch first.

    Raises:
        ValueError: an item is longer than ``budget`` (naming it), or bad arguments.

    Example:
        >>> [b.tolist() for b in plan_batches([3, 9, 4, 1, 8, 2], budget=16)]
        [[1], [4, 2], [0, 5, 3]]
    """
    check_int("budget", budget, minimum=1)
    check_int("max_batch_size", max_batch_size, minimum=1, none_ok=True)
    lens = np.asarray(lengths, dtype=np.int64)
    if lens.size and int(lens.min()) < 1:
        bad = int(np.argmin(lens))
        raise ValueError(f"item {bad} has length {int(lens[bad])}; lengths must be >= 1.")
    order = np.argsort(-lens, kind="stable")
    caps = budget // lens[order]
    if caps.size and int(caps.min()) < 1:
        bad = int(order[int(np.argmin(caps))])
        raise ValueError(
            f"item {bad} has length {int(lens[bad])}, more than the budget {budget}: "
            "filter long items out (or truncate them) before batching."
        )
    if max_batch_size is not None:
        caps = np.minimum(caps, max_batch_size)
    return [order[a:b] for a, b in _cuts(caps)]


def _cuts(caps: np.ndarray) -> list[tuple[int, int]]:
    """Greedy cut points: a batch starting at ``i`` ends at ``i + caps[i]``.

    One step per batch over a Python list (a window makes a few hundred batches: cheaper
    than any per-run numpy call).
    """
    n = len(caps)
    steps = caps.tolist()
    cuts: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(n, i + steps[i])
        cuts.append((i, j))
        i = j
    return cuts


def deal_batches(num_batches: int, num_instances: int, rank: int, remainder: str) -> list[int]:
    """Indices of the batches instance ``rank`` takes (equal counts on every instance).

    Example:
        >>> [deal_batches(7, 3, r, "drop") for r in range(3)]
        [[0, 3], [1, 4], [2, 5]]
        >>> [deal_batches(7, 3, r, "pad") for r in range(3)]
        [[0, 3, 6], [1, 4, 0], [2, 5, 1]]
    """
    if remainder not in REMAINDERS:
        raise ValueError(f"`remainder` must be one of {list(REMAINDERS)}, got {remainder!r}.")
    if num_batches == 0:
        return []
    total = (num_batches // num_instances) * num_instances
    if remainder == "pad":
        total = -(-num_batches // num_instances) * num_instances
    return [i % num_batches for i in range(rank, total, num_instances)]


class BudgetBucketIterator(AnchoredStage[list[Any]], ShareReader):
    """Token-budget batches of a stream, the same number on every instance.

    State:
        ``source`` (at the read-ahead start), ``window``, ``emitted`` (batches of this
        instance yielded in the window), ``seed``. Replay cost: at most ``read_ahead``
        items (every instance reads the lengths of the whole window).
    """

    SEED_KEY = "seed"
    STATE_KEYS = (*AnchoredStage.BASE_KEYS, SEED_KEY)
    TRANSIENT = ("_columns",)
    ELASTIC_ROLE = ElasticRole.DEALER

    def __init__(
        self,
        source: Stream[Any],
        key: str | Callable[[Any], int],
        budget: int,
        read_ahead: int,
        *,
        num_instances: int = 1,
        instance_rank: int = 0,
        remainder: str = "drop",
        max_batch_size: int | None = None,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__(source)
        check_sharding(num_instances, instance_rank)
        if remainder not in REMAINDERS:
            raise ValueError(f"`remainder` must be one of {list(REMAINDERS)}, got {remainder!r}.")
        check_int("read_ahead", read_ahead, minimum=1)
        plan_batches([], budget, max_batch_size=max_batch_size)  # validates both
        if isinstance(key, str):
            self._key: Callable[[Any], Any] = operator.itemgetter(key)
        elif callable(key):
            self._key = key
        else:
            raise TypeError(f"`key` must be a column name or a callable, got {key!r}.")
        if num_instances > 1 and shuffle and seed is None:
            raise ValueError(
                "give `seed`: every instance must plan the same batches, so the batch "
                "order cannot come from a seed drawn at random on each rank."
            )
        for node in walk(source):
            sharding = node.sharding or (1, 0)
            if node.ELASTIC_ROLE is ElasticRole.SOURCE and sharding[0] > 1:
                raise ValueError(
                    "the input of budget_bucket must be the same stream on every "
                    "instance: build its sources with num_instances=1 and pass "
                    "num_instances/instance_rank to budget_bucket."
                )
        self.key, self.budget, self.read_ahead = key, budget, read_ahead
        self.num_instances, self.instance_rank = num_instances, instance_rank
        self.remainder, self.max_batch_size = remainder, max_batch_size
        self.shuffle_batches = bool(shuffle)
        self._seed = SeedHolder(seed)
        self._rows = source.row_source() if isinstance(key, str) else None
        # Elastic resume (arrowmix._stream.elastic): (window, [[old instances,
        # batches each had yielded], ...]): that window deals only what is left.
        self._override: tuple[int, list[Any]] | None = None
        self._emit_positions: str | bool = False
        self._begin: State | None = None  # where reset(None) starts (elastic main task)
        # Elastic drain: (window, batches) where this instance stops: what it had dealt
        # when its checkpoint was taken (the stages after it then flush their buffers).
        self._limit: tuple[int, int] | None = None
        self._tally = Tally(tokens=True)
        self._planned: list[tuple[int, int, int]] = []  # per output: rows, tokens, slots
        self._input: Positions | None = None
        if self._rows is not None:
            self._input = source.as_positions()
            if self._input is None:
                raise no_positions(source)

    def as_position_batches(self, column: str | None = None) -> PositionBatches | None:
        """Each batch as row positions (for collation); index streams only.

        When ``column`` is the token column ``key``, each batch is a
        :class:`~arrowmix._stream.tokens.column.TokenSpans`: the spans looked up to plan it.
        Taking the view makes the windows hold positions instead of rows.
        """
        if self._rows is None:
            return None
        self._emit_positions = column or True
        return PositionBatches(self._rows, self.next)

    @property
    def sharding(self) -> tuple[int, int]:
        """``(num_instances, instance_rank)``."""
        return self.num_instances, self.instance_rank

    def apply_share(self, num_instances: int, instance_rank: int) -> None:
        """Take another instance's batches (see ``ShareReader.reshard``)."""
        self.num_instances, self.instance_rank = num_instances, instance_rank

    def deal_remaining(self, plan: tuple[int, list[Any], State | None] | None) -> None:
        """Deal only the batches no old instance yielded (elastic resume; ``None``: off).

        ``plan`` is ``(window, generations, begin)``: in window ``window`` the batches
        that the old instances of each generation ``[n_old, emitted per instance]`` had
        yielded are skipped; ``begin`` (a state of this stage, or ``None``) is where a
        reset without state starts instead of the beginning.
        """
        if plan is None:
            self._override, self._begin = None, None
            return
        window, generations, begin = plan
        self._override = (int(window), generations)
        self._begin = begin

    def stop_at(self, limit: tuple[int, int] | None) -> None:
        """Stop after the ``limit[1]``-th batch of window ``limit[0]`` (elastic drain).

        An old instance's drain stops its dealer where the instance's checkpoint had it
        (its *frontier*), so what comes out of the stages after the dealer is exactly
        what they had buffered and not yielded. ``None``: no limit.
        """
        self._limit = None if limit is None else (int(limit[0]), int(limit[1]))

    def frontier(self) -> tuple[int, int]:
        """``(window, batches dealt in it)``: where this stage stands (after a replay)."""
        state = self.get_state()
        return int(state[self.WINDOW_KEY]), int(state[self.EMITTED_KEY])

    def reset(self, state: State | None = None) -> None:
        if state is None and self.__dict__.get("_begin") is not None:
            state = self._begin
        super().reset(state)

    def _warn_dropped(self, window: int, sizes: list[int]) -> None:
        """Warn once per pipeline how much ``remainder="drop"`` drops, and what to do.

        Every instance plans the same batches and drops the same ones, so only instance 0
        (rank 0's first DataLoader worker) says so: one warning per job, not per worker.
        """
        if self.__dict__.get("_warned") or self.instance_rank != 0:
            return
        self._warned = True
        n, b = self.num_instances, len(sizes)
        dropped = sum(sizes[b - b % n :])
        share = dropped / max(1, sum(sizes))
        warn(
            f"budget_bucket(remainder='drop') on {n} instances dropped {b % n} of the {b} "
            f"batches of read-ahead window {window} ({dropped} rows, {share:.1%}); each "
            f"window drops up to {n - 1} batches, so about {n - 1} / (batches per window) "
            "of the epoch is lost. Make read_ahead hold many more than "
            f"{n} batches (budget / typical length * {n} * 20 rows keeps it under 5%), or "
            "use remainder='pad'.",
            DroppedDataWarning,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key if isinstance(self.key, str) else fn_id(self, self.key),
            "budget": self.budget,
            "read_ahead": self.read_ahead,
            "num_instances": self.num_instances,
            "instance_rank": self.instance_rank,
            "remainder": self.remainder,
            "max_batch_size": self.max_batch_size,
            "shuffle": self.shuffle_batches,
            "seed": self._seed.describe(),
        }

    def extra_state(self) -> State:
        return {self.SEED_KEY: self._seed.value}

    def load_extra(self, state: State) -> None:
        self._seed.load(self, state[self.SEED_KEY])

    def stats(self) -> dict[str, Any]:
        """Rows, tokens and slots (``len * longest``) of the batches yielded, and more.

        Also the rows and tokens ``remainder="drop"`` dropped (the batches no instance
        gets) and the time spent reading the windows.

        Process-local, not checkpointed (see ``docs/observability.md``).
        """
        return self._tally.as_dict()

    def yielded(self, first: int, stop: int) -> None:
        for counts in self._planned[first:stop]:
            self._tally.add(*counts)

    def _plan_counts(self, lengths: np.ndarray, batches: list[Any], mine: list[int]) -> None:
        """``(rows, tokens, slots)`` of each batch this instance yields (one pass per window)."""
        if not mine:
            self._planned = []
            return
        mb = [batches[i] for i in mine]
        rows = np.fromiter(map(len, mb), dtype=np.int64, count=len(mb))
        flat = lengths[np.concatenate(mb)]
        starts = np.cumsum(rows) - rows
        tokens = np.add.reduceat(flat, starts)
        slots = rows * np.maximum.reduceat(flat, starts)
        self._planned = list(zip(rows.tolist(), tokens.tolist(), slots.tolist(), strict=True))

    def compute(self, window: int) -> list[Any] | None:
        limit = self.__dict__.get("_limit")
        if limit is not None and (window > limit[0] or (window == limit[0] and not limit[1])):
            return None
        if self._rows is not None:  # index stream: read the length column only
            assert self._input is not None
            t0 = wait_clock()
            items: Any = self._input.pull(self.read_ahead)
            self._tally.wait += wait_clock() - t0
            if not len(items):
                return None
            assert isinstance(self.key, str)
            cache = self.__dict__.setdefault("_columns", {})
            lengths, spans = key_spans(self._rows, items, self.key, cache)
            lengths = np.asarray(lengths, dtype=np.int64)
        else:
            t0 = wait_clock()
            items = self.source.pull(self.read_ahead)
            self._tally.wait += wait_clock() - t0
            if not items:
                return None
            lengths = _int_keys([self._key(x) for x in items], self.key)
            spans = None
        batches = plan_batches(lengths, self.budget, max_batch_size=self.max_batch_size)
        if self.shuffle_batches:
            perm = self.window_rng(self._seed.value, window).permutation(len(batches))
            batches = [batches[i] for i in perm]
        left = list(range(len(batches)))
        if self._override is not None and self._override[0] == window:
            for n_old, emitted in self._override[1]:
                done: set[int] = set()
                for k, e in enumerate(emitted):
                    dealt = deal_batches(len(left), n_old, k, self.remainder)
                    done.update(left[i] for i in dealt[:e])
                left = [b for b in left if b not in done]
        dealt = deal_batches(len(left), self.num_instances, self.instance_rank, self.remainder)
        if self.remainder == "drop" and len(left) % self.num_instances:
            self._warn_dropped(window, [len(batches[i]) for i in left])
            if not self.pending_skip:  # a window replayed by a restore was counted before
                lost = [batches[i] for i in left[len(left) - len(left) % self.num_instances :]]
                self._tally.drop(sum(map(len, lost)), sum(int(lengths[b].sum()) for b in lost))
        mine = [left[i] for i in dealt]
        if limit is not None and window == limit[0]:
            mine = mine[: limit[1]]
        self._plan_counts(lengths, batches, mine)
        if self._rows is None:
            return [[items[j] for j in batches[i].tolist()] for i in mine]
        if not mine:
            return []
        if self._emit_positions:
            if spans is not None and spans.column.name == self._emit_positions:
                return [spans.take(batches[i]) for i in mine]  # collated from the spans
            return [items[batches[i]] for i in mine]
        # One gather for all of this instance's rows of the window.
        parts = [items[batches[i]] for i in mine]
        assert self._input is not None
        flat = self._input.items(self._rows.take(np.concatenate(parts)))
        out, at = [], 0
        for part in parts:
            out.append(flat[at : at + len(part)])
            at += len(part)
        return out


def _int_keys(values: list[Any], key: Any) -> np.ndarray:
    """Item lengths as int64, or a ValueError naming ``key`` and the offending value."""
    bad = next(
        (v for v in values if isinstance(v, bool) or not isinstance(v, (int, np.integer))), None
    )
    if bad is None:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    hint = ""
    if isinstance(key, str) and isinstance(bad, (list, tuple, np.ndarray)):
        hint = (
            f" Rows reach budget_bucket as dicts here (after `map`, say), where {key!r} "
            f"is a list: pass key=lambda row: len(row[{key!r}]), or bucket the index "
            "stream before the `map`."
        )
    raise ValueError(
        f"`key` {key!r} must give an int per item (its length in tokens), got "
        f"{type(bad).__name__} {bad!r:.60}.{hint}"
    )
