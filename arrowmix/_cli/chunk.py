"""``arrowmix chunk INPUT... --out DIR``: raw corpus files into Arrow chunk files.

The replacement for the ``split | gzip`` recipe: text (one row per line), JSON Lines, CSV or
Parquet, local or fsspec URLs, compressed or not, streamed into ``chunk-00000.arrow``... with
bounded memory, each chunk written atomically. A malformed input stops with its file and line;
the chunks written before it stay complete.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from arrowmix._cli.common import CommandError
from arrowmix._cli.humanize import both_units, positive_int, positive_size
from arrowmix._dataset.inputs.ingest import input_batches
from arrowmix._dataset.progress import progress_enabled
from arrowmix._storage.chunks import write_batches
from arrowmix._storage.globs import expand_inputs
from arrowmix._storage.readers import FORMATS
from arrowmix.exceptions import TargetExistsError

__all__ = ["add_parser", "run"]

_SUFFIXES = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "json",
    ".ndjson": "json",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4")

EPILOG = """\
examples:
  arrowmix chunk corpus/*.txt.gz --out corpus_chunks --chunk-size 64MB
  arrowmix chunk dump.jsonl --out chunks --rows-per-chunk 100000
  arrowmix chunk s3://bucket/raw/ --format parquet --out chunks
"""


def add_parser(subparsers: Any) -> None:
    """Register ``chunk``."""
    p = subparsers.add_parser(
        "chunk",
        help="convert text/JSON Lines/CSV/Parquet files into Arrow chunk files",
        description=__doc__.splitlines()[0].split(": ", 1)[1].capitalize(),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, globs, directories or URLs")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the chunk files")
    p.add_argument(
        "--format",
        choices=sorted(FORMATS),
        help="input format (default: from the file suffix, e.g. .txt.gz -> text)",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--rows-per-chunk", type=positive_int, metavar="N", help="rows per chunk file (N >= 1)"
    )
    size.add_argument(
        "--chunk-size",
        type=positive_size,
        metavar="SIZE",
        help="bytes per chunk file: 64MB = 64*1000^2, 64MiB = 64*1024^2 (default 256MiB)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace chunk files already in DIR")
    p.set_defaults(func=run)


def guess_format(path: str) -> str | None:
    """The format a file name suggests, looking through a compression suffix."""
    name = path.rsplit("/", 1)[-1].lower()
    for ext in _COMPRESSED:
        name = name.removesuffix(ext)
    return next((fmt for suf, fmt in _SUFFIXES.items() if name.endswith(suf)), None)


def _format_of(files: list[str], given: str | None) -> str:
    if given:
        return given
    guesses = {f: guess_format(f) for f in files}
    choices = f"--format {{{','.join(sorted(FORMATS))}}}"
    unknown = [f for f, fmt in guesses.items() if fmt is None]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise CommandError(
            f"cannot tell the input format of {unknown[0]!r}{more} from its name (known "
            f"suffixes: {' '.join(_SUFFIXES)}, optionally compressed); pass {choices}"
        )
    found = sorted({fmt for fmt in guesses.values() if fmt is not None})
    if len(found) > 1:
        example = {fmt: next(f for f, g in guesses.items() if g == fmt) for fmt in found}
        named = ", ".join(f"{fmt} ({f!r})" for fmt, f in example.items())
        raise CommandError(f"the inputs mix formats: {named}; convert one format per run")
    return found[0]


def _counted(batches: Iterator[pa.RecordBatch], total_files: int) -> Iterator[pa.RecordBatch]:
    if not progress_enabled():
        yield from batches
        return
    from tqdm.auto import tqdm

    with tqdm(desc="chunk", unit=" rows", unit_scale=True, file=sys.stderr) as bar:
        bar.set_postfix_str(f"{total_files} input files", refresh=False)
        for b in batches:
            bar.update(b.num_rows)
            yield b


def run(args: argparse.Namespace) -> int:
    """Convert the inputs; print the chunk files written and the row count."""
    files = expand_inputs(args.inputs)
    fmt = _format_of(files, args.format)
    batches = _counted(input_batches(files, fmt), len(files))
    rows = 0

    def counting() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for b in batches:
            rows += b.num_rows
            yield b

    try:
        paths = write_batches(
            counting(),
            args.out,
            rows_per_chunk=args.rows_per_chunk,
            bytes_per_chunk=args.chunk_size,
            overwrite=args.overwrite,
        )
    except TargetExistsError as exc:  # files in DIR that write_chunks must not replace
        raise CommandError(str(exc)) from exc
    except FileExistsError as exc:  # raised before any input is read
        raise CommandError(
            f"--out {args.out!r} already holds chunk files; pass --overwrite to replace them, "
            "or choose an empty directory"
        ) from exc
    total = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    for p in paths:
        print(p)
    print(
        f"{rows} rows from {len(files)} {fmt} file(s) -> {len(paths)} chunk file(s), "
        f"{both_units(total)} ({total} bytes)"
    )
    return 0
