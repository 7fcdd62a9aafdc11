"""save_to_disk / load_from_disk: HF's directory layout, both ways, atomic."""

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._hf import saved
from arrowmix.exceptions import ChunkFileError


def _ds(n=10):
    return am.Dataset.from_dict({"x": list(range(n)), "s": [str(i) for i in range(n)]})


def test_round_trip_keeps_rows_format_and_fingerprint(tmp_path):
    view = _ds().shuffle(seed=1).select(range(6)).with_format("numpy", columns=["x"])
    view.save_to_disk(tmp_path / "d", num_shards=3)
    names = sorted(os.listdir(tmp_path / "d"))
    assert names == [
        "data-00000-of-00003.arrow", "data-00001-of-00003.arrow", "data-00002-of-00003.arrow",
        "dataset_info.json", "state.json",
    ]  # fmt: skip
    with open(tmp_path / "d" / "data-00001-of-00003.arrow", "rb") as fh:
        assert pa.ipc.open_stream(fh).read_all().num_rows == 2  # IPC stream files, as HF's
    back = am.load_from_disk(tmp_path / "d")
    assert back.fingerprint == view.fingerprint and back.format == view.format
    assert back.with_format(None)[:] == view.with_format(None)[:]
    again = am.Dataset.load_from_disk(str(tmp_path / "d"), keep_in_memory=True)
    assert again.cache_files == [] and again.fingerprint == view.fingerprint


def test_changed_files_are_refused_naming_the_file(tmp_path):
    ds = _ds(4)
    ds.save_to_disk(tmp_path / "d")
    other = tmp_path / "o"
    _ds(5).save_to_disk(other)
    os.replace(other / "data-00000-of-00001.arrow", tmp_path / "d" / "data-00000-of-00001.arrow")
    with pytest.raises(ChunkFileError, match=r"data-00000-of-00001\.arrow.*save_to_disk"):
        am.load_from_disk(tmp_path / "d")  # not what was saved: never served as the save
    back = am.Dataset.from_chunks([str(tmp_path / "d" / "data-00000-of-00001.arrow")])
    assert back["x"] == list(range(5)) and back.fingerprint != ds.fingerprint


def test_max_shard_size_and_errors(tmp_path):
    ds = am.Dataset.from_dict({"t": ["a" * 3000, "b" * 3000, "c"]})
    ds.save_to_disk(tmp_path / "d", max_shard_size="1KB")
    assert len([f for f in os.listdir(tmp_path / "d") if f.endswith(".arrow")]) == 3
    one = am.Dataset.from_dict({"t": ["a" * 3000]})
    one.save_to_disk(tmp_path / "one", max_shard_size="1KB")  # never more shards than rows
    assert os.path.exists(tmp_path / "one" / "data-00000-of-00001.arrow")
    big = am.Dataset.from_dict({"t": ["x" * 1000] * 8})
    assert big._estimate_nbytes() == big.shuffle(seed=0)._estimate_nbytes() > 8000
    _ds(6).save_to_disk(tmp_path / "p", num_proc=2)  # at least one file per process, as in HF
    assert len(am.load_from_disk(tmp_path / "p").cache_files) == 2
    with pytest.raises(ValueError, match="not both"):
        ds.save_to_disk(tmp_path / "e", num_shards=1, max_shard_size=10)
    with pytest.raises(TypeError, match="dtype"):
        ds.with_format("numpy", dtype=np.int16).save_to_disk(tmp_path / "e")
    loaded = am.load_from_disk(tmp_path / "d")
    with pytest.raises(PermissionError, match="reads files"):
        loaded.save_to_disk(tmp_path / "d")
    with pytest.raises(FileNotFoundError, match=r"state\.json"):
        am.load_from_disk(tmp_path)


def test_a_killed_save_leaves_no_directory(tmp_path, monkeypatch):
    _ds(3).save_to_disk(tmp_path / "d")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(saved, "_info", boom)  # dies after the data files, before the rename
    with pytest.raises(KeyboardInterrupt):
        _ds(7).save_to_disk(tmp_path / "d")
    assert os.listdir(tmp_path) == ["d"]  # no temporary directory left behind
    assert am.load_from_disk(tmp_path / "d")["x"] == [0, 1, 2]  # the previous save intact
    with pytest.raises(KeyboardInterrupt):
        _ds(7).save_to_disk(tmp_path / "new")
    assert not os.path.exists(tmp_path / "new")


def test_an_empty_dataset_round_trips(tmp_path):
    _ds(3).select([]).save_to_disk(tmp_path / "d")
    back = am.load_from_disk(tmp_path / "d")
    assert len(back) == 0 and back.column_names == ["x", "s"]


def test_hf_loads_ours_with_class_labels_and_texts(tmp_path):
    datasets = pytest.importorskip("datasets")
    feats = datasets.Features(
        {"label": datasets.ClassLabel(names=["neg", "pos"]), "t": datasets.Value("string")}
    )
    info = datasets.DatasetInfo(description="movie reviews")
    ds = am.Dataset.from_dict({"label": [1, 0, 1], "t": ["a", "b", "c"]}, features=feats, info=info)
    ds.select([2, 0]).with_format("numpy").save_to_disk(tmp_path / "d")
    hf = datasets.load_from_disk(str(tmp_path / "d"))
    assert hf.features == feats and hf.info.description == "movie reviews"
    assert hf.format["type"] == "numpy" and list(hf.with_format(None)["t"]) == ["c", "a"]
    with open(tmp_path / "d" / "state.json") as fh:  # HF's load rolls it on with the format
        assert json.load(fh)["_fingerprint"] == ds.select([2, 0]).with_format("numpy").fingerprint


def test_we_load_hf_saved_directories(tmp_path):
    datasets = pytest.importorskip("datasets")
    feats = datasets.Features({"label": datasets.ClassLabel(names=["a", "b"])})
    hf = datasets.Dataset.from_dict(
        {"label": [0, 1, 1, 0]},
        features=feats,
        info=datasets.DatasetInfo(citation="@x", features=feats),
    )
    hf = hf.select([3, 1]).with_format("numpy", columns=["label"])
    hf.save_to_disk(str(tmp_path / "d"), num_shards=2)
    with open(tmp_path / "d" / "state.json") as fh:
        assert "_arrowmix_content" not in json.load(fh)
    ds = am.load_from_disk(tmp_path / "d")
    assert ds.fingerprint == hf._fingerprint and ds.format["type"] == "numpy"
    assert ds.with_format(None)["label"] == [0, 1] and ds.features == feats
    assert ds.info.citation == "@x"
