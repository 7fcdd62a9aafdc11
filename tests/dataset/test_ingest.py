from __future__ import annotations

import gzip
import json
import os

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix.exceptions import InputFormatError, SchemaMismatchError


def test_text_one_row_per_line_across_files_and_compression(tmp_path):
    (tmp_path / "a.txt").write_text("first\nsecond\r\n\nfourth")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as f:
        f.write("x\ny\n")
    ds = am.Dataset.from_text([tmp_path / "a.txt", tmp_path / "b.txt.gz"])
    assert ds["text"] == ["first", "second", "", "fourth", "x", "y"]
    assert ds.column_names == ["text"]


def test_text_is_cached_by_content(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one\ntwo\n")
    first = am.Dataset.from_text(str(path))
    (chunk,) = first.cache_files
    mtime = os.stat(chunk).st_mtime_ns
    again = am.Dataset.from_text(str(path))
    assert again.fingerprint == first.fingerprint
    assert os.stat(again.cache_files[0]).st_mtime_ns == mtime  # nothing rewritten
    moved = tmp_path / "moved.txt"
    os.rename(path, moved)
    assert am.Dataset.from_text(str(moved)).fingerprint == first.fingerprint
    moved.write_text("one\nTWO\n")
    changed = am.Dataset.from_text(str(moved))
    assert changed["text"] == ["one", "TWO"] and changed.fingerprint != first.fingerprint


def test_text_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nstill ok\nbad \xff byte\n")
    with pytest.raises(InputFormatError, match=r"bad\.txt:3: not valid UTF-8"):
        am.Dataset.from_text(str(path))


def test_json_lines(tmp_path):
    rows = [{"id": i, "text": f"t{i}", "tags": ["a"] * (i % 3)} for i in range(10)]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    ds = am.Dataset.from_json(str(tmp_path / "*.jsonl"))
    assert list(ds) == rows


def test_json_errors_name_file_and_line(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"a": 1}\n{"a": 2}\n{"a": \n')
    with pytest.raises(InputFormatError, match=r"d\.jsonl:3: invalid JSON"):
        am.Dataset.from_json(str(tmp_path / "d.jsonl"))
    (tmp_path / "e.jsonl").write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(InputFormatError, match=r"e\.jsonl:2: expected a JSON object"):
        am.Dataset.from_json(str(tmp_path / "e.jsonl"))


def test_csv_and_ragged_row(tmp_path):
    (tmp_path / "d.csv").write_text("id,text\n1,hello\n2,world\n")
    assert list(am.Dataset.from_csv(str(tmp_path / "d.csv"))) == [
        {"id": 1, "text": "hello"},
        {"id": 2, "text": "world"},
    ]
    (tmp_path / "r.csv").write_text("id,text\n1,hello\n2\n3,x,y\n")
    # a short row's missing fields are missing (as in HF); a longer row is named
    with pytest.raises(InputFormatError, match=r"r\.csv:4: expected 2 fields"):
        am.Dataset.from_csv(str(tmp_path / "r.csv"))


def test_parquet(tmp_path):
    table = pa.table({"id": list(range(100)), "text": [str(i) for i in range(100)]})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=30)
    ds = am.Dataset.from_parquet(str(tmp_path / "d.parquet"))
    assert ds.to_table().equals(table)


def test_parquet_read_in_place_or_through_a_compression_and_a_bad_file_named(tmp_path):
    """A local file is memory-mapped; a compressed one is read through fsspec; same rows."""
    table = pa.table({"id": list(range(50)), "text": [str(i) * 3 for i in range(50)]})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=7)
    with open(tmp_path / "d.parquet", "rb") as src, gzip.open(tmp_path / "e.parquet.gz", "wb") as f:
        f.write(src.read())
    for name in ("d.parquet", "e.parquet.gz"):
        assert am.Dataset.from_parquet(str(tmp_path / name)).to_table().equals(table)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputFormatError, match=r"bad\.parquet: not a readable Parquet file"):
        am.Dataset.from_parquet(str(tmp_path / "bad.parquet"))


def test_files_with_incompatible_columns_name_the_file(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "b.jsonl").write_text('{"b": "x"}\n')
    with pytest.raises(SchemaMismatchError, match=r"b\.jsonl"):
        am.Dataset.from_json(str(tmp_path))


def test_missing_input_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        am.Dataset.from_text(str(tmp_path / "nope*.txt"))


def test_fsspec_url_input():
    fs = fsspec.filesystem("memory")
    with fs.open("/ingest-test/a.txt", "wb") as f:
        f.write(b"alpha\nbeta\n")
    try:
        assert am.Dataset.from_text("memory://ingest-test/a.txt")["text"] == ["alpha", "beta"]
    finally:
        fs.rm("/ingest-test", recursive=True)


def test_crash_mid_ingest_is_not_taken_for_a_result(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("x\n" * 10)
    from arrowmix._dataset.inputs import ingest as ingest_mod

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_mod, "write_batches", broken)
    with pytest.raises(KeyboardInterrupt):
        am.Dataset.from_text(str(tmp_path / "a.txt"))
    monkeypatch.undo()
    assert len(am.Dataset.from_text(str(tmp_path / "a.txt"))) == 10


def test_json_invalid_utf8_names_a_line(tmp_path):
    (tmp_path / "u.jsonl").write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(InputFormatError, match=r"u\.jsonl:2: not valid UTF-8"):
        am.Dataset.from_json(str(tmp_path / "u.jsonl"))


@pytest.mark.slow
def test_json_error_after_the_first_chunk_names_its_line(tmp_path):
    """Line numbers are counted only for a message; they are right past the 10 MiB chunks."""
    line = json.dumps({"id": 1, "text": "x" * 200}) + "\n"
    n = (21 << 20) // len(line)  # three chunks
    path = tmp_path / "big.jsonl"
    with open(path, "w") as f:
        f.write("\ufeff")  # a BOM, dropped
        f.writelines([line] * n)
        f.write("{not json\n")
        f.writelines([line] * 3)
    with pytest.raises(InputFormatError, match=rf"big\.jsonl:{n + 1}: invalid JSON"):
        am.Dataset.from_json(str(path), cache_dir=str(tmp_path / "c"))


def test_csv_invalid_utf8_names_a_line_and_writes_nothing(tmp_path):
    (tmp_path / "u.csv").write_bytes(b"id,text\n1,ok\n2,\xff\xfe\n")
    with pytest.raises(InputFormatError, match=r"u\.csv:3: not valid UTF-8"):
        am.Dataset.from_csv(str(tmp_path / "u.csv"), cache_dir=str(tmp_path / "c"))
    assert not list((tmp_path / "c").rglob("chunk-*.arrow"))


def test_json_invalid_utf8_that_the_json_parser_lets_through_writes_nothing(tmp_path):
    # Arrow's JSON parser accepts this truncated sequence; the chunk writer's validation does not.
    rows = b"".join(b'{"a": %d, "t": "x"}\n' % i for i in range(100))
    (tmp_path / "u.jsonl").write_bytes(rows + b'{"a": 1, "t": "\xc3\x28"}\n')
    with pytest.raises(ValueError, match=r"Invalid UTF8"):
        am.Dataset.from_json(str(tmp_path / "u.jsonl"), cache_dir=str(tmp_path / "c"))
    assert not list((tmp_path / "c").rglob("chunk-*.arrow"))
