"""Benchmark weighted mixing (``arrowmix.stream.mix`` vs Ray Data ``Dataset.mix``) and map on Ray.

Usage (from the repository root; needs ``pip install 'ray[data]'``):

    python scripts/bench/bench_mix.py                # 300k rows in 3 sources, 3 repeats
    python scripts/bench/bench_mix.py --quick        # 60k rows, 2 repeats
    python scripts/bench/bench_mix.py --skip-map     # only the mixing comparison
    python scripts/bench/bench_mix.py --schedules    # weight schedules vs constant weights (no Ray)
    python scripts/bench/bench_mix.py --tokens       # mixing by tokens vs by rows (no Ray)
    python scripts/bench/bench_mix.py --tokens --baseline /path/to/main --reads positions

Mixing: three sources of small rows (``{"src", "id", "text"}``, ~20 characters of text) with
sizes in the ratio of the weights 0.5/0.3/0.2, stored as arrowmix chunk files of
``--block-rows`` rows; Ray gets the very same Arrow record batches as its blocks
(``ray.data.from_arrow``). Both mix with the longest-drop rule and are read to the end as row
dicts, one at a time and (ours) in ``.batch(1024)`` lists, which takes the mix's bulk path;
Ray also as Arrow batches. Reported: rows/s, and the realised ratio's largest deviation
from the target over consecutive windows of 1,000 output rows, counted until the first source
runs out (``max |count_i / 1000 - w_i|``). arrowmix's deterministic rule is exact up to
rounding; Ray interleaves whole blocks, so its windows hold one source at a time.

Schedules (``--schedules``, no Ray): the same mix with constant weights, with a constant
table of 4 breakpoints (round weights), a linear ramp (``every=256``) and a function
(``every=1024``), moving the weights from 0.5/0.3/0.2 to 0.2/0.3/0.5 over the run; ratio of
each to constant weights.

Tokens (``--tokens``, no Ray): three sources of token documents (``input_ids``, lognormal
lengths: means about 20, 200 and 60 tokens) mixed 0.5/0.3/0.2 by rows and by tokens
(``tokens="input_ids"``), deterministic and seeded, read as row dicts, in ``.batch(1024)``
lists, and as row positions (``.batch(1024, columnar=True)``), interleaved; ratio of the
token mode to the row mode, and the realised token share's largest deviation from the
weights over the run.

With ``--baseline DIR`` (another checkout, e.g. ``main``), the same token cases run in fresh
processes taking turns, this checkout's arrowmix and the baseline's (``PYTHONPATH``), each
process timing every case ``--repeats`` times; reported: the median CPU time per case, the
ratio of the token mode to the row mode in each checkout, and this checkout's speed over the
baseline's.

Map: an expensive per-row function (repeated SHA-256 of the text) over ``--map-rows`` rows of
arrowmix chunks, recomputed each time (``load_from_cache_file=False``): one local process,
``num_proc=2``, and ``executor="ray"`` on a local 2-CPU Ray cluster (started once, not timed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (  # the scripts folder is not a package
    Row,
    base_parser,
    fmt_rate,
    interleaved,
    machine_summary,
    print_table,
    run_fresh,
    workdir_from_args,
)

import arrowmix as am  # bench_common puts the checkout on sys.path
from arrowmix.stream import WeightSchedule, mix

WEIGHTS = (0.5, 0.3, 0.2)
WINDOW = 1000


def make_sources(root: Path, total: int, block_rows: int) -> list[am.Dataset]:
    """Three chunked datasets of sizes proportional to the weights (reused when present)."""
    out = []
    rng = np.random.default_rng(0)
    for src, w in enumerate(WEIGHTS):
        n = int(total * w)
        path = root / f"src{src}-{n}-{block_rows}"
        if not path.exists():
            ids = np.arange(n, dtype=np.int64)
            words = rng.integers(0, 10**6, size=n)
            text = pa.array([f"source {src} word {w:07d}" for w in words.tolist()])
            table = pa.table({"src": pa.array(np.full(n, src, np.int8)), "id": ids, "text": text})
            tmp = path.with_suffix(".tmp")
            am.write_chunks(table, tmp, rows_per_chunk=block_rows, overwrite=True)
            os.rename(tmp, path)
        out.append(am.Dataset.from_chunks(str(path)))
    return out


def max_window_deviation(srcs: np.ndarray, sizes: list[int]) -> float:
    """Largest ``|share of source i in a window - w_i|`` over full windows before exhaustion."""
    cut = len(srcs)
    for i, n in enumerate(sizes):
        pos = np.flatnonzero(srcs == i)
        if len(pos) == n:  # source i ran out at its last row
            cut = min(cut, int(pos[-1]) + 1)
    full = cut // WINDOW
    if full == 0:
        return float("nan")
    windows = srcs[: full * WINDOW].reshape(full, WINDOW)
    worst = 0.0
    for i, w in enumerate(WEIGHTS):
        share = (windows == i).sum(axis=1) / WINDOW
        worst = max(worst, float(np.abs(share - w).max()))
    return worst


def run_arrowmix(
    sources: list[am.Dataset], seed: int | None, batch: int = 0, weights: Any = WEIGHTS
) -> np.ndarray:
    """The mixed sources' ``src`` column, read row by row (or in ``.batch(batch)`` lists)."""
    streams = [ds.to_stream(shuffle=None, infinite=False) for ds in sources]
    mixed = mix(
        streams, weights if isinstance(weights, WeightSchedule) else list(weights), seed=seed
    )
    if not batch:
        return np.fromiter((r["src"] for r in mixed), np.int8)
    return np.fromiter((r["src"] for b in mixed.batch(batch) for r in b), np.int8)


def ray_mixed(ray_sources: list[object]) -> object:
    first, *rest = ray_sources
    return first.mix(*rest, weights=list(WEIGHTS))  # type: ignore[attr-defined]


def run_ray_rows(ray_sources: list[object]) -> np.ndarray:
    rows = ray_mixed(ray_sources).iter_rows()  # type: ignore[attr-defined]
    return np.fromiter((r["src"] for r in rows), np.int8)


def run_ray_batches(ray_sources: list[object]) -> np.ndarray:
    batches = ray_mixed(ray_sources).iter_batches(  # type: ignore[attr-defined]
        batch_size=None, batch_format="pyarrow"
    )
    return np.concatenate([b.column("src").to_numpy() for b in batches])


def expensive(row: dict) -> dict:
    data = row["text"].encode()
    for _ in range(40):
        data = hashlib.sha256(data).digest()
    return {"h": data[:8].hex()}


_LATE = (0.2, 0.3, 0.5)
_RAMP_ROWS = [1]  # the run's length, set by bench_schedules


def late_share(step: int) -> list[float]:
    """Weights moving linearly from WEIGHTS to _LATE over the run (a function schedule)."""
    f = min(1.0, step / _RAMP_ROWS[0])
    return [a + (b - a) * f for a, b in zip(WEIGHTS, _LATE, strict=True)]


def bench_schedules(sources: list[am.Dataset], repeats: int) -> None:
    n = sum(len(ds) for ds in sources)
    _RAMP_ROWS[0] = n
    # a curriculum's round weights, as a user writes them
    table = WeightSchedule(
        [(0, [5, 3, 2]), (n // 4, [4, 3, 3]), (n // 2, [3, 3, 4]), (3 * n // 4, [2, 3, 5])]
    )
    linear = WeightSchedule([(0, list(WEIGHTS)), (n, list(_LATE))], interpolate="linear", every=256)
    function = WeightSchedule.from_function(late_share, every=1024)
    kinds: dict[str, Any] = {"constant": WEIGHTS, "constant, non-round": (0.4321, 0.3123, 0.2556)}
    kinds |= {"table": table, "linear, every=256": linear}
    kinds["function, every=1024"] = function
    cases: dict[str, Any] = {}
    base: dict[str, str] = {}
    for seed in (None, 0):
        for batch in (0, 1024):
            for kind, w in kinds.items():
                name = f"{'seeded' if seed is not None else 'deterministic'}, " + (
                    f".batch({batch}), " if batch else "rows, "
                )
                cases[name + kind] = lambda s=seed, b=batch, w=w: run_arrowmix(sources, s, b, w)
                base[name + kind] = name + "constant"
    t = interleaved(cases, repeats, work=n, warmup=1)
    print(f"\n### Weight schedules: mixing {n:,} rows of 3 sources\n")
    print("| case | rows/s | vs constant weights |\n|---|---|---|")
    for name, tm in t.items():
        print(f"| {name} | {fmt_rate(tm.rate)} | {tm.rate / t[base[name]].rate:.2f}x |")


def make_token_sources(root: Path, total: int, block_rows: int) -> list[am.Dataset]:
    """Three chunked token datasets (``input_ids``) of different mean lengths."""
    out = []
    rng = np.random.default_rng(1)
    for src, (w, mean) in enumerate(zip(WEIGHTS, (20, 200, 60), strict=True)):
        n = int(total * w)
        path = root / f"tok{src}-{n}-{block_rows}"
        if not path.exists():
            lengths = rng.lognormal(np.log(mean), 0.6, n).astype(np.int64).clip(1, 4096)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
            values = pa.array(rng.integers(0, 50_000, int(offsets[-1]), dtype=np.int32))
            ids = pa.ListArray.from_arrays(pa.array(offsets), values)
            src_col = pa.array(np.full(n, src, np.int8))
            table = pa.table({"src": src_col, "input_ids": ids})
            tmp = path.with_suffix(".tmp")
            am.write_chunks(table, tmp, rows_per_chunk=block_rows, overwrite=True)
            os.rename(tmp, path)
        out.append(am.Dataset.from_chunks(str(path)))
    return out


def run_tokens(sources: list[am.Dataset], tokens: str | None, seed: int | None, how: str) -> Any:
    """Read the mix to the end; return the tokens each source gave."""
    streams = [ds.to_stream(shuffle=None, infinite=False) for ds in sources]
    mixed = mix(streams, list(WEIGHTS), seed=seed, tokens=tokens)
    got = np.zeros(3, dtype=np.int64)
    if how == "rows":
        for r in mixed:
            got[r["src"]] += len(r["input_ids"])
    elif how == "lists":
        for b in mixed.batch(1024):
            for r in b:
                got[r["src"]] += len(r["input_ids"])
    else:
        for b in mixed.batch(1024, columnar=True):
            lengths = pa.compute.list_value_length(b["input_ids"]).to_numpy()
            np.add.at(got, np.asarray(b["src"]), lengths)
    return got


def bench_tokens(sources: list[am.Dataset], repeats: int) -> None:
    n = sum(len(ds) for ds in sources)
    cases: dict[str, Any] = {}
    for seed in (None, 0):
        for how in ("rows", "lists", "positions"):
            for tokens in (None, "input_ids"):
                name = (
                    f"{'seeded' if seed is not None else 'deterministic'}, {how}, "
                    f"by {'tokens' if tokens else 'rows'}"
                )
                cases[name] = lambda t=tokens, s=seed, h=how: run_tokens(sources, t, s, h)
    t = interleaved(cases, repeats, work=n, warmup=1)
    print(f"\n### Mixing by tokens: {n:,} token documents of 3 sources\n")
    print("| case | rows/s | by tokens / by rows |\n|---|---|---|")
    for name, tm in t.items():
        base = t[name.replace("by tokens", "by rows")]
        print(f"| {name} | {fmt_rate(tm.rate)} | {tm.rate / base.rate:.2f}x |")
    # the realised token share while every source is still read (first 40% of the rows)
    streams = [ds.to_stream(shuffle=None, infinite=False) for ds in sources]
    for tokens in (None, "input_ids"):
        m = mix(
            [ds.to_stream(shuffle=None, infinite=False) for ds in sources],
            list(WEIGHTS),
            tokens=tokens,
        )
        for _ in m.take(int(0.4 * n)):
            pass
        share = m.stats()["token_ratios"] if tokens else None
        if share is None:
            got = run_tokens(sources, None, None, "positions")
            share = (got / got.sum()).tolist()
        print(
            f"token shares, by {'tokens' if tokens else 'rows'}: "
            + ", ".join(f"{x:.3f}" for x in share)
        )
    del streams


def time_tokens(sources: list[am.Dataset], repeats: int, reads: list[str]) -> dict[str, float]:
    """Median CPU seconds of each token case (run in a child process, see ``--baseline``)."""
    cases: dict[str, Any] = {}
    for seed in (None, 0):
        for how in reads:
            for tokens in (None, "input_ids"):
                name = f"{'seeded' if seed is not None else 'deterministic'}, {how}, " + (
                    "by tokens" if tokens else "by rows"
                )
                cases[name] = lambda t=tokens, s=seed, h=how: run_tokens(sources, t, s, h)
    n = sum(len(ds) for ds in sources)
    t = interleaved(cases, repeats, work=n, warmup=1, verbose=False)
    return {name: tm.cpu_median for name, tm in t.items()}


def compare_tokens(args: Any, total: int, repeats: int, rounds: int) -> None:
    """The token cases in fresh processes, this checkout and ``args.baseline`` taking turns."""
    script = str(Path(__file__).resolve())
    here = str(Path(__file__).resolve().parent.parent.parent)
    trees = {"this": here, "baseline": str(Path(args.baseline).resolve())}
    samples: dict[tuple[str, str], list[float]] = {}
    with workdir_from_args(args, "arrowmix-bench-mix-") as work:
        make_token_sources(work, total, args.block_rows)  # written once, by this checkout
        for r in range(rounds):
            for tree, path in trees.items():
                argv = [str(work), str(total), str(args.block_rows), str(repeats), args.reads]
                env = {"PYTHONPATH": path, "ARROWMIX_PROGRESS": "0"}
                got = run_fresh(script, ["--child", *argv], env=env, cwd=path)
                for name, sec in got.items():
                    samples.setdefault((tree, name), []).append(sec)
                print(f"    round {r + 1}/{rounds} {tree} done", file=sys.stderr, flush=True)
    med = {key: statistics.median(v) for key, v in samples.items()}
    names = sorted({name for _, name in med}, key=lambda x: (x.split(",")[0], x))
    print(f"\n### Mixing by tokens against {args.baseline}: {total:,} documents\n")
    print("| case | CPU s | tokens / rows | baseline CPU s | baseline tokens / rows | speed-up |")
    print("|---|---|---|---|---|---|")
    for name in names:
        rows_name = name.replace("by tokens", "by rows")
        cells = [name]
        for tree in trees:
            ratio = med[(tree, rows_name)] / med[(tree, name)]
            cells += [f"{med[(tree, name)]:.3f}", f"{ratio:.2f}x"]
        cells.append(f"{med[('baseline', name)] / med[('this', name)]:.2f}x")
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    p = base_parser(__doc__.split("\n", 1)[0], child=5)
    p.add_argument("--block-rows", type=int, default=10_000, help="rows per chunk / Ray block")
    p.add_argument("--map-rows", type=int, default=100_000, help="rows of the map comparison")
    p.add_argument("--skip-map", action="store_true", help="only the mixing comparison")
    p.add_argument("--schedules", action="store_true", help="schedules vs constant weights")
    p.add_argument("--tokens", action="store_true", help="mixing by tokens vs by rows")
    p.add_argument("--baseline", help="with --tokens: another checkout to compare with (A/B)")
    p.add_argument("--rounds", type=int, default=5, help="with --baseline: processes per side")
    p.add_argument(
        "--reads",
        default="rows,lists,positions",
        help="with --baseline: how the mix is read (row dicts, .batch lists, row positions)",
    )
    p.set_defaults(rows=300_000)
    args = p.parse_args()
    if args.child:  # one side of --baseline: time the token cases, print them as JSON
        work, rows, block, reps, reads = args.child
        os.environ["ARROWMIX_PROGRESS"] = "0"
        srcs = make_token_sources(Path(work), int(rows), int(block))
        print(json.dumps(time_tokens(srcs, int(reps), reads.split(","))))
        return
    total = 60_000 if args.quick and args.rows == 300_000 else args.rows
    repeats = args.repeats or (2 if args.quick else 3)
    map_rows = min(args.map_rows, 20_000) if args.quick else args.map_rows
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ["ARROWMIX_PROGRESS"] = "0"
    repo = str(Path(__file__).resolve().parent.parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    print("command: python scripts/bench/bench_mix.py " + " ".join(sys.argv[1:]))
    print(machine_summary())
    if args.tokens and args.baseline:
        compare_tokens(args, total, args.repeats or 3, args.rounds)
        return
    if args.tokens:
        with workdir_from_args(args, "arrowmix-bench-mix-") as work:
            bench_tokens(make_token_sources(work, total, args.block_rows), repeats)
        return
    if args.schedules:
        with workdir_from_args(args, "arrowmix-bench-mix-") as work:
            bench_schedules(make_sources(work, total, args.block_rows), repeats)
        return

    t0 = time.perf_counter()
    import ray
    import ray.data

    t_import = time.perf_counter() - t0
    with workdir_from_args(args, "arrowmix-bench-mix-") as work:
        ray_tmp = os.path.join("/tmp", f"raybench{os.getpid()}")
        t0 = time.perf_counter()
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            object_store_memory=512 * 2**20,
            _temp_dir=ray_tmp,
            logging_level="ERROR",
            log_to_driver=False,
        )
        t_init = time.perf_counter() - t0
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        logging.getLogger("ray").setLevel(logging.WARNING)
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        print(f"ray: import {t_import:.2f} s, ray.init {t_init:.2f} s (not in the numbers below)")
        try:
            sources = make_sources(work, total, args.block_rows)
            sizes = [len(ds) for ds in sources]
            ray_sources = [
                ray.data.from_arrow(
                    [
                        pa.Table.from_batches([b])
                        for b in ds.to_table().to_batches(max_chunksize=args.block_rows)
                    ]
                )
                for ds in sources
            ]
            ray_sources = [r.materialize() for r in ray_sources]
            n = sum(sizes)
            cases = {
                "arrowmix deterministic": lambda: run_arrowmix(sources, None),
                "arrowmix seeded": lambda: run_arrowmix(sources, 0),
                "arrowmix deterministic, .batch(1024)": lambda: run_arrowmix(sources, None, 1024),
                "arrowmix seeded, .batch(1024)": lambda: run_arrowmix(sources, 0, 1024),
                "ray rows": lambda: run_ray_rows(ray_sources),
                "ray batches": lambda: run_ray_batches(ray_sources),
            }
            dev = {name: max_window_deviation(fn(), sizes) for name, fn in cases.items()}
            t = interleaved(cases, repeats, work=n, warmup=0)
            print(
                f"\n### Mixing {n:,} rows of 3 sources, weights {WEIGHTS}, blocks of "
                f"{args.block_rows:,} rows\n"
            )
            lines = ["| case | rows/s | max deviation over 1,000-row windows |", "|---|---|---|"]
            for name in cases:
                lines.append(f"| {name} | {fmt_rate(t[name].rate)} | {dev[name]:.3f} |")
            print("\n".join(lines))
            print()
            print_table(
                [
                    Row("mix, row dicts", t["arrowmix deterministic"], t["ray rows"]),
                    Row(
                        "mix, row dicts in lists of 1024 (ours)",
                        t["arrowmix deterministic, .batch(1024)"],
                        t["ray rows"],
                    ),
                    Row(
                        "mix, ours lists of 1024 rows vs Ray Arrow batches",
                        t["arrowmix deterministic, .batch(1024)"],
                        t["ray batches"],
                    ),
                ],
                peer="ray",
            )
            if not args.skip_map:
                bench_map(work, map_rows, repeats)
        finally:
            ray.shutdown()
            shutil.rmtree(ray_tmp, ignore_errors=True)


def bench_map(work: Path, rows: int, repeats: int) -> None:
    path = work / f"map-{rows}"
    if not path.exists():
        text = pa.array([f"row {i} of the map benchmark" for i in range(rows)])
        am.write_chunks(pa.table({"text": text}), path, rows_per_chunk=25_000)
    ds = am.Dataset.from_chunks(str(path))
    kw = {"load_from_cache_file": False}
    cases = {
        "num_proc=1": lambda: ds.map(expensive, **kw),
        "num_proc=2": lambda: ds.map(expensive, num_proc=2, **kw),
        'executor="ray"': lambda: ds.map(expensive, executor="ray", **kw),
    }
    want = ds.map(expensive, **kw)["h"]
    assert cases['executor="ray"']()["h"] == want  # same result (and warms the Ray workers)
    t = interleaved(cases, repeats, work=rows)
    print(f"\n### Map of an expensive per-row function, {rows:,} rows (2 CPUs)\n")
    print_table([Row("map, num_proc=2 vs Ray", t["num_proc=2"], t['executor="ray"'])], peer="ray")
    print()
    print("| case | rows/s | median |\n|---|---|---|")
    for name, tm in t.items():
        print(f"| {name} | {fmt_rate(tm.rate)} | {tm.median:.2f} s |")


if __name__ == "__main__":
    main()
