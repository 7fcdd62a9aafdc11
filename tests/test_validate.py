"""Argument mistakes: a wrong type is a TypeError, a wrong value a ValueError, everywhere."""

from __future__ import annotations

import numpy as np
import pytest

import arrowmix as am
from arrowmix._validate import check_choice, check_index, check_int


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"n": list(range(10))})


@pytest.mark.parametrize(
    "call",
    [
        lambda ds: ds.shuffle(seed="3"),
        lambda ds: ds.shuffle(seed=1.5),
        lambda ds: next(ds.iter(batch_size="3")),
        lambda ds: ds.map(lambda r: r, num_proc="2"),
        lambda ds: ds.map(lambda r: r, num_proc=True),
        lambda ds: ds.shard("2", 0),
        lambda ds: ds.shard(2, "0"),
        lambda ds: am.write_chunks(ds, "unused", rows_per_chunk="3"),
    ],
)
def test_wrong_types_raise_type_error(ds, call):
    with pytest.raises(TypeError, match=r"must be .*, got (str|float|bool)"):
        call(ds)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda ds: ds.shuffle(seed=-1), ValueError),
        (lambda ds: next(ds.iter(batch_size=0)), ValueError),
        (lambda ds: ds.map(lambda r: r, num_proc=0), ValueError),
        (lambda ds: ds.shard(0, 0), ValueError),
        (lambda ds: ds.shard(2, 2), IndexError),
        (lambda ds: am.write_chunks(ds, "unused", bytes_per_chunk=0), ValueError),
    ],
)
def test_wrong_values_raise_value_or_index_error(ds, call, error):
    with pytest.raises(error):
        call(ds)


def test_numpy_integers_are_ints(ds):
    assert ds.shuffle(seed=np.int64(3))["n"] == ds.shuffle(seed=3)["n"]
    assert check_int("n", np.int32(4), minimum=1) == 4
    assert check_int("n", None, none_ok=True) is None


def test_helpers_name_the_argument():
    with pytest.raises(IndexError, match=r"`index` must be in \[0, 3\), got 3"):
        check_index("index", 3, 3)
    with pytest.raises(ValueError, match=r"`mode` must be one of \['a', 'b'\], got 'c'"):
        check_choice("mode", "c", ["a", "b"])
    with pytest.raises(TypeError, match="`mode` must be one of"):
        check_choice("mode", 1, ["a", "b"])
