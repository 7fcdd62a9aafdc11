"""Past RAM: arrowmix against HF ``datasets`` and a raw ``pread`` loop, one fresh process a step.

Run from the repository root::

    python scripts/bench/bench_scale.py --rows 1000000 --workdir /data/scale       # ~10 min
    python scripts/bench/bench_scale.py --rows 10000000 --workdir /data/scale
    python scripts/bench/bench_scale.py --rows 140000000 --workdir /data/scale --repeats 1
    python scripts/bench/bench_scale.py --rows 200000 --steps open_cold,stream_global_A  # a dry run
    python scripts/bench/bench_scale.py --quick                                     # smoke test

Corpora (see ``bench_scale_corpus.py``): ``--rows`` documents of ``input_ids: list<int32>``
resampled from real paragraphs tokenized with BERT WordPiece (mean ~56 tokens, ~230 bytes
a document: 140M documents are ~32 GB, more than a 23 GiB machine's RAM). arrowmix's corpus
is written with ``arrowmix.write_chunks`` and its default chunk size (256 MiB files);
HF's (only up to ``--hf-max-rows``, default 10M) with ``Dataset.from_dict`` +
``save_to_disk`` in pieces of 1M documents, then ``load_from_disk`` of the pieces,
``concatenate_datasets`` and ``save_to_disk`` (bounded memory). **The corpora are deleted at the
end of the run** (``--keep`` keeps them for the next run with the same ``--workdir``).

Each step runs in a fresh process (this script with ``--step NAME --tool TOOL``); imports
happen before the clock starts. Steps are interleaved: every round runs each step for each
tool in turn (arrowmix, datasets, raw). "Cold" steps drop the pages of every file of the
tool's corpus (and caches) with ``posix_fadvise(DONTNEED)`` first, and the steps that work
on an opened dataset drop them again after the (untimed) open. Each step reports its
time, the bytes it read from disk (``read_bytes`` of ``/proc/self/io``) and its peak RSS
(``VmHWM``, which counts the mapped file pages touched, and the anonymous
memory's peak, ``RssAnon`` sampled every 20 ms; imports included). Steps (``--steps`` picks some):

- ``write``: the corpus (generation included, the same for both tools; once, not repeated);
- ``open_cold`` / ``open_warm``: ``Dataset.from_chunks`` / ``datasets.load_from_disk`` + len;
- ``getitem``: 2,000 seeded random ``ds[i]`` (cold);
- ``map``: ``ds.map(count_tokens, batched=True)``, recomputed (cold);
- ``filter``: the map's result ``.filter(long_enough, batched=True, input_columns=["n"])``;
- ``shuffle``: ``ds.shuffle(seed=0).select(range(1_000_000)).flatten_indices()`` (cold);
- ``rerun``: open + the same map + the same filter, all cache hits (warm);
- ``stream_<mode>_<A|B>``: ``to_stream(shuffle=mode)`` for mode ``global``, ``blocks`` (when
  the build accepts it) and ``chunks``; pipeline A: ``budget_bucket`` into padded torch
  batches of at most 16,384 tokens, B: ``pack`` into ``[8, 2048]`` (cold, ``--stream-seconds``
  of steady state after the first batch; tokens are document tokens, not padding);
- ``resume_<mode>_<A|B>``: the state after ``--resume-after`` batches of the stream step,
  loaded in a fresh process (cold): build + ``load_state_dict`` + first batch.

The raw loop (the disk's limit) reads the same kind of rows with two ``os.pread`` calls
each (offsets, then token ids) straight from arrowmix's chunk files: in ``getitem``, the
``shuffle`` gather and the ``global`` streams (random rows, each window read in file order).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_scale_corpus as corpus  # noqa: E402
from bench_common import ChildFailed, base_parser, run_fresh  # noqa: E402
from bench_scale_report import report, run_facts  # noqa: E402

GETITEM_ROWS = 2_000
SHUFFLE_ROWS = 1_000_000
HF_PIECE = 1_000_000
MODES = ("global", "blocks", "chunks")
STREAMS = [f"{k}_{m}_{p}" for m in MODES for k in ("stream", "resume") for p in "AB"]
STEPS = ["write", "open_cold", "open_warm", "getitem", "map", "filter", "shuffle", "rerun"]
STEPS += STREAMS
RAW_STEPS = {"getitem", "shuffle", *(s for s in STREAMS if "_global_" in s)}
HF_STEPS = {s for s in STEPS if s not in STREAMS or "_global_" in s}
WARM_STEPS = {"write", "open_warm", "rerun"}


def count_tokens(batch: dict[str, Any]) -> dict[str, list[int]]:  # the user's map
    return {"n": [len(x) for x in batch["input_ids"]]}


def long_enough(n: list[int]) -> list[bool]:  # the user's filter
    return [v >= 32 for v in n]


# ---- one step, in its own process ---------------------------------------------------------
class Clock:
    """Wall seconds and disk bytes of the timed part of a step."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.read = 0

    def __call__(self, fn: Callable[[], Any]) -> Any:
        r0, t0 = corpus.read_bytes(), time.perf_counter()
        out = fn()
        self.seconds += time.perf_counter() - t0
        self.read += corpus.read_bytes() - r0
        return out


def _open(tool: str, d: Path) -> Any:
    if tool == "arrowmix":
        import arrowmix

        return arrowmix.Dataset.from_chunks(str(d / "am"))
    import datasets

    return datasets.load_from_disk(str(d / "hf"))


def _new_files(d: Path, before: set[Path]) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file() and p not in before)


def step_write(tool: str, d: Path, args: argparse.Namespace, clock: Clock) -> dict[str, Any]:
    sample = corpus.real_sample(Path(args.workdir), args.text_dir)
    batches = corpus.resampled_batches(sample, args.rows, args.seed)
    if tool == "arrowmix":
        import arrowmix

        files = clock(lambda: arrowmix.write_chunks(batches, str(d / "am"), overwrite=True))
        corpus.build_raw_index(d / "am")  # the raw loop's index, untimed
        return {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files)}
    import datasets
    import pyarrow as pa

    pieces = d / "hf-pieces"

    def save_piece(columns: list[Any]) -> str:
        path = str(pieces / str(len(list(pieces.glob("*")))))
        datasets.Dataset.from_dict({"input_ids": pa.concat_arrays(columns)}).save_to_disk(path)
        return path

    def write_hf() -> None:  # bounded memory: each piece saved, then all joined memory-mapped
        paths, piece = [], []
        for b in batches:
            piece.append(b.column(0))
            if sum(len(c) for c in piece) >= HF_PIECE:
                paths.append(save_piece(piece))
                piece = []
        if piece:
            paths.append(save_piece(piece))
        parts = [datasets.load_from_disk(p) for p in paths]
        datasets.concatenate_datasets(parts).save_to_disk(str(d / "hf"))
        shutil.rmtree(pieces)

    clock(write_hf)
    files = list((d / "hf").glob("*.arrow"))
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}


def step_dataset(tool: str, d: Path, name: str, clock: Clock) -> dict[str, Any]:
    """The map-style steps: opens, reads, map, filter, shuffle, rerun."""
    root = d / ("am" if tool == "arrowmix" else "hf")
    before = {p for p in root.rglob("*") if p.is_file()}
    if name.startswith("open"):
        n = clock(lambda: len(_open(tool, d)))
        return {"rows": n}
    if name == "rerun":
        ds = clock(
            lambda: (
                _open(tool, d)
                .map(count_tokens, batched=True)
                .filter(long_enough, batched=True, input_columns=["n"])
            )
        )
        return {"kept": clock(lambda: len(ds)), "new_files": len(_new_files(root, before))}
    ds = _open(tool, d)
    corpus.drop_pages(root)  # what the open read (HF's reads the whole file) is cold again
    if name == "getitem":
        pos = np.random.default_rng(1).integers(0, len(ds), GETITEM_ROWS).tolist()
        got = clock(lambda: sum(len(ds[i]["input_ids"]) for i in pos))
        return {"tokens": got}
    if name == "map":
        out = clock(lambda: ds.map(count_tokens, batched=True, load_from_cache_file=False))
        return {"rows": len(out)}
    if name == "filter":
        mapped = ds.map(count_tokens, batched=True)  # a cache hit, untimed
        corpus.drop_pages(root)
        kw = {"batched": True, "input_columns": ["n"], "load_from_cache_file": False}
        return {"kept": clock(lambda: len(mapped.filter(long_enough, **kw)))}
    if name == "shuffle":
        k = min(SHUFFLE_ROWS, len(ds))
        out = clock(lambda: ds.shuffle(seed=0).select(range(k)).flatten_indices())
        rows = len(out)
        del out
        for p in _new_files(root, before):  # the next round computes again
            p.unlink()
        return {"rows": rows}
    raise ValueError(f"unknown step {name!r}")


def step_raw(d: Path, name: str, clock: Clock) -> dict[str, Any]:
    """``getitem`` and ``shuffle`` for the raw loop."""
    raw = corpus.RawRows(d / "am")
    n = len(raw)
    if name == "getitem":
        pos = np.random.default_rng(1).integers(0, n, GETITEM_ROWS)
        got = clock(lambda: sum(len(r) for r in raw.rows(pos, ordered=False)))
        return {"tokens": got}
    pos = np.random.default_rng(0).choice(n, min(SHUFFLE_ROWS, n), replace=False)
    out = d / "raw-shuffled.bin"

    def gather() -> int:
        rows = raw.rows(pos)
        with open(out, "wb") as f:
            np.cumsum([0, *map(len, rows)], dtype=np.int64).tofile(f)
            np.concatenate(rows).tofile(f)
        return len(rows)

    rows = clock(gather)
    out.unlink()
    return {"rows": rows}


def build_stream(tool: str, d: Path, mode: str, pipeline: str) -> Any:
    import bench_tokens as bt

    if tool == "datasets":
        return bt.build_datasets([d], pipeline)
    if tool == "raw":
        if pipeline == "B":
            return bt.HFWindows(RawWindows(d), lambda docs, _window: bt.split_window(docs))
        return bt.HFWindows(RawWindows(d), bt._pad_planned)
    import arrowmix

    s = arrowmix.Dataset.from_chunks(str(d / "am")).to_stream(shuffle=mode, seed=0)
    if pipeline == "B":
        return s.pack(
            "input_ids",
            bt.SEQ_LEN,
            batch_size=bt.ROWS,
            read_ahead=bt.READ_AHEAD,
            return_tensors="pt",
        )
    return s.budget_bucket("input_ids", bt.BUDGET, bt.READ_AHEAD, seed=7).collate(
        "input_ids", return_tensors="pt"
    )


class RawWindows:
    """Looks like a dataset to ``bench_tokens.HFWindows``: rows ``a:b`` are seeded random rows."""

    def __init__(self, d: Path) -> None:
        self.raw = corpus.RawRows(d / "am")

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, s: slice) -> dict[str, list[np.ndarray]]:
        pos = np.random.default_rng([0, s.start]).integers(0, len(self.raw), s.stop - s.start)
        return {"input_ids": self.raw.rows(pos)}


def step_stream(tool: str, d: Path, name: str, args: argparse.Namespace, clock: Clock) -> Any:
    import bench_tokens as bt
    import torch  # noqa: F401  # imported before the clock starts

    kind, mode, pipeline = name.split("_")
    state_file = d / f"state-{tool}-{mode}-{pipeline}.json"
    try:
        s = clock(lambda: build_stream(tool, d, mode, pipeline))
    except ValueError as exc:  # a shuffle mode this build does not have
        return {"skipped": str(exc)[:200]}
    if kind == "resume":
        state = json.loads(state_file.read_text())
        clock(lambda: (s.load_state_dict(state), next(s)))
        return {"state_bytes": len(json.dumps(state))}
    first = clock(lambda: bt.tokens_of(next(s)))
    first_s = clock.seconds
    tokens, batches, t0 = first, 1, time.perf_counter()
    while time.perf_counter() - t0 < args.stream_seconds:
        try:
            tokens += clock(lambda: bt.tokens_of(next(s)))
        except StopIteration:  # the peers' streams end with the epoch
            break
        batches += 1
        if batches == args.resume_after:
            state_file.write_text(json.dumps(s.state_dict()))
    if batches < args.resume_after:
        state_file.write_text(json.dumps(s.state_dict()))
    if hasattr(s, "close"):
        s.close()
    steady = clock.seconds - first_s
    return {
        "first_batch_s": first_s,
        "tokens": tokens,
        "batches": batches,
        "tokens_per_s": (tokens - first) / steady if steady > 0 else float("nan"),
    }


def child(args: argparse.Namespace) -> int:
    d = corpus_dir(args)
    tool, name = args.tool, args.step
    if tool == "datasets":
        import datasets

        datasets.disable_progress_bars()
    else:
        import arrowmix  # noqa: F401
    cold_bytes = 0
    if name not in WARM_STEPS:
        cold_bytes = corpus.drop_pages(d / ("hf" if tool == "datasets" else "am"))
    clock = Clock()
    anon = corpus.AnonPeak()
    if name == "write":
        extra = step_write(tool, d, args, clock)
    elif name in STREAMS:
        extra = step_stream(tool, d, name, args, clock)
    elif tool == "raw":
        extra = step_raw(d, name, clock)
    else:
        extra = step_dataset(tool, d, name, clock)
    peak, peak_anon = corpus.peak_rss_mib(), anon.stop()
    out = {
        "step": name,
        "tool": tool,
        "seconds": clock.seconds,
        "read_mb": clock.read / 1e6,
        "peak_rss_mib": peak,
        "peak_anon_mib": peak_anon,
        "dropped_mb": cold_bytes / 1e6,
        **extra,
    }
    print(json.dumps(out), flush=True)
    return 0


# ---- the driver ---------------------------------------------------------------------------
def corpus_dir(args: argparse.Namespace) -> Path:
    return Path(args.workdir) / f"n{args.rows}"


def run_step(args: argparse.Namespace, step: str, tool: str, rows: int) -> dict[str, Any]:
    argv = [
        "--step",
        step,
        "--tool",
        tool,
        "--rows",
        str(rows),
        "--workdir",
        str(args.workdir),
        "--seed",
        str(args.seed),
        "--stream-seconds",
        str(args.stream_seconds),
        "--resume-after",
        str(args.resume_after),
    ]
    if args.text_dir:
        argv += ["--text-dir", args.text_dir]
    try:
        return run_fresh(Path(__file__).resolve(), argv, timeout=args.step_timeout)
    except subprocess.TimeoutExpired:
        return {"step": step, "tool": tool, "error": f"timed out after {args.step_timeout:.0f} s"}
    except ChildFailed as exc:
        tail = exc.stderr.strip().splitlines()[-3:]
        return {"step": step, "tool": tool, "error": " | ".join(tail)[:300]}


def tools_of(step: str, rows: int, args: argparse.Namespace) -> list[str]:
    tools = ["arrowmix"]
    if step in HF_STEPS and rows <= args.hf_max_rows:
        tools.append("datasets")
    if step in RAW_STEPS:
        tools.append("raw")
    return tools


def run_size(args: argparse.Namespace, rows: int, steps: list[str]) -> list[dict[str, Any]]:
    d = Path(args.workdir) / f"n{rows}"
    d.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    log = d / "results.jsonl"  # this run's results, one JSON object a line
    log.write_text("")
    for r in range(args.repeats):
        for step in steps:
            for tool in tools_of(step, rows, args):
                if tool == "raw":
                    if not (d / "am").exists():
                        continue
                elif step == "write" and (r > 0 or (d / _root(tool) / "done").exists()):
                    continue  # written once; a kept corpus is reused
                elif step != "write" and not (d / _root(tool) / "done").exists():
                    results.append({"step": step, "tool": tool, "error": "no corpus"})
                    continue
                res = {"round": r, "rows": rows, **run_step(args, step, tool, rows)}
                if step == "write" and "error" not in res:
                    (d / _root(tool) / "done").write_text("ok")
                results.append(res)
                with log.open("a") as f:
                    f.write(json.dumps(res) + "\n")
                print(f"  [{rows:,}] round {r + 1}: {_line(res)}", file=sys.stderr, flush=True)
    return results


def _root(tool: str) -> str:
    return "hf" if tool == "datasets" else "am"


def _line(res: dict[str, Any]) -> str:
    if "error" in res or "skipped" in res:
        return f"{res['step']} {res['tool']}: {res.get('error') or 'skipped'}"
    return (
        f"{res['step']} {res['tool']}: {res['seconds']:.2f} s, {res['read_mb']:.0f} MB read,"
        f" {res['peak_rss_mib']:.0f} MiB"
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = base_parser(
        __doc__.split("\n", 1)[0],
        rows=None,
        quick="smoke run: 20,000 rows, short streams",
        repeats=3,
    )
    p.add_argument(
        "--rows",
        default="1000000",
        help="documents per corpus, comma-separated for several (default 1M)",
    )
    p.add_argument("--steps", default=None, help="comma-separated steps (default all)")
    p.add_argument("--keep", action="store_true", help="keep the corpora (default: deleted)")
    p.add_argument(
        "--hf-max-rows", type=int, default=10_000_000, help="largest corpus HF datasets is run on"
    )
    p.add_argument(
        "--text-dir",
        default=None,
        help="text files to tokenize instead of the kernel docs (linux-doc-6.1)",
    )
    p.add_argument("--stream-seconds", type=float, default=20.0)
    p.add_argument("--resume-after", type=int, default=50, help="batches before the state")
    p.add_argument("--step-timeout", type=float, default=1200.0, help="seconds a step may take")
    p.add_argument(
        "--report",
        action="store_true",
        help="only print the report of the results kept in the workdir",
    )
    p.add_argument("--step", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tool", default="arrowmix", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rows = "20000" if args.rows == "1000000" else args.rows
        args.stream_seconds, args.resume_after = min(args.stream_seconds, 1.0), 3
        args.repeats = 1
    return args


def compile_bytecode() -> None:
    """Compile arrowmix's modules once, as an installed package's are.

    The steps import part of arrowmix inside the clock (a cache hit loads the map engine
    lazily); without bytecode (a source checkout under ``PYTHONDONTWRITEBYTECODE=1``) each
    fresh process would compile them again (~0.1 s), which HF's installed modules never do.
    """
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("arrowmix")  # the checkout the steps import
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(str(Path(spec.origin).parent), quiet=2)
    compileall.compile_dir(str(HERE), quiet=2, maxlevels=0)


def plan_steps(chosen: list[str]) -> list[str]:
    """``chosen`` and what they need, in the order of ``STEPS``: the corpus is written first,
    a rerun needs the map and filter caches, a resume the state its stream step saves."""
    need = {"write", *chosen}
    need |= {"map", "filter"} if "rerun" in chosen else set()
    need |= {"stream" + s[6:] for s in chosen if s.startswith("resume")}
    return [s for s in STEPS if s in need]


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.step:
        args.rows = int(args.rows)
        return child(args)
    sizes = [int(x) for x in str(args.rows).split(",")]
    steps = STEPS if not args.steps else [s.strip() for s in args.steps.split(",")]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        raise SystemExit(f"unknown --steps {unknown}; known: {', '.join(STEPS)}")
    steps = plan_steps(steps)
    if args.report:
        for rows in sizes:
            d = Path(args.workdir or ".") / f"n{rows}"
            results = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines() if x]
            run = json.loads((d / "run.json").read_text()) if (d / "run.json").exists() else {}
            print(report(results, rows, run_facts(results, d, run)))
        return 0
    tmp = None
    if args.workdir is None:
        tmp = args.workdir = tempfile.mkdtemp(prefix="bench-scale-")
    args.workdir = str(Path(args.workdir).resolve())
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    if not args.keep:
        print(
            f"The corpora made in {args.workdir} are deleted at the end (--keep keeps them).",
            file=sys.stderr,
        )
    compile_bytecode()
    try:
        corpus.real_sample(Path(args.workdir), args.text_dir)  # fetched and tokenized once
        for rows in sizes:
            t0 = time.perf_counter()
            results = run_size(args, rows, steps)
            d = Path(args.workdir) / f"n{rows}"
            given = {"argv": argv if argv is not None else sys.argv[1:]}
            run = run_facts(results, d, {**given, "seconds": time.perf_counter() - t0})
            (d / "run.json").write_text(json.dumps(run))
            text = report(results, rows, run)
            (Path(args.workdir) / f"n{rows}" / "report.md").write_text(text)
            print(text, flush=True)
            if not args.keep:
                shutil.rmtree(Path(args.workdir) / f"n{rows}" / "am", ignore_errors=True)
                shutil.rmtree(Path(args.workdir) / f"n{rows}" / "hf", ignore_errors=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
