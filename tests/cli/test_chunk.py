from __future__ import annotations

import gzip
import json
import os

import pytest

import arrowmix as am
from arrowmix._cli.chunk import guess_format
from arrowmix._cli.main import main


def test_text_files_to_chunks(tmp_path, capsys):
    for i in range(3):
        with gzip.open(tmp_path / f"part{i}.txt.gz", "wt") as f:
            f.write("".join(f"line {i}-{j}\n" for j in range(10)))
    out = tmp_path / "chunks"
    args = ["chunk", str(tmp_path / "part*.txt.gz"), "--out", str(out), "--rows-per-chunk", "12"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "30 rows from 3 text file(s) -> 3 chunk file(s)" in printed
    ds = am.Dataset.from_chunks(str(out))
    assert ds["text"][:2] == ["line 0-0", "line 0-1"] and len(ds) == 30


def test_jsonl_with_chunk_size(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"i": i, "t": "x" * 100}) + "\n" for i in range(500)))
    out = tmp_path / "c"
    assert main(["chunk", str(path), "--out", str(out), "--chunk-size", "10KB"]) == 0
    assert len(os.listdir(out)) > 3
    assert am.Dataset.from_chunks(str(out))["i"] == list(range(500))


def test_bad_line_is_named_and_complete_chunks_stay(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    lines = [json.dumps({"i": i}) for i in range(20)] + ["{oops"]
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "c"
    assert main(["chunk", str(path), "--out", str(out), "--rows-per-chunk", "5"]) == 1
    assert "d.jsonl:21: invalid JSON" in capsys.readouterr().err
    # Rows are read in batches, so the chunks already written are complete files.
    assert not [n for n in os.listdir(out) if n.startswith("tmp-")]


def test_format_must_be_known(tmp_path, capsys):
    (tmp_path / "a.dat").write_text("x\n")
    assert main(["chunk", str(tmp_path / "a.dat"), "--out", str(tmp_path / "o")]) == 1
    assert "--format" in capsys.readouterr().err
    assert (
        main(["chunk", str(tmp_path / "a.dat"), "--format", "text", "--out", str(tmp_path / "o")])
        == 0
    )


def test_existing_chunks_need_overwrite(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("x\n")
    args = ["chunk", str(tmp_path / "a.txt"), "--out", str(tmp_path / "o")]
    assert main(args) == 0
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "--overwrite" in err and "overwrite=True" not in err
    assert repr(str(tmp_path / "o")) in err
    assert main([*args, "--overwrite"]) == 0


def test_bad_chunk_size_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("x\n")
    args = ["chunk", str(tmp_path / "a.txt"), "--out", str(tmp_path / "o"), "--chunk-size"]
    assert main([*args, "64XB"]) == 2
    err = capsys.readouterr().err
    assert "argument --chunk-size: invalid size '64XB'" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
    assert main([*args, "64MB"]) == 0


def test_unrecognised_suffix_names_the_file(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x\n")
    (tmp_path / "changelog.Debian.gz").write_bytes(b"")
    assert main(["chunk", str(tmp_path / "*"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "changelog.Debian.gz" in err and "--format" in err and "None" not in err


def test_mixed_formats_name_one_file_of_each(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("x\n")
    (tmp_path / "b.jsonl").write_text('{"x": 1}\n')
    assert main(["chunk", str(tmp_path / "*"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "a.txt" in err and "b.jsonl" in err and "json" in err and "text" in err


def test_usage_errors():
    assert main(["chunk", "x.txt"]) == 2  # --out missing
    assert (
        main(["chunk", "x.txt", "--out", "o", "--rows-per-chunk", "1", "--chunk-size", "1MB"]) == 2
    )


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.txt.gz", "text"),
        ("b.jsonl", "json"),
        ("c.csv.zst", "csv"),
        ("d.parquet", "parquet"),
        ("e.bin", None),
    ],
)
def test_guess_format(name, fmt):
    assert guess_format(name) == fmt
