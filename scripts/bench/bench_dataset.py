"""arrowmix.Dataset against HuggingFace ``datasets``, side by side in one run.

Both libraries read the same ~1M-row ``{"id", "text"}`` corpus (~300 MB of text, lognormal row
lengths; see ``bench_common.make_text_table``), each from its own on-disk Arrow form, written once:

- arrowmix: ``write_chunks`` + ``Dataset.from_chunks`` (memory-mapped Arrow IPC chunk files);
- datasets: ``Dataset.from_dict`` + ``save_to_disk`` + ``load_from_disk`` (memory-mapped).

Every measurement runs the cases round-robin (arrowmix, datasets, arrowmix, datasets, ...) and
reports medians, absolute and as a ratio arrowmix / datasets, then checks the targets.

Usage (from the repository root; peers come with ``pip install -e '.[bench]'``)::

    python scripts/bench/bench_dataset.py                 # 1M rows, ~3 minutes on 2 cores
    python scripts/bench/bench_dataset.py --quick         # 100k rows, smoke run
    python scripts/bench/bench_dataset.py --workdir /tmp/amb   # keep the data for the next run
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_common import (
    QUICK_ROWS,
    Row,
    Target,
    base_parser,
    current_rss_mb,
    fmt_rate,
    fmt_seconds,
    interleaved,
    machine_summary,
    make_text_table,
    peak_rss_mb,
    print_table,
    print_targets,
    rows_from_args,
    workdir_from_args,
)

BATCH = 1000
SMALL_ROWS = QUICK_ROWS  # the second corpus size for the O(1) open check
ITER_ROWS = 200_000  # rows of the `for row in ds` measurement (datasets does ~70 k rows/s)


def log(msg: str) -> None:
    total, anon = current_rss_mb()
    print(
        f"[{time.strftime('%H:%M:%S')}] {msg} (RSS {total:.0f} MiB, anon {anon:.0f} MiB)",
        file=sys.stderr,
        flush=True,
    )


# ---- data ---------------------------------------------------------------------------------


def prepare(workdir: Path, rows: int, seed: int, files: int | None = None) -> tuple[Path, Path]:
    """Write the corpus once for each library (reused when ``workdir`` already holds it).

    arrowmix gets its default chunking, or ``files`` chunk files when given (so corpora of
    different sizes can be compared at an equal file count).
    """
    import datasets

    import arrowmix as am

    tag = f"{rows}-s{seed}" + (f"-{files}f" if files else "")
    am_dir, hf_dir = workdir / f"am-{tag}", workdir / f"hf-{tag}"
    done = workdir / f"done-{tag}"
    if not done.exists():
        log(f"generating {rows:,} rows")
        table = make_text_table(rows, seed)
        log(f"writing arrowmix chunks ({table.nbytes / 2**20:.0f} MiB) to {am_dir}")
        per_chunk = -(-rows // files) if files else None
        am.write_chunks(table, am_dir, rows_per_chunk=per_chunk, overwrite=True)
        log(f"writing datasets save_to_disk to {hf_dir}")
        hf = datasets.Dataset.from_dict({"id": table["id"], "text": table["text"]})
        hf.save_to_disk(str(hf_dir))
        del table, hf
        gc.collect()
        done.touch()
    for d in (am_dir, hf_dir):  # derived files of earlier runs: every run starts cold
        for f in d.iterdir():
            if f.name.startswith(("cache-", "indices-")):
                f.unlink()
    return am_dir, hf_dir


def one_batch_copy(workdir: Path, am_dir: Path) -> Path:
    """The same chunk files rewritten with one record batch each (plain pyarrow)."""
    import pyarrow as pa

    out = workdir / f"{am_dir.name}-1batch"
    if not (out / "done").exists():
        out.mkdir(exist_ok=True)
        for f in sorted(am_dir.glob("chunk-*.arrow")):
            with pa.memory_map(str(f)) as src:
                table = pa.ipc.open_file(src).read_all().combine_chunks()
            # A foreign copy: without write_chunks' chunk marker (its manifest is not copied).
            table = table.replace_schema_metadata(None)
            with pa.ipc.new_file(str(out / f.name), table.schema) as w:
                w.write_table(table, max_chunksize=table.num_rows)
            del table
        (out / "done").touch()
    for f in out.glob("indices-*.arrow"):
        f.unlink()
    return out


def remove_derived(*datasets_: Any) -> None:
    """Delete the cache/indices files a dataset added beside its data, so the next call computes."""
    for ds in datasets_:
        for f in ds.cache_files:
            path = f["filename"] if isinstance(f, dict) else f
            if os.path.basename(path).startswith(("cache-", "indices-")) and os.path.exists(path):
                os.unlink(path)


# ---- measurements -------------------------------------------------------------------------


def read_all(ds: Any, expected: int) -> Callable[[], None]:
    """Read every row in batches of ``BATCH`` as Python lists."""

    def run() -> None:
        n = 0
        for batch in ds.iter(batch_size=BATCH):
            n += len(batch["text"])
        assert n == expected, (n, expected)

    return run


def get_rows(ds: Any, positions: np.ndarray) -> Callable[[], None]:
    """``ds[i]`` for each random ``i``."""
    idx = positions.tolist()

    def run() -> None:
        for i in idx:
            ds[i]

    return run


def iterate_rows(ds: Any, expected: int) -> Callable[[], None]:
    def run() -> None:
        n = 0
        for _row in ds:
            n += 1
        assert n == expected, (n, expected)

    return run


def import_time(module: str) -> Callable[[], None]:
    """A fresh interpreter importing ``module`` (the bare start is measured apart)."""
    cmd = [sys.executable, "-c", f"import {module}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def run() -> None:
        subprocess.run(cmd, check=True, env=env)

    return run


def main() -> int:
    args = base_parser(__doc__.splitlines()[0]).parse_args()
    rows = rows_from_args(args)
    repeats = args.repeats or (3 if args.quick else 5)
    with workdir_from_args(args, "bench-dataset-") as workdir:
        os.environ.setdefault("HF_HOME", str(workdir / "hf-home"))
        os.environ.setdefault("HF_DATASETS_CACHE", str(workdir / "hf-cache"))
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        os.environ.setdefault("ARROWMIX_CACHE", str(workdir / "arrowmix-cache"))
        return run(args, workdir, rows, repeats)


def run(args: Any, workdir: Path, rows: int, repeats: int) -> int:
    import datasets

    import arrowmix as am

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    print(f"# bench_dataset: {rows:,} rows, {repeats} repeats, {machine_summary()}")
    print(f"# arrowmix {am.__version__}, datasets {datasets.__version__}, workdir {workdir}")
    print(f"# command: {' '.join([os.path.basename(sys.executable), *sys.argv])}\n")

    am_dir, hf_dir = prepare(workdir, rows, args.seed)
    small = min(SMALL_ROWS, rows)
    n_files = len(list(am_dir.glob("chunk-*.arrow")))
    am_small, hf_small = (
        prepare(workdir, small, args.seed, files=n_files) if small < rows else (am_dir, hf_dir)
    )
    size_mb = sum(f.stat().st_size for f in am_dir.iterdir()) / 2**20
    table: list[Row] = []
    targets: list[Target] = []

    # -- import ------------------------------------------------------------------------------
    log("import (fresh interpreters)")
    t = interleaved(
        {"none": import_time("sys"), "am": import_time("arrowmix"), "hf": import_time("datasets")},
        repeats,
        cpu=False,
    )
    base = t["none"].median
    for k in ("am", "hf"):
        t[k].samples = [max(s - base, 0.0) for s in t[k].samples]
    table.append(Row("`import` (minus interpreter start)", t["am"], t["hf"], kind="time"))

    # -- open ---------------------------------------------------------------------------------
    log("open")
    t = interleaved(
        {
            "am": lambda: am.Dataset.from_chunks(str(am_dir)),
            "hf": lambda: datasets.load_from_disk(str(hf_dir)),
            "am_small": lambda: am.Dataset.from_chunks(str(am_small)),
            "hf_small": lambda: datasets.load_from_disk(str(hf_small)),
        },
        repeats * 3,
        warmup=1,
        verbose=False,
    )
    table.append(
        Row(
            f"open {rows:,} rows ({size_mb:.0f} MB, {n_files} chunk file(s))",
            t["am"],
            t["hf"],
            "time",
            "< 50 ms",
            t["am"].median < 0.05,
        )
    )
    if small < rows:
        table.append(
            Row(
                f"open {small:,} rows ({n_files} chunk file(s))",
                t["am_small"],
                t["hf_small"],
                "time",
            )
        )
        growth = t["am"].median / t["am_small"].median
        targets.append(
            Target(
                f"open is O(1): open({rows:,}) / open({small:,}) rows",
                growth,
                f"{growth:.2f}x ({rows // small}x the rows)",
                "<=",
                2.0,
            )
        )
    targets.append(
        Target(
            f"open {rows:,} rows < 50 ms", t["am"].median, fmt_seconds(t["am"].median), "<=", 0.05
        )
    )

    a, h = am.Dataset.from_chunks(str(am_dir)), datasets.load_from_disk(str(hf_dir))
    assert len(a) == len(h) == rows
    assert a[rows // 2] == h[rows // 2], "the two corpora differ"

    # -- shuffle (building the mapping) ---------------------------------------------------------
    log("shuffle(seed)")
    holder: dict[str, Any] = {}

    def shuffle(name: str, ds: Any) -> Callable[[], None]:
        def go() -> None:
            holder[name] = ds.shuffle(seed=0)

        return go

    t = interleaved(
        {"am": shuffle("am", a), "hf": shuffle("hf", h)},
        repeats,
        before_each=lambda name: remove_derived(*([holder[name]] if name in holder else [])),
        verbose=False,
    )
    table.append(Row("`shuffle(seed=0)` (build the mapping)", t["am"], t["hf"], "time"))
    a_shuf, h_shuf = a.shuffle(seed=0), h.shuffle(seed=0)
    a1_shuf = am.Dataset.from_chunks(str(one_batch_copy(workdir, am_dir))).shuffle(seed=0)

    # -- batched reads --------------------------------------------------------------------------
    log(f"read all rows in batches of {BATCH}")
    t = interleaved(
        {
            "am": read_all(a, rows),
            "hf": read_all(h, rows),
            "am_shuf": read_all(a_shuf, rows),
            "hf_shuf": read_all(h_shuf, rows),
            "am1_shuf": read_all(a1_shuf, rows),
        },
        repeats,
        work=rows,
    )
    shuf_vs_peer = t["am_shuf"].rate / t["hf_shuf"].rate
    shuf_vs_own = t["am_shuf"].rate / t["am"].rate
    peer_cpu = t["hf_shuf"].cpu_median / t["am_shuf"].cpu_median
    own_cpu = t["am"].cpu_median / t["am_shuf"].cpu_median
    table.append(Row(f"read, batches of {BATCH}, unshuffled", t["am"], t["hf"]))
    table.append(
        Row(
            f"read, batches of {BATCH}, through `shuffle(seed)`",
            t["am_shuf"],
            t["hf_shuf"],
            target=">= 5x datasets",
            passed=shuf_vs_peer >= 5,
        )
    )
    table.append(
        Row(
            "same, arrowmix over the chunk files rewritten as 1 record batch each",
            t["am1_shuf"],
            t["hf_shuf"],
        )
    )
    targets.append(
        Target(
            "shuffled read >= 5x datasets' shuffled read",
            shuf_vs_peer,
            f"{shuf_vs_peer:.2f}x (CPU time: {peer_cpu:.2f}x)",
            ">=",
            5.0,
        )
    )
    targets.append(
        Target(
            "shuffled read within 2x of arrowmix's unshuffled read",
            shuf_vs_own,
            f"{shuf_vs_own:.2f} of unshuffled (CPU time: {own_cpu:.2f}) "
            f"({fmt_rate(t['am_shuf'].rate)} vs {fmt_rate(t['am'].rate)})",
            ">=",
            0.5,
        )
    )
    hf_own = t["hf_shuf"].rate / t["hf"].rate
    print(f"# datasets' shuffled read is {hf_own:.3f} of its unshuffled read", file=sys.stderr)

    # -- random single rows ---------------------------------------------------------------------
    n_get = 5_000 if rows <= SMALL_ROWS else 20_000
    pos = np.random.default_rng(1).integers(0, rows, size=n_get)
    log(f"ds[i] for {n_get:,} random i")
    t = interleaved(
        {
            "am": get_rows(a, pos),
            "hf": get_rows(h, pos),
            "am_shuf": get_rows(a_shuf, pos),
            "hf_shuf": get_rows(h_shuf, pos),
        },
        repeats,
        work=n_get,
    )
    get_ratio = t["am"].rate / t["hf"].rate
    get_cpu = t["hf"].cpu_median / t["am"].cpu_median
    table.append(
        Row("`ds[i]`, random i", t["am"], t["hf"], target=">= datasets", passed=get_ratio >= 1)
    )
    table.append(Row("`ds[i]`, random i, shuffled view", t["am_shuf"], t["hf_shuf"]))
    targets.append(
        Target(
            "`ds[i]` random rows/s >= datasets'",
            get_ratio,
            f"{get_ratio:.2f}x (CPU time: {get_cpu:.2f}x)",
            ">=",
            1.0,
        )
    )

    # -- for row in ds --------------------------------------------------------------------------
    n_iter = min(rows, ITER_ROWS)
    log(f"for row in ds ({n_iter:,} rows)")
    a_sub, h_sub = a.select(range(n_iter)), h.select(range(n_iter))
    t = interleaved(
        {"am": iterate_rows(a_sub, n_iter), "hf": iterate_rows(h_sub, n_iter)},
        max(3, repeats - 2),
        work=n_iter,
    )
    table.append(Row(f"`for row in ds` (first {n_iter:,} rows)", t["am"], t["hf"]))

    # -- flatten_indices ------------------------------------------------------------------------
    log("flatten_indices of the shuffled view")
    flat: dict[str, Any] = {}

    def flatten(name: str, ds: Any) -> Callable[[], None]:
        def go() -> None:
            flat[name] = ds.flatten_indices()

        return go

    t = interleaved(
        {"am": flatten("am", a_shuf), "hf": flatten("hf", h_shuf)},
        min(repeats, 3),
        before_each=lambda name: remove_derived(*([flat.pop(name)] if name in flat else [])),
    )
    table.append(
        Row(f"`flatten_indices()` of a shuffled {rows:,}-row view", t["am"], t["hf"], "time")
    )
    check = np.random.default_rng(2).integers(0, rows, size=100).tolist()
    assert flat["am"][check] == a_shuf[check], "flatten_indices changed the rows"
    assert flat["hf"][check] == h_shuf[check]
    remove_derived(flat["am"], flat["hf"], a_shuf, h_shuf, a1_shuf)

    log("done")
    print(f"\n## Dataset: {rows:,} rows, medians of {repeats} interleaved runs\n")
    print_table(table)
    print()
    print_targets(targets)
    print(
        f"\nPeak RSS of the whole run (both libraries, data generation included): "
        f"{peak_rss_mb():.0f} MiB"
    )
    return 0 if all(t.met for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
