"""scripts/demo.py: its report says what a run reused, and its plot reads correctly."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo", ROOT / "scripts" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("demo", module)
    spec.loader.exec_module(module)
    return module


demo = _load()


def test_reuse_line_says_what_was_computed() -> None:
    a, b, c = Path("cache-a.arrow"), Path("cache-b.arrow"), Path("cache-c.arrow")
    assert demo.reuse_line(set(), {a, b}) == (
        "computed and wrote 2 cache files (a rerun reuses them)"
    )
    assert demo.reuse_line({a, b}, {a, b}) == "nothing computed: all 2 cache files were reused"
    assert demo.reuse_line({a, b}, {a, b, c}) == "wrote 1 cache files, reused 2"


def test_cache_files_finds_results_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("cache-1-00000-of-00002.arrow", "sub/cache-2.arrow", "chunk-00000.arrow"):
        (tmp_path / name).write_bytes(b"")
    found = {p.name for p in demo.cache_files(tmp_path, tmp_path / "missing")}
    assert found == {"cache-1-00000-of-00002.arrow", "cache-2.arrow"}


def test_plot_labels_cumulative_share_marks_resume_and_zooms_efficiency() -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    steps, ckpt = 60, 30
    counts = np.cumsum(rng.multinomial(10, demo.WEIGHTS, size=steps), axis=0)
    efficiency = 0.9 + 0.1 * rng.random(steps)
    result = {
        "ratios": counts / counts.sum(axis=1, keepdims=True),
        "efficiency": efficiency,
        "resumed_efficiency": efficiency[ckpt + 1 : ckpt + 11],
        "checkpoint_at": ckpt,
    }
    fig = demo.make_figure(result)
    share, eff = fig.axes
    assert "cumulative" in share.get_ylabel()
    for ax in (share, eff):  # the checkpoint/resume step is marked on both panels
        assert any(list(line.get_xdata()) == [ckpt, ckpt] for line in ax.lines)
    low, high = eff.get_ylim()
    assert 0.85 <= low <= efficiency.min() and high <= 1.01  # not squeezed into 0..1
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for ax in (share, eff):  # legends sit beside the axes, never over a curve
        legend = ax.get_legend()
        assert legend is not None
        labels = [t.get_text() for t in legend.get_texts()]
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
    assert labels[-1].startswith("after resume")
    assert len(share.get_legend().get_texts()) == len(demo.SOURCES)


def _tiny_data() -> dict[str, Any]:
    import arrowmix as am

    rng = np.random.default_rng(0)
    out = {}
    for name in demo.SOURCES:
        ids = [rng.integers(1, 1000, int(n)).tolist() for n in rng.integers(8, 300, 400)]
        out[name] = am.Dataset.from_dict(
            {"ids": ids, "n_tokens": [len(x) for x in ids], "source": [name] * len(ids)}
        )
    return out


@pytest.mark.parametrize("torch_installed", [False, True])
def test_training_stream_yields_padded_tensors(
    torch_installed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if torch_installed:
        torch = pytest.importorskip("torch")
    else:
        monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert demo.tensors() == ("pt" if torch_installed else "np")
    with demo.training_stream(_tiny_data()) as s:
        batch = next(s)
    assert set(batch) == {"input_ids", "attention_mask", "labels", "source"}
    ids = batch["input_ids"]
    assert isinstance(ids, torch.Tensor if torch_installed else np.ndarray)
    assert ids.shape[0] * ids.shape[1] <= demo.TOKEN_BUDGET
    assert set(batch["source"].tolist()) <= set(demo.SOURCES)
    assert len(batch["source"]) == ids.shape[0]
    if torch_installed:
        model = demo.TinyLM(1000)
        assert np.isfinite(model.step(batch))


def _fake_venv(tmp_path: Path, pip_stderr: str = "") -> tuple[Path, Path]:
    """A checkout copy with scripts/_venv.sh and a venv whose ``python -m pip`` only logs.

    Its pip prints ``pip_stderr`` (if any) to stderr, as pip prints its notices.
    """
    checkout, venv = tmp_path / "checkout", tmp_path / "venv"
    (checkout / "scripts").mkdir(parents=True)
    (checkout / "scripts" / "_venv.sh").write_text((ROOT / "scripts" / "_venv.sh").read_text())
    (checkout / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip.log"
    python = venv / "bin" / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1 $2" = "-m pip" ]; then echo "${{@:3}}" >> {log}; '
        f"printf %s {shlex.quote(pip_stderr)} >&2; exit 0; fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    return checkout, log


def test_a_rerun_skips_pip_until_pyproject_changes(tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    checkout, log = _fake_venv(tmp_path)
    script = 'source scripts/_venv.sh; pip_install demo -e . --group demo; echo "PY=$PY"\n'
    (checkout / "run.sh").write_text(script)

    def run(**env: str) -> list[str]:
        before = log.read_text().splitlines() if log.exists() else []
        res = subprocess.run(
            ["bash", "run.sh"],
            cwd=checkout,
            env={**os.environ, "VIRTUAL_ENV": str(tmp_path / "venv"), **env},
            capture_output=True,
            text=True,
            check=True,
        )
        assert f"PY={tmp_path / 'venv' / 'bin' / 'python'}" in res.stdout
        return log.read_text().splitlines()[len(before) :] if log.exists() else []

    first = run()
    assert first[0].startswith("install -q --disable-pip-version-check --upgrade pip")
    assert first[1].endswith("-e . --group demo")
    assert run() == []  # nothing changed: no pip at all
    assert run(ARROWMIX_REINSTALL="1")[1].endswith("-e . --group demo")
    (checkout / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert run()[1].endswith("-e . --group demo")  # new requirements: installed again
    assert run() == []


CONFLICTS = (
    "ERROR: pip's dependency resolver does not currently take into account all the packages "
    "that are installed. This behaviour is the source of the following dependency conflicts.\n"
    "mosaicml-streaming 0.13.0 requires transformers<5,>=4.21.3, which is not installed.\n"
    "mosaicml-streaming 0.13.0 requires numpy<2.2.0, but you have numpy 2.4.6 which is "
    "incompatible.\n"
)


@pytest.mark.parametrize("other", [False, True])
def test_an_install_hides_only_the_conflicts_of_the_package_installed_without_deps(
    tmp_path: Path, other: bool
) -> None:
    import os
    import shutil
    import subprocess

    if shutil.which("bash") is None or shutil.which("awk") is None:
        pytest.skip("bash or awk is not installed")
    extra = "foo 1.0 requires bar>=2, which is not installed.\n" if other else ""
    checkout, _ = _fake_venv(tmp_path, CONFLICTS + extra + "WARNING: something else\n")
    (checkout / "run.sh").write_text("source scripts/_venv.sh; pip_install test-s3 x\n")
    res = subprocess.run(
        ["bash", "run.sh"],
        cwd=checkout,
        env={**os.environ, "VIRTUAL_ENV": str(tmp_path / "venv")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "moto's S3 server" in res.stdout  # what the step installs, and why
    assert "WARNING: something else" in res.stderr  # pip's other notices are kept
    if other:  # a conflict of another package: pip's whole notice is shown
        assert CONFLICTS + extra in res.stderr
    else:
        assert "dependency" not in res.stderr and "mosaicml" not in res.stderr


def test_every_install_step_says_what_it_installs() -> None:
    why = re.findall(r"^    \[([\w-]+)\]=", (ROOT / "scripts" / "_venv.sh").read_text(), re.M)
    for script in ("demo", "test", "docs"):
        steps = re.findall(r"pip_install ([\w-]+) ", (ROOT / "scripts" / script).read_text())
        assert steps and set(steps) <= set(why), (script, sorted(set(steps) - set(why)))


def test_demo_script_installs_torch_unless_told_not_to() -> None:
    text = (ROOT / "scripts" / "demo").read_text()
    assert "pip_install demo-torch --group torch" in text
    assert '[ "$arg" = --no-torch ] && TORCH=0' in text
    assert demo.parse_args(["--no-torch"]).no_torch and not demo.parse_args([]).no_torch


def test_no_torch_gives_numpy_batches_even_with_torch_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(demo, "ARGS", demo.parse_args(["--no-torch"]))
    assert demo.tensors() == "np"
    with demo.training_stream(_tiny_data()) as s:
        assert isinstance(next(s)["input_ids"], np.ndarray)
