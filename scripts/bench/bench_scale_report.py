"""The Markdown report of ``scripts/bench/bench_scale.py``: medians, ratios, bytes, peak RSS."""

from __future__ import annotations

import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

from bench_common import machine_summary

TOOLS = ("arrowmix", "datasets", "raw")
SHORT = {"arrowmix": "am", "datasets": "hf", "raw": "raw"}


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _num(x: float, digits: int = 2) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    if math.isnan(a) or math.isnan(b) or b == 0:
        return "-"
    return f"{a / b:.3f}x" if a / b < 0.1 else f"{a / b:.2f}x"


def _group(results: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        if "error" not in r and "skipped" not in r:
            out.setdefault((r["step"], r["tool"]), []).append(r)
    return out


def _field(runs: list[dict[str, Any]] | None, key: str) -> float:
    return _med([float(r[key]) for r in runs or [] if key in r])


def _cells(runs: dict[str, list[dict[str, Any]] | None], key: str, digits: int) -> list[str]:
    return [_num(_field(runs[t], key), digits) for t in TOOLS]


def _amplification(runs: list[dict[str, Any]] | None) -> float:
    """Disk bytes read per byte of the token ids delivered (int32: 4 bytes a token)."""
    amp = [r["read_mb"] * 1e6 / (4 * r["tokens"]) for r in runs or [] if r.get("tokens")]
    return _med(amp)


def _io(runs: dict[str, list[dict[str, Any]] | None]) -> list[str]:
    mb = "; ".join(_num(_field(runs[t], "read_mb"), 0) for t in TOOLS)
    amp = "; ".join(_num(_amplification(runs[t]), 1) for t in TOOLS)
    return [mb, amp, _peak(runs, "peak_rss_mib"), _peak(runs, "peak_anon_mib")]


def _peak(runs: dict[str, list[dict[str, Any]] | None], key: str) -> str:
    return "; ".join(
        _num(max((r[key] for r in runs[t] or [] if key in r), default=math.nan), 0) for t in TOOLS
    )


def machine_facts(workdir: str) -> str:
    """CPUs, RAM, the disk's read-ahead, versions, the commit measured."""
    import arrowmix

    mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1]
    dev = os.stat(workdir).st_dev
    block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    ra = "?"
    for q in (block / "queue", block / ".." / "queue"):  # a disk, or a partition of one
        if (q / "read_ahead_kb").exists():
            ra = f"{(q / 'read_ahead_kb').read_text().strip()} KB"
            break
    try:
        import datasets

        hf = f"datasets {datasets.__version__}"
    except ImportError:
        hf = "datasets not installed"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=Path(arrowmix.__file__).parent,  # the build measured
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    free = os.statvfs(workdir)
    return (
        f"{machine_summary()}, {hf}; RAM {int(mem) / 2**20:.1f} GiB; read_ahead "
        f"{ra}; workdir disk {free.f_bavail * free.f_frsize / 1e9:.0f} GB free;"
        f" arrowmix at {commit or '?'}"
    )


def corpus_facts(results: list[dict[str, Any]], d: Path) -> str:
    """Files and bytes of each corpus, from its write step (or from the disk when reused)."""
    facts = []
    for tool in ("arrowmix", "datasets"):
        w = [r for r in results if r["step"] == "write" and r["tool"] == tool and "bytes" in r]
        if w:
            files, size = w[0]["files"], w[0]["bytes"]
        elif tool == "arrowmix" and (d / "am").exists():
            chunks = sorted((d / "am").glob("chunk-*.arrow"))
            files, size = len(chunks), sum(p.stat().st_size for p in chunks)
        else:
            continue
        facts.append(f"{tool} corpus: {files} files, {size / 1e9:.2f} GB")
    return "; ".join(facts)


def run_facts(results: list[dict[str, Any]], d: Path, run: dict[str, Any]) -> dict[str, Any]:
    """``run`` (argv, seconds) completed with the machine and the corpus, unless recorded."""
    return {
        "argv": ["..."],
        "seconds": math.nan,
        "machine": machine_facts(str(d.parent)),
        "corpus": corpus_facts(results, d),
        **run,
    }


def report(results: list[dict[str, Any]], rows: int, run: dict[str, Any]) -> str:
    """The whole report of one corpus size, as Markdown."""
    by = _group(results)
    steps = list(dict.fromkeys(r["step"] for r in results))
    lines = [
        f"### {rows:,} documents",
        "",
        f"Command: `python scripts/bench/bench_scale.py {' '.join(run['argv'])}`"
        + ("" if math.isnan(run["seconds"]) else f" ({run['seconds'] / 60:.1f} min)"),
        "",
        f"Machine: {run['machine']}. {run['corpus']}.",
        "",
        "Times in seconds (median of rounds). MB read from disk, the disk bytes read per byte "
        "of token ids delivered (where the step delivers tokens), the peak RSS (MiB, with the "
        "mapped file pages touched) and the peak anonymous memory (MiB, what the process owns) "
        "are given per tool as `am; hf; raw`; `-`: not run.",
        "",
        "| step | arrowmix (s) | datasets (s) | raw (s) | arrowmix / datasets | arrowmix / raw |"
        " MB read | read / token bytes | peak RSS | peak anon |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for step in steps:
        if step.startswith("stream"):
            continue
        runs = {t: by.get((step, t)) for t in TOOLS}
        sec = [_field(runs[t], "seconds") for t in TOOLS]
        cells = _cells(runs, "seconds", 3)
        lines.append(
            f"| {step} | {' | '.join(cells)} | {_ratio(sec[0], sec[1])} | "
            f"{_ratio(sec[0], sec[2])} | {' | '.join(_io(runs))} |"
        )
    streams = [s for s in steps if s.startswith("stream")]
    if streams:
        lines += [
            "",
            "Streams: M document tokens/s after the first batch (median), the first batch's "
            "seconds (build included), then as above.",
            "",
            "| stream | arrowmix (M tok/s) | datasets (M tok/s) | raw (M tok/s) | "
            "arrowmix / datasets | arrowmix / raw | first batch s | MB read | "
            "read / token bytes | peak RSS | peak anon |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    for step in streams:
        runs = {t: by.get((step, t)) for t in TOOLS}
        rate = [_field(runs[t], "tokens_per_s") / 1e6 for t in TOOLS]
        first = "; ".join(_cells(runs, "first_batch_s", 2))
        lines.append(
            f"| {step} | {' | '.join(_num(x, 2) for x in rate)} | {_ratio(rate[0], rate[1])} | "
            f"{_ratio(rate[0], rate[2])} | {first} | {' | '.join(_io(runs))} |"
        )
    notes = [
        f"- {r['step']} ({r['tool']}): {r.get('error') or _skipped(r)}"
        for r in results
        if "error" in r or "skipped" in r
    ]
    hits = [r for r in results if r["step"] == "rerun" and r.get("new_files")]
    notes += [f"- rerun ({r['tool']}) wrote {r['new_files']} files: not all hits" for r in hits]
    if notes:
        lines += ["", "Notes:", "", *dict.fromkeys(notes)]
    return "\n".join(lines) + "\n"


def _skipped(r: dict[str, Any]) -> str:
    """Why a step has no figures: skipped (with the reason), or stopped without a word."""
    return "skipped: " + r["skipped"] if "skipped" in r else "stopped without output (killed?)"
