# ruff: noqa: F811  (the fixture hf_load is imported)
"""``load_dataset`` results carry HF's ``DatasetInfo`` fields: builder, config, splits, sizes.

Each test loads the same files with HF ``datasets`` 5.2 (offline, its cache in ``tmp_path``)
and compares ``info``'s fields one by one, and the properties HF exposes them by
(``ds.builder_name``, ``ds.dataset_size``...).
"""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import hf_load  # noqa: E402, F401

FIELDS = (
    "builder_name",
    "dataset_name",
    "config_name",
    "version",
    "splits",
    "download_size",
    "dataset_size",
    "size_in_bytes",
    "download_checksums",
)


def fields(ds):
    info = ds.info
    out = {f: getattr(info, f) for f in FIELDS}
    out["version"] = None if info.version is None else str(info.version)
    out["splits"] = None if info.splits is None else {k: vars(v) for k, v in info.splits.items()}
    return out


def same_info(ours, theirs):
    """Every DatasetInfo field, and HF's properties of it, are HF's (each split of a dict)."""
    if isinstance(theirs, (hf.DatasetDict, hf.IterableDatasetDict)):
        assert list(ours) == list(theirs)
        for name in theirs:
            same_info(ours[name], theirs[name])
        return
    assert fields(ours) == fields(theirs)
    for name in ("builder_name", "config_name", "dataset_size", "download_size", "size_in_bytes"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert str(ours.version) == str(theirs.version)
    assert str(ours.split) == str(theirs.split)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


ROWS = [{"id": i, "text": f"row {i}", "tags": ["a"] * (i % 3), "m": {"k": i}} for i in range(9)]


@pytest.fixture
def jsonl(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return {
        "train": [write_jsonl(d / "a.jsonl", ROWS[:4]), write_jsonl(d / "b.jsonl", ROWS[4:6])],
        "test": write_jsonl(d / "c.jsonl", ROWS[6:]),
    }


@pytest.mark.parametrize("split", [None, "test", "train[:50%]+test", ["train[1:]", "test"]])
def test_json_splits_and_sizes_are_hf_s(jsonl, hf_load, split):
    """Every split's rows and bytes, whatever ``split=`` picks (HF prepares them all)."""
    ours = am.load_dataset("json", data_files=jsonl, split=split)
    theirs = hf_load("json", data_files=jsonl, split=split)
    for o, t in zip(ours, theirs, strict=True) if isinstance(ours, list) else [(ours, theirs)]:
        same_info(o, t)
    if split is None:
        assert ours.num_rows == theirs.num_rows
        assert {k: len(v) for k, v in ours.cache_files.items()} == {"train": 1, "test": 1}
        assert all(set(f) == {"filename"} for v in ours.cache_files.values() for f in v)


def test_csv_with_missing_cells_text_and_features(tmp_path, hf_load):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,c\n1,x,\n,y,2.5\n3,,NA\n")
    more = tmp_path / "u.csv"
    more.write_text("a,b,c\n4,z,1\n")
    for kw in ({}, {"features": hf.Features({k: hf.Value("string") for k in "abc"})}):
        files = [str(csv), str(more)]
        same_info(
            am.load_dataset("csv", data_files=files, **kw), hf_load("csv", data_files=files, **kw)
        )
    text = tmp_path / "t.txt"
    text.write_text("one\ntwo\n\nthree\n")
    for kw in ({}, {"keep_linebreaks": True}, {"sample_by": "paragraph"}):
        ours = am.load_dataset("text", data_files=str(text), split="train", **kw)
        same_info(ours, hf_load("text", data_files=str(text), split="train", **kw))


def test_a_folder_names_the_dataset_and_a_card_names_the_config(tmp_path, hf_load):
    root = tmp_path / "MyCorpusV2"
    (root / "data").mkdir(parents=True)
    write_jsonl(root / "data" / "train.jsonl", ROWS[:5])
    write_jsonl(root / "data" / "test.jsonl", ROWS[5:])
    same_info(am.load_dataset(str(root)), hf_load(str(root)))
    same_info(am.load_dataset("json", data_dir=str(root)), hf_load("json", data_dir=str(root)))
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: small\n  data_files: data/test.jsonl\n"
        "- config_name: full\n  data_files: data/*.jsonl\n  default: true\n---\n"
    )
    same_info(am.load_dataset(str(root)), hf_load(str(root)))
    same_info(am.load_dataset(str(root), "small"), hf_load(str(root), "small"))


def test_arrow_files(tmp_path, hf_load):
    paths = []
    for i in range(2):
        paths.append(str(tmp_path / f"{i}.arrow"))
        table = pa.table({"x": [i, i + 1, None], "s": ["a", None, "ccc"]})
        with pa.ipc.new_file(paths[-1], table.schema) as w:
            w.write_table(table)
    same_info(am.load_dataset("arrow", data_files=paths), hf_load("arrow", data_files=paths))


def test_imagefolder(tmp_path, hf_load):
    image = pytest.importorskip("PIL.Image")
    root = tmp_path / "pets"
    for rel in ("train/cat/1.png", "train/dog/2.png", "test/cat/3.png"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        image.new("RGB", (3, 2), (10, 20, 30)).save(root / rel)
    same_info(am.load_dataset(str(root)), hf_load(str(root)))
    for split, rows in [("train", ["cat/1.png", "dog/2.png"]), ("test", ["cat/3.png"])]:
        meta = [{"file_name": f, "caption": f[:3]} for f in rows]
        write_jsonl(root / split / "metadata.jsonl", meta)
    same_info(am.load_dataset(str(root)), hf_load(str(root)))


def test_parquet_sizes_differ_by_the_readers_validity_bitmaps_only(tmp_path, hf_load):
    """HF sums the Arrow size of the batches pyarrow's Parquet reader gives, which carry a
    validity bitmap for a numeric column even without a null; arrowmix counts the rows it
    stores, which have none: the only difference (documented in docs/load_dataset.md)."""
    path = str(tmp_path / "p.parquet")
    pq.write_table(pa.table({"x": list(range(20)), "s": ["ab"] * 20}), path, row_group_size=8)
    ours, theirs = am.load_dataset("parquet", data_files=path), hf_load("parquet", data_files=path)
    o, t = fields(ours["train"]), fields(theirs["train"])
    bitmaps = sum((n + 7) // 8 for n in (8, 8, 4))  # column x, one per row group
    assert t["dataset_size"] - o["dataset_size"] == bitmaps
    for f in ("dataset_size", "size_in_bytes", "splits"):
        o.pop(f), t.pop(f)
    assert o == t
    assert ours["train"].info.splits["train"].num_examples == 20


def test_streaming_has_hf_s_builder_fields_and_no_sizes(jsonl, hf_load):
    same_info(
        am.load_dataset("json", data_files=jsonl, streaming=True),
        hf_load("json", data_files=jsonl, streaming=True),
    )
    ours = am.load_dataset("json", data_files=jsonl, split="train", streaming=True)
    assert ours.map(lambda r: r).info.builder_name == "json"
    assert ours.info.splits is None


def test_transforms_pickles_and_concatenation_keep_the_info_as_hf(jsonl, hf_load):
    ours = am.load_dataset("json", data_files=jsonl, split="test")
    theirs = hf_load("json", data_files=jsonl, split="test")
    steps = [
        lambda d: d.select([0, 2]),
        lambda d: d.shuffle(seed=0),
        lambda d: d.shuffle(seed=0).flatten_indices(),
        lambda d: d.filter(lambda r: r["id"] > 6),
        lambda d: d.map(lambda r: {"n": 1}),
        lambda d: d.rename_column("id", "idx"),
        lambda d: d.remove_columns("tags"),
        lambda d: d.with_format("numpy"),
        lambda d: d.train_test_split(test_size=1, seed=0)["train"],
        lambda d: (am if isinstance(d, am.Dataset) else hf).concatenate_datasets([d, d]),
    ]
    for step in steps:
        same_info(step(ours), step(theirs))
    same_info(pickle.loads(pickle.dumps(ours)), theirs)
    # HF's to_iterable_dataset keeps the features only
    assert ours.to_iterable_dataset().info.builder_name is None
    assert theirs.to_iterable_dataset().info.builder_name is None
    other = {"data_files": jsonl["train"], "split": "train"}  # another load: other splits
    mixed = am.concatenate_datasets([ours, am.load_dataset("json", **other)])
    same_info(mixed, hf.concatenate_datasets([theirs, hf_load("json", **other)]))
    assert mixed.builder_name is None


def test_the_info_changes_no_fingerprint(jsonl):
    ours = am.load_dataset("json", data_files=jsonl["test"], split="train")
    assert ours.info.builder_name == "json"
    assert ours.fingerprint == am.Dataset.from_json(jsonl["test"]).fingerprint
    assert ours.map(lambda r: {"n": 1}).fingerprint == (
        am.Dataset.from_json(jsonl["test"]).map(lambda r: {"n": 1}).fingerprint
    )
