"""Shared helpers for the ``scripts/bench/bench_*.py`` benchmarks.

- :func:`make_text_table`: a seeded ``{"id", "text"}`` corpus with long-tailed (lognormal) text
  lengths, ~300 bytes of text per row on average (1M rows is ~300 MB), built in a few seconds.
- :func:`interleaved`: run several competing cases round-robin (A, B, A, B, ...) so the noise of
  a shared machine hits every case alike; :class:`Timing` keeps every sample and its median.
- :func:`print_table`: absolute numbers plus the ratio arrowmix / peer, as a Markdown table that
  can be pasted into ``docs/benchmarks.md``.
- :func:`peak_rss_mb` / :func:`current_rss_mb`: memory of this process.
- :func:`print_markdown`: any other Markdown table (header and rows of cells).
- :func:`base_parser`: the flags every bench shares (``--rows``, ``--quick``, ``--workdir``,
  ``--repeats``, ``--seed``), with each bench's defaults and older spellings.
- :func:`run_fresh`: one measurement in a fresh Python process (the script itself with its
  ``--child`` arguments), its result the JSON object on the last line of its stdout.
- :func:`status_mb`, :func:`read_bytes`, :func:`disk_usage`, :func:`drop_file_pages`: memory
  and disk counters of ``/proc``, bytes under a directory, cold page cache.

Run benches from the repository root, for example ``python scripts/bench/bench_dataset.py --quick``;
when ``arrowmix`` is not installed, the repository root is put on ``sys.path``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

if importlib.util.find_spec("arrowmix") is None:  # running from a checkout without install
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

__all__ = [
    "DEFAULT_ROWS",
    "QUICK_ROWS",
    "ChildFailed",
    "Row",
    "Target",
    "Timing",
    "base_parser",
    "current_rss_mb",
    "disk_usage",
    "drop_file_pages",
    "fmt_rate",
    "fmt_seconds",
    "interleaved",
    "io_counters",
    "machine_summary",
    "make_text_table",
    "markdown_row",
    "peak_rss_mb",
    "print_markdown",
    "print_table",
    "print_targets",
    "read_bytes",
    "rows_from_args",
    "run_fresh",
    "status_mb",
    "timed",
    "without_method",
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
    import pyarrow as pa  # imported here: benches' children in other venvs import only numpy

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


@contextlib.contextmanager
def without_method(cls: type, name: str) -> Iterator[None]:
    """``cls`` without its method ``name`` (its own or inherited) inside the block.

    Measures the code as it was before the method existed (Python falls back to what it does
    without it); the method is put back on the class that defined it afterwards.
    """
    owner = next(c for c in cls.__mro__ if name in vars(c))
    saved = vars(owner)[name]
    delattr(owner, name)
    try:
        yield
    finally:
        setattr(owner, name, saved)


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


def status_mb(*fields: str) -> dict[str, float]:
    """Fields of ``/proc/self/status`` (``VmRSS``, ``RssAnon``, ``RssFile``, ``VmHWM``...) in MiB.

    NaN for a field the system does not report (not Linux).
    """
    out = dict.fromkeys(fields, math.nan)
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in out:
                out[key] = int(value.split()[0]) / 1024
    return out


def current_rss_mb() -> tuple[float, float]:
    """``(total, anonymous)`` resident MiB now (Linux ``/proc``; NaN elsewhere).

    Pages of memory-mapped files count in the total but not in the anonymous part, which is the
    memory a process really owns.
    """
    now = status_mb("VmRSS", "RssAnon")
    return now["VmRSS"], now["RssAnon"]


def machine_summary() -> str:
    """One line: CPU count, Python and key library versions."""
    import pyarrow

    return (
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, pyarrow {pyarrow.__version__},"
        f" numpy {np.__version__}, {platform.system()} {platform.release()}"
    )


# ---- command line -------------------------------------------------------------------------


def base_parser(
    description: str,
    *,
    rows: int | None = DEFAULT_ROWS,
    rows_flags: tuple[str, ...] = ("--rows",),
    quick: str | None = None,
    workdir: str | None = None,
    workdir_flags: tuple[str, ...] = ("--workdir",),
    repeats: int | None = None,
    repeats_flags: tuple[str, ...] = ("--repeats",),
    seed: bool = True,
    child: int = 0,
) -> argparse.ArgumentParser:
    """``--rows``, ``--quick``, ``--workdir``, ``--repeats``, ``--seed``, with a bench's defaults.

    Args:
        description: the ``--help`` text (``__doc__`` of the bench, shown as written).
        rows: default of ``--rows``; None leaves the flag out (a bench sized otherwise).
        quick: help of ``--quick`` when the bench's smoke run is not :data:`QUICK_ROWS` rows.
        workdir: default of ``--workdir`` (None: a temporary directory, see
            :func:`workdir_from_args`).
        repeats: default of ``--repeats`` (None: the bench picks, e.g. fewer with ``--quick``).
        rows_flags, workdir_flags, repeats_flags: the spellings of these flags (the attributes
            are ``args.rows``, ``args.workdir``, ``args.repeats``), older names kept; an empty
            tuple leaves the flag out.
        seed: add ``--seed``.
        child: add the hidden ``--child A B ...`` (this many values) through which
            :func:`run_fresh` hands a measurement to a fresh process of the same script.
    """
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    if rows is not None:
        p.add_argument(
            *rows_flags, dest="rows", type=int, default=rows, help=f"corpus rows (default {rows:,})"
        )
    p.add_argument(
        "--quick",
        action="store_true",
        help=quick or f"smoke run: {QUICK_ROWS:,} rows, fewer repeats",
    )
    if workdir_flags:
        p.add_argument(
            *workdir_flags,
            dest="workdir",
            default=workdir,
            help="where data is written and kept (reused across runs); default "
            + (workdir or "a temp dir removed at the end"),
        )
    if repeats_flags:
        p.add_argument(
            *repeats_flags,
            dest="repeats",
            type=int,
            default=repeats,
            help="samples (rounds) per measurement"
            + (f" (default {repeats})" if repeats is not None else ""),
        )
    if seed:
        p.add_argument("--seed", type=int, default=0, help="corpus seed")
    if child:
        p.add_argument("--child", nargs=child, help=argparse.SUPPRESS)
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


def markdown_row(cells: list[str]) -> str:
    """One line of a Markdown table (to print rows as they are measured)."""
    return "| " + " | ".join(cells) + " |"


def print_markdown(header: list[str], rows: list[list[str]]) -> str:
    """Print (and return) a Markdown table of preformatted cells (no rows: the header only)."""
    lines = [markdown_row(header), "|" + "---|" * len(header)]
    lines += [markdown_row(r) for r in rows]
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def print_targets(targets: list[Target]) -> str:
    """Print (and return) a Markdown table: goal, measured value, met or not."""
    lines = ["| target | measured | met |", "|---|---|---|"]
    lines += [f"| {t.goal} | {t.shown} | {'yes' if t.met else '**no**'} |" for t in targets]
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def io_counters() -> dict[str, int]:
    """This process's I/O counters (``/proc/self/io``: ``rchar``, ``read_bytes``, ...)."""
    with open("/proc/self/io", encoding="ascii") as f:
        return {k: int(v) for k, _, v in (line.partition(": ") for line in f) if v}


def read_bytes() -> int:
    """Bytes this process caused to be read from storage (``/proc/self/io``)."""
    return io_counters().get("read_bytes", 0)


def disk_usage(path: str | os.PathLike[str], *, links: bool = False) -> int:
    """Bytes of the files under ``path``; files removed meanwhile are skipped.

    A symbolic link counts its target's size with ``links=True``, nothing otherwise.
    """
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                p = os.path.join(root, name)
                if links or not os.path.islink(p):
                    total += os.stat(p).st_size
    return total


def drop_file_pages(paths: Iterator[str | os.PathLike[str]] | list[Any]) -> None:
    """Evict the files' pages from the page cache, so the next read of them is cold.

    Dirty pages (a file just written) cannot be dropped: each file is synced first. A file
    gone since it was listed (a writer's temporary file, renamed) is skipped.
    """
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# ---- fresh processes ----------------------------------------------------------------------


class ChildFailed(RuntimeError):
    """A fresh-process measurement exited non-zero; ``stderr`` is its error output."""

    def __init__(self, what: str, stderr: str) -> None:
        super().__init__(f"{what} failed:\n{stderr[-3000:]}")
        self.stderr = stderr


def run_fresh(
    script: str | os.PathLike[str],
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Run ``python script *argv`` in a fresh process; its result is its stdout's last line.

    The child prints one JSON object as its last line (``print(json.dumps(result))``). ``env``
    is added to this process's environment. Raises :class:`ChildFailed` (with the child's
    stderr) on a non-zero exit, ``subprocess.TimeoutExpired`` past ``timeout`` seconds.
    """
    res = subprocess.run(
        [sys.executable, os.fspath(script), *argv],
        env={**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if res.returncode != 0:
        raise ChildFailed(" ".join(argv[:3]) or os.fspath(script), res.stderr)
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out
