"""``IterableDataset`` rows per second: arrowmix against HF ``datasets``, the same recipes.

Run from the repository root::

    PYTHONPATH=. python scripts/bench/bench_iterable.py --rows 100000 --repeats 3

A ``{"id", "text"}`` corpus (:func:`bench_common.make_text_table`, ~300 bytes of text per
row) plus a 3-token ``ids`` list column, as a Dataset of each library; each case is
``to_iterable_dataset(num_shards=4)`` followed by one method, read to the end in this process
(``with_format("torch")`` on the first 20,000 rows: both libraries convert row by row).
The cases run round-robin, arrowmix and HF alternating, and the table gives the medians.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from bench_common import Row, base_parser, interleaved, print_table, rows_from_args

import arrowmix as am


def text_length(row: dict[str, Any]) -> dict[str, int]:
    return {"n": len(row["text"])}


def text_lengths(batch: dict[str, list[Any]]) -> dict[str, list[int]]:
    return {"n": [len(t) for t in batch["text"]]}


def even(row: dict[str, Any]) -> bool:
    return bool(row["id"] % 2 == 0)


CASES: dict[str, Callable[[Any], Any]] = {
    "plain pass": lambda d: d,
    "map (per row)": lambda d: d.map(text_length),
    "map (batched)": lambda d: d.map(text_lengths, batched=True),
    "filter": lambda d: d.filter(even),
    "shuffle (buffer 1,000)": lambda d: d.shuffle(seed=0, buffer_size=1000),
    'with_format("torch")': lambda d: d.with_format("torch"),
}


def main() -> None:
    import datasets as hf
    import torch  # noqa: F401  # imported before timing, as a training script has it

    logging.getLogger("datasets").setLevel(logging.ERROR)
    args = base_parser(__doc__.splitlines()[0]).parse_args()
    rows = rows_from_args(args)
    from bench_common import make_text_table

    table = make_text_table(rows, args.seed)
    ids = pa.array([[i, i + 1, i + 2] for i in range(rows)], pa.list_(pa.int64()))
    table = table.append_column("ids", ids)
    results: list[Row] = []
    for name, recipe in CASES.items():
        n = min(rows, 20_000) if "torch" in name else rows  # both convert row by row
        ours, theirs = am.Dataset(table.slice(0, n)), hf.Dataset(table.slice(0, n))

        def run(ds: Any, recipe: Callable[[Any], Any] = recipe) -> None:
            for _ in recipe(ds.to_iterable_dataset(num_shards=4)):
                pass

        timings = interleaved(
            {"arrowmix": lambda o=ours: run(o), "datasets": lambda t=theirs: run(t)},
            args.repeats or 3,
            work=n,
        )
        results.append(Row(name, timings["arrowmix"], timings["datasets"]))
    print_table(results)


if __name__ == "__main__":
    main()
