"""First open of a large chunk file: what comparing its bytes with the recorded digest costs.

Writes one chunk of ``--gb`` GB (rows of 1 MB random bytes) with ``write_chunks`` into
``--dir``, then times ``Dataset.from_chunks(dir)`` in fresh processes (imports excluded), with
the disk bytes read (``/proc/self/io``), in three states:

- ``recorded``: the file as written (its ``stat`` identity is the one its manifest records:
  the recorded digest is used, nothing is read);
- ``new version, warm``: a copy of it (``cp -r``), touched (``os.utime``) before each run,
  so its identity is new: it is validated and hashed in full once, from the page cache
  (the file is read just before the run);
- ``new version, cold``: the same after dropping the file's pages
  (``POSIX_FADV_DONTNEED``).

``--baseline DIR`` runs another checkout's arrowmix (the main branch, say) in the same rounds,
interleaved (which one runs first alternates by round), for a side-by-side comparison.
Medians of ``--repeat`` rounds.

Usage (from the repository root)::

    python scripts/bench/bench_first_open.py --gb 1.6 --baseline ../main
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

import numpy as np
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_common import drop_file_pages  # noqa: E402

CHILD = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
from bench_common import read_bytes
import arrowmix as am
t, r = time.perf_counter(), read_bytes()
n = am.Dataset.from_chunks(sys.argv[2]).num_rows
print(json.dumps({"s": time.perf_counter() - t, "mb": (read_bytes() - r) / 2**20, "rows": n}))
"""


def _corpus(d: str, gb: float) -> str:
    if not os.path.exists(os.path.join(d, "_manifest.json")):
        sys.path.insert(0, ROOT)
        import arrowmix as am

        rows = int(gb * 1024)
        rng = np.random.default_rng(0)

        def batches():  # type: ignore[no-untyped-def]
            for _ in range(0, rows, 64):
                blobs = [rng.bytes(2**20) for _ in range(64)]
                yield pa.record_batch({"blob": pa.array(blobs, pa.binary())})

        am.write_chunks(batches(), d, bytes_per_chunk=2**40)
    return os.path.join(d, "chunk-00000.arrow")


def _run(root: str, d: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, root, d], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--gb", type=float, default=1.6)
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "arrowmix-first-open"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--baseline", help="another checkout to run in the same rounds")
    args = p.parse_args()
    recorded = os.path.join(args.dir, "recorded")
    touched = os.path.join(args.dir, "touched")  # a copy, touched before each run
    chunk = _corpus(recorded, args.gb)
    if not os.path.exists(touched):
        shutil.copytree(recorded, touched)
    chunk = os.path.join(touched, os.path.basename(chunk))
    roots = {"arrowmix": ROOT}
    if args.baseline:
        roots["baseline"] = os.path.abspath(args.baseline)
    for root in roots.values():
        _run(root, recorded)  # warm-up: the recorded state's records exist
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for round_no in range(args.repeat):
        order = list(roots.items())
        if round_no % 2:
            order.reverse()  # the first run after a touch may find pages evicted: alternate
        for case in ("recorded", "new version, warm", "new version, cold"):
            for name, root in order:
                if case != "recorded":
                    os.utime(chunk)
                if case.endswith("cold"):
                    drop_file_pages([chunk])
                elif case.endswith("warm"):
                    with open(chunk, "rb") as f:  # bring the pages in: warm means cached
                        while f.read(2**24):
                            pass
                r = _run(root, recorded if case == "recorded" else touched)
                results.setdefault((case, name), []).append(r)
                print(json.dumps({"case": case, "lib": name, **r}), flush=True)
    size = os.path.getsize(chunk) / 2**30
    print(f"\nchunk: {size:.2f} GiB\n\n| case | " + " | ".join(roots) + " |")
    print("| --- " * (1 + len(roots)) + "|")
    for case in ("recorded", "new version, warm", "new version, cold"):
        cells = []
        for name in roots:
            rs = results[(case, name)]
            s = statistics.median(r["s"] for r in rs)
            mb = statistics.median(r["mb"] for r in rs)
            cells.append(f"{s:.3f} s, {mb:.0f} MB read")
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
