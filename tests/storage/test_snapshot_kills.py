"""A re-save killed (``kill -9``) at any of its renames leaves the old or the new save whole.

The re-save runs while another process holds a ``map`` result inside the save it replaces,
so its renames include moving that result into the new directory. One child process saves
the old version once per kill point and maps it (holding the results), then forks one
re-save per rename, each killing itself just before that rename: one interpreter start for
every kill point, the same renames in the same order each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import arrowmix as am

ROOT = Path(__file__).resolve().parents[2]

_FORKS = """
import json, os, signal, sys
import arrowmix as am

root, kind = sys.argv[1:3]


def version(start):
    def rows(s, n):
        return am.Dataset.from_dict({"x": list(range(s, s + n))})

    if kind == "dataset":
        return rows(start, 40)
    return am.DatasetDict({"train": rows(start, 40), "test": rows(start + 500, 20)})


def resave(target, kill_at):
    seen = [0]

    def hooked(real):
        def move(src, dst, *a, **k):
            seen[0] += 1
            if seen[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(src, dst, *a, **k)

        return move

    os.rename, os.replace = hooked(os.rename), hooked(os.replace)
    version(1000).save_to_disk(target)
    return seen[0]


held = {}


def prepare(k):
    target = os.path.join(root, str(k), "d")
    version(0).save_to_disk(target)
    loaded = am.load_from_disk(target)
    train = loaded if kind == "dataset" else loaded["train"]
    held[k] = train.map(lambda r: {"y": r["x"] + 1})
    return target


def forked(target, kill_at):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        n = resave(target, kill_at)
        os.write(w, str(n).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    return out, status


out, status = forked(prepare(0), 0)
assert os.waitstatus_to_exitcode(status) == 0, status
renames = int(out)
killed = []
for k in range(1, renames + 1):
    _, status = forked(prepare(k), k)
    killed.append(os.waitstatus_to_exitcode(status))
print(json.dumps({"renames": renames, "killed": killed}), flush=True)
sys.stdin.readline()  # the test has loaded every save: the results held must still be there
for k, mapped in held.items():
    files = [f for f in mapped.cache_files if "cache-" in f]
    assert files and all(os.path.isfile(f) for f in files), (k, files)
    assert mapped["y"] == [v + 1 for v in range(40)], k
print("held", flush=True)
"""


def _rows(kind: str, start: int) -> dict[str, list[int]]:
    if kind == "dataset":
        return {"": list(range(start, start + 40))}
    return {"train": list(range(start, start + 40)), "test": list(range(start + 500, start + 520))}


@pytest.mark.parametrize(
    "kind",
    # a dict's resave in the CI tier: the fast tier kills the same swap of a dataset at every
    # rename, and a dict's save between its renames (tests/hf/test_dataset_dict.py)
    ["dataset", pytest.param("dict", marks=pytest.mark.slow)],
)
def test_a_resave_killed_at_every_rename_reloads_the_old_or_the_new_save(tmp_path, kind):
    child = subprocess.Popen(
        [sys.executable, "-c", _FORKS, str(tmp_path), kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        line = child.stdout.readline()
        assert line, child.communicate(timeout=60)
        report = json.loads(line)
        renames = report["renames"]
        # the swap's two renames and the move of the held result, at least
        assert renames >= 3 and report["killed"] == [-9] * renames
        outcomes = []
        for k in range(1, renames + 1):
            target = tmp_path / str(k) / "d"
            back = am.load_from_disk(str(target))
            got = {"": back["x"]} if kind == "dataset" else {s: back[s]["x"] for s in back}
            assert got in (_rows(kind, 0), _rows(kind, 1000)), k
            outcomes.append("new" if got == _rows(kind, 1000) else "old")
            assert [n for n in os.listdir(target.parent) if n != "d"] == [], k  # recovered
        # killed before the swap: the old save; from the new save's rename into place on: new
        assert outcomes[0] == "old" and outcomes[-1] == "new"
        assert outcomes == sorted(outcomes, key=["old", "new"].index)
        out, _ = child.communicate("go\n", timeout=120)
        assert child.returncode == 0 and out.strip() == "held"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
