"""What identifies a chunk file version: rewrites that keep size, inode and mtime are seen.

A reproducible release tarball extracted over a corpus, or pyarrow rewriting a chunk in
place, keeps the file's inode, size and modification time; only its change time (which user
space cannot set) moves. Such a rewrite must be refused (a file a manifest lists) or change
the fingerprint (never serve results of the old bytes), and an unpickled dataset (spawn
workers, a Pool, Ray) must refuse files rewritten since it was pickled instead of reading new
rows under the old fingerprint.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import ChunkFileError
from tests.storage.fresh import run_python
from tests.storage.in_place import write_in_place

ROOT = Path(__file__).resolve().parents[2]


def _table(v: int, rows: int = 1000) -> pa.Table:
    return pa.table({"x": pa.array([i * 10 + v for i in range(rows)], pa.int64())})


def _rewrite_in_place(path: str, data: bytes) -> None:
    """Write ``data`` over ``path`` keeping its inode, size and modification time."""
    assert len(data) == os.path.getsize(path)
    write_in_place(path, data)


def _other_version_bytes(tmp_path: Path, name: str) -> bytes:
    other = tmp_path / "other"
    am.write_chunks(_table(2), str(other), rows_per_chunk=500)
    return (other / name).read_bytes()


def test_stat_identical_rewrite_of_a_manifest_corpus_is_refused(
    tmp_path: Path,
) -> None:
    d = tmp_path / "corpus"
    am.write_chunks(_table(1), str(d), rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(d))
    before = ds.fingerprint
    doubled = ds.map(lambda b: {"y": [v * 2 for v in b["x"]]}, batched=True)
    assert doubled["y"][:2] == [2, 22]
    _rewrite_in_place(
        str(d / "chunk-00000.arrow"), _other_version_bytes(tmp_path, "chunk-00000.arrow")
    )
    # Not the bytes the manifest records: refused, never served (nor the stale cached result).
    with pytest.raises(ChunkFileError, match=r"chunk-00000\.arrow.*manifest"):
        am.Dataset.from_chunks(str(d))
    (d / "_manifest.json").unlink()  # the user declares the corpus foreign: it opens
    again = am.Dataset.from_chunks(str(d), allow_incomplete=True)
    assert again["x"][:2] == [2, 12]
    assert again.fingerprint != before
    redone = again.map(lambda b: {"y": [v * 2 for v in b["x"]]}, batched=True)
    assert redone["y"][:2] == [4, 24]  # recomputed, not the stale cached result


def _foreign_chunk(path: Path, v: int) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, _table(v).schema) as w:
        w.write_table(_table(v))


def test_stat_identical_rewrite_of_a_foreign_file_changes_the_fingerprint(
    tmp_path: Path,
) -> None:
    d = tmp_path / "foreign"
    d.mkdir()
    _foreign_chunk(d / "part-0.arrow", 1)
    _foreign_chunk(tmp_path / "new.arrow", 2)
    before = am.Dataset.from_chunks(str(d)).fingerprint
    _rewrite_in_place(str(d / "part-0.arrow"), (tmp_path / "new.arrow").read_bytes())
    again = am.Dataset.from_chunks(str(d))  # same process: in-memory digest memo
    assert again["x"][:2] == [2, 12]
    assert again.fingerprint != before
    # A fresh process: the digest records on disk must not answer for the new bytes.
    code = "import arrowmix as am, sys; print(am.Dataset.from_chunks(sys.argv[1]).fingerprint)"
    assert run_python(code, str(d)).strip() == again.fingerprint


def test_unpickling_after_a_same_size_rewrite_raises(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    am.write_chunks(_table(1), str(d), rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(d))
    blob = pickle.dumps(ds)
    assert pickle.loads(blob)["x"][:2] == [1, 11]
    am.write_chunks(_table(2), str(d), rows_per_chunk=500, overwrite=True)  # same sizes
    with pytest.raises(ChunkFileError, match="chunk-0000"):
        pickle.loads(blob)


def test_unpickling_after_a_stat_identical_rewrite_raises(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    am.write_chunks(_table(1), str(d), rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(d))
    blob = pickle.dumps(ds)
    _rewrite_in_place(
        str(d / "chunk-00001.arrow"), _other_version_bytes(tmp_path, "chunk-00001.arrow")
    )
    with pytest.raises(ChunkFileError, match="chunk-00001"):
        pickle.loads(blob)


def test_unpickling_an_untouched_dataset_and_a_map_result_still_works(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    am.write_chunks(_table(1), str(d), rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(d))
    mapped = ds.map(lambda b: {"y": [v + 1 for v in b["x"]]}, batched=True)
    blob = pickle.dumps(mapped)
    # A cache hit touches the cache files (their "last used" time): still the same files.
    ds.map(lambda b: {"y": [v + 1 for v in b["x"]]}, batched=True)
    back = pickle.loads(blob)
    assert back.fingerprint == mapped.fingerprint
    assert back["y"][:2] == [2, 12]
