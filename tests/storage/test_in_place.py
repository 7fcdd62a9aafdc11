"""The one rule of files read in place: a version taken at open, checked before each read."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest

from arrowmix._storage.in_place import FileVersion, check_all
from arrowmix.exceptions import ChunkFileError
from tests.storage.in_place import write_in_place


def test_a_write_right_after_the_open_is_seen(tmp_path: Path) -> None:
    """The version is taken once the file's time tick passed: the next write moves a time."""
    path = tmp_path / "f.bin"
    for k in range(5):
        path.write_bytes(bytes([k]) * 64)
        version = FileVersion.of(str(path))
        write_in_place(path, b"\xff")  # same inode, size and mtime: only the ctime moves
        assert version.problem() == "written in place: its change time moved", k


def test_each_kind_of_change_is_named(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 10)
    version = FileVersion.of(str(path))
    assert version.problem() is None
    version.check("Token file")
    os.utime(path, ns=(0, 10**18))
    assert version.problem() == "rewritten: its modification time moved"
    with open(path, "ab") as f:
        f.write(b"b")
    assert "11 bytes now, 10 at open" in str(version.problem())
    (tmp_path / "g.bin").write_bytes(b"a" * 10)
    os.replace(tmp_path / "g.bin", path)
    assert str(version.problem()).startswith("replaced by another file")
    path.unlink()
    assert "cannot be read now" in str(version.problem())
    with pytest.raises(ChunkFileError, match=r"^MDS shard '.*f\.bin' changed since it was opened"):
        check_all([version], "MDS shard")


def test_a_version_pickles_and_is_checked_in_the_other_process(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    version = pickle.loads(pickle.dumps(FileVersion.of(str(path))))
    assert version == FileVersion.of(str(path))
    write_in_place(path, b"x")
    with pytest.raises(ChunkFileError, match=r"written in place"):
        version.check("Token file")


def test_a_file_stamped_in_the_future_is_taken_without_a_wait(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    os.utime(path, ns=(0, 4 * 10**18))  # the year 2096
    start = time.monotonic()
    version = FileVersion.of(str(path))
    assert time.monotonic() - start < 0.05
    assert version.mtime_ns == 4 * 10**18 and version.problem() is None
