"""``IterableDataset`` gives HF ``datasets``' rows, in HF's order, value by value and type by type.

Every pipeline is built twice, once with ``arrowmix`` and once with HF ``datasets`` 5.2, from the
same recipe; nothing here shuffles with a buffer (that order differs on purpose: see
``test_iterable_resume.py``).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
torch = pytest.importorskip("torch")

N = 23
DATA = {
    "a": list(range(N)),
    "t": [f"s{i}" for i in range(N)],
    "v": [[float(i), i / 2] for i in range(N)],
}


@pytest.fixture(autouse=True)
def _quiet_hf_logs():
    """HF logs its worker and node notes; they are not what these tests look at."""
    logging.getLogger("datasets").setLevel(logging.ERROR)


def canon(value):
    """A value with its type, tensors and arrays included, for exact comparison."""
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.tolist())
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, value.tolist())
    if isinstance(value, np.generic):
        return ("np", str(value.dtype), value.item())
    return (type(value).__name__, value)


def both(n_shards=1, data=DATA):
    return (
        am.Dataset.from_dict(data).to_iterable_dataset(num_shards=n_shards),
        hf.Dataset.from_dict(data).to_iterable_dataset(num_shards=n_shards),
    )


def add_b(row):
    return {"b": row["a"] * 10}


def add_idx(row, idx, offset=0):
    return {"i": idx + offset}


def double_rows(batch):
    return {"a": batch["a"] * 2, "k": list(range(len(batch["a"]) * 2))}


def odd_mask(batch, idx):
    return [i % 2 == 1 for i in idx]


PIPELINES = {
    "plain": lambda d: d,
    "map": lambda d: d.map(add_b),
    "map_with_indices_kwargs": lambda d: d.map(add_idx, with_indices=True, fn_kwargs={"offset": 5}),
    "map_input_columns": lambda d: d.map(lambda a: {"c": a + 1}, input_columns="a"),
    "map_remove": lambda d: d.map(add_b, remove_columns=["t", "v"]),
    "map_identity_remove": lambda d: d.map(remove_columns="v"),
    "map_batched": lambda d: d.map(
        lambda b: {"n": [len(x) for x in b["t"]]}, batched=True, batch_size=4
    ),
    "map_batched_drop_last": lambda d: d.map(
        lambda b, i: {"i": i}, with_indices=True, batched=True, batch_size=5, drop_last_batch=True
    ),
    "map_batched_more_rows": lambda d: d.map(
        double_rows, batched=True, batch_size=3, remove_columns=["t", "v"]
    ),
    "filter": lambda d: d.filter(lambda r: r["a"] % 3 != 1),
    "filter_indices": lambda d: d.filter(lambda r, i: i % 4 == 0, with_indices=True),
    "filter_batched": lambda d: d.filter(odd_mask, with_indices=True, batched=True, batch_size=6),
    "filter_input_columns": lambda d: d.filter(lambda t: t.endswith("1"), input_columns=["t"]),
    "take": lambda d: d.take(7),
    "skip": lambda d: d.skip(9),
    "skip_take": lambda d: d.skip(3).take(11),
    "take_more_than_all": lambda d: d.take(100),
    "repeat": lambda d: d.filter(lambda r: r["a"] < 7).repeat(3),
    "repeat_forever_take": lambda d: d.repeat(None).skip(20).take(30),
    "repeat_zero": lambda d: d.repeat(0),
    "batch": lambda d: d.batch(5),
    "batch_drop_last": lambda d: d.batch(5, drop_last_batch=True),
    "select_columns": lambda d: d.select_columns(["v", "a"]),
    "remove_columns": lambda d: d.remove_columns("t"),
    "rename_column": lambda d: d.rename_column("a", "z"),
    "rename_columns": lambda d: d.rename_columns({"a": "z", "t": "u"}),
    "map_filter_take": lambda d: d.map(add_b).filter(lambda r: r["b"] % 20 == 0).take(6),
    "numpy": lambda d: d.with_format("numpy"),
    "torch": lambda d: d.with_format("torch"),
    "torch_map_inputs": lambda d: d.with_format("torch").map(lambda r: {"b": r["a"] * 2}),
    "torch_filter": lambda d: d.with_format("torch").filter(lambda r: int(r["a"]) % 2 == 0),
    "python_again": lambda d: d.with_format("torch").with_format(None),
    "shard": lambda d: d.shard(2, 1),
    "shard_not_contiguous": lambda d: d.shard(2, 0, contiguous=False),
}


@pytest.mark.parametrize("n_shards", [1, 4])
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_rows_as_hf(name, n_shards):
    if name.startswith("shard") and n_shards == 1:
        pytest.skip("shard() needs several shards")
    ours, theirs = (PIPELINES[name](d) for d in both(n_shards))
    with warnings.catch_warnings():  # HF's torch formatter warns when it copies a tensor
        warnings.simplefilter("ignore", UserWarning)
        want = [canon(r) for r in theirs]
    assert [canon(r) for r in ours] == want
    assert ours.column_names == theirs.column_names
    assert ours.features == theirs.features
    assert ours.n_shards == theirs.n_shards


@pytest.mark.parametrize("epoch", [1, 2, 3, 5])
@pytest.mark.parametrize("name", ["plain", "map_filter_take", "skip", "filter_batched"])
def test_set_epoch_reorders_shards_as_hf(name, epoch):
    ours, theirs = (PIPELINES[name](d) for d in both(5))
    ours.set_epoch(epoch)
    theirs.set_epoch(epoch)
    assert [canon(r) for r in ours] == [canon(r) for r in theirs]


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
@pytest.mark.parametrize(("batch_size", "drop"), [(4, False), (4, True), (23, False), (50, False)])
def test_iter_batches_as_hf(fmt, batch_size, drop, mapped):
    ours, theirs = (d.map(add_b) if mapped else d for d in both(3))
    ours, theirs = ours.with_format(fmt), theirs.with_format(fmt)
    got = list(ours.iter(batch_size, drop_last_batch=drop))
    with warnings.catch_warnings():  # HF's torch formatter warns when it copies a tensor
        warnings.simplefilter("ignore", UserWarning)
        want = list(theirs.iter(batch_size, drop_last_batch=drop))
    assert [canon(b) for b in got] == [canon(b) for b in want]


@pytest.mark.parametrize("strategy", ["auto", "shards", "examples"])
@pytest.mark.parametrize(("n_shards", "world"), [(4, 2), (3, 2), (6, 3), (5, 2)])
def test_split_dataset_by_node_as_hf(n_shards, world, strategy):
    from datasets.distributed import split_dataset_by_node

    if strategy == "shards" and n_shards < world:
        pytest.skip("HF refuses it; checked below")
    for rank in range(world):
        ours, theirs = (d.map(add_b) for d in both(n_shards))
        a = am.split_dataset_by_node(ours, rank=rank, world_size=world, strategy=strategy)
        h = split_dataset_by_node(theirs, rank=rank, world_size=world, strategy=strategy)
        assert [canon(r) for r in a] == [canon(r) for r in h]
        assert a.n_shards == h.n_shards


@pytest.mark.parametrize("fmt", ["numpy", "torch"])
def test_formats_keep_the_column_types_as_hf(fmt):
    """Rows are typed by the features (int32 stays int32 in numpy), also as map inputs."""
    import pyarrow as pa

    t = pa.table(
        {
            "a": pa.array(range(6), pa.int32()),
            "f": pa.array([i / 4 for i in range(6)], pa.float32()),
            "l": pa.array([[i, i] for i in range(6)], pa.list_(pa.int16())),
        }
    )
    for pipe in (
        lambda d: d.with_format(fmt),
        lambda d: d.with_format(fmt).filter(lambda r: int(r["a"]) != 2),
        lambda d: d.with_format(fmt).map(lambda r: {"ty": str(type(r["a"]))}),
        lambda d: d.with_format(fmt).map(
            lambda b: {"n": [len(b["a"])] * len(b["a"])}, batched=True
        ),
        lambda d: d.map(lambda r: {"g": [r["a"] / 2, 1.0], "s": "x"}).with_format(fmt),
        lambda d: d.with_format(fmt).remove_columns("f").take(4),
        lambda d: d.select_columns(["l", "a"]).skip(1).with_format(fmt),
        lambda d: d.rename_column("a", "z").with_format(fmt).batch(4),
    ):
        ours = pipe(am.Dataset(t).to_iterable_dataset(2))
        theirs = pipe(hf.Dataset(t).to_iterable_dataset(2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            want = [canon(row) for row in theirs]
        assert [canon(row) for row in ours] == want
    shuffled = [  # another order (a shuffle buffer), the same typed values
        sorted(
            (repr(canon(row)) for row in d.to_iterable_dataset(2).shuffle(seed=0).with_format(fmt)),
        )
        for d in (am.Dataset(t), hf.Dataset(t))
    ]
    assert shuffled[0] == shuffled[1]
    got = list(am.Dataset(t).to_iterable_dataset().with_format(fmt).iter(4))
    want = list(hf.Dataset(t).to_iterable_dataset().with_format(fmt).iter(4))
    assert [canon(b) for b in got] == [canon(b) for b in want]


def test_column_access_as_hf():
    data = {"m": [{"s": i, "k": str(i)} for i in range(5)], "a": list(range(5))}
    ours, theirs = both(2, data)
    assert list(ours["a"]) == list(theirs["a"]) == list(range(5))
    assert list(ours["m"]["k"]) == list(theirs["m"]["k"])


def test_split_dataset_by_node_of_a_dataset_is_its_shard():
    ds = am.Dataset.from_dict(DATA)
    assert am.split_dataset_by_node(ds, 1, 3)["a"] == ds.shard(3, 1)["a"]


def test_errors_name_the_problem():
    ds = am.Dataset.from_dict({"a": [1, 2]})
    with pytest.raises(ValueError, match="into 3 shards"):
        ds.to_iterable_dataset(num_shards=3)
    ids = ds.to_iterable_dataset()
    with pytest.raises(ValueError, match=r"\['b'\] not in the dataset"):
        ids.select_columns("b")
    with pytest.raises(ValueError, match="Invalid strategy"):
        am.split_dataset_by_node(ids, 0, 2, strategy="rows")
    with pytest.raises(ValueError, match="IterableDataset"):
        am.interleave_datasets([ids, ds])
    with pytest.raises(
        ValueError, match=r"renaming \['a'\] to \['b'\]: columns \['b'\] are already"
    ):
        list(ids.map(lambda r: {"b": 1}).rename_column("a", "b"))
    with pytest.raises(ValueError, match="Column lengths mismatch"):
        list(ids.map(lambda b: {"x": [1, 2, 3]}, batched=True))


def test_formats_hf_cannot_convert_are_refused_as_in_hf():
    ds = am.Dataset.from_dict({"a": [1, 2], "b": [3, 4]})
    for view in (ds.with_format("torch", columns=["a"]), ds.with_transform(lambda b: b)):
        with pytest.raises(NotImplementedError, match="with_format"):
            view.to_iterable_dataset()


def test_to_iterable_dataset_keeps_the_format_not_the_split():
    ds = am.Dataset.from_dict({"a": [1, 2]}, split="train").with_format("torch")
    ids = ds.to_iterable_dataset()
    theirs = hf.Dataset.from_dict({"a": [1, 2]}, split="train").to_iterable_dataset()
    assert ids.format["type"] == "torch"
    assert ids.split is None and theirs.split is None  # HF leaves it unset too
    assert next(iter(ids))["a"].dtype == torch.int64


def test_dataset_dict_to_iterable_dataset():
    test = am.Dataset.from_dict({"a": [1], "t": ["x"], "v": [[0.0]]})
    dd = am.DatasetDict({"train": am.Dataset.from_dict(DATA), "test": test})
    it = dd.to_iterable_dataset(num_shards={"train": 3}).remove_columns("v")
    assert isinstance(it, am.IterableDatasetDict)
    assert it["train"].n_shards == 3 and it["test"].n_shards == 1
    assert it.column_names == {"train": ["a", "t"], "test": ["a", "t"]}
    assert [r["a"] for r in it["train"]] == DATA["a"]
