"""Benchmark ``load_dataset`` against HF ``datasets`` on one big JSONL, CSV and Parquet file.

For each format: a first load (empty caches) and a rerun, each in a fresh Python process
(wall time of the whole process, imports included), arrowmix and HF interleaved. HF runs
offline with its cache in the work directory. Usage::

    python scripts/bench/bench_load.py --size-mb 1024 --dir /work/tmp/bench_load
    python scripts/bench/bench_load.py --keep --files --baseline /path/to/main --dir ...  # 3-way

The work directory is deleted afterwards unless ``--keep``. ``--quick``: files of 8 MB.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from bench_common import base_parser, machine_summary, markdown_row, print_markdown

LOAD = """
import sys, {lib} as lib
ds = lib.load_dataset({builder!r}, data_files={path!r}, split="train", **{kwargs})
print(len(ds))
"""


def make_rows(n: int, start: int) -> pa.Table:
    """Rows of random words (the Parquet file compresses about as real text does)."""
    import numpy as np

    rng = np.random.default_rng(start)
    vocab = [f"w{v:x}" for v in range(50_000)]
    picks = rng.integers(0, len(vocab), size=(n, 40))
    text = [" ".join(vocab[v] for v in row[: 10 + i % 30]) for i, row in enumerate(picks)]
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "text": pa.array(text, pa.string()),
            "score": pa.array([i * 0.25 for i in range(start, start + n)], pa.float64()),
            "label": pa.array([i % 5 for i in range(start, start + n)], pa.int64()),
        }
    )


def make_files(d: str, size: int) -> dict[str, str]:
    paths = {fmt: os.path.join(d, f"data.{fmt}") for fmt in ("jsonl", "csv", "parquet")}
    block, start, written = 50_000, 0, 0
    writer = None
    with open(paths["jsonl"], "w") as fj, open(paths["csv"], "wb") as fc:
        while written < size:
            t = make_rows(block, start)
            start += block
            fj.writelines(json.dumps(r) + "\n" for r in t.to_pylist())
            opts = pacsv.WriteOptions(include_header=writer is None)
            pacsv.write_csv(t, fc, opts)
            if writer is None:
                writer = pq.ParquetWriter(paths["parquet"], t.schema)
            writer.write_table(t)
            written = fj.tell()
    assert writer is not None
    writer.close()
    return paths


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(
    lib: str, builder: str, path: str, env: dict[str, str], kwargs: dict, cwd: str | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, all threads) of one load in a fresh process.

    ``cwd``: the checkout whose ``arrowmix`` is imported (``-c`` puts it first on the path).
    """
    code = LOAD.format(lib=lib, builder=builder, path=path, kwargs=kwargs)
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, cwd=cwd)
    return time.perf_counter() - t0, _children_cpu() - c0


_Times = dict[tuple[str, str], list[tuple[float, float]]]


def _med(times: _Times, run: str, label: str) -> list[float]:
    """Median wall and CPU seconds of one cell."""
    return [statistics.median(x) for x in zip(*times[(run, label)], strict=True)]


def main() -> None:
    ap = base_parser(
        __doc__,
        rows=None,
        quick="smoke run: files of 8 MB",
        workdir="/tmp/bench_load",
        workdir_flags=("--dir", "--workdir"),
        repeats=1,
        seed=False,
    )
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--formats", default="jsonl,csv,parquet")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--baseline",
        help="a checkout of arrowmix (e.g. main) also timed, in turn with this one and HF",
    )
    ap.add_argument(
        "--files", action="store_true", help="reuse the data files of an earlier --keep run"
    )
    args = ap.parse_args()
    args.dir = args.workdir
    if args.quick:
        args.size_mb = 8
    print(f"# {machine_summary()}")
    os.makedirs(args.dir, exist_ok=True)
    try:
        if args.files:
            paths = {f: os.path.join(args.dir, f"data.{f}") for f in ("jsonl", "csv", "parquet")}
        else:
            paths = make_files(args.dir, args.size_mb * 2**20)
        sizes = ", ".join(f"{k} {os.path.getsize(p) / 2**20:.0f} MB" for k, p in paths.items())
        print(f"files: {sizes}", flush=True)
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        # bytecode of both libraries compiled once, as in an installed environment
        base["PYTHONPYCACHEPREFIX"] = os.path.join(args.dir, "pycache")
        subprocess.run([sys.executable, "-c", "import arrowmix, datasets"], env=base, check=True)
        builders = {"jsonl": "json", "csv": "csv", "parquet": "parquet"}
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # (label, library, checkout): run in this order, in turn, for each cell
        libs = [("arrowmix", "arrowmix", here)]
        if args.baseline:
            libs.append(("baseline", "arrowmix", os.path.abspath(args.baseline)))
        libs.append(("datasets", "datasets", here))
        head = ["format", "run", "arrowmix s", "datasets s", "arrowmix / datasets"]
        head += ["CPU s (arrowmix; datasets)", "CPU ratio"]
        if args.baseline:
            head += ["baseline s", "baseline / datasets", "arrowmix / baseline", "baseline CPU s"]
        print_markdown(head, [])
        for fmt in args.formats.split(","):
            times: _Times = {}
            for _ in range(args.repeats):
                envs = {
                    label: {
                        **base,
                        "ARROWMIX_CACHE": os.path.join(args.dir, f"am-{label}-{fmt}"),
                        "HF_DATASETS_CACHE": os.path.join(args.dir, f"hf-{fmt}"),
                        "HF_DATASETS_OFFLINE": "1",
                        "HF_HUB_OFFLINE": "1",
                    }
                    for label, _, _ in libs
                }
                for env in envs.values():
                    for cache in (env["ARROWMIX_CACHE"], env["HF_DATASETS_CACHE"]):
                        shutil.rmtree(cache, ignore_errors=True)
                for run_label in ("first", "rerun"):
                    for label, lib, cwd in libs:
                        t = run(lib, builders[fmt], paths[fmt], envs[label], {}, cwd)
                        times.setdefault((run_label, label), []).append(t)
            for run_label in ("first", "rerun"):
                ours = _med(times, run_label, "arrowmix")
                theirs = _med(times, run_label, "datasets")
                cells = [fmt, run_label, f"{ours[0]:.2f}", f"{theirs[0]:.2f}"]
                cells += [f"{ours[0] / theirs[0]:.2f}x", f"{ours[1]:.1f}; {theirs[1]:.1f}"]
                cells += [f"{ours[1] / theirs[1]:.2f}x"]
                if args.baseline:
                    b = _med(times, run_label, "baseline")
                    cells += [f"{b[0]:.2f}", f"{b[0] / theirs[0]:.2f}x", f"{ours[0] / b[0]:.2f}x"]
                    cells += [f"{b[1]:.1f}"]
                print(markdown_row(cells), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
