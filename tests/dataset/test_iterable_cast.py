"""``IterableDataset.cast``/``cast_column``/``add_column``/``from_dict``/``from_list`` as HF's.

Compared with HF ``datasets`` 5.2 value by value (types included) on the same rows, and
resumed from a ``state_dict`` mid-way.
"""

from __future__ import annotations

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
from datasets import ClassLabel, Features, Value  # noqa: E402

DATA = {"a": [1, 2, 3], "t": ["x", "y", "z"], "l": [0, 1, 0]}
FEATURES = Features(
    {"a": Value("int8"), "t": Value("large_string"), "l": ClassLabel(names=["n", "p"])}
)


def both(fn):
    """``fn(lib, iterable dataset)`` for HF and arrowmix."""
    return [fn(lib, lib.Dataset.from_dict(DATA).to_iterable_dataset()) for lib in (hf, am)]


def typed(rows):
    return [{k: (v, type(v).__name__) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("fmt", [None, "numpy"])
@pytest.mark.parametrize(
    "how",
    [
        lambda d: d.cast_column("a", Value("float32")),
        lambda d: d.cast_column("a", Value("string")),
        lambda d: d.cast(FEATURES),
        lambda d: d.add_column("z", [5.5, 6.5, 7.5]),
        lambda d: d.cast_column("a", Value("float64")).add_column("z", ["p", "q", "r"]),
    ],
)
def test_values_and_features_as_hf(how, fmt):
    theirs, ours = both(lambda lib, d: how(d).with_format(fmt))
    assert typed(list(ours)) == typed(list(theirs))
    assert ours.features == theirs.features


def test_constructors_as_hf():
    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    for build in ("from_dict", "from_list"):
        arg = {"a": [1, 2], "b": ["x", "y"]} if build == "from_dict" else rows
        theirs = getattr(hf.IterableDataset, build)(arg, num_shards=2)
        ours = getattr(am.IterableDataset, build)(arg, num_shards=2)
        assert list(ours) == list(theirs) == rows
        assert ours.features == theirs.features and ours.num_shards == theirs.num_shards


def test_errors_as_hf():
    def add_existing(lib, d):
        with pytest.raises(ValueError, match="column a is already in the dataset"):
            list(d.add_column("a", [1, 2, 3]))

    def cast_other_names(lib, d):
        with pytest.raises((ValueError, hf.table.CastError), match="column names don't match"):
            list(d.cast(Features({"a": Value("int8")})))

    def cast_after_map(lib, d):
        with pytest.raises(TypeError):
            d.map(lambda r: {"b": 1}).cast_column("a", Value("float32"))

    for check in (add_existing, cast_other_names, cast_after_map):
        both(check)


def test_cast_resumes_exactly():
    ds = am.Dataset.from_dict({"a": list(range(20))}).to_iterable_dataset(num_shards=2)
    ds = ds.cast_column("a", Value("float32")).shuffle(buffer_size=4, seed=1)
    it = iter(ds)
    head = [next(it) for _ in range(7)]
    state = ds.state_dict()
    rest = list(it)
    ds.load_state_dict(state)
    assert list(ds) == rest and all(isinstance(r["a"], float) for r in head + rest)
