"""from_text's sample_by modes (HF's text builder) and the source file column."""

from __future__ import annotations

import gzip

import pytest

import arrowmix as am
from arrowmix.exceptions import InputFormatError, SchemaMismatchError

TEXT = "def f():\n    return 1\n\n\n# next\nx = 2\r\n  \nlast"


def test_paragraphs_are_runs_of_non_blank_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.py").write_text(TEXT)
    ds = am.Dataset.from_text(tmp_path / "a.py", sample_by="paragraph")
    assert ds["text"] == ["def f():\n    return 1", "# next\nx = 2", "last"]


def test_documents_are_whole_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.py").write_text(TEXT)
    with gzip.open(tmp_path / "b.py.gz", "wt") as f:
        f.write("print(1)\n")
    ds = am.Dataset.from_text([tmp_path / "a.py", tmp_path / "b.py.gz"], sample_by="document")
    assert ds["text"] == [TEXT, "print(1)\n"]
    lines = am.Dataset.from_text(tmp_path / "a.py")
    assert len(lines) == 8 and lines.fingerprint != ds.fingerprint


def test_source_column_keeps_each_rows_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("1\n2\n")
    b.write_text("3\n")
    ds = am.Dataset.from_text([a, b], source_column="file")
    assert ds["file"] == [str(a), str(a), str(b)]
    assert ds.column_names == ["text", "file"]
    plain = am.Dataset.from_text([a, b])
    assert plain.column_names == ["text"] and plain.fingerprint != ds.fingerprint
    # Same content under another name: a different source column, so another result.
    c = tmp_path / "c.txt"
    c.write_text("1\n2\n")
    assert am.Dataset.from_text([c, b], source_column="file")["file"][0] == str(c)
    docs = am.Dataset.from_text([a, b], sample_by="document", source_column="path")
    assert docs[:] == {"text": ["1\n2\n", "3\n"], "path": [str(a), str(b)]}


def test_source_column_on_json(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    p = tmp_path / "a.jsonl"
    p.write_text('{"x": 1}\n{"x": 2}\n')
    assert am.Dataset.from_json(p, source_column="src")["src"] == [str(p)] * 2
    with pytest.raises(SchemaMismatchError, match="already has a column 'x'"):
        am.Dataset.from_json(p, source_column="x")


def test_bad_mode_and_bad_utf8(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cache"))
    p = tmp_path / "a.txt"
    p.write_bytes(b"ok\n\n\xff\xfe\n")
    with pytest.raises(ValueError, match="`sample_by`"):
        am.Dataset.from_text(p, sample_by="sentence")
    with pytest.raises(InputFormatError, match=r"a.txt:3: not valid UTF-8"):
        am.Dataset.from_text(p, sample_by="paragraph")


def test_cache_dir_holds_the_chunks(tmp_path, monkeypatch):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "root"))
    p = tmp_path / "a.txt"
    p.write_text("1\n2\n")
    ds = am.Dataset.from_text(p, cache_dir=tmp_path / "mine")
    assert ds["text"] == ["1", "2"]
    assert all(f.startswith(str(tmp_path / "mine")) for f in ds.cache_files)
    assert not (tmp_path / "root" / "ingested").exists()
    with pytest.raises(ValueError, match="local directory"):
        am.Dataset.from_text(p, cache_dir="s3://bucket/cache")
