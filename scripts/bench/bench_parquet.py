"""Parquet read in place against convert-then-read: disk, first batch, epoch, cached rerun.

Run from the repository root::

    python scripts/bench/bench_parquet.py            # 100k documents, 3 interleaved rounds
    python scripts/bench/bench_parquet.py --quick    # 20k documents, 2 rounds

Corpus: ``--docs`` documents of token ids (``list<int32>``, uniform in ``[0, 32000)``,
lognormal lengths of median 200 clipped to ``[1, 4096]``, as in ``bench_tokens.py``) and an
``id`` column, written by pyarrow as 4 Parquet files (snappy, row groups of 8,192 rows).

Two ways to read it, each measured in fresh processes (imports excluded), interleaved:

- **in place**: ``Dataset.from_parquet(files, in_place=True)`` (decode cache 256 MB);
- **convert**: ``Dataset.from_parquet(files)``, which writes arrowmix chunks into the cache
  once (content-addressed: a later open hashes the files and converts nothing).

Measured: the disk each one adds (the chunks, the digest records, the map cache files);
*first batch*: from nothing cached (conversion included) to the first collated batch of
``to_stream(shuffle="chunks").batch(64, columnar=True).collate()``; *epoch*: one epoch of
that stream, in tokens/s; *cached rerun*: open + a cached ``map`` (document lengths) + its
first row, in a new process; *random ds[i]*: 30 random rows, each from a freshly opened
dataset (in place: the row group of the row decoded), and 200 from a warm one (every row
group decoded already).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_common import base_parser, disk_usage, machine_summary, print_markdown, run_fresh

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MODES = ("in_place", "convert")
ROW_GROUP = 8192


def write_parts(workdir: Path, docs: int, build: Callable[[int], Any]) -> list[str]:
    """The table ``build(docs)`` as 4 Parquet files (row groups of ``ROW_GROUP`` rows).

    Written under ``workdir/parquet`` once per corpus size: a later run reuses them.
    """
    import pyarrow.parquet as pq

    out = workdir / "parquet"
    files = [str(out / f"part-{k}.parquet") for k in range(4)]
    if all(os.path.exists(f) for f in files) and (out / f"docs-{docs}").exists():
        return files
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    table = build(docs)
    per = -(-docs // 4)
    for k, f in enumerate(files):
        pq.write_table(table.slice(k * per, per), f, row_group_size=ROW_GROUP)
    (out / f"docs-{docs}").touch()
    return files


def token_table(docs: int) -> Any:
    """``docs`` documents of random token ids and an ``id`` column (module docstring)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(np.log(200), 1.0, docs).astype(np.int64), 1, 4096)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.integers(0, 32000, int(offsets[-1]), dtype=np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
    return pa.table({"id": np.arange(docs), "input_ids": ids})


def make_corpus(workdir: Path, docs: int) -> list[str]:
    return write_parts(workdir, docs, token_table)


def lengths(batch: dict) -> dict:
    return {"n": [len(x) for x in batch["input_ids"]]}


def child(step: str, mode: str, files: list[str]) -> dict:
    import numpy as np

    import arrowmix as am

    t0 = time.perf_counter()
    ds = am.Dataset.from_parquet(files, in_place=mode == "in_place")
    t_open = time.perf_counter() - t0
    if step in ("first", "epoch"):
        stream = ds.to_stream(shuffle="chunks", seed=0, infinite=False)
        batches = iter(stream.batch(64, columnar=True).collate())
        first = next(batches)
        t_first = time.perf_counter() - t0
        if step == "first":
            return {"open_s": t_open, "first_batch_s": t_first}
        tokens = int(np.asarray(first["attention_mask"]).sum())
        t1 = time.perf_counter()
        for b in batches:
            tokens += int(np.asarray(b["attention_mask"]).sum())
        dt = time.perf_counter() - t1
        return {"tokens_per_s": tokens / dt, "epoch_s": dt, "tokens": tokens}
    if step == "rerun":
        out = ds.map(lengths, batched=True, remove_columns=["input_ids"])
        _ = out[0]
        return {"rerun_s": time.perf_counter() - t0, "map_files": out.cache_files}
    if step == "random":
        rng = np.random.default_rng(1)
        pos = rng.integers(0, len(ds), 200).tolist()
        cold = []
        for i in pos[:30]:
            fresh = am.Dataset.from_parquet(files, in_place=mode == "in_place")
            t = time.perf_counter()
            fresh[i]
            cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        for i in pos:
            ds[i]
        warm_first = (time.perf_counter() - t) / len(pos)
        t = time.perf_counter()
        for i in pos:
            ds[i]
        warm = (time.perf_counter() - t) / len(pos)
        return {"cold_ms": 1e3 * statistics.median(cold), "first_pass_ms": 1e3 * warm_first,
                "warm_ms": 1e3 * warm}  # fmt: skip
    raise ValueError(step)


def run(step: str, mode: str, files: list[str], cache: Path) -> dict:
    # Bytecode caching on: an installed package has its .pyc files, and compiling arrowmix's
    # lazily imported modules is not what is measured.
    env = {"ARROWMIX_CACHE": str(cache), "ARROWMIX_PROGRESS": "0", "PYTHONDONTWRITEBYTECODE": ""}
    return run_fresh(__file__, ["--child", step, mode, json.dumps(files)], env=env)


def parse(doc: str, workdir: str, child: int) -> tuple[argparse.Namespace, int, int, Path]:
    """``(args, documents, rounds, workdir)`` of a Parquet bench (its ``--help`` is ``doc``)."""
    ap = base_parser(
        doc.splitlines()[0],
        rows=100_000,
        rows_flags=("--docs", "--rows"),
        quick="20k documents, 2 rounds",
        workdir=workdir,
        repeats_flags=("--rounds", "--repeats"),
        seed=False,
        child=child,
    )
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    docs = 20_000 if args.quick else args.rows
    return args, docs, args.repeats or (2 if args.quick else 3), work


def median_of(samples: dict[tuple[str, str], list[dict]], step: str, mode: str, key: str) -> float:
    """The median of ``key`` over the rounds of ``step`` in ``mode``."""
    return statistics.median(row[key] for row in samples[(step, mode)])


def print_header(docs: int, tokens: float, files: list[str], rounds: int) -> None:
    """The machine and the corpus, as comment lines above the table."""
    size = sum(os.path.getsize(f) for f in files)
    print(f"# {machine_summary()}")
    print(f"# {docs} documents, {tokens / 1e6:.1f} M tokens, {len(files)} Parquet files of "
          f"{size / 2**20:.0f} MiB in all, row groups of {ROW_GROUP} rows; medians of "
          f"{rounds} interleaved rounds\n")  # fmt: skip


def print_ratios(modes: tuple[str, str], rows: list[tuple[str, float, float, str]]) -> None:
    """A markdown table of ``(measure, a, b, format)`` rows, with ``a / b``."""
    cells = [
        [name, f.format(a), f.format(b), f"{a / b if b else float('nan'):.2f}x"]
        for name, a, b, f in rows
    ]
    print_markdown(["measure", *modes, f"{modes[0]} / {modes[1]}"], cells)


def main() -> None:
    args, docs, rounds, work = parse(__doc__, "/tmp/arrowmix-bench-parquet", 3)
    if args.child:
        step, mode, files = args.child
        print(json.dumps(child(step, mode, json.loads(files))))
        return
    files = make_corpus(work, docs)
    samples: dict[tuple[str, str], list[dict]] = {}
    disk: dict[str, int] = {}
    for r in range(rounds):
        for mode in MODES:
            cache = work / f"cache-{mode}"
            shutil.rmtree(cache, ignore_errors=True)
            for f in Path(files[0]).parent.glob("cache-*.arrow"):
                f.unlink()  # map results beside the files (in place)
            first = run("first", mode, files, cache)  # nothing cached: conversion included
            samples.setdefault(("first", mode), []).append(first)
            run("rerun", mode, files, cache)  # computes the map: the next run is the rerun
            for step in ("epoch", "rerun", "random"):
                samples.setdefault((step, mode), []).append(run(step, mode, files, cache))
            maps = samples[("rerun", mode)][-1]["map_files"]
            beside = [f for f in maps if not f.startswith(str(cache)) and os.path.exists(f)]
            disk[mode] = disk_usage(cache) + sum(os.path.getsize(f) for f in beside)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    def med(step: str, mode: str, key: str) -> float:
        return median_of(samples, step, mode, key)

    print_header(docs, med("epoch", "in_place", "tokens"), files, rounds)
    rows = [
        ("disk added (MiB)", disk["in_place"] / 2**20, disk["convert"] / 2**20, "{:.1f}"),
        ("open + first batch, nothing cached (s)", med("first", "in_place", "first_batch_s"),
         med("first", "convert", "first_batch_s"), "{:.2f}"),
        ("epoch (M tokens/s)", med("epoch", "in_place", "tokens_per_s") / 1e6,
         med("epoch", "convert", "tokens_per_s") / 1e6, "{:.1f}"),
        ("cached rerun: open + map hit + row (s)", med("rerun", "in_place", "rerun_s"),
         med("rerun", "convert", "rerun_s"), "{:.3f}"),
        ("random ds[i], cold decode cache (ms)", med("random", "in_place", "cold_ms"),
         med("random", "convert", "cold_ms"), "{:.2f}"),
        ("random ds[i], warm (ms)", med("random", "in_place", "warm_ms"),
         med("random", "convert", "warm_ms"), "{:.3f}"),
    ]  # fmt: skip
    print_ratios(("in place", "convert"), rows)


if __name__ == "__main__":
    main()
