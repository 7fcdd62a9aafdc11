"""``save_to_disk`` through a symbolic link writes the directory it points to; the link stays.

A common layout keeps each save in its own directory and a ``latest`` link to one of them.
Saving to ``latest`` replaces the save it points to, as an editor saves a file through a
link, for a Dataset and a DatasetDict, with absolute and relative links; what is not a
directory at the end of the link is still refused, and a dataset read through the link is
never saved over itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import arrowmix as am
from arrowmix.exceptions import TargetExistsError

ROOT = Path(__file__).resolve().parents[2]


def _ds(n: int, start: int = 0) -> am.Dataset:
    return am.Dataset.from_dict({"x": list(range(start, start + n))})


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_a_save_through_a_link_replaces_the_save_it_points_to(
    tmp_path: Path, relative: bool
) -> None:
    real = tmp_path / "saves" / "v1"
    _ds(3).save_to_disk(real)
    link = tmp_path / "latest"
    link.symlink_to(os.path.relpath(real, tmp_path) if relative else real)
    _ds(5, 10).save_to_disk(link)
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    assert am.load_from_disk(link)["x"] == list(range(10, 15))
    assert am.load_from_disk(real)["x"] == list(range(10, 15))
    assert sorted(os.listdir(tmp_path / "saves")) == ["v1"]  # nothing left beside it
    assert sorted(os.listdir(tmp_path)) == ["latest", "saves"]


def test_a_dataset_dict_save_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "v1"
    am.DatasetDict({"train": _ds(3)}).save_to_disk(real)
    link = tmp_path / "latest"
    link.symlink_to(real)
    am.DatasetDict({"train": _ds(2, 7), "test": _ds(1, 9)}).save_to_disk(link)
    assert link.is_symlink()
    loaded = am.load_from_disk(link)
    assert loaded["train"]["x"] == [7, 8] and loaded["test"]["x"] == [9]
    assert sorted(os.listdir(tmp_path)) == ["latest", "v1"]


def test_a_link_to_a_new_place_creates_the_save_there(tmp_path: Path) -> None:
    link = tmp_path / "latest"
    link.symlink_to(tmp_path / "v2")
    _ds(2).save_to_disk(link)
    assert link.is_symlink() and am.load_from_disk(tmp_path / "v2")["x"] == [0, 1]


def test_a_link_to_a_file_or_a_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("important")
    (tmp_path / "to-file").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(TargetExistsError, match="it is a file"):
        _ds(2).save_to_disk(tmp_path / "to-file")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for saved in (_ds(2), am.DatasetDict({"train": _ds(2)})):
        with pytest.raises(TargetExistsError, match="loop"):
            saved.save_to_disk(tmp_path / "a")
    assert (tmp_path / "notes.txt").read_text() == "important"


def test_a_dataset_read_through_the_link_is_not_saved_over_itself(tmp_path: Path) -> None:
    real = tmp_path / "v1"
    _ds(3).save_to_disk(real)
    (tmp_path / "latest").symlink_to(real)
    ds = am.load_from_disk(real)
    with pytest.raises(PermissionError, match="reads files in that directory"):
        ds.save_to_disk(tmp_path / "latest")
    ds = am.load_from_disk(tmp_path / "latest")
    with pytest.raises(PermissionError, match="reads files in that directory"):
        ds.save_to_disk(real)
    assert am.load_from_disk(real)["x"] == [0, 1, 2]


# The child saves 7 rows through the link and kills itself between the two renames: the
# previous save is aside, the new one not yet in place, the link leads nowhere.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import arrowmix as am
    link, real = sys.argv[1:3]
    rename = os.rename

    def move(src, dst, *a, **k):
        if os.fspath(dst) == real and ".saving-" in os.fspath(src):
            os.kill(os.getpid(), signal.SIGKILL)
        return rename(src, dst, *a, **k)

    os.rename = move
    am.Dataset.from_dict({"x": list(range(100, 107))}).save_to_disk(link)
    """
)


def test_a_save_through_a_link_killed_mid_swap_is_finished_by_a_load_through_it(
    tmp_path: Path,
) -> None:
    real = tmp_path / "saves" / "v1"
    _ds(3).save_to_disk(real)
    link = tmp_path / "latest"
    link.symlink_to(real)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(link), str(real)], env=env, timeout=120, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    assert not real.exists(), "the kill did not come between the renames"
    assert am.load_from_disk(link)["x"] == list(range(100, 107))
    assert sorted(os.listdir(tmp_path / "saves")) == ["v1"]
