"""A load of a ``save_to_disk`` directory sees exactly one save while another re-saves it.

Each race is staged at a fixed point of the load (a hook between reading ``state.json`` and
opening the data files, or between two splits), not left to timing.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import arrowmix as am
from arrowmix._cli.main import main as cli_main
from arrowmix._hf import saved, verify
from arrowmix._storage import snapshot
from arrowmix.exceptions import SavedDatasetError


def _ds(start: int, n: int = 60) -> am.Dataset:
    return am.Dataset.from_dict({"x": list(range(start, start + n))})


def _dict(start: int) -> am.DatasetDict:
    return am.DatasetDict({"train": _ds(start), "test": _ds(start + 500, 30)})


def _resave_at(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, resave: Callable[[], None], times: int
) -> None:
    """Run ``resave`` the first ``times`` calls of ``module.name``, just before it runs."""
    real = getattr(module, name)
    calls = {"n": 0}

    def hooked(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= times:
            resave()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, hooked)


def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot.time, "sleep", lambda s: None)


@pytest.mark.parametrize("shards", [(2, 2), (2, 3), (3, 1)])
def test_a_load_during_a_resave_gets_one_whole_save(tmp_path, monkeypatch, shards):
    d = str(tmp_path / "s")
    old, new = _ds(0), _ds(1000)
    old.save_to_disk(d, num_shards=shards[0])
    # The re-save lands after state.json is read and before the data files are opened.
    _resave_at(
        monkeypatch, saved, "_data_files", lambda: new.save_to_disk(d, num_shards=shards[1]), 1
    )
    _no_sleep(monkeypatch)
    back = am.load_from_disk(d)
    assert back["x"] == new["x"]
    assert back.fingerprint == new.fingerprint


def test_a_load_that_never_settles_names_the_directory(tmp_path, monkeypatch):
    d = str(tmp_path / "s")
    versions = [_ds(0), _ds(1000)]
    versions[0].save_to_disk(d)
    flip = {"i": 0}

    def resave() -> None:
        flip["i"] += 1
        versions[flip["i"] % 2].save_to_disk(d, num_shards=1 + flip["i"] % 2)

    _resave_at(monkeypatch, saved, "_data_files", resave, 10**6)
    _no_sleep(monkeypatch)
    with pytest.raises(SavedDatasetError, match="replaced by another save_to_disk") as info:
        am.load_from_disk(d)
    assert repr(d) in str(info.value)
    assert flip["i"] == len(snapshot.PAUSES) + 1  # bounded


def test_a_load_between_the_two_renames_of_a_live_save_waits_for_it(tmp_path, monkeypatch):
    d = tmp_path / "s"
    _ds(0).save_to_disk(str(d))
    # A live save (this process) has moved the previous save aside, and not yet renamed
    # the new one into place.
    tok = f"{os.getpid()}-abcd0123"
    _ds(1000).save_to_disk(str(tmp_path / f".s.saving-{tok}"))
    os.rename(d, tmp_path / f".s.replaced-{tok}")

    def finish_the_swap(seconds: float) -> None:
        if not d.exists():
            os.rename(tmp_path / f".s.saving-{tok}", d)

    monkeypatch.setattr(snapshot.time, "sleep", finish_the_swap)
    assert am.load_from_disk(str(d))["x"] == _ds(1000)["x"]


def test_a_missing_directory_is_still_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        am.load_from_disk(str(tmp_path / "nothing"))


def test_a_datasetdict_load_during_a_resave_has_every_split_from_one_save(tmp_path, monkeypatch):
    d = str(tmp_path / "dd")
    old, new = _dict(0), _dict(1000)
    old.save_to_disk(d)
    # The re-save lands after the first split is loaded, before the second.
    real = saved._data_files
    seen = {"n": 0}

    def hooked(directory: str, state: dict[str, Any]) -> list[str]:
        seen["n"] += 1
        if seen["n"] == 2:
            new.save_to_disk(d)
        return real(directory, state)

    monkeypatch.setattr(saved, "_data_files", hooked)
    _no_sleep(monkeypatch)
    back = am.load_from_disk(d)
    assert {k: back[k]["x"] for k in back} == {k: new[k]["x"] for k in new}
    assert back["train"].fingerprint == new["train"].fingerprint


def test_a_split_resaved_on_its_own_during_a_dict_load_is_read_whole(tmp_path, monkeypatch):
    d = str(tmp_path / "dd")
    _dict(0).save_to_disk(d)
    new_train = _ds(1000)
    # The split's own directory is replaced (a Dataset saved over it), not the dict's.
    _resave_at(
        monkeypatch,
        saved,
        "_data_files",
        lambda: new_train.save_to_disk(os.path.join(d, "train"), num_shards=2),
        1,
    )
    _no_sleep(monkeypatch)
    back = am.load_from_disk(d)
    assert back["train"]["x"] == new_train["x"]  # not called damaged, not a mix
    assert back["train"].fingerprint == new_train.fingerprint
    assert back["test"]["x"] == _dict(0)["test"]["x"]


def test_verify_during_a_resave_checks_the_version_it_read(tmp_path, monkeypatch):
    d = str(tmp_path / "s")
    _ds(0).save_to_disk(d, num_shards=2)
    new = _ds(1000)
    # The re-save lands after state.json is read and before the files are hashed.
    _resave_at(monkeypatch, verify, "check_saved", lambda: new.save_to_disk(d, num_shards=2), 1)
    _no_sleep(monkeypatch)
    back = am.load_from_disk(d, verify=True)  # an intact save is not called damaged
    assert back["x"] == new["x"]


def test_the_verify_command_during_a_resave_reports_no_damage(tmp_path, monkeypatch, capsys):
    d = str(tmp_path / "s")
    _ds(0).save_to_disk(d, num_shards=2)
    new = _ds(1000)
    real = verify.check_saved
    seen = {"n": 0}

    def hooked(directory: str, state: dict[str, Any]) -> Any:
        seen["n"] += 1
        if seen["n"] == 1:
            new.save_to_disk(d, num_shards=2)
        return real(directory, state)

    monkeypatch.setattr(verify, "check_saved", hooked)
    _no_sleep(monkeypatch)
    assert cli_main(["verify", d]) == 0, capsys.readouterr()


def test_the_verify_command_during_a_split_resave_reports_no_damage(tmp_path, monkeypatch, capsys):
    d = str(tmp_path / "dd")
    _dict(0).save_to_disk(d)
    real = verify.check_saved
    seen = {"n": 0}

    def hooked(directory: str, state: dict[str, Any]) -> Any:
        seen["n"] += 1
        if seen["n"] == 1:  # state.json of the first split read, its files not yet hashed
            _ds(1000).save_to_disk(os.path.join(d, "train"), num_shards=2)
        return real(directory, state)

    monkeypatch.setattr(verify, "check_saved", hooked)
    _no_sleep(monkeypatch)
    assert cli_main(["verify", d]) == 0, capsys.readouterr()


def test_a_dataset_loaded_before_a_resave_keeps_its_rows(tmp_path):
    d = str(tmp_path / "s")
    _ds(0).save_to_disk(d, num_shards=2)
    back = am.load_from_disk(d)
    _ds(1000).save_to_disk(d, num_shards=3)  # deletes the files ``back`` mapped
    assert back["x"] == _ds(0)["x"]
    assert back.fingerprint == _ds(0).fingerprint


def test_saves_written_without_pinning_still_load(tmp_path: Path):
    """A directory laid out as the previous release wrote it (HF's layout) loads unchanged."""
    d = tmp_path / "s"
    ds = _ds(0).with_format("numpy")
    ds.save_to_disk(str(d), num_shards=2)
    assert sorted(os.listdir(d)) == [
        "data-00000-of-00002.arrow",
        "data-00001-of-00002.arrow",
        "dataset_info.json",
        "state.json",
    ]
    back = am.load_from_disk(str(d))
    assert back.fingerprint == ds.fingerprint and back.format["type"] == "numpy"


# -- a map over a loaded save while the save is replaced -----------------------------------------


def _resave_during_writes(
    monkeypatch: pytest.MonkeyPatch, resave: Callable[[], None], at: str
) -> None:
    """Run ``resave`` once while a cache file is written: ``"inside"`` its temporary file's
    block (written, not yet renamed), or ``"after"`` it is renamed into place."""
    from arrowmix._storage import atomic, ipc

    real = atomic.atomic_sink
    done = {"n": 0}

    @contextlib.contextmanager
    def hooked(path: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with real(path, *args, **kwargs) as sink:
            yield sink
            if at == "inside" and "cache-" in path and not done["n"]:
                done["n"] = 1
                resave()
        if at == "after" and "cache-" in path and not done["n"]:
            done["n"] = 1
            resave()

    monkeypatch.setattr(ipc, "atomic_sink", hooked)


@pytest.mark.parametrize("at", ["inside", "after"])
def test_a_map_over_a_loaded_save_completes_while_the_save_is_replaced(
    tmp_path, monkeypatch, small_segments, at
):
    d = str(tmp_path / "s")
    _ds(0, 40).save_to_disk(d, num_shards=2)
    loaded = am.load_from_disk(d)
    _resave_during_writes(monkeypatch, lambda: _ds(1000, 40).save_to_disk(d), at)
    mapped = loaded.map(lambda b: {"y": [v + 1 for v in b["x"]]}, batched=True)
    assert mapped["y"] == [v + 1 for v in range(40)]
    assert mapped["x"] == list(range(40))
    derived = [f for f in mapped.cache_files if "cache-" in f]
    assert derived and all(os.path.isfile(f) for f in derived)
    assert pickle.loads(pickle.dumps(mapped))["y"] == mapped["y"]
    assert am.load_from_disk(d)["x"] == list(range(1000, 1040))  # the new save, whole


def test_a_datasetdict_splits_map_completes_while_the_dict_is_replaced(
    tmp_path, monkeypatch, small_segments
):
    d = str(tmp_path / "dd")
    _dict(0).save_to_disk(d)
    loaded = am.load_from_disk(d)
    _resave_during_writes(monkeypatch, lambda: _dict(1000).save_to_disk(d), "after")
    mapped = loaded["train"].map(lambda r: {"y": r["x"] * 2})
    assert mapped["y"] == [2 * v for v in range(60)]
    assert all(os.path.isfile(f) for f in mapped.cache_files if "cache-" in f)


def test_a_write_finishes_in_the_new_directory_once_its_temporary_is_moved(tmp_path, monkeypatch):
    """The window between a re-save's swap and its move of the live temporary files."""
    from arrowmix._storage import atomic

    target, old = tmp_path / "s", tmp_path / ".s.replaced-1-ab"
    target.mkdir()
    moved = {"n": 0}

    def carry(seconds: float) -> None:  # the re-save moves the temporary meanwhile
        for name in os.listdir(old):
            os.rename(old / name, target / name)
            moved["n"] += 1

    monkeypatch.setattr(atomic.time, "sleep", carry)
    with atomic.atomic_sink(str(target / "cache-0123456789abcdef.arrow")) as sink:
        sink.write(b"rows")
        os.rename(target, old)  # the swap: the temporary file is now in the old directory
        target.mkdir()
    assert (target / "cache-0123456789abcdef.arrow").read_bytes() == b"rows"
    assert moved["n"] == 1 and os.listdir(old) == []


def test_a_map_whose_file_was_not_moved_says_its_directory_was_replaced(
    tmp_path, monkeypatch, small_segments
):
    """The window the move cannot cover: a temporary file made after the re-save listed."""
    from arrowmix._storage import atomic

    d = str(tmp_path / "s")
    _ds(0, 40).save_to_disk(d, num_shards=2)
    loaded = am.load_from_disk(d)
    monkeypatch.setattr(saved, "carry_over", lambda old, new: [])  # nothing moved
    monkeypatch.setattr(atomic.time, "sleep", lambda s: None)
    _resave_during_writes(monkeypatch, lambda: _ds(1000, 40).save_to_disk(d), "inside")
    with pytest.raises(FileNotFoundError, match="its directory was replaced") as info:
        loaded.map(lambda b: {"y": [v + 1 for v in b["x"]]}, batched=True)
    assert os.path.join(d, "cache-") in str(info.value)  # the file, and what to do
    assert "Run it again" in str(info.value)
    assert am.load_from_disk(d)["x"] == list(range(1000, 1040))  # the new save is whole


def test_a_replaced_saves_unused_results_go_and_used_ones_stay(tmp_path):
    d = tmp_path / "s"
    _ds(0, 40).save_to_disk(str(d))
    loaded = am.load_from_disk(str(d))
    kept = loaded.map(lambda r: {"y": r["x"] + 1})
    dropped = loaded.map(lambda r: {"z": r["x"] - 1})
    dropped_files = [f for f in dropped.cache_files if "cache-" in f]
    del dropped
    gc.collect()
    _ds(1000, 40).save_to_disk(str(d))
    assert all(os.path.isfile(f) for f in kept.cache_files if "cache-" in f)
    assert not any(os.path.exists(f) for f in dropped_files)
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []  # nothing left beside


_CHILD = """
import os, sys, time
import arrowmix as am
from arrowmix._cache import segments
segments.SEGMENT_ROWS = segments.MIN_SEGMENT_ROWS = 10
d, ready, go = sys.argv[1:4]
loaded = am.load_from_disk(d)

def f(row):
    if row["x"] == 25:  # in the third segment: two are written, one half computed
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.01)
    return {"y": row["x"] + 1}

mapped = loaded.map(f)
assert mapped["y"] == [v + 1 for v in range(40)], mapped["y"]
assert all(os.path.isfile(p) for p in mapped.cache_files if "cache-" in p)
print("ok")
"""


def test_a_map_in_another_process_completes_while_its_save_is_replaced(tmp_path):
    d, ready, go = str(tmp_path / "s"), tmp_path / "ready", tmp_path / "go"
    _ds(0, 40).save_to_disk(d, num_shards=2)
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, d, str(ready), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    _ds(1000, 40).save_to_disk(d, num_shards=3)  # from this process, mid-map
    go.touch()
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "ok", err
    assert am.load_from_disk(d)["x"] == list(range(1000, 1040))


# The child re-saves and kills itself at ``point`` of the swap: "swap" (the previous save
# moved aside, the new one not in place), "carry" (moving the files in use), "remove"
# (removing the previous save).
_KILLER = """
import os, shutil, signal, sys
import arrowmix as am
target, point = sys.argv[1:3]
real_rename, real_rmtree = os.rename, shutil.rmtree

def rename(src, dst, *a, **k):
    src, dst = os.fspath(src), os.fspath(dst)
    if point == "swap" and dst == target or point == "carry" and ".replaced-" in src:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_rename(src, dst, *a, **k)

def rmtree(path, *a, **k):
    if point == "remove" and ".replaced-" in os.fspath(path):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_rmtree(path, *a, **k)

os.rename, shutil.rmtree = rename, rmtree
am.Dataset.from_dict({"x": list(range(1000, 1040))}).save_to_disk(target)
"""


@pytest.mark.parametrize(
    ("point", "how"),
    [
        ("swap", "load"),
        ("carry", "load"),
        # each step once in the fast tier; the cleanup after a killed carry in the CI tier
        pytest.param("carry", "cleanup-cache", marks=pytest.mark.slow),
        ("remove", "load"),
    ],
)
def test_a_resave_killed_at_each_step_keeps_the_results_in_use(tmp_path, point, how):
    d = tmp_path / "s"
    _ds(0, 40).save_to_disk(str(d))
    mapped = am.load_from_disk(str(d)).map(lambda r: {"y": r["x"] + 1})  # holds its result
    derived = [f for f in mapped.cache_files if "cache-" in f]
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, str(d), point],
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")], "nothing left to recover"
    if how == "cleanup-cache":
        assert cli_main(["cleanup-cache", str(tmp_path)]) == 0
    assert am.load_from_disk(str(d))["x"] == list(range(1000, 1040))  # the complete new save
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
    assert derived and all(os.path.isfile(f) for f in derived)  # kept where the map wrote it
    assert pickle.loads(pickle.dumps(mapped))["y"] == [v + 1 for v in range(40)]


def test_a_cache_file_moved_after_it_was_sealed_is_renamed_not_sealed_twice(tmp_path, monkeypatch):
    """The re-save moves the temporary between its checksum and its rename."""
    import pyarrow as pa

    from arrowmix._storage import atomic, integrity, ipc

    target, old = tmp_path / "s", tmp_path / ".s.replaced-1-ab"
    target.mkdir()
    real_seal = integrity.seal

    def seal_then_swap(path: str, value: str) -> None:
        real_seal(path, value)
        if not old.exists():
            os.rename(target, old)
            target.mkdir()

    def carry(seconds: float) -> None:
        for name in os.listdir(old):
            os.rename(old / name, target / name)

    monkeypatch.setattr(integrity, "seal", seal_then_swap)
    monkeypatch.setattr(atomic.time, "sleep", carry)
    path = str(target / "cache-0123456789abcdef.arrow")
    table = pa.table({"x": [1, 2, 3]})
    ipc.write_file(path, table.to_batches(), table.schema, meta={"rows": 3})
    assert integrity.problem(pa.memory_map(path).read_buffer(), structural=False) is None
