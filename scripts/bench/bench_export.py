"""Exporters and ``from_generator``: arrowmix against HuggingFace ``datasets``, side by side.

Both libraries export the same ``{"id", "text"}`` corpus (``bench_common.make_text_table``),
held in memory by each, to Parquet and CSV, and build a dataset from the same generator of
row dicts (a fresh cache each time, so the generator really runs; then a second call, which
both libraries answer from their cache). Cases run round-robin; medians and the ratio
arrowmix / datasets are printed (rates: above 1 is faster).

Usage (from the repository root)::

    python scripts/bench/bench_export.py --quick       # 100k rows
    python scripts/bench/bench_export.py --rows 300000
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench_common import (
    Row,
    base_parser,
    interleaved,
    machine_summary,
    make_text_table,
    print_table,
    rows_from_args,
    workdir_from_args,
)

import arrowmix as am


def _rows(table: Any) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(max_chunksize=4096):
        yield from batch.to_pylist()


def main() -> None:
    """Measure and print the table."""
    args = base_parser(__doc__ or "").parse_args()
    n = rows_from_args(args)
    repeats = args.repeats or (3 if args.quick else 5)
    import datasets  # type: ignore[import-untyped]  # the peer, from the bench extra

    datasets.disable_progress_bars()
    table = make_text_table(n, args.seed)
    ours = am.Dataset.from_arrow(table)
    theirs = datasets.Dataset(table)
    with workdir_from_args(args, "bench-export-") as work:
        out = {"am": work / "am", "hf": work / "hf"}
        for d in out.values():
            d.mkdir(exist_ok=True)
        caches = {"am": work / "am-cache", "hf": work / "hf-cache"}

        def fresh(name: str) -> None:
            for d in caches.values():
                shutil.rmtree(d, ignore_errors=True)

        def gen() -> Iterator[dict[str, Any]]:
            return _rows(table)

        rows: list[Row] = []
        for kind in ("parquet", "csv"):
            t = interleaved(
                {
                    "am": lambda k=kind: getattr(ours, f"to_{k}")(str(out["am"] / f"x.{k}")),
                    "hf": lambda k=kind: getattr(theirs, f"to_{k}")(str(out["hf"] / f"x.{k}")),
                },
                repeats,
                work=n,
            )
            rows.append(Row(f"to_{kind}", t["am"], t["hf"]))
        t = interleaved(
            {
                "am": lambda: am.Dataset.from_generator(gen, cache_dir=str(caches["am"])),
                "hf": lambda: datasets.Dataset.from_generator(gen, cache_dir=str(caches["hf"])),
            },
            repeats,
            work=n,
            before_each=fresh,
        )
        rows.append(Row("from_generator (generates)", t["am"], t["hf"]))
        am.Dataset.from_generator(gen, cache_dir=str(caches["am"]))
        datasets.Dataset.from_generator(gen, cache_dir=str(caches["hf"]))
        t = interleaved(
            {
                "am": lambda: am.Dataset.from_generator(gen, cache_dir=str(caches["am"])),
                "hf": lambda: datasets.Dataset.from_generator(gen, cache_dir=str(caches["hf"])),
            },
            repeats,
            work=n,
        )
        rows.append(Row("from_generator (cached rerun)", t["am"], t["hf"], kind="time"))
        sizes = {k: Path(out[k] / "x.parquet").stat().st_size for k in out}
    print(machine_summary())
    print(f"{n:,} rows; Parquet file sizes: arrowmix {sizes['am']:,} B, datasets {sizes['hf']:,} B")
    print_table(rows)


if __name__ == "__main__":
    main()
