"""Peak memory and time of ``shuffle`` and ``filter``, first run and cached rerun, at any size.

Usage (from the repository root; one fresh process per step, as a training script would be):

    python scripts/bench/bench_view_memory.py --rows 140000000 --dir /tmp/views
    python scripts/bench/bench_view_memory.py --rows 140000000 --dir /tmp/views --baseline ../main
    python scripts/bench/bench_view_memory.py --quick   # 200,000 rows
    python scripts/bench/bench_view_memory.py --rows 140000000 --dir /tmp/views \
        --baseline ../main --steps shuffle --runs first   # the first shuffle only

The corpus is one ``int8`` column (``rows`` bytes), so a large row count fits any disk; what
is measured is the 8 bytes a row of the views' mappings. Each step prints seconds, disk bytes
read (``/proc/self/io``), ``ru_maxrss`` and the peaks of the anonymous and file-backed parts of
the resident set (``RssAnon``/``RssFile`` sampled every 5 ms): file-backed pages are page
cache the kernel can write back and drop; anonymous pages are the process's own.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from bench_common import base_parser, machine_summary, peak_rss_mb, read_bytes, run_fresh, status_mb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _peaks() -> dict[str, int]:
    peak = {"RssAnon": 0, "RssFile": 0}

    def sample() -> None:
        while True:
            for k, v in status_mb(*peak).items():
                peak[k] = max(peak[k], int(v))
            time.sleep(0.005)

    threading.Thread(target=sample, daemon=True).start()
    return peak


def keep(batch):
    import numpy as np

    return np.asarray(batch["v"]) % 2 == 0


def child(root: str, step: str, corpus: str, cache: str, rows: int) -> dict:
    sys.path.insert(0, root)
    import numpy as np
    import pyarrow as pa

    import arrowmix as am

    if step == "make":

        def batches():
            for lo in range(0, rows, 5_000_000):
                v = np.arange(lo, min(rows, lo + 5_000_000), dtype=np.int64) % 100
                yield pa.record_batch({"v": pa.array(v.astype(np.int8))})

        am.write_chunks(batches(), corpus, rows_per_chunk=10_000_000)
        return {}
    peak = _peaks()
    ds = am.Dataset.from_chunks(corpus, cache_dir=cache)
    r0, t = read_bytes(), time.perf_counter()
    if step == "shuffle":
        out = ds.shuffle(seed=42)
    else:
        out = ds.with_format("numpy").filter(keep, batched=True, batch_size=100_000)
    _ = out[len(out) // 2]
    return {
        "s": round(time.perf_counter() - t, 2),
        "rows": len(out),
        "read_mb": (read_bytes() - r0) >> 20,
        "maxrss_mb": int(peak_rss_mb()),
        "peak_anon_mb": peak["RssAnon"],
        "peak_file_mb": peak["RssFile"],
    }


def main() -> None:
    p = base_parser(
        __doc__,
        rows=10_000_000,
        quick="smoke run: 200,000 rows",
        workdir=os.path.join("/tmp", "arrowmix-view-memory"),
        workdir_flags=("--dir", "--workdir"),
        repeats_flags=(),
        seed=False,
        child=5,
    )
    p.add_argument("--baseline", help="another checkout, run in the same rounds")
    p.add_argument("--steps", default="shuffle,filter", help="of shuffle,filter")
    p.add_argument("--runs", default="first,rerun", help="of first,rerun")
    args = p.parse_args()
    if args.child:
        root, step, corpus, cache, rows = args.child
        print(json.dumps(child(root, step, corpus, cache, int(rows))))
        return
    args.dir = args.workdir
    if args.quick:
        args.rows = 200_000
    corpus = os.path.join(args.dir, f"corpus-{args.rows}")
    roots = {
        "arrowmix": ROOT,
        **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {}),
    }

    def run(root: str, step: str, cache: str) -> dict:
        argv = ["--child", root, step, corpus, cache, str(args.rows)]
        return run_fresh(
            __file__, argv, env={"ARROWMIX_PROGRESS": "0", "PYTHONDONTWRITEBYTECODE": ""}
        )

    print(f"# {machine_summary()}")
    if not os.path.isdir(corpus):
        run(ROOT, "make", "")
    for step in args.steps.split(","):
        for attempt in args.runs.split(","):
            for name, root in roots.items():
                cache = os.path.join(args.dir, f"cache-{name}")
                print(
                    json.dumps(
                        {"step": step, "run": attempt, "lib": name, **run(root, step, cache)}
                    )
                )


if __name__ == "__main__":
    main()
