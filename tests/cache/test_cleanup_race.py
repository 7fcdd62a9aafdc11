"""A map racing ``cleanup-cache`` never fails: it holds its files first, or computes again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cache.cleanup import remove_file
from arrowmix._cache.inuse import hold, in_use
from arrowmix._dataset.mapping import plan as map_module
from arrowmix._dataset.state import state_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _double(batch: dict[str, Any]) -> dict[str, Any]:
    return {"y": [2 * v for v in batch["v"]]}


def _data(tmp_path: Any, rows: int = 40) -> am.Dataset:
    am.write_chunks(pa.table({"v": list(range(rows))}), tmp_path / "c")
    return am.Dataset.from_chunks(str(tmp_path / "c"))


@pytest.mark.parametrize("kind", ["map", "filter"])
def test_segments_are_held_from_their_check_on(tmp_path, monkeypatch, small_segments, kind):
    ds = _data(tmp_path)
    run = (
        (lambda d: d.map(_double, batched=True, batch_size=4))
        if kind == "map"
        else (lambda d: d.filter(lambda r: r["v"] % 2 == 0))
    )
    want = run(ds).to_table().to_pylist()
    del ds
    original = map_module.materialise
    refused = []

    def materialise_then_cleanup(job: Any, segments: Any, **kw: Any) -> Any:
        tables = original(job, segments, **kw)
        # A cleanup strikes between the check and the result's own registration.
        refused.append(remove_file(segments[1].path)[1])
        return tables

    monkeypatch.setattr(map_module, "materialise", materialise_then_cleanup)
    got = run(am.Dataset.from_chunks(str(tmp_path / "c")))
    assert refused == ["in use by an open dataset"]
    assert got.to_table().to_pylist() == want
    assert all(in_use(p) for p in state_of(got).files if os.path.basename(p).startswith("cache-"))


def test_hold_never_registers_a_removed_file(tmp_path):
    path = str(tmp_path / "cache-0123456789abcdef.arrow")
    open(path, "wb").close()
    h = hold(path)
    os.unlink(path)
    with pytest.raises(FileNotFoundError):
        hold(path)
    h.release()


_CLEANER = """
import os, sys, time
from arrowmix._cache.cleanup import plan_cleanup, remove_planned
from arrowmix._cache.listing import scan
directory, stop, removing = sys.argv[1:4]
removed = 0
end = time.monotonic() + 600  # a hung test's end; the test stops it long before
print("ready", flush=True)
while not os.path.exists(stop) and time.monotonic() < end:
    removed += len(remove_planned(plan_cleanup(scan(directory), time.time())).removed)
    if removed and not os.path.exists(removing):
        open(removing, "w").close()  # tells the test that it has removed files
print(removed)
"""


@pytest.mark.slow
def test_map_racing_cleanup_never_fails(tmp_path, small_segments):
    ds = _data(tmp_path)
    want = ds.map(_double, batched=True)["y"]
    stop, removing = tmp_path / "stop", tmp_path / "removing"
    env = {**os.environ, "PYTHONPATH": ROOT}
    cleaner = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_CLEANER), str(tmp_path / "c"), str(stop),
         str(removing)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    assert cleaner.stdout is not None
    assert cleaner.stdout.readline().strip() == "ready"
    maps = 0
    # Race for at least 3 s, and until both sides have really run (maps done, files
    # removed), however fast or slow the machine; the deadline only stops a hung test.
    start = time.monotonic()
    try:
        while time.monotonic() - start < 3.0 or maps <= 5 or not removing.exists():
            assert time.monotonic() - start < 300, f"{maps} maps, cleaner removed nothing"
            fresh = am.Dataset.from_chunks(str(tmp_path / "c"))
            assert fresh.map(_double, batched=True)["y"] == want
            maps += 1
    finally:
        stop.touch()
        out, _ = cleaner.communicate(timeout=120)
    assert cleaner.returncode == 0
    assert maps > 5 and int(out.strip()) > 0  # both sides really ran


def test_flatten_file_removed_before_it_is_held_is_written_again(tmp_path, monkeypatch):
    from arrowmix._dataset.views import view_ops as ops

    ds = _data(tmp_path).shuffle(seed=1)
    want = ds["v"]
    original = ops._write_flattened
    writes = []

    def write_then_cleanup(*args: Any) -> None:
        original(*args)
        writes.append(args[1])
        if len(writes) == 1:  # a cleanup strikes before the file is held
            assert remove_file(args[1])[1] is None

    monkeypatch.setattr(ops, "_write_flattened", write_then_cleanup)
    flat = ds.flatten_indices()
    assert flat["v"] == want and len(writes) == 2
    assert in_use(writes[0])


def test_indices_file_removed_before_it_is_held_is_written_again(tmp_path, monkeypatch):
    from arrowmix._dataset import indices
    from arrowmix._dataset.views import view_ops as ops

    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    ds = _data(tmp_path)
    original = ops.load_or_store
    paths = []

    def store_then_cleanup(*args: Any, **kwargs: Any) -> Any:
        mapping, path = original(*args, **kwargs)
        paths.append(path)
        if len(paths) == 1:
            assert remove_file(path)[1] is None
        return mapping, path

    monkeypatch.setattr(ops, "load_or_store", store_then_cleanup)
    shuffled = ds.shuffle(seed=2)
    assert sorted(shuffled["v"]) == list(range(40)) and len(paths) == 2
    assert in_use(paths[1])
