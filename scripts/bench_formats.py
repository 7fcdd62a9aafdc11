"""Formats read in place against the same corpus as arrowmix chunks: epoch and random rows.

Run from the repository root (needs the ``lance`` extra)::

    python scripts/bench_formats.py            # 50k documents, 3 interleaved rounds
    python scripts/bench_formats.py --quick    # 20k documents, 2 rounds

Corpus: ``--docs`` documents of token ids (``list<int32>``, uniform in ``[0, 32000)``,
lognormal lengths of median 200 clipped to ``[1, 4096]``, as in ``bench_parquet.py``) and
an ``id`` column, written once as a Lance dataset (pylance's defaults) and once as arrowmix
chunks (``Dataset.from_arrow(...).save_to_disk``, memory-mapped when loaded).

Each step runs in a fresh process (imports excluded), the formats interleaved in every
round: *epoch*: one epoch of ``to_stream(shuffle="chunks").batch(64, columnar=True)
.collate()``, in tokens/s; *random ds[i]*: 200 random rows of a freshly opened dataset
(first pass: Lance takes each row alone) and the same rows again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FORMATS = ("lance", "chunks")


def make_corpus(workdir: Path, docs: int) -> dict[str, str]:
    import lance
    import numpy as np
    import pyarrow as pa

    import arrowmix as am

    paths = {"lance": str(workdir / "corpus.lance"), "chunks": str(workdir / "chunks")}
    marker = workdir / f"docs-{docs}"
    if marker.exists():
        return paths
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(np.log(200), 1.0, docs).astype(np.int64), 1, 4096)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.integers(0, 32000, int(offsets[-1]), dtype=np.int32)
    ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
    table = pa.table({"id": np.arange(docs), "input_ids": ids})
    lance.write_dataset(table, paths["lance"])
    am.Dataset.from_arrow(table).save_to_disk(paths["chunks"])
    marker.touch()
    return paths


def open_ds(fmt: str, path: str) -> object:
    import arrowmix as am

    if fmt == "lance":
        return am.Dataset.from_lance(path)
    return am.Dataset.load_from_disk(path)


def child(step: str, fmt: str, path: str) -> dict:
    import numpy as np

    ds: object = open_ds(fmt, path)
    if step == "epoch":
        stream = ds.to_stream(shuffle="chunks", seed=0, infinite=False)  # type: ignore[attr-defined]
        tokens, t = 0, time.perf_counter()
        for b in stream.batch(64, columnar=True).collate():
            tokens += int(np.asarray(b["attention_mask"]).sum())
        dt = time.perf_counter() - t
        return {"tokens_per_s": tokens / dt, "tokens": tokens}
    pos = np.random.default_rng(1).integers(0, len(ds), 200).tolist()  # type: ignore[arg-type]
    t = time.perf_counter()
    for i in pos:
        ds[i]  # type: ignore[index]
    first = (time.perf_counter() - t) / len(pos)
    t = time.perf_counter()
    for i in pos:
        ds[i]  # type: ignore[index]
    again = (time.perf_counter() - t) / len(pos)
    return {"first_ms": 1e3 * first, "again_ms": 1e3 * again}


def run(step: str, fmt: str, path: str, cache: Path) -> dict:
    env = {**os.environ, "ARROWMIX_CACHE": str(cache), "ARROWMIX_PROGRESS": "0"}
    args = [sys.executable, __file__, "--child", step, fmt, path]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--quick", action="store_true", help="20k documents, 2 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--workdir", default="/tmp/arrowmix-bench-formats")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    docs = 20_000 if args.quick else args.docs
    rounds = args.rounds or (2 if args.quick else 3)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    paths = make_corpus(work, docs)
    samples: dict[tuple[str, str], list[dict]] = {}
    for r in range(rounds):
        for step in ("epoch", "random"):
            for fmt in FORMATS:
                got = run(step, fmt, paths[fmt], work / "cache")
                samples.setdefault((step, fmt), []).append(got)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    def med(step: str, fmt: str, key: str) -> float:
        return statistics.median(row[key] for row in samples[(step, fmt)])

    tokens = samples[("epoch", "chunks")][0]["tokens"]
    print(f"# {docs} documents, {tokens / 1e6:.1f} M tokens; medians of {rounds} rounds\n")
    print("| measure | lance | chunks | lance / chunks |")
    print("|---|---|---|---|")
    for label, step, key, scale, fmt in (
        ("epoch (M tokens/s)", "epoch", "tokens_per_s", 1e-6, "{:.2f}"),
        ("random ds[i], first read (ms)", "random", "first_ms", 1.0, "{:.3f}"),
        ("random ds[i], same rows again (ms)", "random", "again_ms", 1.0, "{:.3f}"),
    ):
        a, b = med(step, "lance", key) * scale, med(step, "chunks", key) * scale
        print(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
