"""``to_hub_folder``: the folder HF's ``push_to_hub`` uploads, written locally; HF reads it back.

No network call is made or faked: the README is compared with the dataset card HF's own
``push_to_hub`` builds (its card function, run on the local folder), the files with HF's
shard names, and HF's ``load_dataset`` reads the folder as it would read the repository.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")
yaml = pytest.importorskip("yaml")


def _features() -> Any:
    return datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )


def _splits() -> dict[str, am.Dataset]:
    f = _features()
    return {
        "train": am.Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 1]}, features=f),
        "test": am.Dataset.from_dict({"text": ["d"], "label": [0]}, features=f),
    }


def _hf_card(folder: Any, splits: list[str], config_name: str, data_dir: str) -> str:
    """The README HF's push_to_hub writes into an empty repository for these splits."""
    from datasets.arrow_dataset import _get_updated_dataset_card
    from datasets.splits import SplitInfo
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    empty = folder / "empty-repo"
    empty.mkdir()
    card, _ = _get_updated_dataset_card(
        fs=DirFileSystem(path=str(empty), fs=LocalFileSystem()),
        config_name=config_name,
        splits_info=[SplitInfo(name=s, num_bytes=0, num_examples=1) for s in splits],
        features=_features(),
        data_dir=data_dir,
        set_default=None,
        uploaded_sizes=[0] * len(splits),
        deleted_sizes=[0] * len(splits),
        remove_other_splits=False,
    )
    return str(card)


def _front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    found: dict[str, Any] = yaml.safe_load(text.split("---\n")[1])
    return found


def _without_dataset_info(card: str) -> str:
    """HF's card less its ``dataset_info`` block (sizes and features; not written here)."""
    lines, out, skipping = card.splitlines(keepends=True), [], False
    for line in lines:
        if line.startswith("dataset_info:"):
            skipping = True
            continue
        if skipping and line.startswith(" "):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


def test_a_dataset_dict_writes_hfs_layout_and_card(tmp_path: Any) -> None:
    dd = am.DatasetDict(_splits())
    files = dd.to_hub_folder(tmp_path / "repo", num_shards={"train": 2})
    assert files == [
        "data/train-00000-of-00002.parquet",
        "data/train-00001-of-00002.parquet",
        "data/test-00000-of-00001.parquet",
        "README.md",
    ]
    ours = (tmp_path / "repo" / "README.md").read_text()
    hf = _hf_card(tmp_path, ["train", "test"], "default", "data")
    assert ours == _without_dataset_info(hf)
    assert _front_matter(ours)["configs"] == _front_matter(hf)["configs"]


def test_hf_load_dataset_reads_the_folder_back_equal(tmp_path: Any) -> None:
    dd = am.DatasetDict(_splits())
    dd.to_hub_folder(tmp_path / "repo", num_shards={"train": 2})
    cache = str(tmp_path / "hf-cache")
    back = datasets.load_dataset(str(tmp_path / "repo"), cache_dir=cache)
    assert list(back) == ["train", "test"]
    for split, ds in dd.items():
        assert back[split].to_dict() == ds.to_dict()
        assert back[split].features == _features()  # ClassLabel names kept
    data_dir = str(tmp_path / "repo" / "data")
    by_dir = datasets.load_dataset("parquet", data_dir=data_dir, cache_dir=cache)
    assert {k: v.to_dict() for k, v in by_dir.items()} == {k: v.to_dict() for k, v in dd.items()}


def test_one_dataset_is_written_as_its_split_and_hfs_default_names(tmp_path: Any) -> None:
    ds = _splits()["train"]
    assert ds.to_hub_folder(tmp_path / "a") == ["data/train-00000-of-00001.parquet", "README.md"]
    named = ds.to_hub_folder(tmp_path / "b", "validation", config_name="small")
    assert named == ["small/validation-00000-of-00001.parquet", "README.md"]
    card = _front_matter((tmp_path / "b" / "README.md").read_text())
    hf = _front_matter(_hf_card(tmp_path, ["validation"], "small", "small"))
    assert card["configs"] == hf["configs"]
    back = datasets.load_dataset(str(tmp_path / "b"), "small", cache_dir=str(tmp_path / "c"))
    assert back["validation"]["text"] == ["a", "b", "c"]


def test_a_folder_already_written_is_refused_and_left_alone(tmp_path: Any) -> None:
    ds = _splits()["train"]
    ds.to_hub_folder(tmp_path / "repo")
    before = sorted(os.listdir(tmp_path / "repo" / "data"))
    with pytest.raises(FileExistsError, match=r"README\.md"):
        ds.to_hub_folder(tmp_path / "repo")
    assert sorted(os.listdir(tmp_path / "repo" / "data")) == before
    with pytest.raises(ValueError, match="'data'"):
        ds.to_hub_folder(tmp_path / "other", config_name="data")


def test_the_documented_upload_call_binds_to_huggingface_hub(tmp_path: Any) -> None:
    hub = pytest.importorskip("huggingface_hub")
    # The call docs/migrating-from-datasets.md shows after to_hub_folder: its arguments are
    # upload_folder's (bound, not called: no network).
    inspect.signature(hub.HfApi.upload_folder).bind(
        hub.HfApi(), folder_path=str(tmp_path), repo_id="me/my-dataset", repo_type="dataset"
    )
    inspect.signature(hub.snapshot_download).bind(
        "me/my-dataset", repo_type="dataset", local_dir=str(tmp_path)
    )
