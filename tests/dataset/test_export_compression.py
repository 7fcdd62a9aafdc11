"""to_json's compression: HF's values (gzip, bz2, xz, inferred from the name), atomic writes."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import zipfile

import pytest

import arrowmix as am

ROWS = {"a": [1, 2, 3], "s": ["x", "é", None]}

DECODE = {
    "gzip": gzip.decompress,
    "bz2": bz2.decompress,
    "xz": lzma.decompress,
    "zip": lambda b: zipfile.ZipFile(__import__("io").BytesIO(b)).read("file"),
    None: lambda b: b,
}

CASES = [  # (file name, compression argument, what the file holds)
    ("out.jsonl.xz", "infer", "xz"),
    ("out.jsonl.lzma", "infer", "xz"),
    ("out.jsonl.gz", "infer", "gzip"),
    ("out.jsonl.bz2", "infer", "bz2"),
    ("out.jsonl.zip", "infer", "zip"),
    ("out.jsonl", "xz", "xz"),
    ("out.jsonl", "bz2", "bz2"),
    ("out.jsonl", None, None),
]


@pytest.mark.parametrize(("name", "compression", "codec"), CASES)
def test_to_json_compression_matches_hf(tmp_path, name, compression, codec) -> None:
    datasets = pytest.importorskip("datasets")
    ours, theirs = tmp_path / "am" / name, tmp_path / "hf" / name
    ours.parent.mkdir()
    theirs.parent.mkdir()
    n = am.Dataset.from_dict(ROWS).to_json(str(ours), compression=compression, batch_size=2)
    m = datasets.Dataset.from_dict(ROWS).to_json(str(theirs), compression=compression, batch_size=2)
    text = DECODE[codec](ours.read_bytes())
    assert text == DECODE[codec](theirs.read_bytes())
    assert n == m == len(text)
    assert os.listdir(ours.parent) == [name]


def test_to_json_xz_without_hf(tmp_path) -> None:
    path = tmp_path / "rows.jsonl.xz"
    am.Dataset.from_dict(ROWS).to_json(str(path))
    assert lzma.decompress(path.read_bytes()).splitlines()[0] == b'{"a":1,"s":"x"}'
    assert am.Dataset.from_json(str(path))["a"] == [1, 2, 3]


def test_unsupported_compressions_are_refused_before_writing(tmp_path) -> None:
    ds = am.Dataset.from_dict(ROWS)
    with pytest.raises(NotImplementedError, match="'zstd' compression"):
        ds.to_json(str(tmp_path / "a.jsonl"), compression="zstd")
    with pytest.raises(NotImplementedError, match="writing to a buffer"):
        ds.to_json(__import__("io").BytesIO(), compression="xz")
    assert os.listdir(tmp_path) == []


def test_a_failed_compressed_export_leaves_the_previous_file(tmp_path, monkeypatch) -> None:
    path = tmp_path / "out.jsonl.xz"
    ds = am.Dataset.from_dict({"x": list(range(50))})
    ds.to_json(str(path), batch_size=10)
    before = path.read_bytes()
    import arrowmix._dataset.export as export

    real, calls = export._table, []

    def failing(d, start, stop):
        calls.append(start)
        if len(calls) > 2:
            raise RuntimeError("boom")
        return real(d, start, stop)

    monkeypatch.setattr(export, "_table", failing)
    with pytest.raises(RuntimeError, match="boom"):
        ds.map(lambda r: {"x": r["x"] + 1}).to_json(str(path), batch_size=10)
    assert path.read_bytes() == before and os.listdir(tmp_path) == [path.name]
