"""Parquet read in place: damaged, replaced or changed files are refused, naming the file."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError


def _write(path: Path, start: int = 0, n: int = 400) -> str:
    t = pa.table(
        {"x": np.arange(start, start + n), "s": [f"r{i}" for i in range(start, start + n)]}
    )
    pq.write_table(t, path, row_group_size=100)
    return str(path)


def test_truncated_file_is_refused_at_open(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.parquet")
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    with pytest.raises(ChunkFileError, match=r"t\.parquet"):
        am.Dataset.from_parquet(path, in_place=True)


def test_not_parquet_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "n.parquet"
    path.write_text("not parquet at all")
    with pytest.raises(ChunkFileError, match=r"n\.parquet"):
        am.Dataset.from_parquet(str(path), in_place=True)


def test_file_replaced_after_open_raises_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.parquet")
    ds = am.Dataset.from_parquet(path, in_place=True)
    assert ds[0]["x"] == 0  # row group 0 decoded
    _write(tmp_path / "new.parquet", start=1000)
    os.replace(tmp_path / "new.parquet", path)
    with pytest.raises(ChunkFileError, match=r"r\.parquet.*changed since it was opened"):
        ds[250]  # another row group: never rows of the new version
    assert am.Dataset.from_parquet(path, in_place=True)[250]["x"] == 1250  # reopened: new rows


def test_file_rewritten_in_place_after_open_raises(tmp_path: Path) -> None:
    path = _write(tmp_path / "w.parquet")
    ds = am.Dataset.from_parquet(path, in_place=True)
    fp = ds.fingerprint
    with open(path, "r+b") as f:  # same inode, same size: other bytes
        f.seek(10)
        f.write(b"\x00\x01\x02")
    with pytest.raises(ChunkFileError, match=r"w\.parquet"):
        list(ds.to_stream(shuffle=None, infinite=False))
    try:
        again = am.Dataset.from_parquet(path, in_place=True)
    except ChunkFileError:
        return  # the damage reached the footer: refused
    assert again.fingerprint != fp  # a changed file gives a new fingerprint


def test_file_truncated_after_open_raises(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.parquet")
    ds = am.Dataset.from_parquet(path, in_place=True)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 3)
    with pytest.raises(ChunkFileError, match=r"c\.parquet"):
        ds[5]


def test_unpickled_dataset_refuses_a_replaced_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.parquet")
    blob = pickle.dumps(am.Dataset.from_parquet(path, in_place=True))
    _write(tmp_path / "p2.parquet", start=7)
    os.replace(tmp_path / "p2.parquet", path)
    with pytest.raises(ChunkFileError, match=r"p\.parquet"):
        pickle.loads(blob)[0]


def test_files_of_other_schemas_are_refused_naming_the_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.parquet")
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": ["text"], "s": ["r"]}), b)
    with pytest.raises(SchemaMismatchError, match=r"b\.parquet"):
        am.Dataset.from_parquet([a, str(b)], in_place=True)


def test_bad_arguments_name_the_problem(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.parquet")
    with pytest.raises(ValueError, match="Unknown column 'nope'"):
        am.Dataset.from_parquet(path, in_place=True, columns=["nope"])
    with pytest.raises(ValueError, match="filters"):
        am.Dataset.from_parquet(path, in_place=True, filters=[("nope", "==", 1)])
    with pytest.raises(ValueError, match="in_place=True"):
        am.Dataset.from_parquet(path, filters=[("x", "==", 1)])
    with pytest.raises(ValueError, match="in_place=False"):
        am.Dataset.from_parquet(path, in_place=True, source_column="f")


def test_converted_read_takes_columns(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.parquet")
    ds = am.Dataset.from_parquet(path, columns=["s"])
    assert ds.column_names == ["s"] and ds[3] == {"s": "r3"}


def test_splits_open_in_place(tmp_path: Path) -> None:
    a, b = _write(tmp_path / "a.parquet"), _write(tmp_path / "b.parquet", start=5, n=10)
    dd = am.Dataset.from_parquet({"train": a, "test": b}, in_place=True)
    assert len(dd["train"]) == 400 and dd["test"][0]["x"] == 5 and dd["test"].split == "test"


def test_map_results_leave_the_data_directory_as_it_was(tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    _write(d / "a.parquet")
    before = sorted(os.listdir(d))
    ds = am.Dataset.from_parquet(str(d), in_place=True)
    out = ds.map(lambda b: {"y": [x + 1 for x in b["x"]]}, batched=True)
    assert out["y"][:3] == [1, 2, 3]
    assert all(not f.startswith(str(d)) for f in out.cache_files)
    assert sorted(os.listdir(d)) == before
    assert len(am.Dataset.from_parquet(str(d), in_place=True)) == 400  # reopens the directory
