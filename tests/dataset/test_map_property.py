"""Random chains of map/filter/select/shuffle match a pure-Python list model."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import arrowmix as am

steps = st.lists(
    st.one_of(
        st.tuples(st.just("map"), st.integers(-3, 3)),
        st.tuples(st.just("map_batched"), st.integers(1, 4)),
        st.tuples(st.just("dup"), st.integers(1, 3)),
        st.tuples(st.just("filter"), st.integers(2, 4)),
        st.tuples(st.just("select"), st.lists(st.integers(0, 1000), max_size=8)),
        st.tuples(st.just("shuffle"), st.integers(0, 2**16)),
    ),
    max_size=4,
)


def _add(k):
    return lambda row: {"v": row["v"] * 2 + k}


def _pos(batch, idx):
    return {"pos": idx}


def _dup(batch):  # one-to-two rows: every column replaced
    return {
        "v": [x for v in batch["v"] for x in (v, -v)],
        "i": [x for i in batch["i"] for x in (i, i)],
    }


def _not_multiple(m):
    return lambda row: row["v"] % m != 0


@given(values=st.lists(st.integers(-50, 50), max_size=30), chain=steps)
def test_chains_match_a_list_model(values, chain):
    ds = am.Dataset.from_dict({"v": values, "i": list(range(len(values)))})
    model = [{"v": v, "i": i} for i, v in enumerate(values)]
    for step in chain:
        n = len(model)
        if step[0] == "map":
            ds = ds.map(_add(step[1]))
            model = [{**r, "v": r["v"] * 2 + step[1]} for r in model]
        elif step[0] == "map_batched":
            ds = ds.map(_pos, batched=True, batch_size=step[1], with_indices=True)
            assert ("pos" in ds.column_names) is (n > 0)  # an empty input is returned as is
            if n:
                assert ds["pos"] == list(range(n))
                ds = ds.remove_columns("pos")
        elif step[0] == "dup":
            ds = ds.map(_dup, batched=True, batch_size=step[1])
            model = [{"v": x, "i": r["i"]} for r in model for x in (r["v"], -r["v"])]
        elif step[0] == "filter":
            ds = ds.filter(_not_multiple(step[1]))
            model = [r for r in model if r["v"] % step[1] != 0]
        elif step[0] == "select" and n:
            idx = [x % n for x in step[1]]
            ds, model = ds.select(idx), [model[j] for j in idx]
        elif step[0] == "shuffle":
            perm = np.random.default_rng(step[1]).permutation(n)
            ds, model = ds.shuffle(seed=step[1]), [model[p] for p in perm]
        assert len(ds) == len(model)
    assert list(ds) == model
    if len(model):
        out = ds.map(_pos, batched=True, batch_size=3, with_indices=True)
        assert out["pos"] == list(range(len(model)))
