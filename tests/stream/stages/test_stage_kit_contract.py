"""The stage kit keeps its promises: elastic resume behind dealers, user stages, errors.

Public API only (``arrowmix.stream``, ``arrowmix.testing``, ``arrowmix.exceptions``):
each test is a pipeline a user writes, and the behaviour the docs promise for it.
"""

from __future__ import annotations

import itertools
import json
import unittest
import warnings
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix
from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import (
    ElasticRole,
    SeedHolder,
    Stream,
    TableRowSource,
    WindowReplayStage,
    from_iterable,
    from_row_source,
    merge_states,
    mix,
)
from arrowmix.testing import CheckpointRoundTripTests

N_ROWS = 240


def _table(n: int = N_ROWS) -> pa.Table:
    rng = np.random.default_rng(0)
    docs = [list(range(100 * k, 100 * k + int(rng.integers(1, 20)))) for k in range(n)]
    return pa.table(
        {
            "input_ids": pa.array(docs, pa.list_(pa.int32())),
            "n_tokens": [len(d) for d in docs],
            "id": np.arange(n),
        }
    )


ROWS = TableRowSource(_table(), chunk_rows=32)


def row_ids(batch: Any) -> list[int]:
    return [int(r["id"]) for r in batch]


def _drain_ids(s: Stream[Any]) -> list[int]:
    return [i for b in s for i in b]


# ------------------------------------------ item 4: buffering stages after a dealer
def _dealt(n: int, r: int, tail: str, remainder: str = "pad") -> Stream[Any]:
    src = from_row_source(ROWS, seed=0, infinite=False)
    s = src.budget_bucket(
        "input_ids", 64, 60, num_instances=n, instance_rank=r, remainder=remainder, seed=1
    )
    if tail == "map_workers":
        return s.map(row_ids, num_workers=2)
    if tail == "shuffle":
        return s.map(row_ids).shuffle(4, seed=2)
    if tail == "prefetch":
        return s.map(row_ids).prefetch(4)
    return s.map(row_ids)


@pytest.mark.parametrize(
    "tail",
    [
        "map_workers",
        "shuffle",
        "prefetch",
        "plain",
    ],
)
@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 2), (1, 2)])
def test_elastic_resume_after_budget_bucket_and_a_buffering_stage_loses_no_row(
    tail: str, old: int, new: int
) -> None:
    """``remainder="pad"`` delivers every row at least once, also across an elastic resume."""
    for steps in (1, 3):
        olds = [_dealt(old, r, tail) for r in range(old)]
        seen = [i for s in olds for b in itertools.islice(s, steps) for i in b]
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in olds])))
        for s in olds:
            s.close()
        rest: list[int] = []
        for r in range(new):
            s = _dealt(new, r, tail)
            s.load_state_dict(merged)
            rest += _drain_ids(s)
            s.close()
        lost = set(range(N_ROWS)) - set(seen + rest)
        assert not lost, (
            f"{old} -> {new} ranks after {steps} steps behind {tail}: {len(lost)} of "
            f"{N_ROWS} rows lost (e.g. {sorted(lost)[:5]})"
        )


@pytest.mark.parametrize("tail", ["map_workers", "shuffle", "prefetch", "plain"])
def test_elastic_resume_after_budget_bucket_drop_delivers_nothing_twice(tail: str) -> None:
    """With ``remainder="drop"`` no row arrives twice across an elastic resume."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        olds = [_dealt(2, r, tail, "drop") for r in range(2)]
        seen = [i for s in olds for b in itertools.islice(s, 3) for i in b]
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in olds])))
        for s in olds:
            s.close()
        rest: list[int] = []
        for r in range(3):
            s = _dealt(3, r, tail, "drop")
            s.load_state_dict(merged)
            rest += _drain_ids(s)
            s.close()
    twice = [i for i, c in Counter(seen + rest).items() if c > 1]
    assert not twice, f"rows delivered twice: {twice[:5]}"


# ------------------------------------------------- item 8: stages written on Stream
class Numbered(Stream[tuple[int, Any]]):
    """Numbers the items of its source, written on ``Stream`` as docs/streams.md teaches."""

    STATE_KEYS = ("source", "count")
    ELASTIC_ROLE = ElasticRole.TRANSPARENT

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        self.source = source

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.source.reset(None if state is None else state["source"])
        self.count = 0 if state is None else state["count"]

    def get_state(self) -> dict[str, Any]:
        return {"source": self.source.get_state(), "count": self.count}

    def next(self) -> tuple[int, Any]:
        item = self.source.next()
        self.count += 1
        return self.count, item


def _numbered(buffer_size: int) -> Stream[Any]:
    return Numbered(from_iterable(range(40)).shuffle(buffer_size, seed=1))


def _build_or_refused(make: Any) -> Stream[Any] | None:
    """The stage, or None when the kit refuses it with an error that names ``children``."""
    refused = ""
    try:
        s: Stream[Any] = make()
        s.state_dict()
    except (TypeError, ValueError) as exc:
        refused = str(exc)
    if refused:
        assert "children" in refused, f"refused without naming children(): {refused}"
        return None
    return s


def test_user_stage_on_stream_passes_set_epoch_to_its_source() -> None:
    s = _build_or_refused(lambda: _numbered(16))
    if s is None:
        return
    inner = from_iterable(range(40)).shuffle(16, seed=1)
    for epoch in (1, 2):
        s.set_epoch(epoch)
        inner.set_epoch(epoch)
        assert [x for _, x in s] == list(inner), f"set_epoch({epoch}) did not reach the shuffle"


def test_user_stage_on_stream_fingerprints_the_stages_below() -> None:
    s = _build_or_refused(lambda: _numbered(16))
    if s is None:
        return
    for _ in range(5):
        next(s)
    state = s.state_dict()
    other = _numbered(32)
    with pytest.raises(StateError, match="buffer_size"):
        other.load_state_dict(state)


class Hidden(Numbered):
    """Declares no children although it reads a source."""

    def children(self) -> list[Stream[Any]]:
        return []


def _harness_failures(case: type[CheckpointRoundTripTests]) -> list[str]:
    t, failed = case(), []
    for name in dir(t):
        if name.startswith("test_"):
            try:
                getattr(t, name)()
            except unittest.SkipTest:
                pass
            except Exception as exc:  # noqa: BLE001 - any failure counts
                failed.append(f"{name}: {type(exc).__name__}")
    return failed


def test_harness_catches_a_stage_that_hides_its_source() -> None:
    class TestHidden(CheckpointRoundTripTests):
        iterator_cls = Hidden

        def make_iterator(self, **kwargs: Any) -> Stream[Any]:
            return Hidden(from_iterable(range(30)).shuffle(8, seed=1))

    assert _harness_failures(TestHidden), "the harness passes a stage whose children are hidden"


def test_harness_passes_the_docs_stage_when_the_kit_accepts_it() -> None:
    """A stage the kit accepts passes the shipped harness (no false alarm)."""

    class TestNumbered(CheckpointRoundTripTests):
        iterator_cls = Numbered

        def make_iterator(self, **kwargs: Any) -> Stream[Any]:
            return _numbered(8)

    try:
        _numbered(8).state_dict()
    except (TypeError, ValueError):
        pytest.skip("the kit refuses stages without children()")
    assert _harness_failures(TestNumbered) == []


class SeededReverse(WindowReplayStage[Any]):
    """Reverses or keeps each window of 4 at random: STATE_KEYS read literally from the docs."""

    STATE_KEYS = ("seed",)

    def __init__(self, source: Stream[Any], seed: int | None = None) -> None:
        super().__init__(source)
        self._seed = SeedHolder(seed)

    def describe(self) -> dict[str, Any]:
        return {"seed": self._seed.describe()}

    def extra_state(self) -> dict[str, Any]:
        return {"seed": self._seed.value}

    def load_extra(self, state: dict[str, Any]) -> None:
        self._seed.load(self, state["seed"])

    def compute(self, window: int) -> list[Any] | None:
        items = self.source.pull(4)
        if not items:
            return None
        flip = bool(self.window_rng(self._seed.value, window).integers(2))
        return items[::-1] if flip else items


def test_window_stage_with_only_its_own_state_keys_loads_its_checkpoint() -> None:
    s = SeededReverse(from_iterable(range(20)), seed=3)
    first = [next(s) for _ in range(6)]
    state = json.loads(json.dumps(s.state_dict()))
    rest = list(s)
    fresh = SeededReverse(from_iterable(range(20)), seed=3)
    fresh.load_state_dict(state)
    assert list(fresh) == rest
    assert sorted(first + rest) == list(range(20))


# ------------------------------------------------------ item 9: clear errors and types
def _ds() -> arrowmix.Dataset:
    return arrowmix.Dataset.from_arrow(_table(60))


def _same_row(row: dict[str, Any]) -> dict[str, Any]:
    return row


def test_budget_bucket_on_token_lists_after_map_is_clear() -> None:
    """After ``map`` the rows are dicts: a token-list key is its length, or a clear error."""
    s = _ds().to_stream(shuffle=None, infinite=False).map(_same_row)
    error = ""
    try:
        batches = list(s.budget_bucket("input_ids", 64, 20, seed=0))
    except (TypeError, ValueError) as exc:
        error = str(exc)
    if error:
        assert "input_ids" in error and "int() argument" not in error, error
        return
    assert sorted(int(r["id"]) for b in batches for r in b) == list(range(60))
    assert all(len(b) * max(len(r["input_ids"]) for r in b) <= 64 for b in batches)


def _budget(longest: Any) -> int:
    n = longest["n_tokens"]
    assert isinstance(n, (int, np.integer)) and not isinstance(n, bool), (
        f"budget function got {type(n).__name__} {n!r}"
    )
    return 64 // int(n)


def test_bucket_columnar_collate_hands_the_budget_an_int() -> None:
    s = _ds().to_stream(shuffle=None, infinite=False)
    batches = list(s.bucket("n_tokens", _budget, 20, seed=0, columnar=True).collate())
    widths = [b["input_ids"].shape for b in batches]
    assert all(rows * width <= 64 for rows, width in widths), widths
    assert sum(rows for rows, _ in widths) == 60


def test_budget_bucket_elastic_without_any_seed_resumes() -> None:
    """Unseeded sources: the ranks' unused drawn seeds must not block an elastic resume."""
    ds = _ds()

    def build(n: int, r: int) -> Stream[Any]:
        return (
            ds.to_stream(shuffle=None, infinite=False)
            .budget_bucket(
                "input_ids",
                64,
                20,
                num_instances=n,
                instance_rank=r,
                remainder="pad",
                shuffle=False,
            )
            .map(row_ids)
        )

    olds = [build(2, r) for r in range(2)]
    seen = [i for s in olds for b in itertools.islice(s, 2) for i in b]
    merged = merge_states([s.state_dict() for s in olds])
    rest: list[int] = []
    for r in range(3):
        s = build(3, r)
        s.load_state_dict(merged)
        rest += _drain_ids(s)
    assert set(seen + rest) == set(range(60))


# ------------------------------------- left from the stream-kit issue: argument types
def _stream() -> Stream[int]:
    return from_iterable(range(10))


def _ident(x: Any) -> Any:
    return x


WRONG_TYPES = {
    "batch('3')": lambda: _stream().batch("3"),
    "batch(3.0)": lambda: _stream().batch(3.0),
    "take('3')": lambda: _stream().take("3"),
    "window('3')": lambda: _stream().window("3"),
    "bucket(read_ahead='8')": lambda: _stream().bucket(_ident, 2, "8"),
    "bucket(batch_size='2')": lambda: _stream().bucket(_ident, "2", 8),
    "budget_bucket(budget='8')": lambda: _stream().budget_bucket(_ident, "8", 8),
    "budget_bucket(read_ahead='8')": lambda: _stream().budget_bucket(_ident, 8, "8"),
    "mix(seed='1')": lambda: mix([_stream(), _stream()], seed="1"),
    "mix(weights='ab')": lambda: mix([_stream(), _stream()], weights="ab"),
    "to_stream(instance_rank='0')": lambda: _ds().to_stream(num_instances=2, instance_rank="0"),
    "train_test_split(test_size='0.1')": lambda: _ds().train_test_split(test_size="0.1"),
}


@pytest.mark.parametrize("call", sorted(WRONG_TYPES))
def test_wrong_argument_type_is_a_type_error_at_the_call(call: str) -> None:
    with pytest.raises(TypeError):
        WRONG_TYPES[call]()


RIGHT_TYPES_BAD_VALUES = {
    "batch(0)": lambda: _stream().batch(0),
    "take(-1)": lambda: _stream().take(-1),
    "window(0)": lambda: _stream().window(0),
    "bucket(read_ahead=0)": lambda: _stream().bucket(_ident, 2, 0),
    "budget_bucket(budget=0)": lambda: _stream().budget_bucket(_ident, 0, 8),
    "mix(seed=-1)": lambda: mix([_stream(), _stream()], seed=-1),
    "mix(weights=[1, -1])": lambda: mix([_stream(), _stream()], weights=[1, -1]),
    "to_stream(instance_rank=2)": lambda: _ds().to_stream(num_instances=2, instance_rank=2),
    "train_test_split(test_size=1.5)": lambda: _ds().train_test_split(test_size=1.5),
}


@pytest.mark.parametrize("call", sorted(RIGHT_TYPES_BAD_VALUES))
def test_right_type_bad_value_stays_a_value_error(call: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        RIGHT_TYPES_BAD_VALUES[call]()


@pytest.mark.parametrize("index", [3, -1, 7])
def test_out_of_range_shard_index_is_a_value_error(index: int) -> None:
    with pytest.raises(ValueError, match="index"):
        _ds().shard(3, index)


# -------------------------------------------- checkpoints across map(num_workers=)
def _plus_one(x: int) -> int:
    return x + 1


@pytest.mark.parametrize(("before", "after"), [(1, 2), (2, 4), (3, 1)])
@pytest.mark.parametrize("below", ["batch", "shuffle", "bucket"])
def test_changing_map_num_workers_keeps_the_checkpoint(before: int, after: int, below: str) -> None:
    def build(workers: int) -> Stream[Any]:
        s = from_row_source(ROWS, seed=0, infinite=False).map(row_ids_one, num_workers=workers)
        if below == "batch":
            return s.batch(3)
        if below == "shuffle":
            return s.shuffle(8, seed=0)
        return s.map(_plus_one).bucket(_ident, 4, 16, seed=0)

    ref = list(build(before))
    a = build(before)
    head = [next(a) for _ in range(11)]
    state = json.loads(json.dumps(a.state_dict()))
    b = build(after)
    b.load_state_dict(state)
    assert head + list(b) == ref


def row_ids_one(row: dict[str, Any]) -> int:
    return int(row["id"])


# ---------------------------------------------------------------- longest_cycle stops
@pytest.mark.parametrize("seed", [None, 0, 5])
def test_longest_cycle_stops_once_every_input_completed_a_pass(seed: int | None) -> None:
    for lens, weights in [([3, 5], None), ([1, 1, 6], [0.45, 0.45, 0.1]), ([4, 2], [0.1, 0.9])]:
        inputs = [from_iterable([(i, j) for j in range(n)]) for i, n in enumerate(lens)]
        got = list(itertools.islice(mix(inputs, weights, stopping="longest_cycle", seed=seed), 500))
        every = {(i, j) for i, n in enumerate(lens) for j in range(n)}
        assert set(got) == every
        assert set(got[:-1]) != every, f"{lens}: the stream goes on after every input ended"


# ------------------------------------ the harness: a buffering stage after the dealer
def _even_budget(n: int, r: int) -> Stream[Any]:
    """Windows of 6 batches of 2 rows: every deal is even on 1, 2 or 3 instances."""
    src = from_row_source(ROWS, seed=0, infinite=False)
    s = src.budget_bucket(
        "input_ids", 10_000, 12, num_instances=n, instance_rank=r, max_batch_size=2, seed=1
    )
    return s.map(row_ids)


class TestDealerHarness(CheckpointRoundTripTests):
    """The shipped harness checks elastic resume with buffering stages after the dealer."""

    iterator_cls = Stream
    elastic_grid = ((2, 2), (3, 3))

    def make_iterator(self, **kwargs: Any) -> Stream[Any]:
        return _even_budget(2, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return _even_budget(num_instances, instance_rank)

    def units(self, item: Any) -> list[Any]:
        return list(item)


def test_harness_checks_buffering_stages_after_a_dealer() -> None:
    """The check exists (it is not skipped) for a pipeline with a dealer."""
    t = TestDealerHarness()
    t.test_elastic_resume_behind_buffering_stages()  # raises unless it passes
    with pytest.raises(unittest.SkipTest, match="no dealer"):
        NoDealer().test_elastic_resume_behind_buffering_stages()


class NoDealer(TestDealerHarness):
    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return from_row_source(
            ROWS, seed=0, infinite=False, num_instances=num_instances, instance_rank=instance_rank
        )
