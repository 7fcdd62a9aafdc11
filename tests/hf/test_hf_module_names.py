"""The module-level names HF scripts use, on ``arrowmix`` as on ``datasets`` 5.2.

``from datasets import Features, Value, ClassLabel...``, ``datasets.utils.logging``,
``datasets.disable_progress_bars()``, ``datasets.config``, ``get_dataset_config_names``:
a script that imports them from arrowmix gets the same objects or the same answers.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._dataset import progress
from arrowmix.exceptions import NotLocalError

hf = pytest.importorskip("datasets")


def test_feature_classes_are_hfs_and_work_in_arrowmix_calls():
    for name in ("Features", "Value", "ClassLabel", "Sequence", "List", "Image", "Audio", "Json"):
        assert getattr(am, name) is getattr(hf, name)
    from arrowmix import ClassLabel, Features, Value  # the form scripts use

    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    rows = {"text": ["a", "b"], "label": [1, 0]}
    ours = am.Dataset.from_dict(rows, features=features)
    theirs = hf.Dataset.from_dict(rows, features=features)
    assert ours.features == theirs.features
    assert ours.features["label"].int2str(ours["label"]) == ["pos", "neg"]
    cast = ours.cast_column("label", am.Value("int32"))
    assert cast.features == theirs.cast_column("label", hf.Value("int32")).features
    assert str(am.Split.TRAIN) == "train" and am.NamedSplit("x") == hf.NamedSplit("x")


def test_unknown_module_attribute_still_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        am.Nope
    assert not hasattr(am, "push_to_hub")


def test_utils_logging_sets_arrowmix_logger_as_hf_sets_its_own():
    logger = logging.getLogger("arrowmix")
    before = logger.level
    try:
        am.utils.logging.set_verbosity_error()
        assert logger.level == logging.ERROR == am.utils.logging.get_verbosity()
        am.logging.set_verbosity(hf.logging.INFO)
        assert am.utils.logging.get_verbosity() == logging.INFO
        am.utils.logging.set_verbosity_warning()
        assert am.logging.get_verbosity() == hf.logging.get_verbosity() == logging.WARNING
        assert am.utils.logging.get_logger().name == "arrowmix"
        assert [n for n in dir(hf.utils.logging) if n.startswith("set_verbosity")] == [
            n for n in dir(am.utils.logging) if n.startswith("set_verbosity")
        ]
    finally:
        logger.setLevel(before)


def test_disable_progress_bars_silences_map_progress(monkeypatch):
    monkeypatch.setenv("ARROWMIX_PROGRESS", "1")
    try:
        assert progress.progress_enabled() and am.is_progress_bar_enabled()
        am.disable_progress_bars()
        assert not progress.progress_enabled() and am.are_progress_bars_disabled()
        am.utils.enable_progress_bars()
        assert progress.progress_enabled() and not am.are_progress_bars_disabled()
        am.disable_progress_bar()
        assert not am.utils.is_progress_bar_enabled()
    finally:
        am.enable_progress_bar()


def test_config_names_scripts_read():
    assert isinstance(am.config.HF_DATASETS_CACHE, type(hf.config.HF_DATASETS_CACHE))
    assert am.config.DEFAULT_MAX_BATCH_SIZE == hf.config.DEFAULT_MAX_BATCH_SIZE
    assert am.config.MAX_SHARD_SIZE == hf.config.MAX_SHARD_SIZE
    assert am.config.HF_DATASETS_OFFLINE is True


def _folder(tmp_path, configs):
    for cfg in configs:
        (tmp_path / cfg).mkdir()
        for split, n in (("train", 3), ("test", 1)):
            table = pa.table({"x": list(range(n))})
            pq.write_table(table, tmp_path / cfg / f"{split}-00000-of-00001.parquet")
    if len(configs) > 1:
        lines = ["---", "configs:"]
        for cfg in configs:
            lines += [f"- config_name: {cfg}", "  data_files:"]
            lines += [f"  - split: {s}\n    path: {cfg}/{s}-*" for s in ("train", "test")]
        (tmp_path / "README.md").write_text("\n".join([*lines, "---", ""]))
    return str(tmp_path)


@pytest.mark.parametrize("configs", [["a", "b"], ["data"]])
def test_config_and_split_names_of_a_local_folder_are_hfs(tmp_path, configs, monkeypatch):
    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)
    path = _folder(tmp_path, configs)
    assert am.get_dataset_config_names(path) == hf.get_dataset_config_names(path)
    assert am.get_dataset_default_config_name(path) == hf.get_dataset_default_config_name(path)
    name = configs[0] if len(configs) > 1 else None
    assert am.get_dataset_split_names(path, name) == hf.get_dataset_split_names(path, name)
    if len(configs) > 1:
        with pytest.raises(ValueError, match="Config name is missing"):
            am.get_dataset_split_names(path)


def test_config_names_of_a_builder_and_a_hub_name(tmp_path):
    pq.write_table(pa.table({"x": [1]}), tmp_path / "f.parquet")
    files = {"train": str(tmp_path / "f.parquet"), "test": str(tmp_path / "f.parquet")}
    assert am.get_dataset_config_names("parquet", data_files=files) == ["default"]
    assert am.get_dataset_split_names("parquet", data_files=files) == ["train", "test"]
    with pytest.raises(NotLocalError, match="never uses the network"):
        am.get_dataset_config_names("someone/some-dataset")


def _hub_copy(tmp_path, monkeypatch, repo_id="me/zen", commit="abc123"):
    """``repo_id`` as ``hf download`` leaves it in the Hub cache (``refs/main``, a snapshot)."""
    repo = tmp_path / "hub" / ("datasets--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    _folder(snapshot, ["a", "b"])
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return snapshot


def test_a_hub_name_in_the_local_hub_cache_loads_from_it(tmp_path, monkeypatch):
    snapshot = _hub_copy(tmp_path, monkeypatch)
    by_name = am.load_dataset("me/zen", "b", split="train")
    assert by_name.to_dict() == am.load_dataset(str(snapshot), "b", split="train").to_dict()
    assert list(am.load_dataset("me/zen", "a", revision="abc123")) == ["train", "test"]
    assert am.get_dataset_config_names("me/zen") == ["a", "b"]
    assert am.get_dataset_split_names("me/zen", "a") == ["train", "test"]
    with pytest.raises(NotLocalError, match="HF_HUB_CACHE"):
        am.load_dataset("me/zen", "a", revision="v2")  # no such ref or commit downloaded
    with pytest.raises(NotLocalError, match="never uses the network"):
        am.load_dataset("me/other")


def test_config_environment_flags_are_hfs():
    for name in ("HF_HUB_VERSION", "TORCH_AVAILABLE", "POLARS_AVAILABLE"):
        assert getattr(am.config, name) == getattr(hf.config, name), name
