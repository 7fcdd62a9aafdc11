"""Exporters replace a user's file as an editor's save does: links, modes, kills, full disks."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import arrowmix as am

ROWS = {"a": [1, 2, 3], "s": ["x", "y", None]}
EXPORTS = ["to_json", "to_csv", "to_parquet"]


def _export(method: str, path: str) -> None:
    getattr(am.Dataset.from_dict(ROWS), method)(path)


@pytest.mark.parametrize("method", EXPORTS)
def test_export_through_a_symlink_replaces_the_file_it_points_to(tmp_path, method) -> None:
    real = tmp_path / "data" / "real.out"
    real.parent.mkdir()
    real.write_bytes(b"old")
    link = tmp_path / "link.out"
    link.symlink_to(real)
    _export(method, str(link))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() != b"old"
    _export(method, str(tmp_path / "plain.out"))
    assert real.read_bytes() == (tmp_path / "plain.out").read_bytes()
    assert os.listdir(real.parent) == ["real.out"]  # no temporary left beside either


@pytest.mark.parametrize("method", EXPORTS)
def test_export_keeps_permission_bits_and_new_files_get_the_umask(tmp_path, method) -> None:
    kept = tmp_path / "secret.out"
    kept.write_bytes(b"old")
    kept.chmod(0o600)
    _export(method, str(kept))
    assert kept.read_bytes() != b"old"
    assert kept.stat().st_mode & 0o777 == 0o600
    old = os.umask(0o027)
    try:
        _export(method, str(tmp_path / "new.out"))
    finally:
        os.umask(old)
    assert (tmp_path / "new.out").stat().st_mode & 0o777 == 0o640


_OSFile = pa.OSFile


class _FullDisk:
    """A ``pyarrow.OSFile`` whose writes fail as on a full disk (errno only, as Arrow's do)."""

    def __init__(self, path: str, mode: str = "r") -> None:
        self._f = _OSFile(path, mode)

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "Error writing bytes to file")

    def __getattr__(self, name: str) -> object:
        return getattr(self._f, name)


@pytest.mark.parametrize("method", ["to_json", "to_csv"])
def test_a_full_disk_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch, method) -> None:
    target = tmp_path / "out.txt"
    target.write_bytes(b"old")
    monkeypatch.setattr(pa, "OSFile", _FullDisk)
    with pytest.raises(OSError, match=r"out\.txt") as info:
        _export(method, str(target))
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.txt"]


_KILL_AT_RENAME = """
import os, signal
import arrowmix as am
real = os.replace
def replace(src, dst, *a, **k):
    if str(src).endswith(".partial"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *a, **k)
os.replace = replace
getattr(am.Dataset.from_dict({{"a": [1, 2, 3]}}), {method!r})({path!r})
"""


@pytest.mark.parametrize("method", EXPORTS)
def test_a_kill_at_the_rename_leaves_a_temporary_the_next_export_removes(tmp_path, method) -> None:
    target = tmp_path / "out.txt"
    target.write_bytes(b"old")
    script = textwrap.dedent(_KILL_AT_RENAME.format(method=method, path=str(target)))
    proc = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), check=False)
    assert proc.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"old"  # the old file, whole
    left = [n for n in os.listdir(tmp_path) if n != "out.txt"]
    assert len(left) == 1 and left[0].endswith(".partial")
    _export(method, str(target))
    assert os.listdir(tmp_path) == ["out.txt"]
    assert target.read_bytes() != b"old"


@pytest.mark.parametrize(
    ("orient", "lines"),
    [("records", True), ("records", False), ("split", False), ("table", False)],
)
def test_an_empty_to_json_writes_what_hf_writes(tmp_path, orient, lines) -> None:
    datasets = pytest.importorskip("datasets")
    ours, theirs = tmp_path / "am.json", tmp_path / "hf.json"
    am.Dataset.from_dict({"a": []}).to_json(str(ours), orient=orient, lines=lines)
    datasets.Dataset.from_dict({"a": []}).to_json(str(theirs), orient=orient, lines=lines)
    assert ours.read_bytes() == theirs.read_bytes()
