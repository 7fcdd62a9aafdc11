"""Weighted mixing: exact deterministic ratios, stopping rules, seeds, estimates."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import from_row_source
from arrowmix.exceptions import SchemaMismatchError
from arrowmix.stream import Stream, estimate_mix_rows, from_iterable, mix, zip
from tests.stream.helpers import arrow, within


def tagged(tag: str, n: int):  # type: ignore[no-untyped-def]
    return from_iterable([tag] * n)


def test_75_25_in_every_4_rows() -> None:
    out = list(mix([tagged("a", 300), tagged("b", 100)], [0.75, 0.25]))
    assert len(out) == 400
    for i in range(len(out) - 3):
        assert Counter(out[i : i + 4]) == {"a": 3, "b": 1}, i


def test_50_30_20_in_every_10_rows() -> None:
    m = mix([tagged("a", 500), tagged("b", 300), tagged("c", 200)], [5, 3, 2])
    out = list(m)
    for i in range(0, len(out), 10):
        assert Counter(out[i : i + 10]) == {"a": 5, "b": 3, "c": 2}, i
    stats = m.stats()
    assert stats["counts"] == [500, 300, 200]
    assert stats["ratios"] == pytest.approx([0.5, 0.3, 0.2])
    assert stats["weights"] == pytest.approx([0.5, 0.3, 0.2])


def test_ties_prefer_higher_weight_then_lower_index() -> None:
    assert "".join(mix([tagged("a", 2), tagged("b", 2)])) == "abab"
    assert "".join(mix([tagged("a", 3), tagged("b", 6)], [1, 2])) == "babbab" + "bab"


def test_stopping_rules() -> None:
    def run(stopping: str) -> list[str]:
        return list(mix([tagged("a", 3), tagged("b", 10)], stopping=stopping))

    assert run("shortest") == list("ababab")
    assert run("longest_drop") == list("ababab") + ["b"] * 7
    cycled = run("longest_cycle")
    # b's first pass ends with its 10th item (step 20): a was restarted after 3 rows.
    assert cycled == list("ab") * 10
    assert Counter(cycled) == {"a": 10, "b": 10}


@pytest.mark.parametrize("seed", [None, 3])
def test_longest_cycle_stops_after_the_last_first_pass_like_all_exhausted(seed: Any) -> None:
    # Hugging Face's interleave_datasets(stopping_strategy="all_exhausted") gives 400.
    def build() -> Stream[Any]:
        a, b = from_iterable(range(100)), from_iterable(range(1000, 1200))
        return mix([a, b], stopping="longest_cycle", seed=seed)

    out = list(build())
    assert set(range(100)) | set(range(1000, 1200)) == set(out)
    last_first_pass = max(out.index(x) for x in {*range(100), *range(1000, 1200)})
    assert len(out) == last_first_pass + 1
    if seed is None:
        assert len(out) == 400 == estimate_mix_rows([100, 200], None, "longest_cycle")
    for cut in (0, 150, 250, len(out)):  # resumes exactly, also while looking ahead
        s = build()
        head = [next(s) for _ in range(cut)]
        fresh = build()
        fresh.load_state_dict(s.state_dict())
        assert head + list(fresh) == out


def test_bad_arguments() -> None:
    s = [tagged("a", 1), tagged("b", 1)]
    with pytest.raises(ValueError, match=r"\['shortest', 'longest_drop', 'longest_cycle'\]"):
        mix(s, stopping="first")
    with pytest.raises(ValueError, match="2 streams"):
        mix(s, [1.0])
    for bad in [0, -1.0, float("inf"), float("nan")]:
        with pytest.raises(ValueError, match=r"weights\[1\]"):
            mix(s, [1.0, bad])


def test_schema_mismatch_names_columns_before_any_row() -> None:
    a = from_row_source(TableRowSource(pa.table({"x": [1], "y": ["a"]})), infinite=False)
    b = from_row_source(TableRowSource(pa.table({"x": [1.5], "z": [1]})), infinite=False)
    with pytest.raises(SchemaMismatchError, match=r"\['x', 'y', 'z'\]"):
        mix([a, b])
    # Unknown schemas (after a map) are not compared.
    assert len(list(mix([a.map(dict), b.map(dict)]))) == 2


@given(
    counts=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    raw=st.lists(st.sampled_from([1, 2, 3, 5, 0.5, 0.25]), min_size=4, max_size=4),
    stopping=st.sampled_from(["shortest", "longest_drop", "longest_cycle"]),
)
@settings(max_examples=80, deadline=None)
def test_estimate_equals_produced(counts: list[int], raw: list[float], stopping: str) -> None:
    weights = raw[: len(counts)]
    streams = [from_iterable(range(c)) for c in counts]
    produced = sum(1 for _ in mix(streams, weights, stopping=stopping))
    assert estimate_mix_rows(counts, weights, stopping) == produced


@given(
    counts=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    raw=st.lists(st.floats(0.001, 10.0), min_size=4, max_size=4),
    stopping=st.sampled_from(["shortest", "longest_drop", "longest_cycle"]),
)
@settings(max_examples=80, deadline=None)
def test_estimate_equals_produced_for_any_weights(
    counts: list[int], raw: list[float], stopping: str
) -> None:
    # weights whose integer form has a long period (temperature sampling) included
    weights = raw[: len(counts)]
    streams = [from_iterable(range(c)) for c in counts]
    produced = sum(1 for _ in mix(streams, weights, stopping=stopping))
    assert estimate_mix_rows(counts, weights, stopping) == produced


@pytest.mark.parametrize(
    ("weights", "rows"),
    [
        ([n**0.3 for n in [1000, 300, 50]], (260, 1350, 2103)),
        ([0.99996, 3, 0.01], (401, 1350, 19799)),
    ],
)
def test_estimate_with_a_long_period_ends(weights: list[float], rows: tuple[int, ...]) -> None:
    # these weights' integer form repeats only every ~10**11 steps
    got = within(
        20,
        lambda: tuple(
            estimate_mix_rows([1000, 300, 50], weights, stopping)
            for stopping in ("shortest", "longest_drop", "longest_cycle")
        ),
    )
    assert got == rows


def test_estimate_large_counts_is_fast_and_exact() -> None:
    assert estimate_mix_rows([10**9, 10**9], [0.75, 0.25], "longest_drop") == 2 * 10**9
    assert estimate_mix_rows([3 * 10**8, 10**8], [0.75, 0.25], "shortest") == 4 * 10**8


@given(seed=st.integers(0, 2**31), w=st.floats(0.1, 0.9))
@settings(max_examples=20, deadline=None)
def test_seeded_proportions(seed: int, w: float) -> None:
    m = mix(
        [tagged("a", 4000), tagged("b", 4000)],
        [w, 1 - w],
        stopping="shortest",
        seed=seed,
    )
    out = list(m)
    share = out.count("a") / len(out)
    assert abs(share - w) < 0.05
    assert m.stats()["exhausted"] in ([True, False], [False, True])


def test_seeded_choice_is_a_function_of_seed_and_step() -> None:
    def run(seed: int) -> str:
        return "".join(mix([tagged("a", 100), tagged("b", 100)], seed=seed, stopping="shortest"))

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_mix_of_infinite_arrow_streams_keeps_ratio() -> None:
    a = arrow(30, seed=1, infinite=True)
    b = arrow(50, seed=2, infinite=True)
    m = mix([a, b], [0.25, 0.75])
    for _ in range(400):
        next(m)
    assert m.stats()["counts"] == [100, 300]


def test_zip_stops_with_shortest_and_stays_stopped() -> None:
    z = zip([from_iterable(range(5)), from_iterable("abc")])
    assert list(z) == [(0, "a"), (1, "b"), (2, "c")]
    state = z.state_dict()
    assert next(z, None) is None
    assert z.state_dict() == state
    with pytest.raises(ValueError, match="at least one"):
        zip([])


@given(
    counts=st.lists(st.integers(0, 80), min_size=1, max_size=4),
    raw=st.lists(st.sampled_from([1, 2, 3, 0.5]), min_size=4, max_size=4),
    stopping=st.sampled_from(["shortest", "longest_drop", "longest_cycle"]),
    seed=st.sampled_from([None, 0, 7]),
    batch=st.integers(1, 50),
)
@settings(max_examples=80, deadline=None)
def test_bulk_path_equals_per_item_path(
    counts: list[int], raw: list[float], stopping: str, seed: int | None, batch: int
) -> None:
    def build():  # type: ignore[no-untyped-def]
        streams = [from_iterable([(i, k) for k in range(c)]) for i, c in enumerate(counts)]
        return mix(streams, raw[: len(counts)], stopping=stopping, seed=seed)

    one_by_one = list(build())
    m = build()
    bulk = [x for b in m.batch(batch) for x in b]
    assert bulk == one_by_one
    assert m.stats()["counts"] == build_counts(one_by_one, len(counts))


def build_counts(items: list[tuple[int, int]], k: int) -> list[int]:
    c = Counter(i for i, _ in items)
    return [c[i] for i in range(k)]
