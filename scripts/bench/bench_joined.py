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

import functools
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench_common import disk_usage, run_fresh

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench_parquet import median_of, parse, print_header, print_ratios, write_parts  # noqa: E402  (the same corpus files)

MODES = ("joined", "copied")


def text_table(docs: int) -> Any:
    """``docs`` documents of English-like text, with ``id`` and ``url`` (module docstring)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    vocab = np.array(["".join(rng.choice(letters, int(rng.integers(2, 10)))) for _ in range(5000)])
    lengths = np.clip(rng.lognormal(np.log(150), 0.8, docs).astype(np.int64), 5, 4000)
    words = vocab[rng.zipf(1.3, int(lengths.sum())) % len(vocab)]
    cuts = np.concatenate([[0], np.cumsum(lengths)])
    text = [" ".join(words[cuts[k] : cuts[k + 1]]) for k in range(docs)]
    urls = [f"https://example.org/{k:08d}" for k in range(docs)]
    return pa.table({"id": np.arange(docs), "url": urls, "text": text})


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
    args, docs, rounds, work = parse(__doc__, "/tmp/arrowmix-bench-joined", 4)
    if args.child:
        step, mode, files, cache = args.child
        print(json.dumps(child(step, mode, json.loads(files), cache)))
        return
    files = write_parts(work, docs, text_table)
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

    med = functools.partial(median_of, samples)
    print_header(docs, med("tokens", "joined", "tokens"), files, rounds)
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
    print_ratios(("joined", "copied"), rows)


if __name__ == "__main__":
    main()
