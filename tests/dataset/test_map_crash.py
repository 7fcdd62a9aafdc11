"""Crash safety (kill -9, then resume) and concurrent writers of the same map."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import filelock
import pytest

import arrowmix as am
from arrowmix._cache.paths import CACHE_FILE_RE

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The fingerprint is pinned with new_fingerprint: the function's behaviour depends on the
# environment (sleep or not) while the test needs the runs to share one cache entry.
SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    import arrowmix as am
    from arrowmix._cache import segments
    from arrowmix._dataset.mapping import compute as runner
    segments.SEGMENT_ROWS = segments.MIN_SEGMENT_ROWS = 10
    runner._OUT_ROWS = 1  # write every batch at once: a killed writer leaves a .partial
    data, log, marker, stall_at, delay = sys.argv[1:6]

    def fn(batch):
        with open(log, "a") as f:
            f.write("".join(f"{n}\\n" for n in batch["n"]))
        if int(stall_at) in batch["n"]:
            open(marker, "w").close()
            time.sleep(60)
        time.sleep(float(delay) * len(batch["n"]))
        return {"sq": [n * n for n in batch["n"]]}

    ds = am.Dataset.from_chunks(data)
    out = ds.map(fn, batched=True, batch_size=2, new_fingerprint="00000000000000aa")
    print(json.dumps(out["sq"]))
    """
)


@pytest.fixture
def data(tmp_path):
    am.write_chunks(({"n": i} for i in range(40)), tmp_path / "c", rows_per_chunk=15)
    return tmp_path / "c"


def _start(data, log, marker, stall_at=-1, delay=0.0):
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(data), str(log), str(marker), str(stall_at), str(delay)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ARROWMIX_PROGRESS": "0"},
    )


def _calls(log):
    with open(log) as f:
        return [int(x) for x in f.read().split()]


def _wait_for(path, proc, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the map never reached the marker row"
        time.sleep(0.02)


def _segment_files(data):
    return sorted(n for n in os.listdir(data) if CACHE_FILE_RE.match(n))


def test_kill_9_then_resume_computes_only_missing_segments(data, tmp_path):
    log, marker = tmp_path / "calls", tmp_path / "marker"
    proc = _start(data, log, marker, stall_at=25)
    _wait_for(marker, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    done = _segment_files(data)
    assert done == [f"cache-00000000000000aa-{i:05d}-of-00004.arrow" for i in (0, 1)]
    assert sorted(_calls(log)) == list(range(26))
    partial = [n for n in os.listdir(data) if n.endswith(".partial")]
    assert len(partial) == 1 and f"tmp-{proc.pid}-" in partial[0]  # never a cache-* name
    assert "-00002-of-00004.arrow" in partial[0]

    os.unlink(log)
    rerun = _start(data, log, tmp_path / "unused")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert json.loads(out) == [i * i for i in range(40)]
    assert sorted(_calls(log)) == list(range(20, 40))  # segments 2 and 3 only
    assert len(_segment_files(data)) == 4
    assert not [n for n in os.listdir(data) if n.endswith(".partial")]  # the dead one's too


def test_concurrent_processes_one_computes_all_correct(data, tmp_path):
    log = tmp_path / "calls"
    procs = [_start(data, log, tmp_path / "m", delay=0.01) for _ in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert json.loads(out) == [i * i for i in range(40)]
    assert sorted(_calls(log)) == list(range(40))  # the lock let exactly one compute
    assert len(_segment_files(data)) == 4
    assert not [n for n in os.listdir(data) if n.endswith(".partial")]


def test_without_locks_rename_wins(data, monkeypatch, tmp_path):
    def broken(self, *args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(filelock.FileLock, "acquire", broken)
    ds = am.Dataset.from_chunks(str(data))
    log = str(tmp_path / "calls")

    def fn(row):
        with open(log, "a") as f:
            f.write(f"{row['n']}\n")
        return {"sq": row["n"] ** 2}

    out = ds.map(fn)
    assert out["sq"] == [i * i for i in range(40)]
    again = ds.map(fn)
    assert again["sq"] == out["sq"] and len(_calls(log)) == 40
