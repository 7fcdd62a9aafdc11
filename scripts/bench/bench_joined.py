"""A tokenize map over Parquet read in place: joined result against copied input columns.

Run from the repository root::

    python scripts/bench/bench_joined.py            # 100k documents, 3 interleaved rounds
    python scripts/bench/bench_joined.py --quick    # 20k documents, 2 rounds

Corpus: ``--docs`` documents of English-like text (words drawn from a 5,000-word vocabulary,
lognormal lengths of median 150 words) with ``id`` and ``url`` columns, written by pyarrow as
4 Parquet files (snappy, row groups of 8,192 rows), opened with
``Dataset.from_parquet(files, in_place=True)``. The map is a tokenize step: ``input_ids``
(``list<int32>``, one id per word, from a CRC of the word) added next to the kept columns.

Two ways to store the map's result, each measured in fresh processes, interleaved:

- **joined** (today): the cache file holds ``input_ids`` only; the result reads ``text``,
  ``id`` and ``url`` in place (``JoinedTable``);
- **copied** (before): the cache file also holds the kept input columns, as every map over
  rows read in place did before the joined kind (reproduced by turning the Parquet table's
  ``map_joins``/``by_reference`` off in the child process).

Measured: *cache disk* (the map's cache files), *map*: open + the map computed (nothing
cached), *cached rerun*: open + the map found in the cache + its first row, *token epoch*:
one epoch of ``to_stream(shuffle="chunks").pack("input_ids", 2048, batch_size=8)`` in
tokens/s (reads the derived column only), *row epoch*: one epoch of every column of every
row through ``to_stream(shuffle="chunks")`` (the kept columns decoded from Parquet when
joined, memory-mapped when copied), *pickle*: bytes of the pickled result.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from bench_common import base_parser, disk_usage, machine_summary, print_markdown, run_fresh

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MODES = ("joined", "copied")
ROW_GROUP = 8192


def make_corpus(workdir: Path, docs: int) -> list[str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = workdir / "parquet"
    files = [str(out / f"part-{k}.parquet") for k in range(4)]
    if all(os.path.exists(f) for f in files) and (out / f"docs-{docs}").exists():
        return files
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rng = np.random.default_rng(0)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    vocab = np.array(["".join(rng.choice(letters, int(rng.integers(2, 10)))) for _ in range(5000)])
    lengths = np.clip(rng.lognormal(np.log(150), 0.8, docs).astype(np.int64), 5, 4000)
    words = vocab[rng.zipf(1.3, int(lengths.sum())) % len(vocab)]
    cuts = np.concatenate([[0], np.cumsum(lengths)])
    text = [" ".join(words[cuts[k] : cuts[k + 1]]) for k in range(docs)]
    table = pa.table({
        "id": np.arange(docs),
        "url": [f"https://example.org/{k:08d}" for k in range(docs)],
        "text": text,
    })  # fmt: skip
    per = -(-docs // 4)
    for k, f in enumerate(files):
        pq.write_table(table.slice(k * per, per), f, row_group_size=ROW_GROUP)
    (out / f"docs-{docs}").touch()
    return files


def tokenize(batch: dict) -> dict:
    from zlib import crc32

    return {"input_ids": [[crc32(w.encode()) % 32000 for w in t.split()] for t in batch["text"]]}


def child(step: str, mode: str, files: list[str], cache: str) -> dict:
    import pickle

    import numpy as np

    import arrowmix as am
    from arrowmix._dataset.tables.parquet import ParquetTable

    if mode == "copied":  # the behaviour before the joined kind: kept columns stored
        ParquetTable.by_reference = False
        ParquetTable.map_joins = False
    t0 = time.perf_counter()
    ds = am.Dataset.from_parquet(files, in_place=True, cache_dir=cache)
    out = ds.map(tokenize, batched=True, batch_size=1000)
    if step == "map":
        return {"map_s": time.perf_counter() - t0, "pickle_bytes": len(pickle.dumps(out))}
    if step == "rerun":
        _ = out[0]
        return {"rerun_s": time.perf_counter() - t0}
    if step == "tokens":
        stream = out.to_stream(shuffle="chunks", seed=0, infinite=False)
        t1 = time.perf_counter()
        tokens = 0
        for b in stream.pack("input_ids", 2048, batch_size=8):
            tokens += int(np.count_nonzero(np.asarray(b["segment_ids"])))
        return {"tokens_per_s": tokens / (time.perf_counter() - t1), "tokens": tokens}
    if step == "rows":
        t1 = time.perf_counter()
        n = sum(1 for _ in out.to_stream(shuffle="chunks", seed=0, infinite=False))
        return {"rows_per_s": n / (time.perf_counter() - t1)}
    raise ValueError(step)


def run(step: str, mode: str, files: list[str], cache: Path) -> dict:
    env = {"ARROWMIX_PROGRESS": "0", "PYTHONDONTWRITEBYTECODE": ""}
    return run_fresh(__file__, ["--child", step, mode, json.dumps(files), str(cache)], env=env)


def main() -> None:
    ap = base_parser(
        __doc__.splitlines()[0],
        rows=100_000,
        rows_flags=("--docs", "--rows"),
        quick="20k documents, 2 rounds",
        workdir="/tmp/arrowmix-bench-joined",
        repeats_flags=("--rounds", "--repeats"),
        seed=False,
        child=4,
    )
    args = ap.parse_args()
    if args.child:
        step, mode, files, cache = args.child
        print(json.dumps(child(step, mode, json.loads(files), cache)))
        return
    docs = 20_000 if args.quick else args.rows
    rounds = args.repeats or (2 if args.quick else 3)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    files = make_corpus(work, docs)
    parquet_bytes = sum(os.path.getsize(f) for f in files)
    samples: dict[tuple[str, str], list[dict]] = {}
    disk: dict[str, int] = {}
    for r in range(rounds):
        for mode in MODES:
            cache = work / f"cache-{mode}"
            shutil.rmtree(cache, ignore_errors=True)
            for step in ("map", "rerun", "tokens", "rows"):
                samples.setdefault((step, mode), []).append(run(step, mode, files, cache))
            disk[mode] = disk_usage(cache)
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    def med(step: str, mode: str, key: str) -> float:
        return statistics.median(row[key] for row in samples[(step, mode)])

    print(f"# {machine_summary()}")
    print(f"# {docs} documents, {med('tokens', 'joined', 'tokens') / 1e6:.1f} M tokens, "
          f"{len(files)} Parquet files of {parquet_bytes / 2**20:.0f} MiB in all, row groups "
          f"of {ROW_GROUP} rows; medians of {rounds} interleaved rounds\n")  # fmt: skip
    rows = [
        ("map cache on disk (MiB)", disk["joined"] / 2**20, disk["copied"] / 2**20, "{:.1f}"),
        ("open + map computed (s)", med("map", "joined", "map_s"),
         med("map", "copied", "map_s"), "{:.2f}"),
        ("cached rerun: open + map hit + row (s)", med("rerun", "joined", "rerun_s"),
         med("rerun", "copied", "rerun_s"), "{:.3f}"),
        ("token epoch, pack (M tokens/s)", med("tokens", "joined", "tokens_per_s") / 1e6,
         med("tokens", "copied", "tokens_per_s") / 1e6, "{:.2f}"),
        ("row epoch, every column (k rows/s)", med("rows", "joined", "rows_per_s") / 1e3,
         med("rows", "copied", "rows_per_s") / 1e3, "{:.1f}"),
        ("pickled result (bytes)", med("map", "joined", "pickle_bytes"),
         med("map", "copied", "pickle_bytes"), "{:.0f}"),
    ]  # fmt: skip
    cells = [
        [name, f.format(a), f.format(b), f"{a / b if b else float('nan'):.2f}x"]
        for name, a, b, f in rows
    ]
    print_markdown(["measure", "joined", "copied", "joined / copied"], cells)
    print(f"\nParquet files: {parquet_bytes / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
