"""Pickling a memory-mapped Dataset: by reference (now) against by value (before).

Writes the ~1M-row ``{"id", "text"}`` corpus (~300 MB, ``bench_common.make_text_table``) as
chunk files, then for several views reports the pickle size and the time of ``dumps`` and
``loads``. "By value" is what a Dataset pickled before it had ``__reduce__``: the default
object pickling, which copies the table's every byte (emulated by removing the method).
Finally the map engine's spawn path (``num_proc=2`` where fork is unavailable) is timed both
ways, with the size of the job it ships to the workers.

Usage (from the repository root)::

    python scripts/bench/bench_pickle.py            # 1M rows, about a minute
    python scripts/bench/bench_pickle.py --quick    # 100k rows
"""

from __future__ import annotations

import contextlib
import pickle
import time
from typing import Any

from bench_common import (
    base_parser,
    make_text_table,
    rows_from_args,
    without_method,
    workdir_from_args,
)

import arrowmix as am
from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.mapping import local as workers


def by_value() -> contextlib.AbstractContextManager[None]:
    """Pickle datasets as before: the default reduction, with the table's data."""
    return without_method(Dataset, "__reduce__")


def measure(ds: Any) -> tuple[int, float, float]:
    t0 = time.perf_counter()
    data = pickle.dumps(ds)
    t1 = time.perf_counter()
    again = pickle.loads(data)
    t2 = time.perf_counter()
    assert len(again) == len(ds)
    return len(data), t1 - t0, t2 - t1


def spawn_map(ds: Any) -> tuple[float, int]:
    """Wall time of a 2-process map on the spawn path, and the size of the shipped job."""
    import dill

    sizes: list[int] = []
    dumps = dill.dumps

    def measured(*args: Any, **kwargs: Any) -> bytes:
        out: bytes = dumps(*args, **kwargs)
        sizes.append(len(out))
        return out

    methods = workers.mp.get_all_start_methods
    workers.mp.get_all_start_methods = lambda: ["spawn"]  # type: ignore[assignment]
    dill.dumps = measured
    try:
        t0 = time.perf_counter()
        ds.map(
            lambda b: {"n": [len(t) for t in b["text"]]},
            batched=True,
            num_proc=2,
            load_from_cache_file=False,
        )
        return time.perf_counter() - t0, sizes[0]
    finally:
        workers.mp.get_all_start_methods = methods  # type: ignore[assignment]
        dill.dumps = dumps


def main() -> None:
    args = base_parser(__doc__ or "").parse_args()
    rows = rows_from_args(args)
    with workdir_from_args(args, "bench-pickle") as work:
        chunks = work / "chunks"
        if not chunks.exists():
            am.write_chunks(make_text_table(rows, args.seed), chunks, rows_per_chunk=50_000)
        ds = am.Dataset.from_chunks(str(chunks))
        disk = sum(p.stat().st_size for p in chunks.iterdir())
        print(f"{rows:,} rows, {len(ds.cache_files)} chunk files, {disk / 2**20:.0f} MiB on disk")
        mapped = ds.map(lambda b: {"n": [len(t) for t in b["text"]]}, batched=True)
        views = {
            "chunks": ds,
            "shuffle (indices file)": ds.shuffle(seed=0),
            "select 50k + shuffle (array)": ds.select(range(50_000)).shuffle(seed=0),
            "map reusing parent columns": mapped,
            "select_columns + rename": ds.select_columns(["text"]).rename_column("text", "t"),
            'with_format("numpy")': ds.with_format("numpy"),
        }
        print("| view | by reference | dumps | loads | by value | dumps | loads |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, view in views.items():
            ref = measure(view)
            with by_value():
                val = measure(view)
            cells = [f"{ref[0]:,} B", f"{ref[1] * 1e3:.1f} ms", f"{ref[2] * 1e3:.1f} ms"]
            cells += [f"{val[0] / 2**20:.1f} MiB", f"{val[1]:.2f} s", f"{val[2]:.2f} s"]
            print(f"| {name} | " + " | ".join(cells) + " |")
        wall, size = spawn_map(ds)
        with by_value():
            wall_v, size_v = spawn_map(ds)
        print(f"map, num_proc=2, spawn: job {size:,} B, {wall:.1f} s by reference; ")
        print(f"                        job {size_v / 2**20:.1f} MiB, {wall_v:.1f} s by value")


if __name__ == "__main__":
    main()
