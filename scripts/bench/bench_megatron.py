"""The token path over a Megatron ``.bin``/``.idx`` corpus against the same rows as arrowmix chunks.

Run from the repository root::

    python scripts/bench/bench_megatron.py            # 200k documents, 5 interleaved rounds
    python scripts/bench/bench_megatron.py --quick    # 20k documents, 3 rounds

Corpus: ``--docs`` documents of uint16 token ids (uniform in ``[0, 50000)``), lognormal
lengths (median 200, sigma 1, clipped to ``[1, 4096]``): ~65 M tokens for 200k documents.
Written once with ``Dataset.to_megatron`` (a ``.bin``/``.idx`` pair, as megatron-core reads
it) and once with ``write_chunks`` (arrowmix chunks, ``list<uint16>``, 256 MiB each); the
same rows in the same order.

Pipelines, one epoch each, one process, interleaved rounds (Megatron, arrowmix, ...):

- **A**: ``to_stream(shuffle="global").budget_bucket("input_ids", 16384, 8192).collate()``
- **B**: ``to_stream(shuffle="global").pack("input_ids", 2048, batch_size=8, read_ahead=8192)``

Rates count document tokens delivered (padding left out), median of the rounds, on wall and
on CPU time. Then, per storage, a fresh process opens the corpus and runs an epoch of A:
the open time (first open hashes the files; a second open answers from the digest cache),
the growth of the process's anonymous resident memory (the bytes it owns: copies of tokens
would count there, the memory-mapped file pages do not) by the opens and at its peak during
the epoch, its peak resident memory (``VmHWM``, file pages included), and whether the
column's values buffer lies in the file's memory mapping (zero copy).
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
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import current_rss_mb, interleaved, machine_summary

import arrowmix as am
from arrowmix.exceptions import DroppedDataWarning

BUDGET, WINDOW, SEQ, ROWS = 16384, 8192, 2048, 8


def make_corpus(workdir: Path, docs: int, seed: int) -> tuple[str, str, int]:
    """``(megatron prefix, chunk directory, tokens)``, written once per size and seed."""
    prefix, chunks = workdir / f"web_{docs}_{seed}", workdir / f"chunks_{docs}_{seed}"
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(200), 1.0, docs), 1, 4096).astype(np.int64)
    tokens = int(lengths.sum())
    if not (chunks / "_manifest.json").exists() or not Path(f"{prefix}.idx").exists():
        values = rng.integers(0, 50_000, tokens, dtype=np.uint16)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        column = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
        table = pa.table({"input_ids": column})
        am.write_chunks(table, str(chunks), overwrite=True)
        am.Dataset.from_chunks(str(chunks)).to_megatron(str(prefix))
    return str(prefix), str(chunks), tokens


def open_corpus(kind: str, path: str) -> am.Dataset:
    return am.from_megatron(path) if kind == "megatron" else am.Dataset.from_chunks(path)


def pipeline(ds: am.Dataset, which: str) -> Any:
    s = ds.to_stream(shuffle="global", seed=0, infinite=False)
    if which == "A":
        return s.budget_bucket("input_ids", BUDGET, WINDOW, seed=0).collate()
    return s.pack("input_ids", SEQ, batch_size=ROWS, read_ahead=WINDOW)


def epoch(ds: am.Dataset, which: str) -> int:
    """Document tokens delivered by one epoch."""
    n = 0
    for batch in pipeline(ds, which):
        mask = batch["attention_mask"] if "attention_mask" in batch else batch["segment_ids"]
        n += int(np.count_nonzero(mask))
    return n


def child(kind: str, path: str) -> None:
    """One fresh process: open twice, run an epoch of A, report memory (JSON on stdout)."""
    _, anon_before = current_rss_mb()
    t0 = time.perf_counter()
    ds = open_corpus(kind, path)
    first_open = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds = open_corpus(kind, path)
    second_open = time.perf_counter() - t0
    _, anon_open = current_rss_mb()
    anon_peak = anon_open
    column = ds.with_format("arrow")[:1].column("input_ids").chunk(0)
    address = column.values.buffers()[1].address
    in_bin = False
    with open("/proc/self/maps", encoding="utf-8") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                in_bin = line.rstrip().endswith((".bin", ".arrow"))
    delivered = 0
    for k, batch in enumerate(pipeline(ds, "A")):
        delivered += int(np.count_nonzero(batch["attention_mask"]))
        if k % 20 == 0:
            anon_peak = max(anon_peak, current_rss_mb()[1])
    report = {
        "first_open_s": first_open,
        "second_open_s": second_open,
        "anon_open_delta_mb": anon_open - anon_before,
        "anon_peak_delta_mb": anon_peak - anon_before,
        "peak_rss_mb": _high_water_mb(),
        "values_in_file_mapping": in_bin,
        "tokens": delivered,
    }
    print(json.dumps(report))


def _high_water_mb() -> float:
    """Peak resident MiB of this process (``VmHWM``: unlike ``ru_maxrss``, reset by exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def in_fresh_process(kind: str, path: str) -> dict[str, Any]:
    """The child's report; its cache root is new, so its first open hashes what it must."""
    with tempfile.TemporaryDirectory(prefix="arrowmix-bench-cache-") as cache:
        out = subprocess.run(
            [sys.executable, __file__, "--child", kind, path],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "ARROWMIX_CACHE": cache},
        )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--quick", action="store_true", help="20k documents, 3 rounds")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--workdir", default="/tmp/arrowmix-bench-megatron")
    p.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args()
    warnings.simplefilter("ignore", DroppedDataWarning)  # pack drops each epoch's tail
    if args.child:
        child(*args.child)
        return
    docs = 20_000 if args.quick else args.docs
    repeats = args.repeats or (3 if args.quick else 5)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    prefix, chunks, tokens = make_corpus(workdir, docs, 0)
    print(machine_summary())
    bin_mb = os.path.getsize(f"{prefix}.bin") / 2**20
    print(f"corpus: {docs:,} documents, {tokens:,} tokens, .bin {bin_mb:.1f} MiB")
    megatron, arrow = open_corpus("megatron", prefix), open_corpus("chunks", chunks)
    assert megatron["input_ids"][:50] == arrow["input_ids"][:50]
    for which in ("A", "B"):
        assert epoch(megatron, which) == epoch(arrow, which)
        cases = {
            "megatron": lambda w=which: epoch(megatron, w),
            "arrowmix": lambda w=which: epoch(arrow, w),
        }
        t = interleaved(cases, repeats, work=tokens, warmup=1)
        wall = {k: statistics.median(v.samples) for k, v in t.items()}
        cpu = {k: statistics.median(v.cpu_samples) for k, v in t.items()}
        print(
            f"| {which} | {tokens / wall['megatron'] / 1e6:.1f} M tokens/s | "
            f"{tokens / wall['arrowmix'] / 1e6:.1f} M tokens/s | "
            f"{wall['arrowmix'] / wall['megatron']:.2f}x | "
            f"{cpu['arrowmix'] / cpu['megatron']:.2f}x |"
        )
    for kind, path in (("megatron", prefix), ("chunks", chunks)):
        r = in_fresh_process(kind, path)
        print(
            f"| {kind} | {r['first_open_s'] * 1e3:.0f} ms | {r['second_open_s'] * 1e3:.1f} ms | "
            f"{r['anon_open_delta_mb']:+.1f} MiB | {r['anon_peak_delta_mb']:+.1f} MiB | "
            f"{r['peak_rss_mb']:.0f} MiB | {r['values_in_file_mapping']} |"
        )


if __name__ == "__main__":
    main()
