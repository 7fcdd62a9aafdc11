"""``interleave_datasets`` over iterable datasets gives HF's rows in HF's order.

HF interleaves iterable datasets differently from map-style ones (it reads each source one row
ahead), so these compare with HF's *iterable* interleave, on random cases: every strategy,
round robin and drawn by probabilities, sources longer than one block of 1,000 draws, shards
reordered by ``set_epoch``, and a DataLoader worker's part.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

STRATEGIES = ["first_exhausted", "all_exhausted", "all_exhausted_without_replacement"]


@pytest.fixture(autouse=True)
def _quiet_hf_logs():
    logging.getLogger("datasets").setLevel(logging.ERROR)


def sources(lengths, n_shards=1):
    cols = [{"x": list(range(10_000 * i, 10_000 * i + n))} for i, n in enumerate(lengths)]
    shards = [min(n_shards, n) for n in lengths]
    return (
        [am.Dataset.from_dict(c).to_iterable_dataset(s) for c, s in zip(cols, shards, strict=True)],
        [hf.Dataset.from_dict(c).to_iterable_dataset(s) for c, s in zip(cols, shards, strict=True)],
    )


def xs(ds):
    return [r["x"] for r in ds]


def cases(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        k = int(rng.integers(2, 5))
        lengths = [int(n) for n in rng.integers(1, 40, size=k)]
        probs = None if i % 3 == 0 else [float(p) for p in rng.dirichlet(np.ones(k))]
        out.append((lengths, probs, int(rng.integers(10_000)), STRATEGIES[i % 3]))
    return out


@pytest.mark.parametrize(("lengths", "probs", "seed", "strategy"), cases(45, 0))
def test_random_cases_as_hf(lengths, probs, seed, strategy):
    ours, theirs = sources(lengths)
    kw = {"probabilities": probs, "seed": seed, "stopping_strategy": strategy}
    assert xs(am.interleave_datasets(ours, **kw)) == xs(hf.interleave_datasets(theirs, **kw))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_beyond_one_block_of_draws(strategy):
    """More than 1,000 choices: the second block is drawn as HF draws it."""
    ours, theirs = sources([1500, 700, 90])
    kw = {"probabilities": [0.6, 0.35, 0.05], "seed": 11, "stopping_strategy": strategy}
    got, want = xs(am.interleave_datasets(ours, **kw)), xs(hf.interleave_datasets(theirs, **kw))
    assert len(want) > 1000 and got == want


def test_round_robin_all_exhausted_is_hf_iterable_order():
    """Not the map-style order: HF's iterable interleave stops after the longest's last row."""
    ours, theirs = sources([3, 2])
    got = xs(am.interleave_datasets(ours, stopping_strategy="all_exhausted"))
    assert got == xs(hf.interleave_datasets(theirs, stopping_strategy="all_exhausted"))
    assert got == [0, 10_000, 1, 10_001, 2]


@pytest.mark.parametrize("epoch", [1, 2, 4])
@pytest.mark.parametrize("probs", [None, [0.5, 0.3, 0.2]])
def test_set_epoch_as_hf(epoch, probs):
    ours, theirs = sources([30, 20, 25], n_shards=4)
    kw = {"probabilities": probs, "seed": 3, "stopping_strategy": "all_exhausted"}
    a, h = am.interleave_datasets(ours, **kw), hf.interleave_datasets(theirs, **kw)
    a.set_epoch(epoch)
    h.set_epoch(epoch)
    assert xs(a) == xs(h)


def test_transforms_after_interleave_as_hf():
    ours, theirs = sources([12, 8])
    kw = {"probabilities": [0.7, 0.3], "seed": 0}

    def pipe(ds):
        return ds.map(lambda r: {"y": r["x"] % 7}).filter(lambda r: r["y"] != 3).take(9)

    assert list(pipe(am.interleave_datasets(ours, **kw))) == list(
        pipe(hf.interleave_datasets(theirs, **kw))
    )


def test_interleave_features_and_shards():
    ours, theirs = sources([12, 8], n_shards=4)
    a, h = am.interleave_datasets(ours), hf.interleave_datasets(theirs)
    assert a.column_names == h.column_names == ["x"]
    assert a.n_shards == h.n_shards == 4
