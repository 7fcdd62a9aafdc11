"""``save_to_disk`` / ``load_from_disk`` time, and the same against another checkout, interleaved.

One run (in this process, the arrowmix found first on ``sys.path``) reports medians of
``--repeat`` timings:

- ``save``: a ~``--mb`` MB dataset (token lists and text) saved to a new directory, 4 shards;
- ``re-save``: saved over the previous save while a dataset loaded from it, and a map
  result beside its files, are held (what a re-save moves along is looked for);
- ``load``: ``load_from_disk`` of that save, files in the page cache (median of 20);
- ``rerun``: ``load_from_disk`` and a cached ``map`` (a hit, its result beside the data
  files) and a read of its first row, as a rerun of a script does (median of 20);
- ``load dict``: ``load_from_disk`` of a 3-split DatasetDict save (median of 20).

``--compare ROOT`` runs this script alternately with ``PYTHONPATH`` set to this repository
and to ``ROOT`` (another checkout, e.g. a worktree of ``main``), ``--rounds`` times each, and
prints the median of each measure per checkout and their ratio.

Usage (from the repository root)::

    python scripts/bench/bench_save.py
    python scripts/bench/bench_save.py --compare /path/to/main-checkout --rounds 5
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
from collections.abc import Callable
from pathlib import Path

from bench_common import timed

ROOT = Path(__file__).resolve().parents[2]


def _median(fn: Callable[[], object], n: int) -> float:
    return statistics.median(timed(fn)[0] for _ in range(n))


def _lengths(batch: dict[str, list[object]]) -> dict[str, list[int]]:
    return {"n": [len(x) for x in batch["ids"]]}  # type: ignore[arg-type]


def _rerun(target: str) -> object:
    """A script's rerun over a save: load it, map (a cache hit), read the first row."""
    import arrowmix as am

    return am.load_from_disk(target).map(_lengths, batched=True)[0]


def run(mb: int, repeat: int) -> dict[str, float]:
    """The medians of one checkout, in seconds."""
    import numpy as np

    import arrowmix as am

    rows = mb * 2**20 // 600
    rng = np.random.default_rng(0)
    ds = am.Dataset.from_dict(
        {
            "ids": list(rng.integers(0, 50_000, size=(rows, 128), dtype=np.int32)),
            "text": [f"document {i} " * 4 for i in range(rows)],
        }
    )
    small = ds.select(range(1000))
    dd = am.DatasetDict({"train": small, "valid": small, "test": small})
    out: dict[str, list[float]] = {
        "save": [],
        "re-save": [],
        "load": [],
        "rerun": [],
        "load dict": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-save-") as tmp:
        for i in range(repeat):
            target = os.path.join(tmp, f"s{i}")
            t = time.perf_counter()
            ds.save_to_disk(target, num_shards=4)
            out["save"].append(time.perf_counter() - t)
            out["load"].append(_median(lambda d=target: am.load_from_disk(d), 20))
            _rerun(target)  # computes and stores the map's result
            out["rerun"].append(_median(lambda d=target: _rerun(d), 20))
            held = am.load_from_disk(target)
            mapped = held.select(range(100)).map(lambda r: {"n": len(r["ids"])})
            t = time.perf_counter()
            ds.save_to_disk(target, num_shards=4)
            out["re-save"].append(time.perf_counter() - t)
            del held, mapped
            dict_dir = os.path.join(tmp, f"d{i}")
            dd.save_to_disk(dict_dir)
            out["load dict"].append(_median(lambda d=dict_dir: am.load_from_disk(d), 20))
    return {k: statistics.median(v) for k, v in out.items()}


def compare(other: str, rounds: int, mb: int, repeat: int) -> None:
    sides = {"this": str(ROOT), "other": os.path.abspath(other)}
    got: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
    for _ in range(rounds):
        for side, root in sides.items():  # interleaved: the machine's noise hits both
            env = dict(os.environ, PYTHONPATH=root)
            cmd = [sys.executable, __file__, "--mb", str(mb), "--repeat", str(repeat), "--json"]
            res = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, check=True)
            got[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"{'measure':<10} {'this':>10} {'other':>10} {'this/other':>11}")
    for key in got["this"][0]:
        a = statistics.median(r[key] for r in got["this"])
        b = statistics.median(r[key] for r in got["other"])
        print(f"{key:<10} {a * 1e3:>8.2f}ms {b * 1e3:>8.2f}ms {a / b:>10.3f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--mb", type=int, default=64, help="dataset size in MB (default 64)")
    p.add_argument("--repeat", type=int, default=3, help="saves per run (default 3)")
    p.add_argument("--compare", metavar="ROOT", help="another checkout to compare with")
    p.add_argument("--rounds", type=int, default=5, help="runs per checkout with --compare")
    p.add_argument("--json", action="store_true", help="print the medians as one JSON line")
    args = p.parse_args()
    if args.compare:
        compare(args.compare, args.rounds, args.mb, args.repeat)
        return
    res = run(args.mb, args.repeat)
    if args.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<10} {v * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
