"""One glob rule for every surface: ``**`` is recursive on local paths as on fsspec and in HF."""

from __future__ import annotations

import gzip
import json
import os

import fsspec
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._cli.main import main

SUBDIRS = ["", "arch", "arch/x86", "driver-api/usb/core"]
HIDDEN = [".git/objects", "__pycache__", "arch/.cache"]


def _write(path: str, fmt: str, value: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if fmt == "text":
        with gzip.open(path, "wt") as f:
            f.write(value + "\n")
    elif fmt == "json":
        with open(path, "w") as f:
            f.write(json.dumps({"text": value}) + "\n")
    elif fmt == "csv":
        pacsv.write_csv(pa.table({"text": [value]}), path)
    else:
        pq.write_table(pa.table({"text": [value]}), path)


SUFFIX = {"text": "rst.gz", "json": "jsonl", "csv": "csv", "parquet": "parquet"}


def _tree(root: str, fmt: str) -> set[str]:
    """A nested documentation tree; the values of the files a glob must find."""
    wanted = set()
    for sub in SUBDIRS:
        for i in range(2):
            value = f"{sub}/{i}"
            _write(os.path.join(root, sub, f"page{i}.{SUFFIX[fmt]}"), fmt, value)
            wanted.add(value)
    for sub in HIDDEN:  # HF and fsspec-based globs leave these out unless asked
        _write(os.path.join(root, sub, f"junk.{SUFFIX[fmt]}"), fmt, "hidden")
    return wanted


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "parquet"])
def test_double_star_finds_every_depth_on_every_ingest_surface(tmp_path, fmt) -> None:
    root = str(tmp_path / "Documentation")
    wanted = _tree(root, fmt)
    load = getattr(am.Dataset, f"from_{fmt}")
    ds = load(os.path.join(root, f"**/*.{SUFFIX[fmt]}"))
    assert sorted(ds["text"]) == sorted(wanted)
    # a directory is every file below it, as HF's load_dataset(<dir>) reads
    assert sorted(load(root)["text"]) == sorted(wanted)


def test_local_globs_match_hf_and_fsspec_memory(tmp_path) -> None:
    datasets_files = pytest.importorskip("datasets.data_files")
    from arrowmix._storage.globs import expand_inputs

    root = str(tmp_path / "Documentation")
    _tree(root, "text")
    mem = fsspec.filesystem("memory")
    for dirpath, _, names in os.walk(root):
        for n in names:
            src = os.path.join(dirpath, n)
            with open(src, "rb") as fh:
                mem.pipe("/globs-test/" + os.path.relpath(src, root), fh.read())
    try:
        for pattern in ["**/*.rst.gz", "*/*.rst.gz", "**", "arch/**", ".git/**/*.rst.gz"]:
            local = [os.path.relpath(f, root) for f in expand_inputs(os.path.join(root, pattern))]
            memory = [
                f.split("/globs-test/", 1)[1]
                for f in expand_inputs(f"memory://globs-test/{pattern}")
            ]
            hf = datasets_files.resolve_pattern(os.path.join(root, pattern), base_path="")
            assert local == memory == sorted(os.path.relpath(f, root) for f in hf), pattern
    finally:
        mem.rm("/globs-test", recursive=True)


def test_arrowmix_chunk_cli_reads_every_depth(tmp_path, capsys) -> None:
    root = str(tmp_path / "Documentation")
    wanted = _tree(root, "text")
    out = tmp_path / "chunks"
    assert (
        main(["chunk", os.path.join(root, "**/*.rst.gz"), "--format", "text", "--out", str(out)])
        == 0
    )
    assert sorted(am.Dataset.from_chunks(str(out))["text"]) == sorted(wanted)


def test_chunk_globs_recurse_but_a_corpus_directory_is_its_own_files(tmp_path) -> None:
    for i, sub in enumerate(["a", "a/b", "c/d"]):
        am.write_chunks(pa.table({"x": [i]}), str(tmp_path / sub))
    ds = am.Dataset.from_chunks(str(tmp_path / "**" / "*.arrow"))
    assert sorted(ds["x"]) == [0, 1, 2]
    assert am.Dataset.from_chunks(str(tmp_path / "a"))["x"] == [0]  # not a/b's chunks
