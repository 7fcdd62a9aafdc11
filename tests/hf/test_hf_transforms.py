"""``with_transform``/``set_transform``, ``take``/``skip``/``batch`` and HF's format aliases,
compared with HF ``datasets`` value by value."""

from __future__ import annotations

import numpy as np
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

ROWS = {"text": ["a b", "c", "d e f", "g h", "i"], "y": [1, 2, 3, 4, 5]}


def count_words(batch):
    return {"n": [len(t.split()) for t in batch["text"]]}


def pair(columns=None, output_all_columns=False):
    ours = am.Dataset.from_dict(ROWS).with_transform(count_words, columns, output_all_columns)
    theirs = hf.Dataset.from_dict(ROWS).with_transform(count_words, columns, output_all_columns)
    return ours, theirs


@pytest.mark.parametrize(
    ("columns", "output_all_columns"), [(None, False), (["text"], False), (["text"], True)]
)
def test_with_transform_reads_as_hf(columns, output_all_columns):
    ours, theirs = pair(columns, output_all_columns)
    for key in (0, 3, -1, slice(1, 4), [4, 0], range(2)):
        assert ours[key] == theirs[key], key
    assert list(ours) == list(theirs)
    assert list(ours.iter(batch_size=2)) == list(theirs.iter(batch_size=2))
    assert ours.format["type"] == theirs.format["type"] == "custom"


def test_a_map_receives_the_transformed_batch_and_keeps_the_transform():
    ours, theirs = pair()

    def double(batch):
        return {"k": [2 * v for v in batch["n"]]}

    got, want = ours.map(double, batched=True), theirs.map(double, batched=True)
    assert got.column_names == want.column_names
    assert got.with_format(None)[:] == want.with_format(None)[:]
    assert got[0] == want[0]


def test_set_transform_in_place_and_none_removes_it():
    ds = am.Dataset.from_dict(ROWS)
    before = ds.fingerprint
    ds.set_transform(count_words)
    assert ds[1] == {"n": 1} and ds.fingerprint != before
    ds.set_transform(None)
    assert ds[1] == {"text": "c", "y": 2}


def test_the_fingerprint_follows_the_transforms_code():
    ds = am.Dataset.from_dict(ROWS)
    a = ds.with_transform(count_words).fingerprint
    assert a == ds.with_transform(count_words).fingerprint
    assert a != ds.with_transform(lambda b: {"m": b["y"]}).fingerprint


def test_a_transform_that_returns_no_dict_is_named():
    ds = am.Dataset.from_dict(ROWS).with_transform(lambda b: [1, 2])
    with pytest.raises(TypeError, match="must return a dict"):
        ds[0]


@pytest.mark.parametrize("n", [0, 2, 5, 9])
def test_take_and_skip_as_hf(n):
    ours, theirs = am.Dataset.from_dict(ROWS), hf.Dataset.from_dict(ROWS)
    assert ours.take(n)[:] == theirs.take(n)[:]
    assert ours.shuffle(seed=1).take(n)[:] == theirs.shuffle(seed=1).take(n)[:]
    if n == len(ours):  # HF 5.2 raises IndexError on skip(len(ds)); nothing is left here
        assert ours.skip(n).num_rows == 0
    else:
        assert ours.skip(n)[:] == theirs.skip(n)[:]


@pytest.mark.parametrize(("size", "drop"), [(2, False), (2, True), (5, False), (7, False)])
def test_batch_as_hf(size, drop):
    ours = am.Dataset.from_dict(ROWS).batch(size, drop_last_batch=drop)
    theirs = hf.Dataset.from_dict(ROWS).batch(size, drop_last_batch=drop)
    assert ours[:] == theirs[:]
    assert ours.num_rows == theirs.num_rows


def test_batch_dropping_its_only_batch_is_empty():
    # HF 5.2 returns the rows unbatched here (its map skips a dataset whose every batch is
    # dropped); no batch is left, so arrowmix returns none.
    assert am.Dataset.from_dict(ROWS).batch(7, drop_last_batch=True).num_rows == 0


@pytest.mark.parametrize(
    ("alias", "name"), [("np", "numpy"), ("pt", "torch"), ("pa", "arrow"), ("pyarrow", "arrow")]
)
def test_hfs_format_aliases(alias, name):
    if name == "torch":
        pytest.importorskip("torch")
    ours = am.Dataset.from_dict(ROWS)
    theirs = hf.Dataset.from_dict(ROWS)
    got, want = ours.with_format(alias), theirs.with_format(alias)
    assert got.format["type"] == want.format["type"] == name
    assert got.fingerprint == ours.with_format(name).fingerprint
    a, b = got[:]["y"], want[:]["y"]  # HF 5 gives a lazy Column for ds["y"]
    assert type(a).__name__ == type(b).__name__
    assert np.asarray(a).tolist() == np.asarray(b).tolist()
    ours.set_format(type=alias)
    assert ours.format["type"] == name
