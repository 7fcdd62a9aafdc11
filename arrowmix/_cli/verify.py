"""``arrowmix verify PATH``: hash recorded data in full and compare with its recorded digests.

PATH is a directory written by ``write_chunks`` (its ``_manifest.json`` lists each chunk's
digest) or by ``save_to_disk`` (its ``state.json`` lists each data file's digest; a
DatasetDict's ``dataset_dict.json`` lists its splits, each checked so). Every file
is read in full (no digest cache): each one missing, not listed, or whose bytes hash to
another digest is printed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from arrowmix._cli.common import CommandError

__all__ = ["add_parser", "run"]

EPILOG = """\
examples:
  arrowmix verify data/chunks        # a write_chunks directory (its _manifest.json)
  arrowmix verify saved/train        # a save_to_disk directory (its state.json)
  arrowmix verify saved              # a DatasetDict's save (every split)

exit status: 0 every recorded file matches, 1 a file is damaged, missing or not listed (each
is named), or PATH records no digests (or its manifest is damaged, or an overwrite is under
way or was killed: the message says which), 2 usage error.
"""


def add_parser(subparsers: Any) -> None:
    """Register ``verify``."""
    p = subparsers.add_parser(
        "verify",
        help="check a corpus or saved dataset against its recorded digests",
        description=(
            "Hash every file of a write_chunks or save_to_disk directory in full and compare\n"
            "it with the digest recorded when it was written (finds bit rot and edits)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", help="a write_chunks or save_to_disk directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.path``; print one line per bad file and a summary."""
    from arrowmix._hf.verify import check_path

    start = time.perf_counter()
    try:
        report = check_path(args.path)
    except (ValueError, FileNotFoundError) as exc:
        raise CommandError(str(exc)) from exc
    seconds = max(time.perf_counter() - start, 1e-9)
    for path, why in report.problems:
        print(f"BAD {path}: {why}")
    mb = report.nbytes / 1e6
    summary = (
        f"{report.files} file(s) ok"
        if not report.problems
        else (f"{len(report.problems)} bad file(s), {report.files} read")
    )
    print(f"{summary}: {mb:.1f} MB hashed in {seconds:.2f} s ({mb / seconds:.0f} MB/s)")
    return 1 if report.problems else 0
