"""Elastic resume and equal-count bucketing: state sizes, load cost, throughput.

Run from the repository root::

    python scripts/bench/bench_elastic.py --rows 1000000 --old 64 --new 48
    python scripts/bench/bench_elastic.py --quick   # 100k rows, 16 -> 12 instances, 5 batches

Data: ``--rows`` rows of ``{"id", "n_tokens"}`` with long-tailed (Zipf) lengths.
Pipeline per instance: global shuffle source, ``shuffle(10_000)``, token-budget
``bucket(read_ahead=10_000)``. Reported: one instance's ``state_dict`` size, the merged
checkpoint size, the time one new instance takes to load the merged checkpoint (it
replays one window per old instance) and to yield its first batch, and batch
throughput of ``bucket`` vs ``budget_bucket`` (rows/s of one rank).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_common import QUICK_ROWS, base_parser, fmt_rate, machine_summary, timed

from arrowmix.stream import TableRowSource, from_row_source, merge_states

BUDGET = 16384


def rows(n: int) -> TableRowSource:
    lengths = np.random.default_rng(0).zipf(1.3, n).clip(1, 4096).astype(np.int64)
    return TableRowSource(pa.table({"id": np.arange(n), "n_tokens": lengths}), chunk_rows=10_000)


def pipeline(src: TableRowSource, world: int, rank: int) -> Any:
    s = from_row_source(src, seed=1, num_instances=world, instance_rank=rank)
    return s.shuffle(10_000, seed=2).bucket(
        "n_tokens", lambda longest: BUDGET // longest["n_tokens"], 10_000, seed=3
    )


def balanced(src: TableRowSource, world: int, rank: int) -> Any:
    s = from_row_source(src, seed=1).shuffle(10_000, seed=2)
    return s.budget_bucket(
        "n_tokens", BUDGET, 10_000, num_instances=world, instance_rank=rank, seed=3
    )


def rate(stream: Any, batches: int) -> float:
    next(stream)
    t0 = time.perf_counter()
    n = sum(len(b) for b in itertools.islice(stream, batches))
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = base_parser(
        __doc__.splitlines()[0],
        quick=f"smoke run: {QUICK_ROWS:,} rows, 16 -> 12 instances, 5 batches",
        workdir_flags=(),
        repeats_flags=(),
        seed=False,
    )
    ap.add_argument("--old", type=int, default=64)
    ap.add_argument("--new", type=int, default=48)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    if args.quick:
        args.rows, args.old, args.new, args.steps = QUICK_ROWS, 16, 12, 5
    print(f"# {machine_summary()}")
    src = rows(args.rows)

    old = [pipeline(src, args.old, r) for r in range(args.old)]

    def run_old() -> None:
        for s in old:
            for _ in range(args.steps):
                next(s)

    t_old, _ = timed(run_old)
    states = [s.state_dict() for s in old]
    merged = merge_states(states)
    print(f"old run: {args.old} instances x {args.steps} batches in {t_old:.2f} s")
    print(f"state_dict of one instance: {len(json.dumps(states[0]))} bytes")
    print(f"merged checkpoint of {args.old}: {len(json.dumps(merged))} bytes")

    new = pipeline(src, args.new, 0)
    t0 = time.perf_counter()
    new.load_state_dict(merged)
    t_load = time.perf_counter() - t0
    next(new)
    t_first = time.perf_counter() - t0
    print(f"elastic load on instance 0 of {args.new}: {t_load:.2f} s, first batch {t_first:.2f} s")
    print(f"state_dict during the drain: {len(json.dumps(new.state_dict()))} bytes")

    for name, build in (("bucket", pipeline), ("budget_bucket", balanced)):
        r = rate(build(src, 8, 0), 2000)
        print(f"{name:14s} rank 0 of 8: {fmt_rate(r)}")


if __name__ == "__main__":
    main()
