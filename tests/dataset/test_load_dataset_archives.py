# ruff: noqa: F811  (the fixture hf_load is imported)
"""Compressed and zipped local data files: read as HF ``datasets`` 5.2 reads them.

Compared with HF offline on the same files: ``.gz``/``.bz2``/``.xz`` single files, ``.zip``
archives of several files (every member, in HF's order), and folders of archives (the
builder inferred from the members' extensions).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import zipfile

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import hf_load, same  # noqa: E402, F401

JSONL = "".join(json.dumps({"a": i, "t": f"w{i}"}) + "\n" for i in range(5))
CSV = "a,t,score\n1,x,0.5\n2,,\n3,z,1.5\n"


@pytest.mark.parametrize(
    ("builder", "name", "opener", "text"),
    [
        ("json", "d.jsonl.gz", gzip.open, JSONL),
        ("csv", "c.csv.gz", gzip.open, CSV),
        ("csv", "c.csv.bz2", bz2.open, CSV),
        ("json", "d.jsonl.xz", lzma.open, JSONL),
    ],
)
def test_compressed_files(tmp_path, hf_load, builder, name, opener, text):
    with opener(tmp_path / name, "wt") as f:
        f.write(text)
    path = str(tmp_path / name)
    same(am.load_dataset(builder, data_files=path), hf_load(builder, data_files=path))


def write_zip(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return str(path)


MEMBERS = {
    "sub/b.csv": "a,t,score\n4,q,2.0\n",
    "a.csv": CSV,
    "sub/deeper/c.csv": "a,t,score\n5,r,\n",
    "z.csv": "a,t,score\n6,s,3.0\n",
    ".hidden.csv": "a,t,score\n99,no,0\n",
    "__MACOSX/a.csv": "a,t,score\n98,no,0\n",
}


def test_zip_of_csv_reads_every_member_in_hf_order(tmp_path, hf_load):
    archive = write_zip(tmp_path / "data.zip", MEMBERS)
    ours = am.load_dataset("csv", data_files=archive, split="train")
    theirs = hf_load("csv", data_files=archive, split="train")
    assert ours["a"] == [1, 2, 3, 6, 4, 5]  # a folder's files before its subfolders'
    same(ours, theirs)


def test_folder_of_zips_infers_the_builder_and_splits(tmp_path, hf_load):
    folder = tmp_path / "ds"
    folder.mkdir()
    write_zip(folder / "train.zip", {"part-0.jsonl": JSONL, "part-1.jsonl": JSONL})
    write_zip(folder / "test.zip", {"t.jsonl": JSONL})
    same(am.load_dataset(str(folder)), hf_load(str(folder)))
    stream = am.load_dataset(str(folder), split="test", streaming=True)
    assert list(stream) == list(hf_load(str(folder), split="test"))


@pytest.mark.parametrize(
    ("member", "error", "message"),
    [
        ("z\n", am.exceptions.SchemaMismatchError, r"b\.csv in .*data\.zip: its header has .*'z'"),
        ("", am.exceptions.InputFormatError, r"b\.csv in .*data\.zip: the CSV file is empty"),
    ],
)
def test_zip_member_empty_csv_of_other_columns_raises_as_in_hf(
    tmp_path, hf_load, member, error, message
):
    """HF refuses a member without rows whose header differs (or that has none): so do we."""
    archive = write_zip(tmp_path / "data.zip", {"a.csv": CSV, "b.csv": member})
    with pytest.raises(error, match=message):
        am.load_dataset("csv", data_files=archive, split="train")
    with pytest.raises(hf.exceptions.DatasetGenerationError):
        hf_load("csv", data_files=archive, split="train")


def test_zip_member_header_only_of_the_same_columns_is_read_as_in_hf(tmp_path, hf_load):
    archive = write_zip(tmp_path / "data.zip", {"a.csv": CSV, "b.csv": "a,t\n"})
    same(
        am.load_dataset("csv", data_files=archive, split="train"),
        hf_load("csv", data_files=archive, split="train"),
    )
