"""Shuffle modes of ``to_stream`` on a cold corpus: speed, disk bytes, and order quality.

Run from the repository root on a tokenized corpus of arrowmix chunks (``input_ids``
``list<int32>``)::

    python scripts/bench/bench_shuffle.py speed /work/scale/tok10m --tokens 50e6 --rounds 3
    python scripts/bench/bench_shuffle.py speed /work/scale/tok10m --warm \
        --modes sequential,global,chunks,blocks-1024x256
    python scripts/bench/bench_shuffle.py quality /work/scale/tok10m

``speed``: one fresh process per (mode, round), modes interleaved in every round. Each
process drops the corpus's pages (``posix_fadvise(DONTNEED)`` per chunk file), opens it,
builds the token path of the README (``to_stream`` -> ``budget_bucket`` of 16,384 padded
tokens over read-ahead windows of 8,192 rows -> ``collate(return_tensors="pt")``), and
reads batches until ``--tokens`` document tokens are delivered. It reports tokens/s (from
the first batch request on, the open excluded), the time to the first batch, and the disk
bytes the stream read (``read_bytes`` of ``/proc/self/io`` after the open, torch imported
before) against the bytes of the token ids delivered. Then the pages are dropped again and
a fresh pipeline loads the checkpoint taken halfway through the run: the time to its first
batch (build, load, read), and whether that batch is the one the run yielded there. Also
the share of the corpus's pages
resident after the drop (``mincore``: not 0 when another process maps the corpus; use a
private copy then) and after the open (whose read-around is dropped too: the stream
starts cold). Medians over the rounds.

``--warm`` reads the corpus into the page cache instead of dropping it (before the open and
before the resume): the CPU cost of each order, against storage order (``sequential``).

``quality``: the epoch's order of each mode (positions only, no data read):

- ``files/batch``: distinct chunk files a batch of 256 consecutive rows draws from (mean);
- ``blocks/batch``: distinct 1,024-row ranges of the corpus such a batch draws from;
- ``lag-1 corr``: correlation of consecutive rows' positions over the epoch (0 for a
  perfect shuffle);
- ``neighbours' distance``: how far apart in the epoch two neighbouring rows of the corpus
  (``i``, ``i + 1``) land, median, as a fraction of the epoch (0.29 for a uniform random
  permutation; near 0 where an order keeps rows of a block or a file together).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_common import drop_file_pages, read_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

BUDGET = 16_384
READ_AHEAD = 8_192
BATCH = 256
RANGE = 1_024

#: name -> to_stream keywords
MODES: dict[str, dict[str, Any]] = {
    "sequential": {"shuffle": None},  # storage order: the reference for --warm
    "global": {"shuffle": "global"},
    "chunks": {"shuffle": "chunks"},
    "blocks-256x256": {"shuffle": "blocks", "block_size": 256},
    "blocks-1024x256": {"shuffle": "blocks"},  # the defaults
    "blocks-1024x1024": {"shuffle": "blocks", "window_blocks": 1024},
    "blocks-4096x64": {"shuffle": "blocks", "block_size": 4096, "window_blocks": 64},
}


def chunk_files(corpus: Path) -> list[Path]:
    return sorted(corpus.glob("*.arrow"))


def drop_pages(corpus: Path) -> None:
    """Evict the corpus's pages from the page cache (a cold read follows)."""
    drop_file_pages(chunk_files(corpus))


def resident_share(corpus: Path) -> float:
    """The share of the corpus's pages in the page cache (``mincore``; Linux)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    total = resident = 0
    for f in chunk_files(corpus):
        size = f.stat().st_size
        with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as m:
            view = np.frombuffer(m, dtype=np.uint8)
            pages = -(-size // mmap.PAGESIZE)
            vec = np.zeros(pages, dtype=np.uint8)
            libc.mincore(
                ctypes.c_void_p(view.ctypes.data), ctypes.c_size_t(size),
                ctypes.c_void_p(vec.ctypes.data),
            )  # fmt: skip
            resident += int((vec & 1).sum())
            total += pages
            del view
    return resident / max(total, 1)


def warm_pages(corpus: Path) -> None:
    """Read the corpus once, so that it is in the page cache (``--warm``)."""
    for f in chunk_files(corpus):
        with open(f, "rb") as fh:
            while fh.read(8 << 20):
                pass


def run_child(corpus: Path, mode: str, tokens: float, warm: bool = False) -> dict[str, Any]:
    """One run of ``mode`` (cold, or ``warm``): read batches until ``tokens`` are delivered."""
    evict = warm_pages if warm else drop_pages
    import torch  # noqa: F401  (imported first: its libraries' reads are not the stream's)

    import arrowmix
    from arrowmix._dataset.mapping.residency import release_mapped_pages

    evict(corpus)
    cold = resident_share(corpus)  # another process mapping the corpus keeps pages resident
    ds = arrowmix.Dataset.from_chunks(str(corpus))
    evict(corpus)  # the open's read-around too: the stream starts cold
    opened = resident_share(corpus)
    disk0 = read_bytes()  # from here on: the stream's reads (the open's are another matter)

    def build() -> Any:
        return (
            ds.to_stream(seed=0, **MODES[mode])
            .budget_bucket("input_ids", BUDGET, READ_AHEAD, seed=7)
            .collate("input_ids", return_tensors="pt")
        )

    s = build()
    t0 = time.perf_counter()
    got = batches = 0
    first = 0.0
    state: dict[str, Any] | None = None
    expected = None  # the batch that followed ``state``
    while got < tokens:
        b = next(s)
        got += int(b["attention_mask"].sum())
        batches += 1
        if batches == 1:
            first = time.perf_counter() - t0
        if state is not None and expected is None:
            expected = b["input_ids"]
        if state is None and got >= tokens / 2:
            state = s.state_dict()  # the checkpoint the resume below starts from
    dt = time.perf_counter() - t0
    disk = read_bytes() - disk0
    s.close()
    # Resume, cold: a fresh pipeline loads the mid-run state and yields the next batch.
    # This process maps the pages it read: unmap them first, or they cannot be dropped.
    release_mapped_pages([str(f) for f in chunk_files(corpus)])
    evict(corpus)
    resumed_cold = resident_share(corpus)
    t1 = time.perf_counter()
    r = build()
    r.load_state_dict(state)
    again = next(r)["input_ids"]
    resume = time.perf_counter() - t1
    r.close()
    assert expected is not None
    return {
        "mode": mode,
        "mtok_s": got / dt / 1e6,
        "first_batch_s": first,
        "disk_mb": disk / 1e6,
        "delivered_mb": got * 4 / 1e6,
        "seconds": dt,
        "resident_after_drop": cold,
        "resident_after_open": opened,
        "resume_s": resume,
        "resident_before_resume": resumed_cold,
        "resume_exact": bool(again.shape == expected.shape and (again == expected).all()),
    }


def speed(args: argparse.Namespace) -> None:
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in args.modes}
    for r in range(args.rounds):
        for mode in args.modes:
            cmd = [sys.executable, __file__, "child", str(args.corpus), mode, str(args.tokens)]
            cmd += ["warm"] if args.warm else []
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            results[mode].append(res)
            print(
                f"round {r} {mode:16s} resume {res['resume_s']:.2f} s "
                f"({'exact' if res['resume_exact'] else 'NOT EXACT'})  "
                f" {res['mtok_s']:6.2f} M tok/s  "
                f"first {res['first_batch_s']:.2f} s  disk {res['disk_mb']:7.0f} MB  "
                f"delivered {res['delivered_mb']:5.0f} MB  resident after drop "
                f"{res['resident_after_drop']:.1%}, after open {res['resident_after_open']:.1%}, "
                f"before resume {res['resident_before_resume']:.1%}",
                flush=True,
            )
    print(f"\nmedians over {args.rounds} rounds, {args.tokens / 1e6:.0f} M tokens per run")
    print(
        "| mode | M tokens/s | first batch | disk read | delivered | disk / delivered "
        "| resume (cold) | exact |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for mode, rs in results.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "mode"}
        exact = all(r["resume_exact"] for r in rs)
        print(
            f"| {mode} | {med['mtok_s']:.2f} | {med['first_batch_s']:.2f} s | "
            f"{med['disk_mb']:.0f} MB | {med['delivered_mb']:.0f} MB | "
            f"{med['disk_mb'] / med['delivered_mb']:.2f}x | {med['resume_s']:.2f} s | "
            f"{'yes' if exact else 'NO'} |"
        )


def order_positions(corpus: Path, mode: str, rows: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The first ``rows`` positions of epoch 0 of ``mode``, the chunk offsets, the row count."""
    import arrowmix

    ds = arrowmix.Dataset.from_chunks(str(corpus))
    src = ds.to_stream(seed=0, **MODES[mode])
    src.state_dict()  # starts the stream
    pos = src.as_positions().pull(min(rows, len(ds)))
    return np.asarray(pos), src.row_source().chunk_offsets(), len(ds)


def quality(args: argparse.Namespace) -> None:
    print(
        f"epoch 0 of each mode; batch metrics over its first {args.batches:,} batches "
        f"of {BATCH} rows"
    )
    print("| mode | files/batch | 1,024-row ranges/batch | lag-1 corr | neighbours' distance |")
    print("| --- | --- | --- | --- | --- |")
    for mode in args.modes:
        pos, offsets, n = order_positions(args.corpus, mode, args.rows)
        batches = pos[: args.batches * BATCH].reshape(-1, BATCH)
        files = np.searchsorted(offsets, batches, side="right")
        nfiles = np.mean([len(np.unique(b)) for b in files])
        nranges = np.mean([len(np.unique(b // RANGE)) for b in batches])
        corr = float(np.corrcoef(pos[:-1], pos[1:])[0, 1])
        # where rows i and i + 1 of the corpus land in the epoch, apart (fraction of it)
        where = np.empty(n, dtype=np.int64)
        where[pos] = np.arange(n)
        dist = float(np.median(np.abs(np.diff(where)))) / n
        print(f"| {mode} | {nfiles:.1f} | {nranges:.1f} | {corr:+.4f} | {dist:.2e} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        corpus, mode, tokens = Path(sys.argv[2]), sys.argv[3], float(sys.argv[4])
        print(json.dumps(run_child(corpus, mode, tokens, warm=sys.argv[5:] == ["warm"])))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("speed", "quality"))
    p.add_argument("corpus", type=Path)
    default = ",".join(m for m in MODES if m != "sequential")
    p.add_argument("--modes", default=default, type=lambda s: s.split(","))
    p.add_argument("--tokens", type=float, default=50e6)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warm", action="store_true", help="speed: the corpus in the page cache")
    p.add_argument("--rows", type=int, default=10**12, help="quality: rows of the epoch")
    p.add_argument("--batches", type=int, default=2_000, help="quality: batches measured")
    args = p.parse_args()
    speed(args) if args.what == "speed" else quality(args)


if __name__ == "__main__":
    main()
