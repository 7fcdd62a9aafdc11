# mypy: disable-error-code="import-not-found,import-untyped"
"""What checking cached copies costs: a bounded remote cache and ``from_generator`` reruns.

Two cases, each in a fresh process per run, the arrowmix of this checkout against the one of
``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/base main``), interleaved
(A, B, B, A, ...) on the same data, medians and the ratio:

1. **remote rerun**: a token corpus (``input_ids``: 256 int32 per row, ``--chunks`` chunk
   files) on a moto S3 server on loopback, read through ``from_chunks(cache_limit=...)`` whose
   ``chunk_cache_dir`` already holds every copy (each checkout's own directory, filled by a
   first, untimed run): open, then every row's ids in batches of 1,024 as numpy. It is what
   a second job on a node pays: every copy is adopted, none downloaded (checked: bytes
   downloaded must be 0).
2. **generator rerun**: ``Dataset.from_generator`` of a corpus it generated before (its own
   cache directory per checkout), then the sum of one column: the rerun's check of the
   corpus is all that differs.

Timed: from the first arrowmix call on (interpreter start and imports excluded).

Usage (from the repository root, in the arrowmix venv)::

    python scripts/bench/bench_cache_checks.py --baseline /tmp/base --rounds 7
    python scripts/bench/bench_cache_checks.py --baseline /tmp/base --quick  # 40k rows, 2 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import base_parser, machine_summary, print_markdown, run_fresh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gen_rows(n: int) -> Any:
    for i in range(n):
        yield {"i": i, "ids": [i % 50_000] * 64}


def child(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, os.environ["BENCH_ARROWMIX_ROOT"])
    import numpy as np

    import arrowmix as am

    out: dict[str, Any] = {"arrowmix": os.path.dirname(am.__file__)}
    started = time.perf_counter()
    if args.child == "remote":
        so = json.loads(args.so)
        ds = am.Dataset.from_chunks(
            args.url, storage_options=so, cache_limit="4GB", chunk_cache_dir=args.cache
        ).with_format("numpy")
        tokens = 0
        for batch in ds.iter(batch_size=1024):
            tokens += int(np.asarray(batch["input_ids"]).size)
        out["tokens"] = tokens
        out["downloaded"] = ds._s.table.cache.stats.bytes_downloaded
    else:
        ds = am.Dataset.from_generator(gen_rows, gen_kwargs={"n": args.rows}, cache_dir=args.cache)
        out["sum"] = int(np.asarray(ds.with_format("numpy")["i"]).sum())
    out["seconds"] = time.perf_counter() - started
    return out


def run_child(root: str, argv: list[str]) -> dict[str, Any]:
    return run_fresh(os.path.abspath(__file__), argv, env={"BENCH_ARROWMIX_ROOT": root})


def main() -> None:
    ap = base_parser(
        __doc__.split("\n", 1)[0],
        rows=400_000,
        quick="smoke run: 40,000 rows, 2 rounds",
        workdir="/tmp/arrowmix-bench-cache-checks",
        repeats=7,
        repeats_flags=("--rounds", "--repeats"),
        seed=False,
    )
    ap.add_argument("--baseline", help="another checkout to compare with (required)")
    ap.add_argument("--chunks", type=int, default=40)
    ap.add_argument("--child", choices=["remote", "generator"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--so", help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    if not args.baseline:
        ap.error("--baseline DIR is required")
    if args.quick:
        args.rows, args.repeats = min(args.rows, 40_000), min(args.repeats, 2)
    print(f"# {machine_summary()}")

    import numpy as np
    import pyarrow as pa
    from bench_remote import BUCKET, s3_options, start_s3

    sys.path.insert(0, ROOT)
    import arrowmix as am

    server, endpoint = start_s3()
    so = s3_options(endpoint)
    url = f"s3://{BUCKET}/cache-checks"
    ids = np.random.default_rng(0).integers(0, 50_000, (args.rows, 256), dtype=np.int32)
    table = pa.table({"input_ids": pa.FixedSizeListArray.from_arrays(ids.ravel(), 256)})
    table = table.cast(pa.schema([("input_ids", pa.list_(pa.int32()))]))
    am.write_chunks(
        table.to_batches(max_chunksize=10_000), url,
        rows_per_chunk=args.rows // args.chunks, storage_options=so,
    )  # fmt: skip
    roots = {"this": ROOT, "baseline": os.path.abspath(args.baseline)}
    cases: dict[str, dict[str, list[str]]] = {}
    times: dict[tuple[str, str], list[float]] = {}
    for name, root in roots.items():
        remote = ["--child", "remote", "--url", url, "--so", json.dumps(so),
                  "--cache", os.path.join(args.workdir, name, "remote")]  # fmt: skip
        gen = ["--child", "generator", "--rows", str(args.rows),
               "--cache", os.path.join(args.workdir, name, "gen")]  # fmt: skip
        for argv in (remote, gen):  # untimed: fills the caches
            run_child(root, argv)
        cases[name] = {"remote": remote, "generator": gen}
    for r in range(args.repeats):
        order = list(roots) if r % 2 == 0 else list(reversed(roots))
        for case in ("remote", "generator"):
            for name in order:
                got = run_child(roots[name], cases[name][case])
                if case == "remote":
                    assert got["downloaded"] == 0, got
                times.setdefault((case, name), []).append(got["seconds"])
        print(f"round {r + 1}/{args.repeats} done", file=sys.stderr)
    server.stop()
    cells = []
    for case in ("remote", "generator"):
        a = statistics.median(times[(case, "this")])
        b = statistics.median(times[(case, "baseline")])
        cells.append([f"{case} rerun", f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}x", str(args.repeats)])
    header = ["case", "this (median s)", "baseline (median s)", "this / baseline", "runs"]
    print_markdown(header, cells)
    print(json.dumps({f"{c}/{n}": v for (c, n), v in times.items()}))


if __name__ == "__main__":
    main()
