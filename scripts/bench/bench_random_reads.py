"""Reads of a cold corpus: random rows, the global stream and a sequential pass, against a raw loop.

Every case runs in a fresh process, after the corpus's pages were dropped from the page cache
(``posix_fadvise(DONTNEED)`` on each file), and reports rows/s, tokens/s, the bytes read from
disk (``read_bytes`` of ``/proc/self/io``) and the peak RSS. Cases run interleaved, round after
round. The limit is the raw loop: the same rows, in the same order, read with ``os.pread``
(each row's two offsets, then its values) from the same files.

Cases: ``raw`` (the pread loop), ``getitem`` (``ds[i]`` per row), ``select`` (gathers of 1,024
rows: ``ds.select(pos)[:]``), ``stream`` (the default stream as in the README's token path:
``to_stream(shuffle="global", seed=0)`` -> ``budget_bucket`` -> ``collate``), ``first`` (open
and that stream's first batch), ``chunks`` and ``blocks`` (the same stream with
``shuffle="chunks"`` / ``"blocks"``, ``--seq-rows`` rows), ``open`` (``Dataset.from_chunks``
alone), ``column`` (``ds.select(range(seq_rows))["input_ids"]`` as Arrow, every id summed: one
read of a whole column), ``iterate`` (a sequential pass, 65,536-row Arrow batches) and ``map``
(a cheap batched ``map`` over every row, written to a temporary cache). The random cases
read the rows the global stream reads first (``--rows`` of them); ``pages`` is what those
rows occupy (4 KiB pages of offsets and values), the least a cold read can fetch. Every
file's pages are dropped before each case, so a corpus larger than memory can be measured too.

Usage (a corpus written by ``write_chunks`` with a ``list<int32>`` column ``input_ids``)::

    python scripts/bench/bench_random_reads.py --corpus /work/scale/tok10m --rows 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
from bench_common import drop_file_pages, read_bytes

_PAGE = 4096
CASES = (
    *("raw", "getitem", "select", "stream", "first"),
    *("chunks", "blocks", "open", "column", "iterate", "map"),
)
#: Cases that read their own rows (not the random rows): no pages ratio, no raw ratio.
OWN_ROWS = ("first", "chunks", "blocks", "open", "column", "iterate", "map")


_disk_read = read_bytes
_drop = drop_file_pages


def _layout(files: list[str]) -> list[tuple[str, int, int, int, int]]:
    """``(path, first row, rows, offsets' file offset, values' file offset)`` per batch."""
    import pyarrow as pa

    out = []
    row = 0
    for path in files:
        with pa.memory_map(path, "r") as mm:
            buf = mm.read_buffer()
            reader = pa.ipc.open_file(buf)
            for i in range(reader.num_record_batches):
                col = reader.get_batch(i).column("input_ids")
                offs, vals = col.buffers()[1], col.buffers()[3]
                out.append(
                    (path, row, len(col), offs.address - buf.address, vals.address - buf.address)
                )
                row += len(col)
    return out


def raw_loop(files: list[str], positions: np.ndarray) -> tuple[int, int]:
    """Read rows ``positions`` (global row numbers) with ``os.pread``: the disk's limit.

    Returns ``(rows, tokens)``.
    """
    with open(os.path.join(os.environ["BENCH_TMP"], "layout.json"), encoding="utf-8") as f:
        layout = [tuple(b) for b in json.load(f)]  # computed by the parent: no reads here
    firsts = np.array([b[1] for b in layout], dtype=np.int64)
    fds = {p: os.open(p, os.O_RDONLY) for p in files}
    tokens = 0
    try:
        for pos in positions.tolist():
            path, first, _, offs, vals = layout[int(np.searchsorted(firsts, pos, "right")) - 1]
            fd, local = fds[path], pos - first
            lo, hi = np.frombuffer(os.pread(fd, 8, offs + 4 * local), dtype=np.int32).tolist()
            ids = np.frombuffer(os.pread(fd, 4 * (hi - lo), vals + 4 * lo), dtype=np.int32)
            tokens += len(ids)
    finally:
        for fd in fds.values():
            os.close(fd)
    return len(positions), tokens


def _pages(files: list[str], positions: np.ndarray) -> int:
    """Bytes of the 4 KiB pages holding the rows' offsets and values."""
    layout = _layout(files)
    firsts = np.array([b[1] for b in layout], dtype=np.int64)
    pages: set[tuple[str, int]] = set()
    for pos in positions.tolist():
        path, first, _, offs, vals = layout[int(np.searchsorted(firsts, pos, "right")) - 1]
        local = pos - first
        pages.add((path, (offs + 4 * local) // _PAGE))
        pages.add((path, (offs + 4 * local + 4) // _PAGE))
        with open(path, "rb") as f:
            f.seek(offs + 4 * local)
            lo, hi = np.frombuffer(f.read(8), dtype=np.int32).tolist()
        for p in range((vals + 4 * lo) // _PAGE, (vals + 4 * max(hi, lo + 1) - 1) // _PAGE + 1):
            pages.add((path, p))
    return len(pages) * _PAGE


def _stream_rows(ds: Any, shuffle: str, rows: int) -> tuple[int, int]:
    stream = (
        ds.to_stream(shuffle=shuffle, seed=0)
        .budget_bucket("input_ids", 4096, read_ahead=5_000, seed=3)
        .collate("input_ids")
    )
    got = tokens = 0
    for batch in stream:
        got += len(batch["input_ids"])
        tokens += int(batch["attention_mask"].sum())
        if got >= rows:
            break
    stream.close()
    return got, tokens


def run_case(case: str, corpus: str, rows: int, seq_rows: int) -> dict[str, Any]:
    """One case in this process, on a cold corpus; returns its measurements."""
    import pyarrow.compute as pc

    import arrowmix as am

    files = sorted(glob.glob(os.path.join(corpus, "*.arrow")))
    positions = np.load(os.path.join(os.environ["BENCH_TMP"], "positions.npy"))[:rows]
    _drop(files)
    before, t0 = _disk_read(), time.perf_counter()
    if case == "raw":
        got, tokens = raw_loop(files, positions)
    else:
        ds = am.Dataset.from_chunks(corpus, cache_dir=os.environ["BENCH_TMP"])
        if case == "getitem":
            tokens = sum(len(ds[i]["input_ids"]) for i in positions.tolist())
            got = len(positions)
        elif case == "select":
            tokens = got = 0
            for a in range(0, len(positions), 1024):
                part = ds.select(positions[a : a + 1024]).with_format("arrow")[:]
                got += part.num_rows
                tokens += len(part.column("input_ids").combine_chunks().values)
        elif case == "stream":
            got, tokens = _stream_rows(ds, "global", rows)
        elif case in ("chunks", "blocks"):
            got, tokens = _stream_rows(ds, case, seq_rows)
        elif case == "first":  # open and the default stream's first batch
            got, tokens = _stream_rows(ds, "global", 1)
        elif case == "open":
            got, tokens = len(ds), 0
        elif case == "column":  # one read of a whole column (ds["col"]) of the first rows
            col = ds.select(range(min(seq_rows, len(ds)))).with_format("arrow")["input_ids"]
            for c in col.chunks:
                pc.sum(c.values)  # reads every token id
            got, tokens = len(col), sum(len(c.values) for c in col.chunks)
        elif case == "iterate":
            got = tokens = 0
            for batch in ds.with_format("arrow").iter(batch_size=65536):
                got += batch.num_rows
                tokens += len(batch.column("input_ids").combine_chunks().values)
        else:  # map
            out = ds.with_format("arrow").map(  # reads every token id (their largest)
                lambda t: {"n": [pc.max(pc.list_flatten(t["input_ids"])).as_py()] * len(t)},
                batched=True,
                batch_size=65536,
                load_from_cache_file=False,
            )
            got = len(out)
            lengths = pc.list_value_length(ds.with_format("arrow")[: len(out)]["input_ids"])
            tokens = int(pc.sum(lengths).as_py())
    seconds = time.perf_counter() - t0
    return {
        "case": case,
        "seconds": seconds,
        "rows": got,
        "tokens": tokens,
        "disk_bytes": _disk_read() - before,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="/work/scale/tok10m")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the random cases")
    parser.add_argument(
        "--seq-rows", type=int, default=500_000, help="rows of the chunks and blocks streams"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--case", help=argparse.SUPPRESS)  # the worker process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.corpus, args.rows, args.seq_rows)))
        return
    import arrowmix as am

    cases = args.cases.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-reads-") as tmp:
        ds = am.Dataset.from_chunks(args.corpus, cache_dir=tmp)
        stream = ds.to_stream(shuffle="global", seed=0)
        stream.reset(None)
        positions = stream.pull_positions(args.rows)  # the stream's first rows
        np.save(os.path.join(tmp, "positions.npy"), positions)
        files = sorted(glob.glob(os.path.join(args.corpus, "*.arrow")))
        pages = _pages(files, positions)
        with open(os.path.join(tmp, "layout.json"), "w", encoding="utf-8") as f:
            json.dump(_layout(files), f)
        results: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
        env = {**os.environ, "BENCH_TMP": tmp}
        for _ in range(args.repeats):
            for case in cases:
                cmd = [sys.executable, __file__, "--case", case, "--corpus", args.corpus]
                cmd += ["--rows", str(args.rows), "--seq-rows", str(args.seq_rows)]
                out = subprocess.run(cmd, env=env, check=True, capture_output=True)
                results[case].append(json.loads(out.stdout.decode().strip().splitlines()[-1]))
    print(f"corpus {args.corpus}; random cases: {args.rows} rows occupying {pages / 1e6:.1f} MB")
    head = "| case | rows | seconds | rows/s | M tokens/s | disk MB | disk / pages | peak RSS MiB |"
    print(head + " vs raw |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    raw = None
    for case in cases:
        runs = results[case]
        rate = statistics.median(r["rows"] / r["seconds"] for r in runs)
        toks = statistics.median(r["tokens"] / r["seconds"] for r in runs) / 1e6
        disk = statistics.median(r["disk_bytes"] for r in runs)
        rss = max(r["peak_rss_mb"] for r in runs)
        secs = statistics.median(r["seconds"] for r in runs)
        raw = rate if case == "raw" else raw
        own = case in OWN_ROWS
        ratio = f"{rate / raw:.2f}x" if raw and case != "raw" and not own else ""
        per_page = "" if own else f"{disk / pages:.2f}"
        print(
            f"| {case} | {runs[0]['rows']:,} | {secs:.2f} | {rate:,.0f} | {toks:.2f}"
            f" | {disk / 1e6:,.1f} | {per_page} | {rss:.0f} | {ratio} |"
        )


if __name__ == "__main__":
    main()
