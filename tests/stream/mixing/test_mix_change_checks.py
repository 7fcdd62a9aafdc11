"""``allow_changes=True`` relaxes exactly the weights and sources of named mixes.

Every other stage, and every source kept under its name, is still checked; a changed
mix is refused only when a buffering stage follows *that* mix.
"""

from __future__ import annotations

import itertools
import json
import warnings
from typing import Any

import pytest

from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import Stream, from_iterable, merge_states, mix
from tests.stream.helpers import double, is_even
from tests.stream.mixing.test_mix_changes import C_ROWS, ROWS
from tests.stream.mixing.test_mix_schedule import letters, row_id
from tests.stream.test_elastic import ROWS_A, ROWS_B, A, B, src

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")


def checkpoint(s: Stream[Any], n: int) -> dict[str, Any]:
    _ = list(itertools.islice(s, n))
    return json.loads(json.dumps(s.state_dict()))


def shuffled(buffer: int, wa: float = 0.5) -> Stream[Any]:
    a = letters("a", 40).shuffle(buffer, seed=1)
    return mix({"a": a, "b": letters("b", 40)}, {"a": wa, "b": 1 - wa})


def test_a_kept_source_whose_own_shuffle_changed_is_refused() -> None:
    state = checkpoint(shuffled(8), 10)
    with pytest.raises(StateError, match=r"source 'a' of mix\(\['a', 'b'\]\).*`buffer_size`"):
        shuffled(4, wa=0.8).load_state_dict(state, allow_changes=True)
    with pytest.raises(StateError, match=r"source 'a'.*`buffer_size`"):
        shuffled(4).load_state_dict(state, allow_changes=True)  # weights unchanged too
    new = shuffled(8, wa=0.8)  # the same source, reweighted: resumes
    new.load_state_dict(state, allow_changes=True)
    assert len(list(new)) == 70


def test_a_pipeline_without_a_mix_loads_no_other_pipelines_state() -> None:
    state = checkpoint(from_iterable(range(20)).map(double), 5)
    other = from_iterable(range(20)).filter(is_even)
    with pytest.raises(StateError, match=r"node 0 is another stage.*named mixes") as err:
        other.load_state_dict(state, allow_changes=True)
    assert "written before" not in str(err.value)


def test_a_changed_stage_after_the_mix_is_refused() -> None:
    def build(wa: float, fn: Any) -> Stream[Any]:
        return mix({"a": letters("a", 30), "b": letters("b", 30)}, {"a": wa, "b": 1 - wa}).map(fn)

    state = checkpoint(build(0.5, str), 6)
    with pytest.raises(StateError, match=r"node 0 \(MapIterator\) differs in `fn`"):
        build(0.9, repr).load_state_dict(state, allow_changes=True)


def corpus(name: str, rows: Any) -> Stream[Any]:
    return mix({name: src(rows, 1, 0, 1), "b": src(B, 1, 0, 2)}).map(row_id)


def test_a_source_replaced_under_a_kept_name_is_refused_and_a_new_name_starts_it() -> None:
    state = checkpoint(corpus("a", A), 20)
    with pytest.raises(StateError, match=r"source 'a'.*differs in `num_rows`.*new name"):
        corpus("a", C_ROWS).load_state_dict(state, allow_changes=True)
    renamed = corpus("c", C_ROWS)
    with pytest.warns(DroppedDataWarning, match=r"\['a'\]"):
        renamed.load_state_dict(state, allow_changes=True)
    assert ROWS["c"] <= set(renamed)  # the new corpus from its beginning


def test_an_older_checkpoint_reweights_but_cannot_change_sources() -> None:
    state = checkpoint(corpus("a", A), 20)
    state["nodes"] = [x.split("|")[0] for x in state["nodes"]]  # as written before
    new = mix({"a": src(A, 1, 0, 1), "b": src(B, 1, 0, 2)}, {"a": 0.9, "b": 0.1}).map(row_id)
    new.load_state_dict(state, allow_changes=True)
    assert len(list(new)) == ROWS_A + ROWS_B - 20
    added = mix({"a": src(A, 1, 0, 1), "b": src(B, 1, 0, 2), "c": src(C_ROWS, 1, 0, 3)})
    with pytest.raises(StateError, match="written before arrowmix recorded the sources"):
        added.map(row_id).load_state_dict(state, allow_changes=True)


def nested(wc: float, inner: dict[str, float] | None = None, n: int = 1, r: int = 0) -> Any:
    ab = mix({"a": src(A, n, r, 1), "b": src(B, n, r, 2)}, inner).shuffle(4, seed=3)
    return mix({"ab": ab, "c": src(C_ROWS, n, r, 3)}, {"ab": 1 - wc, "c": wc}).map(row_id)


ALL = ROWS["a"] | ROWS["b"] | ROWS["c"]


def test_reweighting_an_outer_mix_above_a_shuffled_inner_mix_resumes() -> None:
    old = nested(0.5)
    seen = list(itertools.islice(old, 25))
    new = nested(0.2)
    new.load_state_dict(json.loads(json.dumps(old.state_dict())), allow_changes=True)
    rest = list(new)
    assert sorted(seen + rest) == sorted(ALL)


def test_a_changed_inner_mix_under_a_shuffle_is_refused_by_name() -> None:
    state = checkpoint(nested(0.5), 25)
    with pytest.raises(StateError, match=r"mix\(\['a', 'b'\]\) changed.*`shuffle`"):
        nested(0.5, {"a": 0.9, "b": 0.1}).load_state_dict(state, allow_changes=True)


@pytest.mark.parametrize(("n", "m"), [(2, 3), (3, 2)])
def test_elastic_reweighting_of_the_outer_mix_is_exactly_once(n: int, m: int) -> None:
    old = [nested(0.5, None, n, r) for r in range(n)]
    seen = [x for s in old for x in itertools.islice(s, 9)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    new = [nested(0.2, None, m, r) for r in range(m)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DroppedDataWarning)
        for s in new:
            s.load_state_dict(merged, allow_changes=True)
    rest = [x for s in new for x in s]
    assert sorted(seen + rest) == sorted(ALL)


def test_elastic_resume_refuses_a_kept_source_that_changed() -> None:
    def build(buffer: int, n: int, r: int) -> Stream[Any]:
        a = src(A, n, r, 1).shuffle(buffer, seed=1)
        return mix({"a": a, "b": src(B, n, r, 2)}).map(row_id)

    old = [build(8, 2, r) for r in range(2)]
    _ = [x for s in old for x in itertools.islice(s, 9)]
    merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
    with pytest.raises(StateError, match=r"source 'a'.*`buffer_size`"):
        build(4, 3, 0).load_state_dict(merged, allow_changes=True)
