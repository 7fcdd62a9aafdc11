"""HF's examples iterables and ``concatenate_datasets`` of iterable datasets, value by value.

``IterableDataset(ExamplesIterable(fn, kwargs), info=...)`` as HF builds it (arrowmix's
``ExamplesIterable`` or HF's own), ``_resolve_features``, ``info.features``, and the rows,
features and shard orders of ``concatenate_datasets`` on both axes, compared with HF
``datasets`` 5.2; then exact resume and the two new stages' round-trip suites.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._hf.iterable_concat import ChainRows, MergeRows
from arrowmix.iterable_dataset import ExamplesIterable
from arrowmix.stream import Stream, from_iterable
from arrowmix.testing import CheckpointRoundTripTests

hf = pytest.importorskip("datasets")
HFExamples = pytest.importorskip("datasets.iterable_dataset").ExamplesIterable


def gen(**kwargs: Any):
    kwargs = dict(kwargs)
    n = kwargs.pop("n", 4)
    for path in kwargs.pop("paths", ["f"]):
        for i in range(n):
            yield f"{path}_{i}", {"id": i, "path": path, **kwargs}


def both_examples(kwargs: dict[str, Any], **info: Any):
    """The same dataset of ``gen(**kwargs)``, built by arrowmix and by HF."""
    a_info = am.DatasetInfo(**info) if info else None
    h_info = hf.DatasetInfo(**info) if info else None
    return (
        am.IterableDataset(ExamplesIterable(gen, kwargs), info=a_info, split="train"),
        hf.IterableDataset(HFExamples(gen, kwargs), info=h_info, split="train"),
    )


def typed(rows: list[Any]) -> list[Any]:
    return [{k: (type(v).__name__, v) for k, v in r.items()} for r in rows]


PATHS = {"paths": ["p0", "p1", "p2", "p3", "p4"], "tag": ("x",)}


def test_examples_iterable_pairs_shards_and_shuffle_are_hfs():
    mine, theirs = ExamplesIterable(gen, PATHS), HFExamples(gen, PATHS)
    assert list(mine) == list(theirs)
    assert mine.num_shards == theirs.num_shards == 5
    for seed in (0, 40, 42):
        rng = np.random.default_rng(seed)
        assert list(mine.shuffle_data_sources(rng)) == list(theirs.shuffle_data_sources(rng))
    for index in range(3):
        for contiguous in (True, False):
            a = mine.shard_data_sources(3, index, contiguous=contiguous)
            b = theirs.shard_data_sources(3, index, contiguous=contiguous)
            assert (a.kwargs, list(a)) == (b.kwargs, list(b))
    assert mine.iter_arrow is None


def test_examples_iterable_state_resumes_after_every_pair():
    ex = ExamplesIterable(gen, PATHS)
    states = [ex._init_state_dict()]
    pairs = []
    for pair in ex:
        states.append(json.loads(json.dumps(ex.state_dict())))
        pairs.append(pair)
    for i, state in enumerate(states):
        ex.load_state_dict(state)
        assert list(ex) == pairs[i:], i


@pytest.mark.parametrize("epoch", [0, 1, 3])
def test_dataset_of_examples_rows_features_and_epoch_order_are_hfs(epoch):
    features = hf.Features({"id": hf.Value("int32"), "path": hf.Value("string")})
    for kwargs, info in [(PATHS, {}), ({"paths": ["a", "b"]}, {"features": features})]:
        a, h = both_examples(kwargs, **info)
        a.set_epoch(epoch)
        h.set_epoch(epoch)
        assert typed(list(a)) == typed(list(h))
        assert (a.features, a.column_names, a.num_shards) == (
            h.features,
            h.column_names,
            h.n_shards,
        )
        assert a.info.features == h.info.features


def test_hf_examples_iterable_is_accepted():
    a = am.IterableDataset(HFExamples(gen, PATHS))
    h = hf.IterableDataset(HFExamples(gen, PATHS))
    a.set_epoch(2)
    h.set_epoch(2)
    assert list(a) == list(h)
    with pytest.raises(TypeError, match="examples iterable"):
        am.IterableDataset([{"a": 1}])


def fill_gaps():
    yield from enumerate([{"a": 1}, {"c": 2.5}, {"b": "x"}])


def test_resolve_features_and_info_features_are_hfs():
    a = am.IterableDataset(ExamplesIterable(fill_gaps, {}))
    h = hf.IterableDataset(HFExamples(fill_gaps, {}))
    assert a.features is None and a.column_names is None
    ra, rh = a._resolve_features(), h._resolve_features()
    assert (ra.features, ra.column_names) == (rh.features, rh.column_names)
    assert typed(list(ra)) == typed(list(rh))  # the missing columns read as None
    assert ra._resolve_features() is ra
    a, h = both_examples(PATHS, description="d")
    new = hf.Features(
        {"id": hf.Value("int64"), "path": hf.Value("string"), "up": hf.Value("string")}
    )
    ma = a._resolve_features().map(lambda r: {"up": r["path"].upper()}, features=new)
    mh = h._resolve_features().map(lambda r: {"up": r["path"].upper()}, features=new)
    assert ma.info.features == mh.info.features == new
    assert ma.info.description == mh.info.description == "d"
    assert a.map(lambda r: r).info.features is None


def concat_inputs(lib, examples):
    if lib is hf:
        make = lambda kw: hf.IterableDataset(HFExamples(gen, kw))  # noqa: E731
        ds = hf.Dataset.from_dict({"i": list(range(12))}).to_iterable_dataset(num_shards=4)
    else:
        make = lambda kw: am.IterableDataset(ExamplesIterable(gen, kw))  # noqa: E731
        ds = am.Dataset.from_dict({"i": list(range(12))}).to_iterable_dataset(num_shards=4)
    return {
        "examples": lambda: lib.concatenate_datasets(
            [make({"paths": ["a", "b"], "label": 10}), make({"paths": ["c"], "n": 3})]
        ),
        "columns": lambda: lib.concatenate_datasets(
            [make({"n": 5}), make({"other": 2, "n": 3}).remove_columns(["id", "path"])], axis=1
        ),
        "shards": lambda: lib.concatenate_datasets(
            [ds.shard(3, i, contiguous=False) for i in range(3)]
        ),
        "mapped": lambda: lib.concatenate_datasets(
            [ds.map(lambda r: {"j": r["i"] * 2}), ds.take(5).select_columns("i")]
        ),
    }[examples]


@pytest.mark.parametrize("epoch", [0, 2])
@pytest.mark.parametrize("name", ["examples", "columns", "shards", "mapped"])
def test_concatenate_iterable_rows_features_and_shards_are_hfs(name, epoch):
    a, h = concat_inputs(am, name)(), concat_inputs(hf, name)()
    a.set_epoch(epoch)
    h.set_epoch(epoch)
    assert typed(list(a)) == typed(list(h))
    assert (a.features, a.num_shards) == (h.features, h.n_shards)
    for index in range(2):
        assert list(a.shard(2, index)) == list(h.shard(2, index))


def test_concatenate_iterable_refusals_are_hfs():
    a = am.IterableDataset(ExamplesIterable(gen, {}))
    h = hf.IterableDataset(HFExamples(gen, {}))
    for lib, ds in ((am, a), (hf, h)):
        with pytest.raises(ValueError, match="duplicated"):
            lib.concatenate_datasets([ds, ds], axis=1)
        with pytest.raises(ValueError, match="aligned"):
            lib.concatenate_datasets(
                [ds, ds.map(lambda r: {"id": str(r["id"])})._resolve_features()]
            )
        with pytest.raises(ValueError, match="IterableDataset"):
            lib.concatenate_datasets([ds, lib.Dataset.from_dict({"id": [1]})])


def assert_resumes_at_every_row(make: Any) -> None:
    """A state taken after any row, through JSON into a fresh ``make()``, gives the rest."""
    want = list(make())
    for k in range(len(want) + 1):
        ds = make()
        it = iter(ds)
        head = [next(it) for _ in range(k)]
        again = make()
        again.load_state_dict(json.loads(json.dumps(ds.state_dict())))
        assert head + list(again) == want, k


@pytest.mark.parametrize("name", ["examples", "columns", "mapped"])
def test_concatenate_iterable_resumes_at_every_row(name):
    assert_resumes_at_every_row(concat_inputs(am, name))


def rows(n: int, offset: int, key: str = "a") -> Stream[Any]:
    return from_iterable([{key: offset + i} for i in range(n)])


class TestChainRows(CheckpointRoundTripTests):
    iterator_cls = ChainRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return ChainRows([rows(7, 0), rows(0, 100), rows(5, 200), rows(9, 300)])


class TestMergeRows(CheckpointRoundTripTests):
    iterator_cls = MergeRows
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return MergeRows([rows(7, 0), rows(12, 100, "b"), rows(3, 200, "c")])


@pytest.mark.parametrize("method", ["take", "skip"])
@pytest.mark.parametrize("count", [2, 5, 11])
def test_take_skip_before_and_after_split_by_node_are_hfs(method, count):
    from datasets.distributed import split_dataset_by_node as hf_split

    kwargs = {"n": 3, "paths": [f"{i}.txt" for i in range(10)]}
    a, h = both_examples(kwargs)
    after_a = getattr(am.split_dataset_by_node(a, rank=1, world_size=2), method)(count)
    after_h = getattr(hf_split(h, rank=1, world_size=2), method)(count)
    assert list(after_a) == list(after_h)
    before_a = am.split_dataset_by_node(getattr(a, method)(count), rank=1, world_size=2)
    before_h = hf_split(getattr(h, method)(count), rank=1, world_size=2)
    assert list(before_a) == list(before_h)


def test_interleave_joins_the_features_as_hf():
    features = hf.Features(
        {
            "id": hf.Value("int64"),
            "path": hf.Value("string"),
            "label": hf.ClassLabel(names=["n", "p"]),
        }
    )
    a, h = both_examples({})
    fa, fh = both_examples({"label": 1}, features=features)
    ia, ih = am.interleave_datasets([a, fa]), hf.interleave_datasets([h, fh])
    assert ia.features == ih.features == features
    assert typed(list(ia)) == typed(list(ih))


def shuffled(lib: Any, seed: int) -> list[Any]:
    """Three shuffled datasets whose shard orders are HF's (a buffer of one row keeps them)."""
    examples = (ExamplesIterable if lib is am else HFExamples)(gen, PATHS)
    rows = lib.Dataset.from_dict({"x": list(range(20))}).to_iterable_dataset(num_shards=5)
    more = lib.Dataset.from_dict({"x": list(range(100, 106))}).to_iterable_dataset(num_shards=3)
    parts = [lib.IterableDataset(examples), rows, lib.concatenate_datasets([rows, more])]
    return [d.shuffle(seed=seed, buffer_size=1, max_buffer_input_shards=1) for d in parts]


@pytest.mark.parametrize("seed", [0, 42])
def test_shuffle_and_set_epoch_reorder_the_shards_as_hf(seed):
    for a, h in zip(shuffled(am, seed), shuffled(hf, seed), strict=True):
        for epoch in range(4):
            a.set_epoch(epoch)
            h.set_epoch(epoch)
            assert list(a) == list(h), epoch
