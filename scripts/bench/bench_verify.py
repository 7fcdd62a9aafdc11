"""Open and verify speed of a chunk corpus: ``from_chunks``, ``verify=True``, ``arrowmix verify``.

Writes a ~300 MB corpus once (``--dir``), then reports medians of ``--repeat`` runs:

1. ``Dataset.from_chunks(dir)`` in this process, the corpus already opened once (what every
   script start after the first pays: no data is read, digests come from the manifest);
2. ``Dataset.from_chunks(dir, verify=True)``: every chunk hashed in full, MB/s;
3. ``arrowmix verify dir`` (in-process ``main``), MB/s.

The files are read from the page cache after the first run; a cold disk reads at its own speed
(verification is bound by it: xxh3 hashes at several GB/s).

Usage (from the repository root)::

    python scripts/bench/bench_verify.py                 # ~300 MB, 5 repeats
    python scripts/bench/bench_verify.py --open-only    # only (1): runs against older checkouts too
    python scripts/bench/bench_verify.py --quick        # smoke run: 20 MB, 2 repeats
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from bench_common import base_parser, interleaved, machine_summary

import arrowmix as am


def make(directory: str, mb: int) -> int:
    """Write the corpus once; return its size in bytes."""
    if not os.path.exists(os.path.join(directory, "_manifest.json")):
        rng = np.random.default_rng(0)
        rows = mb * 2**20 // 1032
        tokens = rng.integers(0, 50_000, size=(rows, 256), dtype=np.int32)
        table = pa.table(
            {
                "id": np.arange(rows),
                "tokens": pa.FixedSizeListArray.from_arrays(tokens.ravel(), 256),
            }
        )
        am.write_chunks(table, directory, bytes_per_chunk=32 * 2**20, overwrite=True)
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    return interleaved({"case": fn}, repeat, verbose=False, cpu=False)["case"].median


def main() -> None:
    p = base_parser(
        __doc__,
        rows=None,
        quick="smoke run: a 20 MB corpus (in --dir/quick), 2 repeats",
        workdir=os.path.join(tempfile.gettempdir(), "arrowmix-bench-verify"),
        workdir_flags=("--dir", "--workdir"),
        repeats=5,
        repeats_flags=("--repeat", "--repeats"),
        seed=False,
    )
    p.add_argument("--mb", type=int, default=300)
    p.add_argument("--open-only", action="store_true")
    args = p.parse_args()
    args.dir, args.repeat = args.workdir, args.repeats
    if args.quick:
        args.dir, args.mb, args.repeat = os.path.join(args.dir, "quick"), 20, 2
    print(f"# {machine_summary()}")
    size = make(args.dir, args.mb)
    n = len([f for f in os.listdir(args.dir) if f.endswith(".arrow")])
    mb = size / 1e6
    print(f"corpus: {mb:.0f} MB in {n} chunk files at {args.dir} (arrowmix {am.__file__})")
    am.Dataset.from_chunks(args.dir)  # first open: validation remembered
    t = timed(lambda: am.Dataset.from_chunks(args.dir), args.repeat * 20)
    print(f"1. from_chunks (reopen):          {t * 1e3:8.2f} ms")
    if args.open_only:
        return
    t = timed(lambda: am.Dataset.from_chunks(args.dir, verify=True), args.repeat)
    print(f"2. from_chunks(verify=True):      {t:8.3f} s  {mb / t:8.0f} MB/s")

    from arrowmix._cli.main import main as cli

    def run_cli() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(["verify", args.dir]) == 0

    t = timed(run_cli, args.repeat)
    print(f"3. arrowmix verify:               {t:8.3f} s  {mb / t:8.0f} MB/s")


if __name__ == "__main__":
    main()
