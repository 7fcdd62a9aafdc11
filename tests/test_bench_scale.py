"""``scripts/bench/bench_scale.py``: its raw limit reads the right rows, and its smoke mode runs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import arrowmix

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts" / "bench"
sys.path.insert(0, str(SCRIPTS))

import bench_scale  # noqa: E402
import bench_scale_corpus as corpus  # noqa: E402


def _sample() -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([3, 1, 7, 2, 40], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return offsets, np.arange(int(offsets[-1]), dtype=np.int32) + 100


def test_resampled_documents_are_sample_documents_and_seeded() -> None:
    sample = _sample()
    docs = [d.as_py() for b in corpus.resampled_batches(sample, 500, 3, 128) for d in b[0]]
    again = [d.as_py() for b in corpus.resampled_batches(sample, 500, 3, 128) for d in b[0]]
    offsets, tokens = sample
    known = {tuple(tokens[a:b].tolist()) for a, b in itertools.pairwise(offsets)}
    assert len(docs) == 500
    assert docs == again
    assert {tuple(d) for d in docs} == known  # every sample document drawn, nothing else


def test_raw_rows_read_the_same_rows_as_the_dataset(tmp_path: Path) -> None:
    batches = corpus.resampled_batches(_sample(), 3_000, 0, 256)
    arrowmix.write_chunks(batches, tmp_path / "am", rows_per_chunk=1_000)
    ds = arrowmix.Dataset.from_chunks(str(tmp_path / "am"))
    raw = corpus.RawRows(tmp_path / "am")
    try:
        pos = np.array([2_999, 0, 1_000, 999, 1_500, 1_500, 7])
        for ordered in (True, False):
            got = [r.tolist() for r in raw.rows(pos, ordered=ordered)]
            assert got == [ds[int(i)]["input_ids"] for i in pos]
        assert len(raw) == len(ds) == 3_000
    finally:
        raw.close()


def test_unknown_steps_are_refused_by_name() -> None:
    with pytest.raises(SystemExit, match=r"unknown --steps \['opne'\]; known: write, open_cold"):
        bench_scale.main(["--steps", "opne"])


def test_chosen_steps_bring_what_they_need_in_order() -> None:
    got = bench_scale.plan_steps(["resume_global_A", "rerun", "getitem"])
    assert got == [
        "write",
        "getitem",
        "map",
        "filter",
        "rerun",
        "stream_global_A",
        "resume_global_A",
    ]


@pytest.mark.slow
def test_quick_mode_runs_every_step_and_deletes_its_corpus(tmp_path: Path) -> None:
    text = tmp_path / "text"  # real text, no download: the project's own docs
    text.mkdir()
    docs = Path(__file__).resolve().parents[1] / "docs"
    for page in sorted(docs.glob("*.md"))[:8]:
        (text / page.name).write_text(page.read_text())
    work = tmp_path / "work"
    cmd = [sys.executable, str(SCRIPTS / "bench_scale.py"), "--quick", "--workdir", str(work)]
    p = subprocess.run([*cmd, "--text-dir", str(text)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "deleted at the end" in p.stderr
    for step in ("write", "open_cold", "getitem", "shuffle", "rerun", "resume_global_B"):
        assert f"| {step} |" in p.stdout
    assert "| stream_global_A |" in p.stdout
    log = (work / "n20000" / "results.jsonl").read_text()
    results = [json.loads(x) for x in log.splitlines() if x]
    errors = [r for r in results if "error" in r]
    assert not errors, errors
    rerun = [r for r in results if r["step"] == "rerun" and r["tool"] == "arrowmix"]
    assert rerun and rerun[0]["new_files"] == 0  # every map and filter was a cache hit
    assert all(r["peak_rss_mib"] > 0 for r in results if "skipped" not in r)
    assert not (work / "n20000" / "am").exists() and not (work / "n20000" / "hf").exists()
