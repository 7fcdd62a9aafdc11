"""The README, as a new user runs it: a fresh clone, a fresh HOME, no active virtual environment.

Every command in the README's ``bash`` blocks runs in order in one shell, with the Quickstart
saved as ``quickstart.py`` and run twice where the README says so. Two shortcuts keep it quick,
neither of which changes what is checked: ``.venv`` is made beforehand as a venv layered over
the one running the tests (its packages are visible, so the scripts' ``pip install`` steps find
them installed; what they install goes into the clone's ``.venv``), and ``scripts/demo`` gets
small sizes. ``scripts/test`` is this suite itself and is not rerun.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DEMO_SIZES = "--stdlib-files 4 --steps 40 --num-proc 1"
#: README commands not run here, and why.
NOT_RUN = {"scripts/test": "the test suite itself"}

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def fenced(text: str, lang: str) -> list[str]:
    """Bodies of the ```lang fenced blocks of ``text``, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def readme_commands() -> list[str]:
    """Every command of the README's bash blocks, comments stripped, in order."""
    out = []
    for block in fenced(README.read_text(encoding="utf-8"), "bash"):
        for line in block.splitlines():
            cmd = re.sub(r"\s+#\s.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(cmd)
    return out


def test_readme_commands_are_found() -> None:
    cmds = readme_commands()
    assert cmds[:3] == ["scripts/demo", "source .venv/bin/activate", "arrowmix --help"]
    assert "scripts/docs" in cmds and any(c.startswith("arrowmix chunk ") for c in cmds)
    assert len(fenced(README.read_text(encoding="utf-8"), "python")) == 1  # the Quickstart


def _clone(dest: Path) -> None:
    """``git clone`` of this repository, plus its uncommitted changes (what would be committed)."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True)
    changed = subprocess.run(
        ["git", "ls-files", "-m", "-o", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for rel in filter(None, changed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _layered_venv(venv: Path) -> None:
    """A venv without its own packages that sees this interpreter's (pip included)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "outer-venv.pth").write_text("\n".join(sorted(ours)) + "\n")


def _script(cmds: list[str], quickstart_runs: int) -> str:
    lines = ["set -euo pipefail"]
    for cmd in cmds:
        if cmd in NOT_RUN:
            continue
        run = cmd
        if cmd == "scripts/demo":
            run = f"scripts/demo {DEMO_SIZES}"
        if "FP1 FP2" in cmd:  # two fingerprints that `cache ls web_chunks` printed
            fps = "$(arrowmix cache ls web_chunks | awk 'NR > 1 && NF > 5 {print $1}' | head -2)"
            run = cmd.replace("FP1 FP2", fps)
        lines.append(f"echo '@@@ {cmd}'; date +%s.%N >&2")
        lines.append(run)
        if cmd == "scripts/docs":  # the Quickstart section follows the set-up commands
            for i in range(quickstart_runs):
                lines += [f"echo '@@@ python quickstart.py #{i + 1}'", "python quickstart.py"]
    return "\n".join(lines) + "\n"


def test_fresh_clone_runs_every_readme_command(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone, home = tmp_path / "clone", tmp_path / "home"
    home.mkdir()
    _clone(clone)
    _layered_venv(clone / ".venv")
    (clone / "quickstart.py").write_text(fenced(README.read_text(encoding="utf-8"), "python")[0])
    cmds = readme_commands()
    (tmp_path / "readme.sh").write_text(_script(cmds, quickstart_runs=2))

    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and p != venv_bin]
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "ARROWMIX_CACHE", "PYTHONHOME", "ARROWMIX_PROGRESS"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST")}
    real_pip_cache = Path(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "pip")
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join(path),
        PIP_CACHE_DIR=str(real_pip_cache),  # only pip's download cache is shared
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    res = subprocess.run(
        ["bash", str(tmp_path / "readme.sh")],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    log = res.stdout + "\n--- stderr ---\n" + res.stderr
    assert res.returncode == 0, log[-6000:]
    sections = re.finditer(r"^@@@ (.*)\n((?:(?!@@@ ).*\n)*)", res.stdout, re.M)
    out = {m.group(1): m.group(2) for m in sections}
    expected = [c for c in cmds if c not in NOT_RUN]
    assert [c for c in expected if c not in out] == [], log[-3000:]

    demo = out["scripts/demo"]
    assert re.search(r"took .*computed and wrote \d+ cache files", demo), demo
    assert re.search(r"same fingerprints: True; nothing computed", demo), demo
    assert re.search(r"the next \d+ batches match", demo)
    assert (clone / ".demo" / "demo-mix.png").exists()
    assert "usage: arrowmix" in out["arrowmix --help"]
    assert (clone / "build" / "docs" / "index.html").exists()

    first, second = out["python quickstart.py #1"], out["python quickstart.py #2"]
    assert "tokenize: computing" in first and "tokenize: computing" not in second
    for run in (first, second):
        assert "resumed exactly: True" in run
    fps = [re.search(r"fingerprints: (\S+) (\S+)", r).groups() for r in (first, second)]  # type: ignore[union-attr]
    assert fps[0] == fps[1]

    chunk = next(v for k, v in out.items() if k.startswith("arrowmix chunk "))
    assert "rows from 12 text file(s)" in chunk
    listing = next(v for k, v in out.items() if "cache ls" in k)
    assert re.search(r"\d+ entries, \d+ files", listing) and " filter " in listing, listing
    explain = next(v for k, v in out.items() if "fingerprint --explain" in k)
    assert "changed" in explain or "differ" in explain, explain
    verified = next(v for k, v in out.items() if k.startswith("arrowmix verify "))
    assert re.search(r"^\d+ file\(s\) ok", verified, re.M), verified
    # Nothing was written outside the clone and the fresh HOME.
    assert (home / ".cache" / "arrowmix").is_dir()
