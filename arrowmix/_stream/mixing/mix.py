"""Weighted mixing of streams, and zip.

``mix`` interleaves its inputs by weight: deterministically (the input furthest behind
its target share, see :mod:`arrowmix._stream.mixing.schedule`) or, with a seed, by a random
draw that is a pure function of ``(seed, step)``. Stopping rules: ``"shortest"`` stops
when the input chosen next is exhausted; ``"longest_drop"`` drops exhausted inputs and
renormalises; ``"longest_cycle"`` restarts an input that ends and stops right after
the item that completes the last input's first pass (Hugging Face's
``"all_exhausted"``): once an input is in its second pass, the inputs still in their
first pass are looked one item ahead, so that the mix stops as soon as all have ended.

Checkpointing: the state is the inputs' states, the per-input counts, the deficits of
the deterministic rule, the exhausted/active flags, which inputs were looked ahead
(``peeked``: their state is the one before that item, which is read again on
restore) and the seed. No other replay.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from arrowmix._stream.base import ElasticMode, State, Stream
from arrowmix._stream.counters import TokensBySource
from arrowmix._stream.identity import fn_identity
from arrowmix._stream.mixing.by_tokens import (
    TokenCount,
    TokensArg,
    charge,
    draw,
    epoch_caps,
    most_behind,
    uniforms,
)
from arrowmix._stream.mixing.deficits import SCALE_KEY, SCHEDULE_SCALE, upgrade_deficits
from arrowmix._stream.mixing.mix_elastic import MixElasticState
from arrowmix._stream.mixing.mix_passes import NOTHING, MixPasses
from arrowmix._stream.mixing.mix_positions import as_positions, pull_positions
from arrowmix._stream.mixing.mix_stats import mix_stats
from arrowmix._stream.mixing.mixed_rows import MixedRows
from arrowmix._stream.mixing.named import WEIGHTS_KEY, from_named, split_named, to_named
from arrowmix._stream.mixing.schedule import (
    Weighting,
    check_stopping,
    check_weights,
)
from arrowmix._stream.mixing.schemas import check_schemas, mix_schema
from arrowmix._stream.mixing.token_ahead import settle
from arrowmix._stream.mixing.weight_schedule import WeightSchedule
from arrowmix._stream.mixing.zipped import ZipIterator, zip_streams
from arrowmix._stream.positions import Positions
from arrowmix._stream.topology import ElasticRole
from arrowmix._validate import check_int
from arrowmix.exceptions import ColumnNotFoundError, StateError

Weights = Sequence[float] | Mapping[str, float] | WeightSchedule | Callable[[int], Any] | None
Caps = int | Sequence[int | None] | Mapping[str, int | None] | None

__all__ = ["WeightedMixIterator", "ZipIterator", "check_schemas", "mix", "zip_streams"]

T = TypeVar("T")
_MIN_BULK = 16
_clock = time.perf_counter
_SAMPLE = 32  # the per-item path times one read in _SAMPLE


class WeightedMixIterator(MixPasses, MixElasticState, Stream[T]):
    """Items of several streams interleaved by weight.

    State:
        ``sources`` (list of input states), ``counts`` (items taken from each input),
        ``deficits`` (deterministic rule), ``exhausted`` (inputs exhausted at least
        once), ``active`` (inputs still drawn from), ``seed``. Replay cost: none.
    """

    SOURCES_KEY = "sources"
    COUNTS_KEY = "counts"
    DEFICITS_KEY = "deficits"
    EXHAUSTED_KEY = "exhausted"
    ACTIVE_KEY = "active"
    PEEKED_KEY = "peeked"
    SEED_KEY = "seed"
    STEP_KEY = "step"
    TOKENS_KEY = "tokens"  # token mode: tokens taken from each input
    _PER_INPUT_KEYS = (SOURCES_KEY, COUNTS_KEY, DEFICITS_KEY, EXHAUSTED_KEY, ACTIVE_KEY, PEEKED_KEY)
    STATE_KEYS: ClassVar[tuple[str, ...] | None] = (*_PER_INPUT_KEYS, SEED_KEY)
    TRANSIENT = ("_held", "_mixed_rows", "_allow_changes", "_share", "_ahead")
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(
        self,
        streams: Sequence[Stream[T]] | Mapping[str, Stream[T]],
        weights: Weights = None,
        *,
        stopping: str = "longest_drop",
        seed: int | None = None,
        tokens: TokensArg = None,
        max_epochs: Caps = None,
    ) -> None:
        super().__init__()
        if callable(weights) and not isinstance(weights, WeightSchedule):
            weights = WeightSchedule.from_function(weights)  # a bare function of the step
        sched = weights if isinstance(weights, WeightSchedule) else None
        self.names, inputs, plain = split_named(streams, None if sched else weights)
        self.streams: list[Stream[T]] = inputs
        self.tokens = None if tokens is None else TokenCount(tokens)
        self.caps = epoch_caps(max_epochs, self.names, len(inputs))
        extra: tuple[str, ...] = (self.TOKENS_KEY,) if self.tokens is not None else ()
        extra += (self.EPOCHS_KEY,) if self.caps is not None else ()
        self._per_input: tuple[str, ...] = (*self._PER_INPUT_KEYS, *extra)
        keys: tuple[str, ...] = (*self._per_input, self.SEED_KEY)
        if self.names is not None:  # the named state also records the weights
            keys = (*keys, WEIGHTS_KEY)
        if sched is not None:  # and a scheduled one the step it stands at
            keys = (*keys, self.STEP_KEY, SCALE_KEY)
        self.STATE_KEYS = keys  # type: ignore[misc]
        for i, s in enumerate(self.streams):
            if not isinstance(s, Stream):
                raise TypeError(f"`streams[{i}]` must be a Stream, got {type(s).__name__}.")
        self.schedule = None if sched is None else sched.bind(self.names, len(self.streams))
        self.stopping = check_stopping(stopping)
        self.seed: int | None = check_int("seed", seed, minimum=0, none_ok=True)
        self._schema = mix_schema(self.streams, self.names)  # one integer type per column
        col = None if self.tokens is None else self.tokens.column
        if col is not None and self.schema is not None and col not in self.schema.names:
            raise ColumnNotFoundError(
                f"mix(tokens={col!r}): the inputs have no column {col!r}; their columns are "
                f"{self.schema.names}."
            )
        plain = None if sched else check_weights(plain, len(self.streams))
        self._rule = Weighting(plain or [], self.schedule)
        # Elastic drains (arrowmix._stream.elastic): inputs that end are dropped.
        self._drain = False

    def children(self) -> list[Stream[Any]]:
        settle(self)  # whoever walks the inputs sees them where the mix's choices leave them
        return list(self.streams)

    def close(self) -> None:
        settle(self)
        super().close()

    def __getstate__(self) -> dict[str, Any]:
        settle(self)
        return super().__getstate__()

    def child_names(self) -> list[str] | None:
        """The source names of a named mix (elastic resume keys its sources by them)."""
        return None if self.names is None else list(self.names)

    def schedule_step(self) -> int | None:
        """The step a schedule stands at (None without a schedule)."""
        return None if self.schedule is None or not self._started else self._step()

    def start_schedule_at(self, step: int) -> None:
        """Make the next fresh start stand at ``step`` of the schedule.

        Elastic resume: the rows no old instance had read continue the schedule where
        the old instances were.
        """
        self._start_step = step

    def set_elastic_mode(self, mode: ElasticMode) -> None:
        """While draining an old instance, an input that ends is dropped."""
        settle(self)
        self._drain = mode.draining

    @property
    def weights(self) -> list[float]:
        """The weights in force (a schedule's at the current step), normalised."""
        return self._rule.weights

    def describe(self) -> dict[str, Any]:
        weights: Any = self.weights
        if self.schedule is not None:
            weights = self.schedule.describe(lambda fn: fn_identity(self, fn))
        out: dict[str, Any] = {"weights": weights, "stopping": self.stopping}
        out["seed"] = self.seed
        if self.names is not None:
            out["names"] = list(self.names)
        if self.tokens is not None:  # only when set: row mixes keep their fingerprints
            fn = self.tokens.fn
            out["tokens"] = self.tokens.column if fn is None else fn_identity(self, fn)
        if self.caps is not None:
            out["max_epochs"] = list(self.caps)
        return out

    def allow_changes(self, allowed: bool) -> None:
        """Let the next restore resume a checkpoint of another mixture (named form)."""
        self._allow_changes = allowed

    @property
    def schema(self) -> Any:
        """The inputs' common schema (integer columns widened to one type), when known."""
        return self._schema

    def reset(self, state: State | None = None) -> None:
        allowed = self.names is not None and self.__dict__.get("_allow_changes")
        state, passes = self._split_passes(state)  # an uncapped cycling mix's passes
        if isinstance(state, dict) and (self.schedule is not None or SCALE_KEY in state):
            saved = state
            state = upgrade_deficits(saved, self.schedule is not None, lambda: self._at(saved))
        if state is not None and allowed and isinstance(state, dict):
            # a schedule added or dropped between runs: the step is kept or derived
            state = {**state, self.STEP_KEY: self._state_step(state)}
            if self.schedule is None:
                del state[self.STEP_KEY]
        super().reset(state)
        self.__dict__.pop("_ahead", None)  # read-ahead of the token positions path: dropped
        k = len(self.streams)
        self._counts = [0] * k
        self._base = 0  # the step is sum(counts) + base (base: removed sources' counts)
        self._exhausted = [False] * k
        self._active = [True] * k
        self._drawn: tuple[Any, list[bool], bool] | None = None
        # Looked-ahead inputs (longest_cycle): the state before the item, and the item
        # (missing after a restore: read again when needed).
        self._pre: list[State | None] = [None] * k
        self._held: list[Any] = [NOTHING] * k
        self._u: tuple[int, list[float]] | None = None
        self._wait = 0.0
        self._tick = _SAMPLE
        self._window = [0] * k
        self._tokens = [0] * k
        self._window_tokens = [0] * k
        self._epochs = [1] * k
        self.removed: list[str] = []
        self._fresh = [0] * k if state is None else None  # elastic: the counts at a fresh start
        if state is None:
            self._base = int(self.__dict__.pop("_start_step", 0))
            self._rule.start(self._base)
            for s in self.streams:
                s.reset(None)
            self._take_share()  # elastic resume: this instance's share, if it holds one
            return
        changed = False
        step = self._state_step(state)
        self._rule.start(step)
        if self.names is not None:
            allowed = bool(self.__dict__.pop("_allow_changes", False))
            state, change = from_named(self.names, self.weights, state, allowed, self._per_input)
            self.removed, changed = change.removed, bool(change)
        self._restore(state)
        if passes is not None:
            self._load_passes(passes)
        self._base = step - sum(self._counts)
        if changed:  # another active set or weights: the deficits start again
            self._rule.swrr.restart()

    def _at(self, state: State) -> list[float]:
        """The weights of the segment a checkpoint stood in (by input)."""
        assert self.schedule is not None
        return list(self.schedule.segment(max(self._state_step(state) - 1, 0))[2])

    def _state_step(self, state: State) -> int:
        """The step of a checkpoint: recorded by a scheduled mix, else its counts' sum."""
        step = state.get(self.STEP_KEY)
        if step is None:
            counts = state.get(self.COUNTS_KEY)
            values = counts.values() if isinstance(counts, dict) else counts
            step = sum(int(c) for c in values) if isinstance(values, Iterable) else 0
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise StateError(
                f"WeightedMixIterator: checkpoint `step` must be an int >= 0, got {step!r}."
            )
        return step

    def _restore(self, state: State) -> None:
        k = len(self.streams)
        if state[self.SEED_KEY] != self.seed:
            raise StateError(
                f"WeightedMixIterator: checkpoint seed {state[self.SEED_KEY]!r} != {self.seed!r}."
            )
        fresh = {self.TOKENS_KEY: [0] * k, self.EPOCHS_KEY: [1] * k}
        lists = [state.get(key, fresh.get(key)) for key in self._per_input]
        if any(not isinstance(v, list) or len(v) != k for v in lists):
            raise StateError(
                f"WeightedMixIterator: the state is for another number of streams than {k}."
            )
        for s, st in zip(self.streams, state[self.SOURCES_KEY], strict=True):
            s.reset(st)
        self._counts = [int(c) for c in state[self.COUNTS_KEY]]
        self._window = list(self._counts)
        self._rule.swrr.cur = [int(c) for c in state[self.DEFICITS_KEY]]
        self._exhausted = [bool(x) for x in state[self.EXHAUSTED_KEY]]
        self._active = [bool(x) for x in state[self.ACTIVE_KEY]]
        self._drawn = None
        if self.tokens is not None:
            self._tokens = [int(t) for t in state.get(self.TOKENS_KEY, self._tokens)]
            self._window_tokens = list(self._tokens)
        if self.caps is not None:
            self._epochs = [int(e) for e in state.get(self.EPOCHS_KEY, self._epochs)]
        for i, (s, peeked) in enumerate(zip(self.streams, state[self.PEEKED_KEY], strict=True)):
            if peeked:
                self._pre[i] = s.get_state()

    def get_state(self) -> State:
        settle(self)
        state = self._list_state()
        weights, step = self.weights, self._step()
        if self.schedule is not None:  # the weights of the last item yielded, as restored
            weights = list(self.schedule.segment(max(step - 1, 0))[2])
        if self.names is not None:
            state = to_named(self.names, weights, state, self._per_input)
        if self.schedule is not None:
            state[self.STEP_KEY] = step
            state[SCALE_KEY] = SCHEDULE_SCALE
        return state | self._passes_state(self.names)

    def _step(self) -> int:
        """Items yielded so far (the step a schedule reads)."""
        return sum(self._counts) + self._base

    def _list_state(self) -> State:
        return {
            self.SOURCES_KEY: [
                s.get_state() if pre is None else copy.deepcopy(pre)
                for s, pre in zip(self.streams, self._pre, strict=True)
            ],
            self.COUNTS_KEY: list(self._counts),
            self.DEFICITS_KEY: list(self._rule.swrr.cur),
            self.EXHAUSTED_KEY: list(self._exhausted),
            self.ACTIVE_KEY: list(self._active),
            self.PEEKED_KEY: [pre is not None for pre in self._pre],
            self.SEED_KEY: self.seed,
        } | self._extra_state()

    def _extra_state(self) -> State:
        out = {self.TOKENS_KEY: list(self._tokens)} if self.tokens is not None else {}
        return out | ({self.EPOCHS_KEY: list(self._epochs)} if self.caps is not None else {})

    def _read(self, i: int) -> T:
        """The next item of input ``i`` (the looked-ahead one first)."""
        if self._pre[i] is None:
            fetched: T = self._fetch(i)
            return fetched
        item = self._held[i]
        if item is NOTHING:  # restored: read it again
            item = self._fetch(i)
        self._pre[i], self._held[i] = None, NOTHING
        item_t: T = item
        return item_t

    def _choose(self) -> int:
        """The input chosen at this step; -1 when every active input has weight 0."""
        rule, active = self._rule, self._active
        if self.schedule is not None:
            step = self._step()
            if step >= rule.end:
                rule.cross(step)
            active, some = self._mask()
            if not some:
                return -1
        if self.seed is None:
            if self.tokens is not None:
                return most_behind(rule.swrr.cur, rule.swrr._rank, active)
            return rule.swrr.choose(active)
        # Same arithmetic as schedule.random_plan, with the block's draws cached.
        step = self._step()
        u = self._uniforms(step, 1)[0]
        if self.tokens is not None:
            return draw(u, self.weights, active, self._tokens, self._counts)
        w = np.where(np.asarray(active), np.asarray(self.weights), 0.0)
        cum = np.cumsum(w)
        last = int(np.flatnonzero(w)[-1])
        return min(int(np.searchsorted(cum, u * cum[-1], side="right")), last)

    def _uniforms(self, step: int, n: int) -> list[float]:
        """The random rule's uniform draws at steps ``[step, step + n)``."""
        assert self.seed is not None
        self._u, out = uniforms(self.seed, step, n, self._u)
        return out

    def _plan(self, n: int) -> list[int]:
        """The next ``n`` choices (fewer when the schedule leaves no input to choose)."""
        return self._rule.plan(self._active, self._step(), n, self.seed)

    def pull(self, n: int) -> list[T]:
        """Bulk path: plan ``n`` choices, pull each input's share at once.

        If an input runs short inside the block, everything is rewound to the
        block start and the exact per-item path handles the exhaustion.
        """
        settle(self)
        cycling = self.stopping == "longest_cycle" and any(self._exhausted)
        if n < _MIN_BULK or not any(self._active) or cycling or any(self._pre) or self.tokens:
            return super().pull(n)
        states = [s.get_state() for s in self.streams]
        rule = self._rule.snapshot()
        choices = self._plan(n)
        need = np.bincount(choices, minlength=len(self.streams)).tolist()
        t0 = _clock()
        pulled = [s.pull(c) if c else [] for s, c in zip(self.streams, need, strict=True)]
        self._wait += _clock() - t0
        if any(len(p) < c for p, c in zip(pulled, need, strict=True)):
            for s, st in zip(self.streams, states, strict=True):
                s.reset(st)
            self._rule.restore(rule)
            return super().pull(n)
        nexts = [iter(p).__next__ for p in pulled]
        self._counts = [c + k for c, k in zip(self._counts, need, strict=True)]
        return [nexts[c]() for c in choices]

    # ------------------------------------------------------------- row positions
    def _fetch(self, i: int) -> Any:
        """The next item of input ``i``: a row, or a row position in :class:`MixedRows`."""
        views = self.__dict__.get("_views")
        self._tick -= 1
        if self._tick:  # one item read in _SAMPLE is timed (wait_seconds scales it up)
            if views is None:
                return self.streams[i].next()
            p = views[i].pull(1)
        else:
            self._tick = _SAMPLE
            t0 = _clock()
            if views is None:
                item = self.streams[i].next()
                self._wait += (_clock() - t0) * _SAMPLE
                return item
            p = views[i].pull(1)
            self._wait += (_clock() - t0) * _SAMPLE
        if not len(p):
            raise StopIteration
        rows = self.row_source()
        assert rows is not None
        return int(p[0] + rows.bases[i])

    def row_source(self) -> MixedRows | None:
        """Rows of every input one after the other, when every input is an index stream."""
        if "_mixed_rows" not in self.__dict__:
            rows = [s.row_source() for s in self.streams]
            known = [r for r in rows if r is not None]
            self._mixed_rows = MixedRows(known) if len(known) == len(rows) else None
        mixed: MixedRows | None = self._mixed_rows
        return mixed

    def as_positions(self) -> Positions | None:
        """Positions in :class:`MixedRows` numbering, when every input is an index stream.

        Taking the view makes the mix read its inputs through their own views.
        """
        return as_positions(self)

    def pull_positions(self, n: int) -> np.ndarray:
        """Up to ``n`` positions in :class:`MixedRows` numbering, chosen as ``next`` would."""
        return pull_positions(self, n)

    def _mask(self) -> tuple[list[bool], bool]:
        """The inputs that may be chosen in this segment, and whether there is one."""
        drawn, swrr = self._drawn, self._rule.swrr
        if drawn is None or drawn[0] is not swrr:  # another segment, or active set
            mask = self._rule.mask(self._active)
            drawn = self._drawn = (swrr, mask, any(mask))
        return drawn[1], drawn[2]

    def _drop(self, i: int) -> None:
        self._active[i] = False
        self._drawn = None
        self._rule.swrr.restart()

    def next(self) -> T:
        if "_ahead" in self.__dict__:
            settle(self)
        while any(self._active):
            i = self._choose()
            if i < 0:
                raise StopIteration
            cycle = self.stopping == "longest_cycle" and not self._drain
            if self._exhausted[i] and cycle and self._first_pass_over():
                self._undo_choice(i)
                raise StopIteration
            try:
                item = self._fetch(i) if self._pre[i] is None else self._read(i)
            except StopIteration:
                if self._drain:
                    self._drop(i)
                    continue
                self._exhausted[i] = True
                if cycle and (all(self._exhausted) or self._first_pass_over()):
                    self._undo_choice(i)
                    raise
                item = self._again(i)  # its next pass, if it has one
                if item is NOTHING:  # it counts as exhausted
                    if self.stopping == "shortest":
                        self._undo_choice(i)
                        raise
                    self._drop(i)
                    continue
            self._counts[i] += 1
            if self.tokens is not None:
                self._charge(i, item)
            return item
        raise StopIteration

    def _charge(self, i: int, item: Any, n: int = -1) -> None:
        """Count the ``n`` tokens of ``item`` from input ``i`` (and the rule's deficits)."""
        assert self.tokens is not None
        if n < 0:
            views = self.__dict__.get("_views") is not None
            n = self.tokens.of_position(self.row_source(), item) if views else self.tokens.of(item)
        self._tokens[i] += n
        if self.seed is None:
            rule = self._rule
            mask = self._active if self.schedule is None else self._mask()[0]
            charge(rule.swrr.cur, rule.ints, mask, i, n)

    def _undo_choice(self, i: int) -> None:
        # Stopping leaves the deficits as they were, so next() stops again identically.
        if self.seed is None and self.tokens is None:  # the token rule charges after reading
            rule = self._rule
            active = self._mask()[0]
            total = sum(a for a, on in zip(rule.ints, active, strict=True) if on)
            rule.swrr.cur[i] += total
            for j, on in enumerate(active):
                if on:
                    rule.swrr.cur[j] -= rule.ints[j]

    def count_tokens(self, positions: np.ndarray, lengths: np.ndarray) -> None:
        """Count tokens yielded from the rows at ``positions`` (by a token stage after the mix)."""
        tally = self.__dict__.get("_token_tally")
        if tally is None:
            rows = self.row_source()
            assert rows is not None
            tally = self._token_tally = TokensBySource(rows.bases)
        tally.add(positions, lengths)

    def stats(self) -> dict[str, Any]:
        """Counters of the mix (cheap): see :func:`~arrowmix._stream.mixing.mix_stats.mix_stats`."""
        settle(self)
        return mix_stats(self)


def mix(
    streams: Sequence[Stream[T]] | Mapping[str, Stream[T]],
    weights: Weights = None,
    *,
    stopping: str = "longest_drop",
    seed: int | None = None,
    tokens: TokensArg = None,
    max_epochs: Caps = None,
) -> WeightedMixIterator[T]:
    """Interleave ``streams`` by ``weights`` (normalised; equal when omitted).

    Args:
        streams: the inputs, as a list or as ``{name: stream}`` (then the
            checkpoint keys each source's position by name, and
            ``load_state_dict(state, allow_changes=True)`` resumes it into a mixture
            with other weights or sources, unless a buffering stage follows the
            mix: see ``docs/mixing.md``); their schemas must match when known, except
            integer columns of different widths (a ``uint16`` token file with ``int32``
            chunks), which take the smallest integer type holding them all.
        weights: one positive, finite weight per stream (by name for named streams),
            or a :class:`WeightSchedule` (weights that change with the step); a bare
            function ``step -> weights`` is ``WeightSchedule.from_function(fn)``.
        stopping: ``"shortest"``, ``"longest_drop"`` or ``"longest_cycle"``.
        seed: ``None`` for the deterministic most-behind rule, else a random draw by
            weight that depends only on ``(seed, step)``.
        tokens: ``None``: the weights are shares of items. A column name
            (``"input_ids"``: an item's tokens are ``len(row[column])``, summed over a
            batch's rows) or a function ``item -> int``: the weights are shares of
            tokens, exact to within one item at every prefix (deterministic rule).
        max_epochs: passes the mix may make over an input that ends (an int for all,
            a list, or ``{name: int}``): the mix restarts an ended input while it has
            passes left; after its last one it counts as exhausted. Default: one pass,
            unlimited under ``"longest_cycle"``.

    Example:
        >>> from arrowmix.stream import from_iterable, mix
        >>> m = mix([from_iterable("aaaaaa"), from_iterable("bb")], [0.75, 0.25])
        >>> "".join(m)
        'aabaaaba'
        >>> m.stats()["counts"]
        [6, 2]
    """
    return WeightedMixIterator(
        streams, weights, stopping=stopping, seed=seed, tokens=tokens, max_epochs=max_epochs
    )
