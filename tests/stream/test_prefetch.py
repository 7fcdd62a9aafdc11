"""Prefetch: background work, crash reporting, shutdown, processes."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arrowmix.stream import from_iterable

from .helpers import arrow, ident


def fail_at_7(x: int) -> int:
    if x == 7:
        raise ValueError("row 7 is broken")
    return x


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "arrowmix-prefetch"]


def test_prefetch_yields_the_same_items() -> None:
    with arrow(100, seed=1).map(ident).prefetch(16) as s:
        got = list(s)
    assert got == list(arrow(100, seed=1).map(ident))


def test_worker_error_names_the_stage() -> None:
    s = from_iterable(range(20)).map(fail_at_7).prefetch(4)
    with pytest.raises(RuntimeError, match=r"MapIterator\(fn='fail_at_7'\)") as info:
        list(s)
    assert isinstance(info.value.__cause__, ValueError)
    s.close()


def test_close_stops_the_thread() -> None:
    before = set(prefetch_threads())
    s = arrow(1000, infinite=True).prefetch(8)
    next(s)
    mine = set(prefetch_threads()) - before
    assert len(mine) == 1
    s.close()
    assert not any(t.is_alive() for t in mine)


def test_dropped_stream_stops_its_thread() -> None:
    before = set(prefetch_threads())
    s = arrow(1000, infinite=True).prefetch(8)
    next(s)
    (mine,) = set(prefetch_threads()) - before
    del s
    gc.collect()
    mine.join(timeout=5)
    assert not mine.is_alive()


def test_load_state_restarts_the_worker() -> None:
    s = from_iterable(range(50)).prefetch(8)
    for _ in range(13):
        next(s)
    state = s.state_dict()
    rest = list(s)
    s.load_state_dict(state)
    assert list(s) == rest == list(range(13, 50))
    s.close()


def test_processes() -> None:
    s = arrow(60, seed=2).map(ident).prefetch(8, processes=True)
    for _ in range(10):
        next(s)
    state = s.state_dict()
    rest = list(s)
    s.load_state_dict(state)
    assert list(s) == rest
    s.close()
    assert sorted(list(arrow(60, seed=2).map(ident))[:10] + rest) == list(range(60))


def test_process_error_is_reported() -> None:
    s = from_iterable(range(20)).map(fail_at_7).prefetch(4, processes=True)
    with pytest.raises(RuntimeError, match="row 7 is broken"):
        list(s)
    s.close()


@pytest.mark.parametrize("processes", [False, True])
def test_interpreter_exits_with_a_running_worker(processes: bool) -> None:
    code = (
        "from arrowmix.stream import from_chunks\n"
        "s = from_chunks(range(4), lambda i: range(1000), seed=0)"
        f".prefetch(8, processes={processes})\n"
        "next(s)\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
