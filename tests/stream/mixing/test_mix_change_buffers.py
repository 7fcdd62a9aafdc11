"""A changed named mixture resumed elastically behind a stage that buffers rows.

Every combination is exactly-once over the union of the ranks, or refused at
``load_state_dict``: never silently wrong.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import Stream, WeightSchedule, merge_states, mix
from tests.stream.mixing.test_mix_changes import C_ROWS, ROWS
from tests.stream.test_elastic import A, B, src

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")


def _ident(row: Any) -> Any:
    return row


STAGES: dict[str, Callable[[Stream[Any]], Stream[Any]]] = {
    "shuffle": lambda s: s.shuffle(11, seed=5),
    "parallel_map": lambda s: s.map(_ident, num_workers=2),
    "prefetch": lambda s: s.prefetch(64),
}
STAGE_NAMES = {"shuffle": "shuffle", "parallel_map": "map", "prefetch": "prefetch"}
# budget_bucket deals batches: "drop" may lose a window's remainder (never repeats a
# row), "pad" repeats rows to even it out (never loses one)
DEALERS = ("budget_bucket_drop", "budget_bucket_pad")
# name: (sources, weights) before and after
MIXTURES: dict[str, tuple[tuple[str, Any], tuple[str, Any]]] = {
    "same": (("ab", {"a": 0.5, "b": 0.5}), ("ab", {"a": 0.5, "b": 0.5})),
    "reweighted": (("ab", {"a": 0.5, "b": 0.5}), ("ab", {"a": 0.8, "b": 0.2})),
    "added": (("ab", {"a": 0.5, "b": 0.5}), ("abc", {"a": 0.4, "b": 0.3, "c": 0.3})),
    "removed": (("abc", {"a": 0.4, "b": 0.3, "c": 0.3}), ("ab", {"a": 0.4, "b": 0.3})),
    "schedule": (
        ("ab", WeightSchedule([(0, {"a": 0.5, "b": 0.5})])),
        ("ab", WeightSchedule([(0, {"a": 0.5, "b": 0.5}), (8, {"a": 0.9, "b": 0.1})])),
    ),
}


def build(stage: str, names: str, weights: Any, n: int, r: int) -> Stream[Any]:
    dealer = stage.startswith("budget_bucket")
    shard = (1, 0) if dealer else (n, r)  # the dealer shards itself
    make = {
        "a": lambda: src(A, *shard, 1),
        "b": lambda: src(B, *shard, 2, shuffle="chunks"),
        "c": lambda: src(C_ROWS, *shard, 3),
    }
    if isinstance(weights, dict):
        weights = {k: weights[k] for k in names}
    mixed = mix({k: make[k]() for k in names}, weights)
    if dealer:
        rest = stage.rsplit("_", 1)[1]
        out = mixed.budget_bucket(
            "n", 200, 32, num_instances=n, instance_rank=r, remainder=rest, seed=4
        )
        return out.map(lambda batch: [int(row["id"]) for row in batch if row is not None])
    return STAGES[stage](mixed.map(lambda row: int(row["id"])))


def flat(items: list[Any]) -> list[int]:
    out: list[int] = []
    for x in items:
        out.extend(x if isinstance(x, list) else [x])
    return out


def run(stage: str, change: str, n: int, m: int) -> tuple[list[int], list[Stream[Any]]]:
    """``(rows the n old ranks yielded, the m new ranks loaded)`` (StateError propagates)."""
    (before, wb), (after, wa) = MIXTURES[change]
    old = [build(stage, before, wb, n, r) for r in range(n)]
    steps = 3 if stage.startswith("budget_bucket") else 9
    seen = flat([x for s in old for x in itertools.islice(s, steps)])
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    for s in old:
        s.close()
    new = [build(stage, after, wa, m, r) for r in range(m)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        for s in new:
            s.load_state_dict(merged, allow_changes=True)
    return seen, new


def check_exactly_once(
    seen: list[int], new: list[Stream[Any]], change: str, stage: str = ""
) -> None:
    (before, _), (after, _) = MIXTURES[change]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        rest = flat([x for s in new for x in s])
    got = seen + rest
    twice = len(got) - len(set(got))
    assert twice == 0 or stage.endswith("_pad"), f"{twice} rows delivered twice"
    for name in after:
        missing = ROWS[name] - set(got)
        if not stage.endswith("_drop"):
            assert not missing, f"source {name}: {len(missing)} rows never delivered"
    for name in set(before) - set(after):
        assert not ROWS[name] & set(rest), f"removed source {name} was read after the resume"


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2)])
@pytest.mark.parametrize("stage", [*sorted(STAGES), *DEALERS])
def test_unchanged_mixture_behind_a_buffer_is_exactly_once(stage: str, n: int, m: int) -> None:
    seen, new = run(stage, "same", n, m)
    check_exactly_once(seen, new, "same", stage)


CHANGED = ["reweighted", "added", "removed", "schedule"]
REFUSED = (
    r"mix\(\[.*\]\) changed \(node 2 \(WeightedMixIterator\) differs in `(weights|names)`"
    r".*{stage}.*unchanged mixture"
)


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2)])
@pytest.mark.parametrize("change", CHANGED)
@pytest.mark.parametrize("stage", [*sorted(STAGES), *DEALERS])
def test_changed_mixture_behind_a_buffer_is_refused_elastically(
    stage: str, change: str, n: int, m: int
) -> None:
    # replayed under the new mixture, the buffered window would be other rows
    name = "budget_bucket" if stage in DEALERS else STAGE_NAMES[stage]
    with pytest.raises(StateError, match=REFUSED.format(stage=f"`{name}`")):
        run(stage, change, n, m)


@pytest.mark.parametrize("change", CHANGED)
@pytest.mark.parametrize("stage", [*sorted(STAGES), *DEALERS])
def test_changed_mixture_behind_a_buffer_is_refused_on_the_same_ranks(
    stage: str, change: str
) -> None:
    (before, wb), (after, wa) = MIXTURES[change]
    old = build(stage, before, wb, 2, 1)
    list(itertools.islice(old, 3))
    state = json.loads(json.dumps(old.state_dict()))
    old.close()
    new = build(stage, after, wa, 2, 1)
    name = "budget_bucket" if stage in DEALERS else STAGE_NAMES[stage]
    with pytest.raises(StateError, match=REFUSED.format(stage=f"`{name}`")):
        new.load_state_dict(state, allow_changes=True)
    new.close()


def below(names: str, weights: Any, n: int, r: int) -> Stream[Any]:
    """Each source shuffled (and prefetched) before the mix: nothing buffers after it."""
    make = {
        "a": lambda: src(A, n, r, 1).shuffle(11, seed=1),
        "b": lambda: src(B, n, r, 2, shuffle="chunks").shuffle(7, seed=2).prefetch(16),
        "c": lambda: src(C_ROWS, n, r, 3).shuffle(5, seed=3),
    }
    if isinstance(weights, dict):
        weights = {k: weights[k] for k in names}
    return mix({k: make[k]() for k in names}, weights).map(lambda row: int(row["id"]))


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2), (2, 2)])
@pytest.mark.parametrize("change", CHANGED)
def test_changed_mixture_with_buffers_before_the_mix_is_exactly_once(
    change: str, n: int, m: int
) -> None:
    (before, wb), (after, wa) = MIXTURES[change]
    old = [below(before, wb, n, r) for r in range(n)]
    seen = [x for s in old for x in itertools.islice(s, 9)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    for s in old:
        s.close()
    new = [below(after, wa, m, r) for r in range(m)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        for s in new:
            s.load_state_dict(merged, allow_changes=True)
    check_exactly_once(seen, new, change)


@pytest.mark.parametrize("change", CHANGED)
def test_changed_mixture_behind_a_window_is_refused(change: str) -> None:
    # a restored window reads its last width - 1 items again: other rows under a new mixture
    (before, wb), (after, wa) = MIXTURES[change]
    old = mix(
        {k: src({"a": A, "b": B, "c": C_ROWS}[k], 1, 0, i + 1) for i, k in enumerate(before)},
        {k: wb[k] for k in before} if isinstance(wb, dict) else wb,
    ).window(3)
    list(itertools.islice(old, 3))
    state = json.loads(json.dumps(old.state_dict()))
    new = mix(
        {k: src({"a": A, "b": B, "c": C_ROWS}[k], 1, 0, i + 1) for i, k in enumerate(after)},
        {k: wa[k] for k in after} if isinstance(wa, dict) else wa,
    ).window(3)
    with pytest.raises(StateError, match=r"changed .*`window`"):
        new.load_state_dict(state, allow_changes=True)
