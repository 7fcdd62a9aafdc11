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


def gen(shards, tag):
    for s in shards:
        for i in range(3):
            yield {"s": s, "i": i, "tag": tag}


KWARGS = {"shards": ["a", "b", "c", "d", "e"], "tag": "x"}


def test_from_generator_reads_hf_rows_per_shard_epoch_and_node():
    from datasets.distributed import split_dataset_by_node

    theirs = hf.IterableDataset.from_generator(gen, gen_kwargs=KWARGS)
    ours = am.IterableDataset.from_generator(gen, gen_kwargs=KWARGS)
    assert list(ours) == list(theirs)
    assert (ours.num_shards, ours.features, str(ours.split)) == (5, None, "train")
    theirs.set_epoch(3)
    ours.set_epoch(3)
    assert list(ours) == list(theirs)  # the shards reordered as HF reorders them
    for rank in range(2):
        mine = am.split_dataset_by_node(ours, rank=rank, world_size=2)
        assert list(mine) == list(split_dataset_by_node(theirs, rank=rank, world_size=2))
    features = Features({"s": Value("string"), "i": Value("float32"), "tag": Value("string")})
    typed_hf = hf.IterableDataset.from_generator(gen, features=features, gen_kwargs=KWARGS)
    typed_am = am.IterableDataset.from_generator(gen, features=features, gen_kwargs=KWARGS)
    assert typed(list(typed_am)) == typed(list(typed_hf))
    assert typed_am.features == typed_hf.features


def test_from_generator_resumes_exactly_and_refuses_ambiguous_shards():
    ds = am.IterableDataset.from_generator(gen, gen_kwargs=KWARGS).shuffle(seed=2, buffer_size=4)
    it = iter(ds)
    head = [next(it) for _ in range(6)]
    state = ds.state_dict()
    rest = list(it)
    again = am.IterableDataset.from_generator(gen, gen_kwargs=KWARGS).shuffle(seed=2, buffer_size=4)
    again.load_state_dict(state)
    assert list(again) == rest and len(head + rest) == 15
    with pytest.raises(RuntimeError, match="Sharding is ambiguous"):
        am.IterableDataset.from_generator(gen, gen_kwargs={"shards": [1, 2], "tag": [1]})
