"""What each field of a packed batch costs: ids only, the default ids, labels, cu_seqlens.

Run from the repository root::

    python scripts/bench/bench_pack_fields.py             # 100k documents, 5 interleaved rounds
    python scripts/bench/bench_pack_fields.py --quick     # 20k documents, 3 rounds

The corpus and pipeline are ``scripts/bench/bench_tokens.py``'s B case: ``--docs`` documents
(``list<int32>``, lognormal lengths, median 200; ~32.7 M tokens for 100k), globally
shuffled, packed into ``[8, 2048]`` int64 batches with ``read_ahead=8192``. Each case is
one epoch with other ``pack(labels=, outputs=)`` arguments, run round-robin with the
others; the table gives the median rate of document tokens and the ratio to the default
(``segment_ids`` and ``position_ids``). The same for best-fit bin packing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import fmt_rate, interleaved, machine_summary
from bench_tokens import READ_AHEAD, ROWS, SEQ_LEN, make_corpus

#: case -> pack() arguments beside the corpus's
CASES: dict[str, dict[str, Any]] = {
    "default (segment + position ids)": {},
    "ids only: outputs=()": {"outputs": ()},
    "ids + labels='shift'": {"outputs": (), "labels": "shift"},
    "position ids + cu_seqlens + labels (flash-attn varlen)": {
        "outputs": ("position_ids", "cu_seqlens"),
        "labels": "shift",
    },
}


def corpus(workdir: Path, docs: int) -> tuple[Path, int]:
    """The corpus's chunk directory (written once) and its number of tokens."""
    import arrowmix

    d = workdir / f"pack-fields-{docs}"
    if not (d / "done").exists():
        offsets, tokens = make_corpus(docs, 0)
        arr = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(tokens))
        arrowmix.write_chunks(pa.table({"input_ids": arr}), str(d / "chunks"), overwrite=True)
        (d / "done").write_text(str(len(tokens)))
    return d / "chunks", int((d / "done").read_text())


def epoch(ds: Any, strategy: str, kwargs: dict[str, Any]) -> int:
    """One epoch of B (the dataset opened once, outside the timing)."""
    s = ds.to_stream(shuffle="global", seed=0, infinite=False)
    packed = s.pack(
        "input_ids",
        SEQ_LEN,
        strategy=strategy,
        batch_size=ROWS,
        read_ahead=READ_AHEAD,
        **({"tail": "pad"} if strategy == "concat" else {}),
        **kwargs,
    )
    return sum(1 for _ in packed)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="20k documents, 3 rounds")
    p.add_argument("--workdir", default="/tmp/arrowmix-bench-pack-fields", help="corpus kept here")
    args = p.parse_args(argv)
    docs, repeats = (20_000, 3) if args.quick else (args.docs, args.repeats)
    path, tokens = corpus(Path(args.workdir), docs)
    import arrowmix

    ds = arrowmix.Dataset.from_chunks(str(path))
    print(f"{machine_summary()}; {docs:,} documents, {tokens:,} tokens, {repeats} rounds")
    for strategy in ("concat", "best_fit"):
        cases = {
            name: (lambda kw=kw, strategy=strategy: epoch(ds, strategy, kw))  # type: ignore[misc]
            for name, kw in CASES.items()
        }
        timings = interleaved(cases, repeats, work=tokens, warmup=1)
        base = timings[next(iter(CASES))]
        print(f"\nB, strategy={strategy!r}, [{ROWS}, {SEQ_LEN}]:\n")
        print("| pack(...) | M tokens/s | vs default | same on CPU time |")
        print("| --- | --- | --- | --- |")
        for name, t in timings.items():
            wall = base.median / t.median
            cpu = base.cpu_median / t.cpu_median
            print(f"| {name} | {fmt_rate(t.rate, 'tokens/s')} | {wall:.2f}x | {cpu:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
