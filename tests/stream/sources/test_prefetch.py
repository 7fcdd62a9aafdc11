"""Prefetch: background work, crash reporting, shutdown, processes."""

from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arrowmix.stream import from_iterable
from tests.stream.helpers import arrow, ident


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
    with pytest.raises(RuntimeError, match=r"MapIterator\(fn='fail_at_7@[0-9a-f]{8}'\)") as info:
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
    for t in mine:  # close() does not wait for it: it stops at its next look at the flag
        t.join(timeout=30)
    assert not any(t.is_alive() for t in mine)


def test_dropped_stream_stops_its_thread() -> None:
    before = set(prefetch_threads())
    s = arrow(1000, infinite=True).prefetch(8)
    next(s)
    (mine,) = set(prefetch_threads()) - before
    del s
    gc.collect()
    mine.join(timeout=30)
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
    root = Path(__file__).resolve().parents[3]
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


def fail_on_multiples_of_9(x: int) -> int:
    if x % 9 == 0:
        raise ValueError(f"item {x} is broken")
    return x


@pytest.mark.parametrize("processes", [False, True])
def test_a_loop_that_skips_bad_items_sees_every_good_item(processes: bool) -> None:
    s = from_iterable(range(100)).map(fail_on_multiples_of_9).prefetch(16, processes=processes)
    got, errors = [], []
    while True:
        try:
            got.append(next(s))
        except StopIteration:
            break
        except RuntimeError as exc:
            errors.append(exc)
    s.close()
    assert got == [x for x in range(100) if x % 9]
    assert len(errors) == 12
    assert isinstance(errors[0].__cause__, ValueError)
    # the user's traceback travels, also from a process
    assert "fail_on_multiples_of_9" in str(errors[0]) and "item 0 is broken" in str(errors[0])
    assert "During handling" not in str(errors[0])


class Blocked:
    """An iterable whose items come only when the event is set."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.released = False  # the wait ended without the event (it timed out)

    def __iter__(self):  # type: ignore[no-untyped-def]
        yield 0
        self.released = not self.go.wait(30)
        yield from range(1, 5)


def test_close_does_not_wait_for_a_blocked_upstream() -> None:
    src = Blocked()
    s = from_iterable(src).prefetch(4)
    assert next(s) == 0
    s.close()  # returns while the upstream is still blocked (waiting would take 30 s)
    assert not src.go.is_set() and not src.released
    src.go.set()
    s.load_state_dict(None)  # a restart waits for the old worker, then reads afresh
    assert list(s) == [0, 1, 2, 3, 4]
    s.close()


def test_prefetch_size_does_not_make_a_checkpoint_unloadable() -> None:
    s = from_iterable(range(60)).map(ident_int).prefetch(32)
    head = [next(s) for _ in range(11)]
    state = s.state_dict()
    s.close()
    for size in (1, 4, 100):
        other = from_iterable(range(60)).map(ident_int).prefetch(size)
        other.load_state_dict(state)
        assert head + list(other) == list(range(60))
        other.close()


def ident_int(x: int) -> int:
    return x


def _daemon_child(q: multiprocessing.Queue[object]) -> None:
    s = from_iterable(range(10)).map(ident_int).prefetch(4, processes=True)
    try:
        q.put(list(s))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        q.put(repr(exc))
    finally:
        s.close()


def test_processes_inside_a_daemonic_process_fall_back_to_a_thread() -> None:
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_daemon_child, args=(q,), daemon=True)
    p.start()
    got = q.get(timeout=30)
    p.join(timeout=10)
    assert got == list(range(10))
