"""Shared helpers for the ``scripts/bench_*.py`` benchmarks.

- :func:`make_text_table`: a seeded ``{"id", "text"}`` corpus with long-tailed (lognormal) text
  lengths, ~300 bytes of text per row on average (1M rows is ~300 MB), built in a few seconds.
- :func:`interleaved`: run several competing cases round-robin (A, B, A, B, ...) so the noise of
  a shared machine hits every case alike; :class:`Timing` keeps every sample and its median.
- :func:`print_table`: absolute numbers plus the ratio arrowmix / peer, as a Markdown table that
  can be pasted into ``docs/benchmarks.md``.
- :func:`peak_rss_mb` / :func:`current_rss_mb`: memory of this process.
- :func:`base_parser`: the flags every bench shares (``--rows``, ``--quick``, ``--workdir``,
  ``--repeats``, ``--seed``).

Run benches from the repository root, for example ``python scripts/bench/bench_dataset.py --quick``;
when ``arrowmix`` is not installed, the repository root is put on ``sys.path``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import math
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

if importlib.util.find_spec("arrowmix") is None:  # running from a checkout without install
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

__all__ = [
    "DEFAULT_ROWS",
    "QUICK_ROWS",
    "Row",
    "Target",
    "Timing",
    "base_parser",
    "current_rss_mb",
    "fmt_rate",
    "fmt_seconds",
    "interleaved",
    "machine_summary",
    "make_text_table",
    "peak_rss_mb",
    "print_table",
    "print_targets",
    "rows_from_args",
    "timed",
    "workdir_from_args",
]

DEFAULT_ROWS = 1_000_000
QUICK_ROWS = 100_000

#: Text lengths (characters) follow lognormal(MU, SIGMA), clipped to [1, MAX_CHARS]:
#: median ~181, mean ~300, a long tail of multi-kilobyte rows.
LEN_MU = math.log(300.0) - 0.5
LEN_SIGMA = 1.0
MAX_CHARS = 100_000
_ALPHABET = b"etaoinshrdlucmfwypvbgkqjxz"
_SPACES = 43  # of 256 byte values: P(space) ~ 0.17, words of ~5 letters (geometric lengths)
_BLOCK = 1 << 24


def _byte_table() -> np.ndarray:
    """Map a uniform random byte to a space or a letter (letters with an English-like skew)."""
    weights = 1.0 / np.arange(1, len(_ALPHABET) + 1) ** 0.8
    counts = np.floor(weights / weights.sum() * (256 - _SPACES)).astype(int)
    counts[0] += 256 - _SPACES - int(counts.sum())
    letters = np.repeat(np.frombuffer(_ALPHABET, dtype=np.uint8), np.maximum(counts, 1))
    return np.concatenate([np.full(_SPACES, ord(" "), np.uint8), letters])[:256]


def make_text_table(rows: int, seed: int = 0) -> pa.Table:
    """A ``{"id": int64, "text": string}`` table of ``rows`` rows, identical for one seed.

    Texts are lowercase letters (English-like skew) and spaces (words of ~5 letters on
    average); row lengths are lognormal (median ~181, mean ~300 characters).
    """
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.rint(rng.lognormal(LEN_MU, LEN_SIGMA, size=rows)), 1, MAX_CHARS).astype(
        np.int64
    )
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    lut = _byte_table()
    data = np.empty(total, dtype=np.uint8)
    for start in range(0, total, _BLOCK):  # bounded temporaries: one block of random bytes
        stop = min(start + _BLOCK, total)
        data[start:stop] = lut[rng.integers(0, 256, size=stop - start, dtype=np.uint8)]
    text = pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data)).cast(
        pa.string()
    )
    ids = pa.array(np.arange(rows, dtype=np.int64))
    return pa.table({"id": ids, "text": text})


# ---- timing -------------------------------------------------------------------------------


@dataclass
class Timing:
    """All samples (seconds) of one case; ``work`` is the rows (or items) done per sample."""

    name: str
    work: int = 1
    samples: list[float] = field(default_factory=list)
    cpu_samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def cpu_median(self) -> float:
        """Median CPU time of this process (NaN when not recorded, e.g. for subprocesses)."""
        return statistics.median(self.cpu_samples) if self.cpu_samples else math.nan

    @property
    def rate(self) -> float:
        """Median throughput: ``work`` per second of the median sample."""
        return self.work / self.median if self.samples and self.median > 0 else math.nan

    def spread(self) -> str:
        """``min..max`` of the samples, for judging noise."""
        if not self.samples:
            return "-"
        return f"{fmt_seconds(min(self.samples))}..{fmt_seconds(max(self.samples))}"


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one call of ``fn`` (after a garbage collection, not timed).

    On a shared machine the CPU time of this process is steadier than the wall time: time spent
    descheduled while other jobs run is not counted.
    """
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def interleaved(
    cases: dict[str, Callable[[], Any]],
    repeats: int,
    *,
    work: int | dict[str, int] = 1,
    warmup: int = 0,
    before_each: Callable[[str], Any] | None = None,
    verbose: bool = True,
    cpu: bool = True,
) -> dict[str, Timing]:
    """Run every case ``repeats`` times round-robin (A, B, A, B, ...) and keep all samples.

    Args:
        cases: name -> zero-argument callable doing one unit of work.
        repeats: samples per case.
        work: rows (or items) per call, to turn times into rates; an int or one per case.
        warmup: untimed rounds first (page cache, lazy imports, first-use caches).
        before_each: called with the case name before each timed call, untimed (e.g. to delete
            a cache file so the next call really computes).
        verbose: print a progress line per round to stderr.
        cpu: record this process's CPU time too (False when the work runs in subprocesses).
    """
    timings = {name: Timing(name, work[name] if isinstance(work, dict) else work) for name in cases}
    for _ in range(warmup):
        for name, fn in cases.items():
            if before_each is not None:
                before_each(name)
            fn()
    for r in range(repeats):
        for name, fn in cases.items():
            if before_each is not None:
                before_each(name)
            wall, cpu_s = timed(fn)
            timings[name].samples.append(wall)
            if cpu:
                timings[name].cpu_samples.append(cpu_s)
        if verbose:
            line = "  ".join(f"{n}={fmt_seconds(t.samples[-1])}" for n, t in timings.items())
            print(f"    round {r + 1}/{repeats}: {line}", file=sys.stderr, flush=True)
    return timings


# ---- formatting and reporting -------------------------------------------------------------


def fmt_seconds(s: float) -> str:
    """``0.8 ms``, ``12.3 ms``, ``1.52 s``."""
    if math.isnan(s):
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1.0:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_rate(r: float, unit: str = "rows/s") -> str:
    """``412 k rows/s``, ``7.10 M rows/s``."""
    if math.isnan(r):
        return "-"
    if r >= 1e6:
        return f"{r / 1e6:.2f} M {unit}"
    if r >= 1e3:
        return f"{r / 1e3:.0f} k {unit}"
    return f"{r:.0f} {unit}"


@dataclass
class Row:
    """One line of a result table: a metric measured for arrowmix and for a peer.

    ``kind`` is ``"time"`` (lower is better; cells show the median time) or ``"rate"`` (higher
    is better; cells show the median throughput). ``target`` is free text such as
    ``">= 5x datasets"``; ``passed`` is None when the metric has no target.
    """

    metric: str
    ours: Timing | None
    peer: Timing | None
    kind: str = "rate"
    target: str = ""
    passed: bool | None = None

    def cell(self, t: Timing | None) -> str:
        if t is None or not t.samples:
            return "-"
        return fmt_seconds(t.median) if self.kind == "time" else fmt_rate(t.rate)

    def ratio(self, cpu: bool = False) -> float:
        """arrowmix / peer of the displayed quantity (time or rate), on wall or CPU time."""
        if self.ours is None or self.peer is None or not self.ours.samples or not self.peer.samples:
            return math.nan
        a, b = (
            (self.ours.cpu_median, self.peer.cpu_median)
            if cpu
            else (self.ours.median, self.peer.median)
        )
        if self.kind == "time":
            return a / b
        return (self.ours.work / a) / (self.peer.work / b)


def _fmt_ratio(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{x:.3f}x" if x < 0.1 else f"{x:.2f}x"


def print_table(rows: list[Row], *, ours: str = "arrowmix", peer: str = "datasets") -> str:
    """Print (and return) a Markdown table: metric, both medians, ratio ours/peer, target."""
    header = [
        "metric",
        ours,
        peer,
        f"{ours} / {peer}",
        "same on CPU time",
        "target",
        "met",
        f"spread ({ours}; {peer})",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        met = "" if r.passed is None else ("yes" if r.passed else "**no**")
        spread = "; ".join(t.spread() if t else "-" for t in (r.ours, r.peer))
        cells = [
            r.metric,
            r.cell(r.ours),
            r.cell(r.peer),
            _fmt_ratio(r.ratio()),
            _fmt_ratio(r.ratio(cpu=True)),
            r.target,
            met,
        ]
        lines.append("| " + " | ".join([*cells, spread]) + " |")
    text = "\n".join(lines)
    print(text, flush=True)
    return text


# ---- memory and machine -------------------------------------------------------------------


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB else


def current_rss_mb() -> tuple[float, float]:
    """``(total, anonymous)`` resident MiB now (Linux ``/proc``; NaN elsewhere).

    Pages of memory-mapped files count in the total but not in the anonymous part, which is the
    memory a process really owns.
    """
    total = anon = math.nan
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total = int(line.split()[1]) / 1024
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1]) / 1024
    return total, anon


def machine_summary() -> str:
    """One line: CPU count, Python and key library versions."""
    import pyarrow

    return (
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, pyarrow {pyarrow.__version__},"
        f" numpy {np.__version__}, {platform.system()} {platform.release()}"
    )


# ---- command line -------------------------------------------------------------------------


def base_parser(description: str) -> argparse.ArgumentParser:
    """``--rows``, ``--quick``, ``--workdir``, ``--repeats``, ``--seed``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="corpus rows (default 1M)")
    p.add_argument(
        "--quick", action="store_true", help=f"smoke run: {QUICK_ROWS:,} rows, fewer repeats"
    )
    p.add_argument(
        "--workdir",
        default=None,
        help="where data is written and kept (reused across runs); default a temp dir removed "
        "at the end",
    )
    p.add_argument("--repeats", type=int, default=None, help="samples per measurement")
    p.add_argument("--seed", type=int, default=0, help="corpus seed")
    return p


def rows_from_args(args: argparse.Namespace) -> int:
    """``QUICK_ROWS`` with ``--quick`` (unless ``--rows`` was changed), else ``--rows``."""
    return QUICK_ROWS if args.quick and args.rows == DEFAULT_ROWS else int(args.rows)


@contextlib.contextmanager
def workdir_from_args(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """``--workdir`` (created, kept) or a temporary directory removed on exit."""
    if args.workdir:
        path = Path(args.workdir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield Path(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- targets ------------------------------------------------------------------------------


@dataclass
class Target:
    """A goal checked against a measurement: ``value`` compared with ``bound`` by ``op``."""

    goal: str
    value: float
    shown: str
    op: str  # "<=" or ">="
    bound: float

    @property
    def met(self) -> bool:
        if math.isnan(self.value):
            return False
        return self.value <= self.bound if self.op == "<=" else self.value >= self.bound


def print_targets(targets: list[Target]) -> str:
    """Print (and return) a Markdown table: goal, measured value, met or not."""
    lines = ["| target | measured | met |", "|---|---|---|"]
    lines += [f"| {t.goal} | {t.shown} | {'yes' if t.met else '**no**'} |" for t in targets]
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def read_bytes() -> int:
    """Bytes this process caused to be read from storage (``/proc/self/io``)."""
    with open("/proc/self/io", encoding="ascii") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def drop_file_pages(paths: Iterator[str | os.PathLike[str]] | list[Any]) -> None:
    """Evict the files' pages from the page cache, so the next read of them is cold.

    Dirty pages (a file just written) cannot be dropped: each file is synced first.
    """
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
