# ruff: noqa: F811  (the fixture hf_load is imported)
"""A local folder whose README.md lists ``configs:``: read as HF ``datasets`` 5.2 reads it.

Compared with HF offline on the same folder: the default configuration, one picked by name,
builder options from the card, ``data_dir`` configurations, and the errors.
"""

from __future__ import annotations

import contextlib
import json

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import hf_load, same  # noqa: E402, F401

CARD = """---
license: mit
configs:
- config_name: main
  data_files:
  - split: train
    path: data/one.jsonl
  - split: test
    path: "data/two*.jsonl"
  default: true
- config_name: everything
  data_files: "data/*.jsonl"
- config_name: nested
  data_dir: nested
  field: rows
  unknown_option: 3
---
# A dataset

Its `train.jsonl` would be the train split without the card.
"""


def jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "ds"
    jsonl(root / "data" / "one.jsonl", [{"a": 1, "t": "x"}, {"a": 2, "t": "y"}])
    jsonl(root / "data" / "two.jsonl", [{"a": 3, "t": "z"}])
    jsonl(root / "train.jsonl", [{"a": 9, "t": "not in any config"}])
    (root / "nested").mkdir()
    (root / "nested" / "test.json").write_text(json.dumps({"rows": [{"a": 7, "t": "n"}]}))
    (root / "README.md").write_text(CARD)
    return str(root)


@pytest.mark.parametrize("name", [None, "main", "everything", "nested"])
def test_card_configs_give_hf_splits_and_values(folder, hf_load, name):
    warned = pytest.warns(UserWarning, match="unknown_option")
    with warned if name == "nested" else contextlib.nullcontext():
        ours = am.load_dataset(folder, name)
    same(ours, hf_load(folder, name))


def test_card_config_with_split(folder, hf_load):
    ours = am.load_dataset(folder, "main", split="train+test")
    same(ours, hf_load(folder, "main", split="train+test"))


def test_data_files_given_win_over_the_card(folder, hf_load):
    ours = am.load_dataset(folder, data_files="train.jsonl")
    same(ours, hf_load(folder, data_files="train.jsonl"))


@pytest.mark.parametrize(
    ("card", "name", "message"),
    [
        (CARD, "nope", r"BuilderConfig 'nope' not found\. Available: \['main'"),
        (CARD.replace("  default: true\n", ""), None, r"Config name is missing"),
        (CARD.replace("- config_name: everything", "- config_name: default"), None, "several"),
        (CARD.replace("config_name: main", "name: main"), None, "config_name"),
    ],
)
def test_card_errors_as_hf(folder, hf_load, card, name, message):
    with open(f"{folder}/README.md", "w") as f:
        f.write(card)
    with pytest.raises(ValueError, match=message):
        hf_load(folder, name)
    with pytest.raises(ValueError, match=message):
        am.load_dataset(folder, name)
