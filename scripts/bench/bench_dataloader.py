"""torch's DataLoader over a map-style Dataset: one gather per batch against one read per row.

``DataLoader(ds, batch_size=32)`` calls ``ds.__getitems__(indices)`` when the dataset has it
(one gather of the batch's rows), else ``ds[i]`` for each row. Three cases read every row of
the ``{"id", "text"}`` table (``bench_common.make_text_table``, in memory) in shuffled
batches, interleaved round after round: ``arrowmix`` (with ``__getitems__``), ``rows``
(arrowmix without it, as before it had one: emulated by removing the method) and
``datasets`` (HF's ``Dataset`` over the same table, which has ``__getitems__``).

Usage (from the repository root)::

    python scripts/bench/bench_dataloader.py             # 100k rows
    python scripts/bench/bench_dataloader.py --quick     # 20k rows
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from bench_common import (
    base_parser,
    interleaved,
    machine_summary,
    make_text_table,
    print_markdown,
    without_method,
)

import arrowmix as am
from arrowmix._dataset.dataset import Dataset


def row_by_row() -> contextlib.AbstractContextManager[None]:
    """DataLoader reads as before ``__getitems__``: ``ds[i]`` for every row."""
    return without_method(Dataset, "__getitems__")


def epoch(ds: Any, batch_size: int) -> int:
    """Every row through a shuffling DataLoader (default collation); the rows read."""
    import torch

    loader = torch.utils.data.DataLoader(
        ds, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(0)
    )
    return sum(len(b["id"]) for b in loader)


def main() -> None:
    p = base_parser(__doc__ or "", rows=100_000, workdir_flags=(), repeats=3)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    rows = 20_000 if args.quick and args.rows == 100_000 else args.rows
    import datasets
    import torch  # noqa: F401  (imported before the clock)
    from datasets.table import InMemoryTable

    table = make_text_table(rows, args.seed)
    ours = am.Dataset.from_arrow(table)
    theirs = datasets.Dataset(InMemoryTable(table))

    def rows_case() -> int:
        with row_by_row():
            return epoch(ours, args.batch_size)

    cases = {
        "arrowmix": lambda: epoch(ours, args.batch_size),
        "rows": rows_case,
        "datasets": lambda: epoch(theirs, args.batch_size),
    }
    t = interleaved(cases, args.repeats, work=rows, warmup=1)
    print(f"{rows:,} rows, batch_size={args.batch_size}; {machine_summary()}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    base = t["arrowmix"].median
    print_markdown(
        ["case", "epoch (median)", "rows/s", "time / arrowmix", "spread"],
        [
            [n, f"{x.median:.2f} s", f"{x.rate:,.0f}", f"{x.median / base:.2f}x", x.spread()]
            for n, x in t.items()
        ],
    )


if __name__ == "__main__":
    main()
