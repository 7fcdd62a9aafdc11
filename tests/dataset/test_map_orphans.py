"""Workers of a ``num_proc`` map exit when their parent is killed with ``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PARENT = """
import os, sys, time
import pyarrow as pa
import arrowmix as am
from arrowmix._dataset.mapping import local as workers

if sys.argv[2] == "watchdog":  # as on platforms without prctl
    workers._set_pdeathsig = lambda: False
    workers.WATCHDOG_INTERVAL = 0.1
pids = sys.argv[1]

def slow(row):
    with open(os.path.join(pids, str(os.getpid())), "w"):
        pass
    time.sleep(60)
    return row

am.write_chunks(pa.table({"v": list(range(40))}), os.path.join(pids, "c"))
from arrowmix._cache import segments
segments.SEGMENT_ROWS = segments.MIN_SEGMENT_ROWS = 10
am.Dataset.from_chunks(os.path.join(pids, "c")).map(slow, num_proc=2)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["pdeathsig", "watchdog"])
def test_workers_exit_when_the_parent_is_killed(tmp_path, how):
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT, "ARROWMIX_PROGRESS": "0"}
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_PARENT), str(pids), how],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while len([p for p in os.listdir(pids) if p.isdigit()]) < 2:
        assert parent.poll() is None, "the map failed"
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.05)
    workers = [int(p) for p in os.listdir(pids) if p.isdigit()]
    assert parent.pid not in workers
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 60  # they go at once; a loaded machine may take a while
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:  # do not leave them behind even when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their parent"
