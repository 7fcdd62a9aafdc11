"""``save_to_disk`` / ``load_from_disk`` at the user's paths: nothing of theirs is deleted.

A save replaces only a previous save (its ``state.json`` / ``dataset_info.json`` layout), refuses
any other non-empty directory or a file, and a save killed at any point is finished or undone
by the next save, load or ``arrowmix cleanup-cache``.
"""

from __future__ import annotations

import errno
import json
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
from arrowmix._cli.main import main as cli_main
from arrowmix.exceptions import ArrowmixError

ROOT = Path(__file__).resolve().parents[2]


def _ds(n: int, start: int = 0) -> am.Dataset:
    return am.Dataset.from_dict({"x": list(range(start, start + n))})


def _hidden(parent: Path) -> list[str]:
    return sorted(n for n in os.listdir(parent) if n.startswith("."))


# -- item 1: never delete what arrowmix did not write ------------------------------------------


def test_a_project_directory_is_refused_and_kept(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    (project / "notes").mkdir()
    (project / "notes" / "todo.md").write_text("- x\n")
    with pytest.raises(FileExistsError) as info:
        _ds(3).save_to_disk(project)
    assert isinstance(info.value, ArrowmixError)
    assert str(project) in str(info.value)
    assert (project / "train.py").read_text() == "print('hi')\n"
    assert (project / "notes" / "todo.md").exists()
    assert os.listdir(tmp_path) == ["project"]  # nothing left beside it


def test_the_parent_of_the_source_corpus_is_refused_and_the_corpus_kept(tmp_path):
    am.write_chunks(({"x": i} for i in range(20)), tmp_path / "work" / "chunks", rows_per_chunk=5)
    ds = am.Dataset.from_chunks(str(tmp_path / "work" / "chunks"))
    with pytest.raises(ArrowmixError) as info:
        ds.save_to_disk(tmp_path / "work")
    assert isinstance(info.value, OSError) and str(tmp_path / "work") in str(info.value)
    assert am.Dataset.from_chunks(str(tmp_path / "work" / "chunks"))["x"] == list(range(20))
    # Even a previous save that holds the corpus below it is not replaced.
    _ds(2).save_to_disk(tmp_path / "s")
    am.write_chunks(({"x": i} for i in range(4)), tmp_path / "s" / "c")
    inner = am.Dataset.from_chunks(str(tmp_path / "s" / "c"))
    with pytest.raises(ArrowmixError):
        inner.save_to_disk(tmp_path / "s")
    assert am.Dataset.from_chunks(str(tmp_path / "s" / "c"))["x"] == [0, 1, 2, 3]


def test_a_previous_save_is_replaced_and_an_empty_directory_used(tmp_path):
    _ds(3).save_to_disk(tmp_path / "d")
    _ds(5, 10).save_to_disk(tmp_path / "d", num_shards=2)
    assert am.load_from_disk(tmp_path / "d")["x"] == list(range(10, 15))
    assert sorted(os.listdir(tmp_path / "d")) == [
        "data-00000-of-00002.arrow",
        "data-00001-of-00002.arrow",
        "dataset_info.json",
        "state.json",
    ]
    (tmp_path / "empty").mkdir()
    _ds(2).save_to_disk(tmp_path / "empty")
    assert am.load_from_disk(tmp_path / "empty")["x"] == [0, 1]
    assert _hidden(tmp_path) == []


def test_a_users_file_inside_a_previous_save_is_not_deleted(tmp_path):
    _ds(3).save_to_disk(tmp_path / "d")
    (tmp_path / "d" / "README.md").write_text("my notes")
    with pytest.raises(FileExistsError) as info:
        _ds(4).save_to_disk(tmp_path / "d")
    assert "README.md" in str(info.value) and isinstance(info.value, ArrowmixError)
    assert (tmp_path / "d" / "README.md").read_text() == "my notes"
    assert am.load_from_disk(tmp_path / "d")["x"] == [0, 1, 2]


def test_a_file_at_the_target_is_refused(tmp_path):
    (tmp_path / "d").write_text("important")
    with pytest.raises(FileExistsError) as info:
        _ds(3).save_to_disk(tmp_path / "d")
    assert str(tmp_path / "d") in str(info.value)
    assert (tmp_path / "d").read_text() == "important"


# -- item 3: a killed save is finished or undone by the next call ------------------------------

# The child saves 7 rows over a previous save of 3; ``point`` says where it kills itself:
# "first-rename" (before the previous save is moved aside), "second-rename" (the previous save
# is aside, the new one not yet in place) or "rmtree" (in place, the previous copy not removed).
KILLER = textwrap.dedent(
    """
    import os, shutil, signal, sys
    import arrowmix as am
    target, point = sys.argv[1:3]
    real_rename, real_replace, real_rmtree = os.rename, os.replace, shutil.rmtree

    def moved(real):
        def move(src, dst, *a, **k):
            if point == "first-rename" and os.fspath(src) == target:
                os.kill(os.getpid(), signal.SIGKILL)
            if point == "second-rename" and os.fspath(dst) == target:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(src, dst, *a, **k)
        return move

    def rmtree(path, *a, **k):
        if point == "rmtree" and ".replaced-" in os.fspath(path):
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rmtree(path, *a, **k)

    os.rename, os.replace, shutil.rmtree = moved(real_rename), moved(real_replace), rmtree
    am.Dataset.from_dict({"x": list(range(100, 107))}).save_to_disk(target)
    """
)


def _killed_save(target: Path, point: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(target), point], env=env, timeout=120, check=False
    )
    assert proc.returncode == -signal.SIGKILL


def _recover_by(how: str, target: Path) -> None:
    if how == "load":
        return
    if how == "save":
        _ds(2, 50).save_to_disk(target.parent / "other")  # a save beside it tidies the parent
    elif how == "cleanup-cache":
        assert cli_main(["cleanup-cache", str(target.parent)]) == 0


@pytest.mark.parametrize(
    ("point", "how"),
    [
        # each kill point once in the fast tier, every way to meet it in the CI tier
        ("first-rename", "load"),
        pytest.param("second-rename", "load", marks=pytest.mark.slow),
        ("second-rename", "save"),
        pytest.param("second-rename", "cleanup-cache", marks=pytest.mark.slow),
        ("rmtree", "cleanup-cache"),
    ],
)
def test_a_killed_save_is_finished_or_undone(tmp_path, point, how, capsys):
    target = tmp_path / "d"
    _ds(3).save_to_disk(target)
    _killed_save(target, point)
    assert _hidden(tmp_path), "the kill left nothing to recover: the test kills too late"
    _recover_by(how, target)
    if how != "load":
        assert _hidden(tmp_path) == []  # done by that call, before any load
    rows = am.load_from_disk(target)["x"]
    assert rows in ([0, 1, 2], list(range(100, 107)))
    if point != "first-rename":  # the new save was complete: it is the one kept
        assert rows == list(range(100, 107))
    assert _hidden(tmp_path) == []


BLOCKED = textwrap.dedent(
    """
    import os, sys, time
    import arrowmix as am
    target, gate = sys.argv[1:3]

    def gated(real):
        def move(src, dst, *a, **k):
            if os.fspath(src) == target:  # all written, about to swap: wait for the test
                print("ready", flush=True)
                while not os.path.exists(gate):
                    time.sleep(0.02)
            return real(src, dst, *a, **k)
        return move

    os.rename, os.replace = gated(os.rename), gated(os.replace)
    am.Dataset.from_dict({"x": [7, 8, 9]}).save_to_disk(target)
    """
)


def test_a_live_savers_temporary_directory_is_left_alone(tmp_path):
    target, gate = tmp_path / "d", tmp_path / "gate"
    _ds(3).save_to_disk(target)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED, str(target), str(gate)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert am.load_from_disk(target)["x"] == [0, 1, 2]
        _ds(1).save_to_disk(tmp_path / "other")
        assert cli_main(["cleanup-cache", str(tmp_path)]) == 0
        assert any(".saving-" in n for n in _hidden(tmp_path))
        gate.touch()
        assert proc.wait(timeout=60) == 0
    finally:
        gate.touch()
        if proc.poll() is None:
            time.sleep(1)
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert am.load_from_disk(target)["x"] == [7, 8, 9]


# -- item 12: load_from_disk errors, a full disk ------------------------------------------------


def test_a_truncated_state_json_is_named(tmp_path):
    _ds(3).save_to_disk(tmp_path / "d")
    state = tmp_path / "d" / "state.json"
    state.write_text(state.read_text()[:20])
    with pytest.raises(ArrowmixError) as info:
        am.load_from_disk(tmp_path / "d")
    assert isinstance(info.value, ValueError) and str(state) in str(info.value)


def test_a_state_json_without_data_files_is_named(tmp_path):
    _ds(3).save_to_disk(tmp_path / "d")
    state = tmp_path / "d" / "state.json"
    body = json.loads(state.read_text())
    del body["_data_files"]
    state.write_text(json.dumps(body))
    with pytest.raises(ArrowmixError) as info:
        am.load_from_disk(tmp_path / "d")
    assert isinstance(info.value, ValueError)
    assert "_data_files" in str(info.value) and str(state) in str(info.value)
    body["_data_files"] = [{"name": "x"}]
    state.write_text(json.dumps(body))
    with pytest.raises(ValueError, match="_data_files"):
        am.load_from_disk(tmp_path / "d")


@pytest.mark.parametrize("name", ["../outside/data-00000-of-00001.arrow", "/abs.arrow", "a/b"])
def test_a_data_file_outside_the_directory_is_refused(tmp_path, name):
    _ds(3).save_to_disk(tmp_path / "d")
    _ds(2, 40).save_to_disk(tmp_path / "outside")
    state = tmp_path / "d" / "state.json"
    body = json.loads(state.read_text())
    body["_data_files"] = [{"filename": name}]
    state.write_text(json.dumps(body))
    with pytest.raises(ArrowmixError) as info:
        am.load_from_disk(tmp_path / "d")
    assert isinstance(info.value, ValueError) and name in str(info.value)


class _FullDisk:
    """A writable file that fails like a full disk after ``room`` bytes."""

    def __init__(self, path: str, mode: str = "wb") -> None:
        self._f = open(path, mode)  # noqa: SIM115 - closed in close()
        self._room = 2000
        self.closed = False

    def write(self, data: bytes) -> int:
        self._room -= len(data)
        if self._room < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        self.closed = True
        self._f.close()

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_a_full_disk_during_save_names_the_file(tmp_path, monkeypatch):
    _ds(3).save_to_disk(tmp_path / "d")
    monkeypatch.setattr(pa, "OSFile", _FullDisk)
    big = am.Dataset.from_dict({"t": ["x" * 100] * 500})
    with pytest.raises(ArrowmixError) as info:
        big.save_to_disk(tmp_path / "d")
    monkeypatch.undo()
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOSPC
    assert "data-00000-of-00001.arrow" in str(info.value)
    assert am.load_from_disk(tmp_path / "d")["x"] == [0, 1, 2]  # the previous save intact
    assert _hidden(tmp_path) == []


def test_a_real_full_disk_during_save_names_the_file(small_disk):
    disk = small_disk("256k")
    big = am.Dataset.from_dict({"t": ["x" * 1000] * 1000})
    with pytest.raises(ArrowmixError) as info:
        big.save_to_disk(disk / "d")
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOSPC
    assert "data-00000-of-00001.arrow" in str(info.value)
    assert os.listdir(disk) == []
