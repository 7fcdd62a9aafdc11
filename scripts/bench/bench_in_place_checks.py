"""What the checks of files read in place cost: MDS declared hashes, and a stat per token read.

Writes, under ``--dir``, an MDS corpus of ``--mb`` MB of uint16 token documents (zstd, written
by mosaicml-streaming's ``MDSWriter`` with ``hashes=["sha1", "xxh64"]``), the same corpus
with ``sha1`` only, and a flat uint16 token file of the same tokens. Then times, in fresh
processes (imports excluded), an open plus one pass of ``pack("input_ids", 2048)`` over:

- ``mds xxh64, first use``: a new cache root each run, so every shard is hashed (the
  fastest algorithm declared, xxh64) at its first read, as is its content digest at open;
- ``mds sha1, first use``: the same with only ``sha1`` declared;
- ``mds xxh64, recorded``: a cache root kept from a previous run, whose records vouch for
  the shards (nothing hashed);
- ``token file``: the flat file (its digest cached), where each copy the token path makes
  out of the map ``stat``-s the file first.

``--baseline DIR`` runs another checkout's arrowmix (the main branch, say) in the same rounds,
interleaved (which runs first alternates by round). Medians of ``--repeat`` rounds.

Usage (from the repository root)::

    python scripts/bench/bench_in_place_checks.py --mb 256 --baseline ../main
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = 2048  # tokens per document


def _documents(mb: int) -> np.ndarray:
    n = mb * (1 << 20) // (2 * DOC)
    return np.random.default_rng(0).integers(0, 50_000, (n, DOC), dtype=np.uint16)


def build(directory: str, mb: int) -> None:
    """The corpora (skipped when present)."""
    sys.path.insert(0, ROOT)
    from tests.formats.mds_helpers import write_mds

    docs = _documents(mb)
    for name, hashes in (("mds-xxh64", ["sha1", "xxh64"]), ("mds-sha1", ["sha1"])):
        out = os.path.join(directory, name)
        if not os.path.exists(os.path.join(out, "index.json")):
            rows = ({"input_ids": d} for d in docs)
            write_mds(out, {"input_ids": "ndarray:uint16"}, rows, compression="zstd",
                      hashes=hashes, size_limit=64 << 20)  # fmt: skip
    flat = os.path.join(directory, "tokens.bin")
    if not os.path.exists(flat):
        docs.tofile(flat)


def run_case(case: str, directory: str) -> dict[str, float]:
    """One timed open and pass, in this process."""
    import arrowmix as am

    start = time.perf_counter()
    if case == "tokens":
        ds = am.from_token_file(os.path.join(directory, "tokens.bin"), np.uint16, seq_len=DOC)
    else:
        ds = am.Dataset.from_mds(os.path.join(directory, case), columns=["input_ids"])
    opened = time.perf_counter() - start
    tokens = 0
    for batch in ds.to_stream(shuffle=None, infinite=False).pack("input_ids", DOC):
        tokens += int(batch["input_ids"].size)
    return {"open_s": opened, "total_s": time.perf_counter() - start, "tokens": tokens}


CASES = [
    ("mds xxh64, first use", "mds-xxh64", "fresh"),
    ("mds sha1, first use", "mds-sha1", "fresh"),
    ("mds xxh64, recorded", "mds-xxh64", "kept"),
    ("token file", "tokens", "kept"),
]


def _one(tree: str, case: str, directory: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree, "ARROWMIX_CACHE": cache}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_in_place_checks as b; "
        "print(json.dumps(b.run_case(sys.argv[2], sys.argv[3])))"
    )
    out = subprocess.run(  # run in the tree: ``-c`` puts the working directory first
        [sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), case, directory],
        env=env, cwd=tree, check=True, capture_output=True, text=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def micro(directory: str) -> None:
    """The checks alone: hash throughput over the shards (page cache), and one ``stat``."""
    from arrowmix._storage.shard_hashes import hash_hex

    shards = [
        os.path.join(directory, "mds-xxh64", n)
        for n in sorted(os.listdir(os.path.join(directory, "mds-xxh64")))
        if ".mds" in n
    ]
    data = [open(p, "rb").read() for p in shards]  # noqa: SIM115 - read whole, closed by GC
    total = sum(len(d) for d in data)
    for algo in ("xxh3_64", "xxh64", "md5", "sha1"):
        best = min(_timed(lambda a=algo: [hash_hex(a, d) for d in data]) for _ in range(3))
        print(f"hash {algo:8s} {total / best / 1e9:6.2f} GB/s ({total >> 20} MiB in {best:.3f} s)")
    flat = os.path.join(directory, "tokens.bin")
    n = 100_000
    best = min(_timed(lambda: [os.stat(flat) for _ in range(n)]) for _ in range(3))
    batches = os.path.getsize(flat) // (2 * DOC)
    print(
        f"one stat {best / n * 1e6:.2f} us; {batches} packed batches of {DOC} tokens: "
        f"{best / n * batches:.3f} s of stats per pass"
    )


def _timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "bench-in-place"))
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=None, help="another checkout to compare with")
    parser.add_argument("--micro", action="store_true", help="only the checks alone")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    build(args.dir, args.mb)
    if args.micro:
        print(f"load average: {os.getloadavg()[0]:.1f}")
        micro(args.dir)
        return
    trees = {
        "this": ROOT,
        **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {}),
    }
    kept = {t: tempfile.mkdtemp(prefix=f"cache-{t}-", dir=args.dir) for t in trees}
    for tree, path in trees.items():  # the kept cache roots: digests and records made once
        for _, case, _ in CASES:
            _one(path, case, args.dir, kept[tree])
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(args.repeat):
        order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
        for label, case, cache in CASES:
            for tree, path in order:
                root = kept[tree] if cache == "kept" else tempfile.mkdtemp(dir=args.dir)
                got = _one(path, case, args.dir, root)
                times.setdefault((label, tree), []).append(got["total_s"])
                if cache == "fresh":
                    shutil.rmtree(root, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.1f}; {args.mb} MB of tokens; medians of "
          f"{args.repeat}")  # fmt: skip
    for label, _, _ in CASES:
        row = {t: statistics.median(times[label, t]) for t in trees}
        print(f"{label:24s} " + "  ".join(f"{t} {v:6.2f} s" for t, v in row.items()))


if __name__ == "__main__":
    main()
