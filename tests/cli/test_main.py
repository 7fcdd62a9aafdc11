from __future__ import annotations

import os
import subprocess
import sys

import pytest

import arrowmix
from arrowmix._cli.main import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(arrowmix.__file__)))


def test_help_lists_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(c in out for c in ("cache", "cleanup-cache", "fingerprint", "examples:"))


@pytest.mark.parametrize(
    "args", [["cache", "--help"], ["cache", "ls", "--help"], ["fingerprint", "--help"]]
)
def test_every_command_has_help(capsys, args):
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: arrowmix")
    if args[-2] != "cache":
        assert "examples:" in out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"arrowmix {arrowmix.__version__}\n"


@pytest.mark.parametrize(
    ("args", "named"), [([], "required: COMMAND"), (["frobnicate"], "'frobnicate'")]
)
def test_usage_errors(capsys, args, named):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("arrowmix: error: ") and named in err
    assert err.count("\n") == 1 and "(see `arrowmix --help`)" in err


def test_main_reads_sys_argv(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sys, "argv", ["arrowmix", "cache", "ls", str(tmp_path)])
    assert main() == 0
    assert "0 entries" in capsys.readouterr().out


def test_keyboard_interrupt_exits_130(monkeypatch, tmp_path, capsys):
    from arrowmix._cli import cache_ls

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cache_ls, "scan", interrupted)
    assert main(["cache", "ls", str(tmp_path)]) == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.integration  # a subprocess CLI test (marker registered in pyproject.toml)
def test_python_m_arrowmix_smoke(tmp_path):
    env = {**os.environ, "PYTHONPATH": REPO, "ARROWMIX_CACHE": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "arrowmix", "cleanup-cache", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: arrowmix cleanup-cache") and "--older-than" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "arrowmix", "cleanup-cache", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and "does not exist" in proc.stderr
