"""HF's ``generator=`` of ``shuffle`` and ``train_test_split``: the rows HF draws from it.

HF draws the permutation from the given ``numpy.random.Generator`` (advancing it, so the next
call draws other rows); arrowmix does the same, so the same generator state gives HF's rows.
"""

from __future__ import annotations

import numpy as np
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

DATA = {"id": list(range(30)), "label": [i % 3 for i in range(30)]}


def both(call):
    return [call(lib.Dataset.from_dict(DATA), np.random.default_rng(7)) for lib in (am, hf)]


def test_shuffle_with_a_generator_as_hf():
    def twice(ds, g):  # the generator advances: the second shuffle differs
        return ds.shuffle(generator=g)["id"][:], ds.shuffle(generator=g)["id"][:]

    ours, theirs = both(twice)
    assert ours == theirs and ours[0] != ours[1]
    ours, theirs = both(lambda ds, g: ds.select(range(5, 25)).shuffle(generator=g)["id"][:])
    assert ours == theirs


@pytest.mark.parametrize("stratify", [None, "label"])
def test_train_test_split_with_a_generator_as_hf(stratify):
    def split(ds, g):
        if stratify:
            ds = ds.class_encode_column("label")
        parts = ds.train_test_split(test_size=0.2, generator=g, stratify_by_column=stratify)
        return parts["train"]["id"][:], parts["test"]["id"][:]

    ours, theirs = both(split)
    assert ours == theirs


def test_generator_errors_as_hf():
    for lib in (am, hf):
        ds = lib.Dataset.from_dict(DATA)
        with pytest.raises(ValueError, match="Both `seed` and `generator`"):
            ds.shuffle(seed=1, generator=np.random.default_rng(0))
        with pytest.raises(ValueError, match=r"instance of numpy\.random\.Generator"):
            ds.shuffle(generator=np.random.RandomState(0))


def test_different_generator_states_never_share_a_stored_split(tmp_path):
    ds = am.Dataset.from_dict(DATA)
    a = ds.train_test_split(test_size=5, generator=np.random.default_rng(1))
    b = ds.train_test_split(test_size=5, generator=np.random.default_rng(2))
    assert a["test"].fingerprint != b["test"].fingerprint
    assert a["test"]["id"] != b["test"]["id"]
