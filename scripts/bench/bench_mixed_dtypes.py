# mypy: disable-error-code="import-not-found,import-untyped"
"""The token path over a mix of token files: all int32, and uint16 with int32.

Three corpora of the same documents' sizes (token ids below 50,000): two Megatron pairs and
arrowmix chunks. The **int32 mix** has every corpus in ``int32``: its columns agree, so the
token path reads them as they are; it runs in the arrowmix of this checkout and of
``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/base main``), each in a
fresh process per run, interleaved (A, B, B, A, ...), and the ratio is this / baseline. The
**mixed mix** has the first Megatron pair written as ``uint16`` (the GPT-2 case): its
tokens are widened to ``int32`` while they are gathered; it runs in this checkout only (a
checkout without mixed dtypes refuses it) and is reported against this checkout's int32 mix.

Each run: ``mix`` of the three streams (``shuffle="chunks"``), then one epoch of each
pipeline: ``pack(seq_len=2048, batch_size=8)``, ``budget_bucket(16384 tokens) + collate`` and
``batch(32, columnar=True) + collate``. Timed from the first arrowmix call on (interpreter
start and imports excluded); M tokens/s over the tokens of the epoch (medians of wall
time). Ratios: the median of each round's ratio (the runs of a round ran side by side), of
wall time and of the process's CPU time, and the ratio of the best CPU-time rates (on a
loaded machine, the runs least disturbed by other processes).

Usage (from the repository root, in the arrowmix venv)::

    python scripts/bench/bench_mixed_dtypes.py --baseline /tmp/base --rounds 5
    python scripts/bench/bench_mixed_dtypes.py --baseline /tmp/base --quick
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import base_parser, machine_summary, print_markdown, run_fresh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPELINES = ("pack", "budget_bucket", "columnar_collate")


def child(kind: str, data: str) -> dict[str, Any]:
    sys.path.insert(0, os.environ["BENCH_ARROWMIX_ROOT"])
    import arrowmix as am
    from arrowmix.stream import mix

    out: dict[str, Any] = {"arrowmix": os.path.dirname(am.__file__)}
    d, first = data, "web_uint16" if kind == "mixed" else "web_int32"
    datasets = [
        am.Dataset.from_megatron(f"{d}/{first}"),
        am.Dataset.from_megatron(f"{d}/code_int32"),
        am.Dataset.from_chunks(f"{d}/chat"),
    ]
    for name in PIPELINES:
        started, cpu = time.perf_counter(), time.process_time()
        streams = [ds.to_stream(seed=k, shuffle="chunks", infinite=False)
                   for k, ds in enumerate(datasets)]  # fmt: skip
        s = mix(streams, [0.4, 0.3, 0.3], seed=0)
        if name == "pack":
            batches = s.pack("input_ids", 2048, batch_size=8, tail="pad")
            key = "segment_ids"
        elif name == "budget_bucket":
            batches = s.budget_bucket("input_ids", 16384, 4096, seed=1).collate()
            key = "attention_mask"
        else:
            batches = s.batch(32, columnar=True).collate()
            key = "attention_mask"
        tokens = sum(int((b[key] > 0).sum()) for b in batches)
        out[name] = {"seconds": time.perf_counter() - started, "tokens": tokens,
                     "cpu": time.process_time() - cpu}  # fmt: skip
    return out


def write_corpora(d: str, docs: int) -> int:
    """The corpora under ``d`` (written once); the tokens of each."""
    import numpy as np
    import pyarrow as pa

    sys.path.insert(0, ROOT)
    import arrowmix as am

    rng = np.random.default_rng(0)
    lengths = rng.integers(50, 1500, docs)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.integers(0, 50_000, int(offsets[-1]), dtype=np.int32)
    table = pa.table({"input_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))})
    if not os.path.exists(f"{d}/chat"):
        os.makedirs(d, exist_ok=True)
        ds = am.Dataset.from_arrow(table)
        ds.to_megatron(f"{d}/web_int32", dtype=np.int32)
        ds.to_megatron(f"{d}/web_uint16", dtype=np.uint16)
        ds.to_megatron(f"{d}/code_int32", dtype=np.int32)
        am.write_chunks(table, f"{d}/chat", rows_per_chunk=max(docs // 16, 1))
    return int(offsets[-1])


def main() -> None:
    ap = base_parser(
        __doc__.split("\n", 1)[0], rows=12_000, workdir="/tmp/arrowmix-bench-mixed-dtypes",
        quick="smoke run: 1,500 documents a corpus, 2 rounds", repeats=5, seed=False,
        repeats_flags=("--rounds", "--repeats"), child=2,
    )  # fmt: skip
    ap.add_argument("--baseline", help="another checkout to compare with (required)")
    args = ap.parse_args()
    if args.child:  # int32 | mixed, the corpora's directory
        print(json.dumps(child(*args.child)))
    elif not args.baseline:
        ap.error("--baseline DIR is required")
    else:
        compare(args, quick=args.quick)


def compare(args: Any, *, quick: bool) -> None:
    """The runs, interleaved, and the table."""
    args.rows = min(args.rows, 1_500) if quick else args.rows
    args.repeats = min(args.repeats, 2) if quick else args.repeats
    print(f"# {machine_summary()}")
    data = os.path.join(args.workdir, f"corpora-{args.rows}")
    tokens = write_corpora(data, args.rows)
    print(f"# 3 corpora of {args.rows:,} documents, {tokens / 1e6:.1f}M tokens each")
    runs = {"int32 (this)": (ROOT, "int32"), "int32 (baseline)": (args.baseline, "int32"),
            "uint16 + int32 (this)": (ROOT, "mixed")}  # fmt: skip
    rates: dict[tuple[str, str], list[float]] = {}
    cpu_rates: dict[tuple[str, str], list[float]] = {}
    for r in range(args.repeats):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for name in order:
            root, kind = runs[name]
            env = {"BENCH_ARROWMIX_ROOT": os.path.abspath(root)}
            got = run_fresh(__file__, ["--child", kind, data], env=env)
            assert got["arrowmix"].startswith(os.path.abspath(root)), got["arrowmix"]
            for p in PIPELINES:
                rates.setdefault((name, p), []).append(got[p]["tokens"] / got[p]["seconds"])
                cpu_rates.setdefault((name, p), []).append(got[p]["tokens"] / got[p]["cpu"])
        print(f"round {r + 1}/{args.repeats} done", file=sys.stderr)
    new, old, mixed = "int32 (this)", "int32 (baseline)", "uint16 + int32 (this)"
    rows = []
    for p in PIPELINES:

        def paired(a: str, b: str, pipeline: str = p, on: Any = rates) -> str:
            """The median of the rounds' ratios (each round's runs ran side by side)."""
            pairs = zip(on[a, pipeline], on[b, pipeline], strict=True)
            return f"{statistics.median(x / y for x, y in pairs):.2f}x"

        def best(a: str, b: str, pipeline: str = p) -> str:
            """The ratio of the best CPU-time rates (the runs least disturbed by others)."""
            return f"{max(cpu_rates[a, pipeline]) / max(cpu_rates[b, pipeline]):.2f}x"

        medians = [f"{statistics.median(rates[n, p]) / 1e6:.1f}" for n in (new, old, mixed)]
        rows.append([p, *medians, paired(new, old), paired(new, old, on=cpu_rates),
                     best(new, old), paired(mixed, new), best(mixed, new)])  # fmt: skip
    header = ["pipeline", "int32 mix: this (M tokens/s)", "int32 mix: baseline",
              "uint16 + int32 mix: this", "this / baseline: wall", "CPU", "best CPU",
              "mixed / int32: wall", "best CPU"]  # fmt: skip
    print_markdown(header, rows)


if __name__ == "__main__":
    main()
