from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"text": ["a", "bb", "ccc", "dddd", "eeeee"], "n": [1, 2, 3, 4, 5]})


def test_constructors_agree():
    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    a = am.Dataset.from_pylist(rows)
    b = am.Dataset.from_dict({"a": [1, 2], "b": ["x", "y"]})
    c = am.Dataset.from_arrow(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    d = am.Dataset.from_arrow(pa.table({"a": [1, 2], "b": ["x", "y"]}).to_batches(max_chunksize=1))
    assert list(a) == list(b) == list(c) == list(d) == rows
    assert a.fingerprint == b.fingerprint == c.fingerprint == d.fingerprint  # chunking ignored


def test_from_dict_with_schema():
    ds = am.Dataset.from_dict({"a": [1, 2]}, schema=pa.schema([("a", pa.int8())]))
    assert ds.schema == pa.schema([("a", pa.int8())])


def test_from_dict_unequal_lengths():
    with pytest.raises(ValueError, match="same length"):
        am.Dataset.from_dict({"a": [1, 2], "b": [1]})


def test_access(ds):
    assert len(ds) == ds.num_rows == 5
    assert ds.column_names == ["text", "n"]
    assert ds[0] == {"text": "a", "n": 1}
    assert ds[1:3] == {"text": ["bb", "ccc"], "n": [2, 3]}
    assert ds[::2] == {"text": ["a", "ccc", "eeeee"], "n": [1, 3, 5]}
    assert ds[[4, 0]] == {"text": ["eeeee", "a"], "n": [5, 1]}
    assert ds[np.array([1])] == {"text": ["bb"], "n": [2]}
    assert ds["n"] == [1, 2, 3, 4, 5]
    assert ds.to_table().equals(
        pa.table({"text": ["a", "bb", "ccc", "dddd", "eeeee"], "n": [1, 2, 3, 4, 5]})
    )


@pytest.mark.parametrize("bad", [5, 100, -6, [0, 5], [-7]])
def test_index_errors_name_index_and_length(ds, bad):
    culprit = bad if isinstance(bad, int) else bad[-1]
    with pytest.raises(IndexError, match=rf"{culprit}.*length 5"):
        ds[bad]


def test_negative_indices_count_from_the_end(ds):
    assert ds[-1] == {"text": "eeeee", "n": 5}
    assert ds[-5] == ds[0]
    assert ds[[-1, 0]] == {"text": ["eeeee", "a"], "n": [5, 1]}
    assert ds[np.array([0, -1])]["n"] == [1, 5]
    assert ds[range(0, -2, -1)]["n"] == [1, 5]
    assert ds.select([-2, -1])["n"] == [4, 5]
    assert ds.shuffle(seed=0)[-1] == ds.shuffle(seed=0)[len(ds) - 1]


def test_unknown_column_lists_available(ds):
    with pytest.raises(KeyError, match=r"'nope'.*\['text', 'n'\]"):
        ds["nope"]
    with pytest.raises(KeyError, match="nope"):
        ds.sort("nope")
    with pytest.raises(KeyError, match="nope"):
        ds.select_columns(["nope"])


def test_iter_batches_and_rows(ds):
    assert [b["n"] for b in ds.iter(batch_size=2)] == [[1, 2], [3, 4], [5]]
    assert [b["n"] for b in ds.iter(batch_size=2, drop_last_batch=True)] == [
        [1, 2],
        [3, 4],
    ]
    assert [r["n"] for r in ds] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="batch_size"):
        next(ds.iter(batch_size=0))


def test_formats(ds):
    np_ds = ds.with_format("numpy")
    assert isinstance(np_ds["n"], np.ndarray)
    np.testing.assert_array_equal(np_ds[1:3]["n"], [2, 3])
    assert np_ds[0]["n"] == 2 - 1
    arrow = ds.with_format("arrow")
    assert isinstance(arrow[0:2], pa.Table)
    assert isinstance(arrow["n"], pa.ChunkedArray)
    assert ds.with_format("numpy").with_format(None)[0] == {"text": "a", "n": 1}
    only_n = ds.with_format("python", columns=["n"])
    assert only_n[0] == {"n": 1}
    assert next(iter(ds.with_format("numpy")))["n"] == 1


def test_numpy_format_stacks_lists():
    ds = am.Dataset.from_dict({"ids": [[1, 2], [3, 4]], "rag": [[1], [2, 3]]}).with_format("numpy")
    assert ds["ids"].shape == (2, 2)
    assert ds["rag"].dtype == object and list(ds["rag"][1]) == [2, 3]


def test_unknown_format(ds):
    with pytest.raises(ValueError, match="'jax'"):
        ds.with_format("jax")


def test_torch_format_is_optional(ds):
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="arrowmix\\[torch\\]"):
            ds.with_format("torch")
    else:
        t = ds.with_format("torch")
        assert t[0:2]["n"].tolist() == [1, 2]


def test_column_operations(ds):
    assert ds.select_columns("n").column_names == ["n"]
    assert ds.remove_columns(["n"]).column_names == ["text"]
    r = ds.rename_column("n", "length")
    assert r.column_names == ["text", "length"] and r[0] == {"text": "a", "length": 1}
    with pytest.raises(ValueError, match="already exists"):
        ds.rename_column("n", "text")
    fps = {
        ds.fingerprint,
        ds.select_columns("n").fingerprint,
        ds.remove_columns("n").fingerprint,
        r.fingerprint,
    }
    assert len(fps) == 4


def test_column_ops_keep_indices(ds):
    view = ds.sort("n", reverse=True).select_columns(["text"])
    assert view["text"] == ["eeeee", "dddd", "ccc", "bb", "a"]


def test_concatenate(ds):
    both = am.concatenate_datasets([ds, ds.sort("n", reverse=True)])
    assert both["n"] == [1, 2, 3, 4, 5, 5, 4, 3, 2, 1]
    assert am.concatenate_datasets([ds, ds])["n"] == [1, 2, 3, 4, 5] * 2


def test_concatenate_mismatched_schemas_shows_both(ds):
    other = am.Dataset.from_dict({"text": ["x"], "n": [1.5]})
    with pytest.raises(
        SchemaMismatchError, match=r"'n' is double in dataset 1 but int64 in dataset 0"
    ):
        am.concatenate_datasets([ds, other])
    with pytest.raises(ValueError, match="at least one"):
        am.concatenate_datasets([])


def test_repr(ds):
    assert "num_rows=5" in repr(ds) and ds.fingerprint in repr(ds)


def test_caching_switches():
    assert am.is_caching_enabled()
    am.disable_caching()
    try:
        assert not am.is_caching_enabled()
    finally:
        am.enable_caching()
    assert am.is_caching_enabled()


def test_hf_spellings():
    rows = [{"n": 2}, {"n": 1}]
    ds = am.Dataset.from_list(rows)
    assert ds.sort(column_names="n")["n"] == [1, 2] == ds.sort("n")["n"]
    with pytest.raises(TypeError, match="exactly one"):
        ds.sort()
