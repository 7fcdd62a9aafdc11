"""The corpus manifest: written last by write_chunks, checked when a directory is opened."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent(
    """
    import sys, time
    import arrowmix as am

    def rows():
        for i in range(10_000):
            if i == 300:  # three chunks are complete: stall until killed
                print("ready", flush=True)
                time.sleep(120)
            yield {"id": i, "text": "x" * (i % 13)}

    am.write_chunks(rows(), sys.argv[1], rows_per_chunk=100, overwrite=True)
    """
)


def _foreign(path: Path, value: int) -> None:
    table = pa.table({"v": [value]})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _kill_mid_write(out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(out)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None and proc.returncode is None:
            proc.kill()  # the kill above did not happen: do not leave the writer behind
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


def test_killed_write_chunks_is_refused_unless_allowed(tmp_path):
    out = tmp_path / "corpus"
    # A first write killed half-way (a killed *re*write keeps the old corpus whole instead:
    # see test_trust_overwrite.py).
    _kill_mid_write(out)
    assert sorted(p.name for p in out.glob("chunk-*.arrow")) == [
        "chunk-00000.arrow",
        "chunk-00001.arrow",
        "chunk-00002.arrow",
    ]
    assert not (out / "_manifest.json").exists()
    with pytest.raises(IncompleteCorpusError) as info:
        am.Dataset.from_chunks(str(out))
    message = str(info.value)
    assert str(out) in message and "_manifest.json" in message
    assert "chunk-00000.arrow" in message and "allow_incomplete=True" in message
    assert isinstance(info.value, ChunkFileError)
    partial = am.Dataset.from_chunks(str(out), allow_incomplete=True)
    assert partial["id"] == list(range(300))
    # Rewriting it completes it.
    am.write_chunks(partial, out, rows_per_chunk=100, overwrite=True)
    assert len(am.Dataset.from_chunks(str(out))) == 300


def test_missing_and_unlisted_chunks_are_named(tmp_path):
    am.write_chunks(({"v": i} for i in range(30)), tmp_path, rows_per_chunk=10)
    os.unlink(tmp_path / "chunk-00001.arrow")
    with pytest.raises(IncompleteCorpusError, match=r"missing chunk-00001\.arrow"):
        am.Dataset.from_chunks(str(tmp_path))
    _foreign(tmp_path / "extra.arrow", 99)
    with pytest.raises(IncompleteCorpusError, match=r"not listed extra\.arrow") as info:
        am.Dataset.from_chunks(str(tmp_path))
    assert str(tmp_path) in str(info.value)
    assert am.Dataset.from_chunks(str(tmp_path), allow_incomplete=True)["v"][-1] == 99


def test_explicit_files_and_globs_of_a_corpus_open(tmp_path):
    am.write_chunks(({"v": i} for i in range(30)), tmp_path, rows_per_chunk=10)
    # Choosing some chunks on purpose is not an unfinished corpus.
    assert am.Dataset.from_chunks([str(tmp_path / "chunk-00002.arrow")])["v"][0] == 20
    assert len(am.Dataset.from_chunks(str(tmp_path / "chunk-0000[01].arrow"))) == 20


def test_foreign_directory_without_manifest_opens(tmp_path):
    for i in range(2):
        _foreign(tmp_path / f"data-{i}.arrow", i)
    assert am.Dataset.from_chunks(str(tmp_path))["v"] == [0, 1]


def test_empty_write_records_an_empty_complete_corpus(tmp_path):
    assert am.write_chunks(iter([]), tmp_path) == []
    assert (tmp_path / "_manifest.json").exists()
    with pytest.raises(FileExistsError, match="overwrite=True"):
        am.write_chunks(({"v": 1} for _ in range(1)), tmp_path)
