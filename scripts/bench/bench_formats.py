"""Formats read in place against the same corpus as arrowmix chunks: epoch, random rows, a mix.

Run from the repository root (needs the ``lance`` extra, and ``mosaicml-streaming`` to write
the MDS shards: ``scripts/test`` installs both)::

    python scripts/bench/bench_formats.py            # 50k documents, 3 interleaved rounds
    python scripts/bench/bench_formats.py --quick    # 20k documents, 2 rounds

Corpus: ``--docs`` documents of token ids (``list<int32>``, uniform in ``[0, 32000)``,
lognormal lengths of median 200 clipped to ``[1, 4096]``, as in ``bench_parquet.py``) and
an ``id`` column, written once as a Lance dataset (pylance's defaults), as MDS shards by
Mosaic Streaming's ``MDSWriter`` (``ndarray:int32`` token ids, its default 64 MB shards,
uncompressed and zstd), and as arrowmix chunks (``Dataset.from_arrow(...).save_to_disk``,
memory-mapped when loaded).

For the mix, the corpus is cut in three thirds, each written in another format: a Megatron
``.bin/.idx`` pair (``to_megatron``), a Parquet file (row groups of 1,024 rows, read in
place) and zstd MDS shards; and each third also as arrowmix chunks.

Each step runs in a fresh process (imports excluded), the formats interleaved in every
round: *epoch*: one epoch of ``to_stream(shuffle="chunks").batch(64, columnar=True)
.collate()``, in tokens/s; *random ds[i]*: 200 random rows of a freshly opened dataset
(first pass: Lance takes each row alone) and the same rows again; *mix*: one epoch of
``mix`` over the three thirds' ``to_stream(shuffle="chunks")`` (weights by documents), then
``batch(64, columnar=True).collate()``, in tokens/s.

*New columns of compressed shards* (``--steps columns``): the corpus's rows again as zstd
MDS shards of 4 MB (``size_limit``), opened with ``from_mds``; ``input_ids`` of every row
is read (``select_columns``), then ``id`` of every row, which decodes that column of every
shard: timed, the second read, with the decompressed shards kept in their bounded cache
(``shard-cache``, the default: a quarter of ``cache_size``) and with that cache emptied
(``no-shard-cache``: each shard decompressed again, as before the cache existed)::

    python scripts/bench/bench_formats.py --steps columns --rounds 5
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from bench_common import base_parser, machine_summary, print_markdown, run_fresh

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FORMATS = ("lance", "mds", "mds-zstd", "chunks")
RANDOM = ("lance", "mds", "chunks")
MIXES = ("formats", "chunks")
COLUMNS = ("shard-cache", "no-shard-cache")


def write_mds(out: str, table: object, compression: str | None) -> None:
    """The table's rows as MDS shards written by Mosaic Streaming's own MDSWriter."""
    from tests.formats.mds_helpers import write_mds as write

    cols = {"id": "int", "input_ids": "ndarray:int32"}
    ids = table.column("input_ids")  # type: ignore[attr-defined]
    offsets = ids.combine_chunks().offsets.to_numpy()
    values = ids.combine_chunks().values.to_numpy()
    first = int(table.column("id")[0].as_py())  # type: ignore[attr-defined]
    rows = ({"id": first + k, "input_ids": values[offsets[k] : offsets[k + 1]]}
            for k in range(len(offsets) - 1))  # fmt: skip
    write(out, cols, rows, compression=compression)


def make_corpus(workdir: Path, docs: int) -> dict[str, str]:
    import lance
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import arrowmix as am

    names = ["lance", "mds", "mds-zstd", "chunks", "mix-megatron", "mix-parquet", "mix-mds"]
    paths = {n: str(workdir / n) for n in names}
    paths.update({f"mix-chunks-{k}": str(workdir / f"mix-chunks-{k}") for k in range(3)})
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
    write_mds(paths["mds"], table, None)
    write_mds(paths["mds-zstd"], table, "zstd")
    am.Dataset.from_arrow(table).save_to_disk(paths["chunks"])
    third = docs // 3
    parts = [table.slice(0, third), table.slice(third, third), table.slice(2 * third)]
    os.makedirs(paths["mix-megatron"])
    am.Dataset.from_arrow(parts[0]).to_megatron(os.path.join(paths["mix-megatron"], "web"))
    os.makedirs(paths["mix-parquet"])
    pq.write_table(parts[1], os.path.join(paths["mix-parquet"], "sft.parquet"),
                   row_group_size=1024)  # fmt: skip
    write_mds(paths["mix-mds"], parts[2], "zstd")
    for k, part in enumerate(parts):
        am.Dataset.from_arrow(part.select(["input_ids"])).save_to_disk(paths[f"mix-chunks-{k}"])
    marker.touch()
    return paths


def open_ds(fmt: str, path: str) -> object:
    import arrowmix as am

    if fmt == "lance":
        return am.Dataset.from_lance(path)
    if fmt.startswith("mds"):
        return am.Dataset.from_mds(path)
    return am.Dataset.load_from_disk(path)


def mixed(which: str, workdir: str) -> object:
    """The three thirds' streams mixed: in their formats, or as arrowmix chunks."""
    import arrowmix as am

    w = Path(workdir)
    if which == "formats":
        parts = [
            am.Dataset.from_megatron(str(w / "mix-megatron" / "web")),
            am.Dataset.from_parquet(str(w / "mix-parquet" / "sft.parquet"), in_place=True),
            am.Dataset.from_mds(str(w / "mix-mds"), columns=["input_ids"]),
        ]
        parts[1] = parts[1].select_columns(["input_ids"])
    else:
        parts = [am.Dataset.load_from_disk(str(w / f"mix-chunks-{k}")) for k in range(3)]
    streams = [p.to_stream(shuffle="chunks", seed=k, infinite=False) for k, p in enumerate(parts)]
    from arrowmix.stream import mix

    return mix(streams, [len(p) for p in parts], seed=0)


def epoch(stream: object) -> dict:
    import numpy as np

    tokens, t = 0, time.perf_counter()
    for b in stream.batch(64, columnar=True).collate():  # type: ignore[attr-defined]
        tokens += int(np.asarray(b["attention_mask"]).sum())
    dt = time.perf_counter() - t
    return {"tokens_per_s": tokens / dt, "tokens": tokens}


def new_columns(which: str, path: str) -> dict:
    """Seconds to read ``id`` of every row after ``input_ids`` (zstd shards)."""
    import arrowmix as am
    from arrowmix._dataset.state import state_of

    ds = am.Dataset.from_mds(path)
    if which == "no-shard-cache":
        state_of(ds).reader._raw.limit = 0  # keep no decompressed shard
    ds.select_columns(["input_ids"])["input_ids"]
    t = time.perf_counter()
    ds.select_columns(["id"])["id"]
    return {"seconds": time.perf_counter() - t, **state_of(ds).reader.stats()}


def column_corpus(workdir: Path, docs: int) -> str:
    """The corpus as zstd MDS shards of 4 MB (written once)."""
    import numpy as np

    from tests.formats.mds_helpers import write_mds as write

    out = workdir / f"mds-zstd-4mb-{docs}"
    if out.exists():
        return str(out)
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(np.log(200), 1.0, docs).astype(np.int64), 1, 4096)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = rng.integers(0, 32000, int(offsets[-1]), dtype=np.int32)
    rows = ({"id": k, "input_ids": values[offsets[k] : offsets[k + 1]]} for k in range(docs))
    cols = {"id": "int", "input_ids": "ndarray:int32"}
    write(str(out), cols, rows, compression="zstd", size_limit=4 << 20)
    return str(out)


def child(step: str, fmt: str, path: str) -> dict:
    import numpy as np

    if step == "columns":
        return new_columns(fmt, path)
    if step == "mix":
        return epoch(mixed(fmt, path))
    ds: object = open_ds(fmt, path)
    if step == "epoch":
        return epoch(ds.to_stream(shuffle="chunks", seed=0, infinite=False))  # type: ignore[attr-defined]
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
    env = {"ARROWMIX_CACHE": str(cache), "ARROWMIX_PROGRESS": "0"}
    return run_fresh(__file__, ["--child", step, fmt, path], env=env)


def main() -> None:
    ap = base_parser(
        __doc__.splitlines()[0],
        rows=50_000,
        rows_flags=("--docs", "--rows"),
        quick="20k documents, 2 rounds",
        workdir="/tmp/arrowmix-bench-formats",
        repeats_flags=("--rounds", "--repeats"),
        seed=False,
        child=3,
    )
    ap.add_argument("--steps", choices=["formats", "columns"], default="formats",
                    help="formats: epochs, random rows and the mix; columns: new columns of "
                    "compressed MDS shards")  # fmt: skip
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    docs = 20_000 if args.quick else args.rows
    rounds = args.repeats or (2 if args.quick else 3)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if args.steps == "columns":
        columns_main(work, docs, rounds)
        return
    paths = make_corpus(work, docs)
    samples: dict[tuple[str, str], list[dict]] = {}
    steps = [("epoch", f, paths[f]) for f in FORMATS] + [("random", f, paths[f]) for f in RANDOM]
    steps += [("mix", m, str(work)) for m in MIXES]
    for r in range(rounds):
        for step, fmt, path in steps:
            samples.setdefault((step, fmt), []).append(run(step, fmt, path, work / "cache"))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    def med(step: str, fmt: str, key: str) -> float:
        return statistics.median(row[key] for row in samples[(step, fmt)])

    tokens = samples[("epoch", "chunks")][0]["tokens"]
    print(f"# {machine_summary()}")
    print(f"# {docs} documents, {tokens / 1e6:.1f} M tokens; medians of {rounds} rounds\n")
    table = []
    for label, step, key, scale, form in (
        ("epoch (M tokens/s)", "epoch", "tokens_per_s", 1e-6, "{:.2f}"),
        ("random ds[i], first read (ms)", "random", "first_ms", 1.0, "{:.3f}"),
        ("random ds[i], same rows again (ms)", "random", "again_ms", 1.0, "{:.3f}"),
    ):
        for fmt in FORMATS if step == "epoch" else RANDOM:
            if fmt == "chunks":
                continue
            a, b = med(step, fmt, key) * scale, med(step, "chunks", key) * scale
            table.append([label, fmt, form.format(a), form.format(b), f"{a / b:.2f}x"])
    a, b = (med("mix", m, "tokens_per_s") * 1e-6 for m in MIXES)
    mix = "megatron + parquet + mds-zstd"
    table.append(["mix epoch (M tokens/s)", mix, f"{a:.2f}", f"{b:.2f}", f"{a / b:.2f}x"])
    print_markdown(["measure", "format", "in place", "chunks", "in place / chunks"], table)


def columns_main(work: Path, docs: int, rounds: int) -> None:
    """``--steps columns``: the second column's read, with and without the shard cache."""
    path = column_corpus(work, docs)
    got: dict[str, list[dict]] = {}
    for r in range(rounds):
        for which in COLUMNS if r % 2 == 0 else reversed(COLUMNS):
            got.setdefault(which, []).append(run("columns", which, path, work / "cache"))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    shards = len(list(Path(path).glob("shard.*.mds.zstd")))
    print(f"# {machine_summary()}")
    print(f"# {docs} documents in {shards} zstd MDS shards of 4 MB; medians of {rounds} rounds\n")
    secs = {w: statistics.median(row["seconds"] for row in got[w]) for w in COLUMNS}
    table = [[w, f"{1e3 * secs[w]:.1f}", str(got[w][-1]["shards_decompressed"]),
              f"{secs[w] / secs['no-shard-cache']:.2f}x"] for w in COLUMNS]  # fmt: skip
    print_markdown(["read `id` after `input_ids`", "ms", "shards decompressed in all",
                    "time / no-shard-cache"], table)  # fmt: skip


if __name__ == "__main__":
    main()
