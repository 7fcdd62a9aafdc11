"""What the per-read work costs on the hot read paths: checks of token files, the resident gauge.

Every read of a Megatron or numpy token file ``stat``-s the files it reads first
(``arrowmix/_storage/in_place.py``), and every gather, slice and token gather of a mapped
file counts its bytes for the resident gauge (``arrowmix/_storage/resident.py``). This
times, per storage (arrowmix chunks, and the same rows as a Megatron ``.bin``/``.idx``
pair), in fresh processes (imports and the open excluded), best of 3 within a process:

- ``ds[i]``: 20,000 random rows, us per row;
- ``ds[i:i+8]``: 20,000 slices of 8 rows, us per slice;
- ``select``: ``ds.select(pos)[:]`` of 1,024 random rows, ms per gather;
- ``iterate``: ``for row in ds.select(range(50_000))``, us per row;
- stream A: ``to_stream(shuffle="global").budget_bucket("input_ids", 16384,
  read_ahead=8192).collate()``, seconds per epoch;
- stream B: ``to_stream(shuffle="global").pack("input_ids", 2048, batch_size=8,
  read_ahead=8192)``, seconds per epoch.

``--baseline DIR`` (repeatable) runs other checkouts' arrowmix in the same rounds, the trees
alternated within each round. Medians of ``--repeat`` rounds, with the load average.

Corpus: ``--docs`` documents of int32 ids, lognormal lengths (median 200, sigma 1, clipped to
``[1, 4096]``): ~65 M tokens for 200k documents, written once under ``--dir``.

Usage (from the repository root)::

    python scripts/bench/bench_read_checks.py --baseline ../main --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ("chunks", "megatron")
MEASURES = (
    ("getitem_us", "`ds[i]` (us/row)"),
    ("slice8_us", "`ds[i:i+8]` (us/slice)"),
    ("select_ms", "`select` 1,024 rows `[:]` (ms)"),
    ("iterate_us", "`for row in ds.select(range(50_000))` (us/row)"),
    ("stream_a_s", "stream A: budget_bucket -> collate (s/epoch)"),
    ("stream_b_s", "stream B: pack 8 x 2048 (s/epoch)"),
)


def build(directory: str, docs: int) -> None:
    """The corpus as arrowmix chunks and as a Megatron pair (skipped when present)."""
    import pyarrow as pa

    import arrowmix as am

    if os.path.exists(os.path.join(directory, f"done-{docs}")):
        return
    rng = np.random.default_rng(0)
    lengths = np.clip(np.rint(rng.lognormal(np.log(200), 1.0, docs)), 1, 4096).astype(np.int64)
    offsets = np.zeros(docs + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = rng.integers(0, 32000, int(offsets[-1]), dtype=np.int32)
    column = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(ids))
    chunks = os.path.join(directory, f"chunks-{docs}")
    am.write_chunks(pa.table({"input_ids": column}), chunks, overwrite=True)
    am.Dataset.from_chunks(chunks).to_megatron(os.path.join(directory, f"megatron-{docs}"))
    Path(directory, f"done-{docs}").touch()


def _best(fn: Callable[[], Any], reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_case(kind: str, directory: str, docs: int) -> dict[str, Any]:
    """Every measure of ``kind``, in this process."""
    import arrowmix as am

    warnings.simplefilter("ignore")  # pack drops each epoch's tail
    if kind == "chunks":
        ds = am.Dataset.from_chunks(os.path.join(directory, f"chunks-{docs}"))
    else:
        ds = am.Dataset.from_megatron(os.path.join(directory, f"megatron-{docs}"))
    n = len(ds)
    rows = np.random.default_rng(1).integers(0, n, 20_000).tolist()
    starts = range(0, min(20_000 * 8, n - 8), 8)
    gather = np.random.default_rng(2).integers(0, n, 1024)

    def getitem() -> None:
        for i in rows:
            ds[i]

    def slices() -> None:
        for i in starts:
            ds[i : i + 8]

    def select() -> None:
        for _ in range(50):
            ds.select(gather)[:]

    def iterate() -> None:
        for _ in ds.select(range(min(50_000, n))):
            pass

    def stream_a() -> None:
        stream = ds.to_stream(shuffle="global", seed=0, infinite=False)
        for _ in stream.budget_bucket("input_ids", 16384, read_ahead=8192).collate():
            pass

    def stream_b() -> None:
        stream = ds.to_stream(shuffle="global", seed=0, infinite=False)
        for _ in stream.pack("input_ids", 2048, batch_size=8, read_ahead=8192):
            pass

    return {
        "arrowmix": os.path.abspath(am.__file__),
        "getitem_us": _best(getitem) / len(rows) * 1e6,
        "slice8_us": _best(slices) / len(starts) * 1e6,
        "select_ms": _best(select) / 50 * 1e3,
        "iterate_us": _best(iterate, 2) / min(50_000, n) * 1e6,
        "stream_a_s": _best(stream_a),
        "stream_b_s": _best(stream_b),
    }


def _one(tree: str, kind: str, directory: str, docs: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": tree}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_read_checks as b; "
        "print(json.dumps(b.run_case(sys.argv[2], sys.argv[3], int(sys.argv[4]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(  # run in the tree: ``-c`` puts the working directory first
        [sys.executable, "-c", code, here, kind, directory, str(docs)],
        env=env, cwd=tree, check=True, capture_output=True, text=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not result.pop("arrowmix").startswith(os.path.abspath(tree) + os.sep):
        raise RuntimeError(f"the child did not import the arrowmix of {tree}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "bench-read-checks"))
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", action="append", default=[], help="another checkout")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    sys.path.insert(0, ROOT)
    build(args.dir, args.docs)
    trees = {"this": ROOT, **{os.path.basename(os.path.abspath(b)): b for b in args.baseline}}
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    loads = []
    for r in range(args.repeat):
        order = list(trees.items())
        order = order[r % len(order) :] + order[: r % len(order)]  # who runs first rotates
        for kind in args.kinds.split(","):
            for name, tree in order:
                loads.append(os.getloadavg()[0])
                got.setdefault((kind, name), []).append(_one(tree, kind, args.dir, args.docs))
    print(
        f"{args.docs:,} documents; medians of {args.repeat} rounds; load average "
        f"{min(loads):.1f}-{max(loads):.1f}\n"
    )
    print("| storage | measure | " + " | ".join(trees) + " |")
    print("| --- | --- |" + " ---: |" * len(trees))
    for kind in args.kinds.split(","):
        for key, label in MEASURES:
            cells = [statistics.median(x[key] for x in got[kind, t]) for t in trees]
            print(f"| {kind} | {label} | " + " | ".join(f"{c:.3g}" for c in cells) + " |")


if __name__ == "__main__":
    main()
