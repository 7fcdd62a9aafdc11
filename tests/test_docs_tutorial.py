"""docs/tutorial.md's script, run as the page says: trained, killed with SIGKILL, resumed.

The resumed run must see the batches and reach the losses of a run never interrupted, from
its last checkpoint on, bit for bit; the cached tokenization is reused, not recomputed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "examples" / "train_and_resume.py"

pytestmark = pytest.mark.integration


def run(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARROWMIX_PROGRESS": "0"}
    cmd = [sys.executable, str(SCRIPT), "--workdir", str(workdir), "--steps", "24"]
    cmd += ["--checkpoint-every", "5", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def steps(out: str) -> dict[int, tuple[str, str]]:
    found = re.findall(r"^step (\d+) batch (\w+) loss (\S+)$", out, re.M)
    return {int(s): (b, loss) for s, b, loss in found}


def test_the_page_shows_the_script_the_test_runs() -> None:
    page = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert "<!-- include: examples/train_and_resume.py -->" in page
    assert "--kill-at" in SCRIPT.read_text(encoding="utf-8")


# The CI tier (ARROWMIX_TEST_SLOW=1 scripts/test): it trains twice; the fast tier tests the
# stream's resume in tests/stream.
@pytest.mark.slow
def test_killed_run_resumes_with_the_same_batches_and_losses(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torchdata")
    whole = run(tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr[-3000:]
    expected = steps(whole.stdout)
    assert sorted(expected) == list(range(24))

    killed = run(tmp_path / "killed", "--kill-at", "13")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert sorted(steps(killed.stdout)) == list(range(13))
    cache = sorted((tmp_path / "killed" / "corpus").glob("cache-*.arrow"))
    assert cache, "the tokenization was not cached beside the corpus"

    resumed = run(tmp_path / "killed")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed at step 10" in resumed.stdout
    got = steps(resumed.stdout)
    assert sorted(got) == list(range(10, 24))
    assert got == {s: expected[s] for s in range(10, 24)}  # batches and losses, bit for bit
    assert sorted((tmp_path / "killed" / "corpus").glob("cache-*.arrow")) == cache
