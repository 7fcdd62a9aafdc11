"""``interleave_datasets`` gives HF ``datasets``' rows in HF's order, for every strategy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

STRATEGIES = ["first_exhausted", "all_exhausted", "all_exhausted_without_replacement"]


def sources(lengths):
    cols = [{"x": list(range(1000 * i, 1000 * i + n))} for i, n in enumerate(lengths)]
    return [am.Dataset.from_dict(c) for c in cols], [hf.Dataset.from_dict(c) for c in cols]


def hf_interleave(datasets, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hf.interleave_datasets(datasets, **kwargs)["x"][:]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("lengths", [[3, 2], [5, 1, 4], [2, 2, 2], [7], [0, 3]])
def test_round_robin_as_hf(lengths, strategy):
    ours, theirs = sources(lengths)
    got = am.interleave_datasets(ours, stopping_strategy=strategy)["x"]
    assert got == hf_interleave(theirs, stopping_strategy=strategy)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_random_draws_as_hf(strategy):
    rng = np.random.default_rng(0)
    for case in range(40):
        k = int(rng.integers(1, 4))
        lengths = rng.integers(1, 40, size=k).tolist()
        p = rng.random(k) + 0.05
        probabilities = (p / p.sum()).tolist()
        seed = int(rng.integers(0, 1000))
        ours, theirs = sources(lengths)
        kwargs = {"probabilities": probabilities, "seed": seed, "stopping_strategy": strategy}
        got = am.interleave_datasets(ours, **kwargs)["x"]
        assert got == hf_interleave(theirs, **kwargs), (case, lengths, probabilities, seed)


def test_a_source_never_drawn_is_skipped_when_the_first_ends():
    ours, theirs = sources([5, 4, 6])
    kwargs = {"probabilities": [0.5, 0.0, 0.5], "seed": 3}
    assert am.interleave_datasets(ours, **kwargs)["x"] == hf_interleave(theirs, **kwargs)


@pytest.mark.parametrize("strategy", ["all_exhausted", "all_exhausted_without_replacement"])
def test_a_source_that_can_never_end_is_refused(strategy):
    ours, _ = sources([5, 4])
    with pytest.raises(ValueError, match=r"datasets \[1\] have probability 0"):
        am.interleave_datasets(ours, probabilities=[1.0, 0.0], stopping_strategy=strategy)


def test_bad_arguments_are_named():
    ours, _ = sources([2, 2])
    with pytest.raises(ValueError, match="stopping_strategy"):
        am.interleave_datasets(ours, stopping_strategy="longest")
    with pytest.raises(ValueError, match="3 values for 2 datasets"):
        am.interleave_datasets(ours, probabilities=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="empty"):
        am.interleave_datasets([*ours, am.Dataset.from_dict({"x": []})], probabilities=[0.5] * 3)


def test_the_result_is_a_view_with_a_split_name():
    ours, _ = sources([3, 3])
    out = am.interleave_datasets(ours, split="train")
    assert out.split == "train"
    assert out["x"] == [0, 1000, 1, 1001, 2, 1002]
