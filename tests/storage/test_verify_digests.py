"""``verify``: recorded digests are checked against the bytes on request (bit rot is found).

A chunk whose digest is in ``_manifest.json``, or a file ``save_to_disk`` wrote (its digest
in ``state.json``), whose values changed while its structure stayed valid, is refused by a
plain open once its ``stat`` identity changed. ``from_chunks(..., verify=True)``,
``load_from_disk(..., verify=True)`` and ``arrowmix verify PATH`` hash the files in full
whatever their identity and name each file that no longer holds what was recorded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cli.main import main
from arrowmix.exceptions import ChunkFileError

MARK = 777_777_777


def _table() -> pa.Table:
    xs = list(range(2000))
    xs[1500] = MARK  # in the second chunk (500 rows each)
    return pa.table({"x": pa.array(xs, pa.int64())})


def _rot(path: Path) -> None:
    """Change one value's bytes in place (structure intact), keeping size and mtime."""
    data = path.read_bytes()
    old = MARK.to_bytes(8, "little")
    assert data.count(old) == 1
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(data.index(old))
        f.write((MARK + 1).to_bytes(8, "little"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_from_chunks_verify_names_the_rotten_chunk(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "corpus"
    am.write_chunks(_table(), str(d), rows_per_chunk=500)
    assert am.Dataset.from_chunks(str(d), verify=True).num_rows == 2000
    assert main(["verify", str(d)]) == 0
    assert "4 file(s) ok" in capsys.readouterr().out
    _rot(d / "chunk-00003.arrow")
    with pytest.raises(ChunkFileError, match=r"chunk-00003\.arrow"):
        am.Dataset.from_chunks(str(d))  # a plain open compares the recorded digest too
    with pytest.raises(ChunkFileError, match=r"chunk-00003\.arrow"):
        am.Dataset.from_chunks(str(d), verify=True)
    assert main(["verify", str(d)]) == 1
    out = capsys.readouterr()
    assert "chunk-00003.arrow" in out.out + out.err
    assert "chunk-00000.arrow" not in out.out + out.err


def test_load_from_disk_verify_names_the_rotten_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "saved"
    am.Dataset.from_arrow(_table()).save_to_disk(str(d), num_shards=2)
    assert am.load_from_disk(str(d), verify=True).num_rows == 2000
    assert main(["verify", str(d)]) == 0
    capsys.readouterr()
    rotten = d / "data-00001-of-00002.arrow"
    _rot(rotten)
    with pytest.raises(ChunkFileError, match=r"data-00001-of-00002\.arrow"):
        am.load_from_disk(str(d))
    with pytest.raises(ChunkFileError, match=r"data-00001-of-00002\.arrow"):
        am.load_from_disk(str(d), verify=True)
    assert main(["verify", str(d)]) == 1
    out = capsys.readouterr()
    assert "data-00001-of-00002.arrow" in out.out + out.err
    assert "data-00000-of-00002.arrow" not in out.out + out.err


def test_verify_refuses_a_path_with_nothing_recorded(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "foreign"
    d.mkdir()
    with pa.OSFile(str(d / "a.arrow"), "wb") as sink, pa.ipc.new_file(sink, _table().schema) as w:
        w.write_table(_table())
    assert main(["verify", str(d)]) == 1
    assert "no recorded digests" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "missing")]) == 1
