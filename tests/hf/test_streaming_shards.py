"""``load_dataset(..., streaming=True)`` and ``IterableDataset.from_*``: one shard per file.

As in HF ``datasets``: DataLoader workers and ``split_dataset_by_node`` share the data files,
so each gets HF's rows in HF's order; the counts come from the ingest's marker, so a rerun
reads no file for them.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._dataset.inputs import ingest as ingest_module

hf = pytest.importorskip("datasets")
hf_split_by_node = pytest.importorskip("datasets.distributed").split_dataset_by_node
torch = pytest.importorskip("torch")

LENGTHS = (5, 2, 7, 3)


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf.config, "HF_UPDATE_DOWNLOAD_COUNTS", False)
    hf.disable_progress_bars()
    logging.getLogger("datasets").setLevel(logging.ERROR)
    logging.getLogger("arrowmix").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'set_vital' is deprecated", UserWarning)
        yield


def _files(tmp_path, kind):
    paths = []
    start = 0
    for i, n in enumerate(LENGTHS):
        rows = [{"a": start + j, "t": f"f{i}r{j}"} for j in range(n)]
        start += n
        path = tmp_path / f"part-{i}.{kind}"
        if kind == "jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif kind == "csv":
            path.write_text("a,t\n" + "".join(f"{r['a']},{r['t']}\n" for r in rows))
        else:
            pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=2)
        paths.append(str(path))
    return paths


BUILDERS = {"jsonl": "json", "csv": "csv", "parquet": "parquet"}


def _both(tmp_path, kind):
    paths = _files(tmp_path, kind)
    builder = BUILDERS[kind]
    ours = am.load_dataset(builder, data_files=paths, split="train", streaming=True)
    theirs = hf.load_dataset(
        builder,
        data_files=paths,
        split="train",
        streaming=True,
        cache_dir=str(tmp_path / "hf-cache"),
    )
    return ours, theirs


def _loader_rows(ds):
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    return [(int(r["a"]), r["t"]) for r in loader]


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_shards_are_files_as_hf(tmp_path, kind):
    ours, theirs = _both(tmp_path, kind)
    assert ours.n_shards == theirs.n_shards == len(LENGTHS)
    assert _loader_rows(ours) == _loader_rows(theirs)
    for rank in range(2):
        mine = am.split_dataset_by_node(ours, rank=rank, world_size=2)
        hfs = hf_split_by_node(theirs, rank=rank, world_size=2)
        assert [(r["a"], r["t"]) for r in mine] == [(r["a"], r["t"]) for r in hfs]
        assert mine.n_shards == hfs.n_shards


def test_from_json_and_dict_splits(tmp_path):
    paths = _files(tmp_path, "jsonl")
    ours = am.IterableDataset.from_json(paths)
    theirs = hf.IterableDataset.from_json(paths)
    assert ours.n_shards == theirs.n_shards == len(LENGTHS)
    mine = am.load_dataset(
        "json", data_files={"train": paths[:3], "test": paths[3:]}, streaming=True
    )
    assert {k: v.n_shards for k, v in mine.items()} == {"train": 3, "test": 1}
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        for path in paths[:2]:
            archive.write(path, os.path.basename(path))
    zipped = [str(tmp_path / "two.zip"), paths[2]]
    ours = am.load_dataset("json", data_files=zipped, split="train", streaming=True)
    theirs = hf.load_dataset(
        "json", data_files=zipped, split="train", streaming=True, cache_dir=str(tmp_path / "h")
    )
    assert ours.n_shards == theirs.n_shards == 2  # an archive is one shard
    both = (am.split_dataset_by_node(ours, 1, 2), hf_split_by_node(theirs, 1, 2))
    assert [r["a"] for r in both[0]] == [r["a"] for r in both[1]] == list(range(7, 14))
    sliced = am.load_dataset("json", data_files=paths, split="train[:4]", streaming=True)
    assert sliced.n_shards == 1 and [r["a"] for r in sliced] == [0, 1, 2, 3]


def test_resume_inside_a_file_shard(tmp_path):
    paths = _files(tmp_path, "csv")
    ds = am.load_dataset("csv", data_files=paths, split="train", streaming=True)
    ds = ds.shuffle(seed=3, buffer_size=4)
    full = [r["a"] for r in ds]
    it = iter(ds)
    head = [next(it)["a"] for _ in range(6)]
    state = ds.state_dict()
    again = am.load_dataset("csv", data_files=paths, split="train", streaming=True)
    again = again.shuffle(seed=3, buffer_size=4)
    again.load_state_dict(state)
    assert head + [r["a"] for r in again] == full


def test_rerun_reads_no_file_for_the_counts(tmp_path, monkeypatch):
    paths = _files(tmp_path, "jsonl")
    am.load_dataset("json", data_files=paths, split="train", streaming=True)

    def no_read(*args, **kwargs):
        raise AssertionError("a file was read again")

    monkeypatch.setattr(ingest_module, "read_batches", no_read)
    again = am.load_dataset("json", data_files=paths, split="train", streaming=True)
    assert again.n_shards == len(LENGTHS)


def test_older_cache_gets_its_counts_once(tmp_path):
    paths = _files(tmp_path, "jsonl")
    cache = tmp_path / "cache"
    am.load_dataset("json", data_files=paths, split="train", streaming=True, cache_dir=cache)
    [marker] = (cache / "ingested").glob("*/_COMPLETE.json")
    info = json.loads(marker.read_text())
    del info["input_rows"], info["seal"]  # as a cache written before the counts were kept
    marker.write_text(json.dumps(info))
    ds = am.load_dataset("json", data_files=paths, split="train", streaming=True, cache_dir=cache)
    assert ds.n_shards == len(LENGTHS)
    assert json.loads(marker.read_text())["input_rows"] == list(LENGTHS)
