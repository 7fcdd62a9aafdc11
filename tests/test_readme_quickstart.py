"""The README's Quickstart, saved and run as a new user runs it: twice, and clean.

An example that logs a warning on its first run teaches users to ignore warnings, so both
runs must leave stderr empty (the slow tier also runs it inside a fresh clone).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_readme_fresh_clone import README, ROOT, fenced


def _run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_quickstart_runs_clean_twice_and_the_rerun_computes_nothing(tmp_path: Path) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(fenced(README.read_text(encoding="utf-8"), "python")[0])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "ARROWMIX_"))}
    env.update(
        HOME=str(tmp_path),
        ARROWMIX_CACHE=str(tmp_path / "cache"),
        PYTHONPATH=str(ROOT),
        PYTHONWARNINGS="default",
    )
    first, second = _run(script, env), _run(script, env)
    for run in (first, second):
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stderr == "", run.stderr[-3000:]
        assert "resumed exactly: True" in run.stdout
    assert "tokenize: computing" in first.stdout
    assert "tokenize: computing" not in second.stdout
