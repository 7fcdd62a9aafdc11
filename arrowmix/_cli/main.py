"""Entry point of the ``arrowmix`` command (console script and ``python -m arrowmix``).

``main(argv)`` returns the exit status instead of exiting, so tests call it in-process:
0 success, 1 an error reported as ``arrowmix: error: <message>`` on stderr, 2 a usage error
(one line on stderr naming the argument, e.g. ``arrowmix chunk: error: argument --chunk-size:
invalid size '0': must be at least 1 byte``), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from arrowmix._cli import cache_ls, chunk, cleanup_cache, fingerprint, rows_seen, verify
from arrowmix._cli.common import CommandError
from arrowmix._version import __version__
from arrowmix.exceptions import ArrowmixError

__all__ = ["Parser", "build_parser", "main"]

EPILOG = """\
examples:
  arrowmix chunk corpus/*.txt.gz --out corpus_chunks --chunk-size 64MB
  arrowmix cache ls                          # what the cache holds, newest first
  arrowmix cleanup-cache --dry-run           # what a cleanup would remove
  arrowmix cleanup-cache --older-than 7d     # remove entries unused for a week
  arrowmix fingerprint --explain A.arrow B.arrow
  arrowmix verify data/chunks                # recorded digests against the bytes on disk
  arrowmix rows-seen train.py:make_pipeline ckpt.json --steps 2   # rows of the next steps

Run `arrowmix COMMAND --help` for a command's options.
"""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line: the command, the argument, why.

    Subcommand parsers are of this class too (argparse makes them of their parent's class).
    """

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message> (see <prog> --help)`` and exit with status 2.

        A command users guess under another name gets its real name too.
        """
        for guess, real in GUESSED_NAMES.items():
            if f"invalid choice: '{guess}'" in message and self.prog.endswith(" cache"):
                message += f"; to remove cache entries use `arrowmix {real}`"
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


#: ``arrowmix cache <guess>`` -> the command that does it.
GUESSED_NAMES = {"cleanup": "cleanup-cache", "clean": "cleanup-cache", "rm": "cleanup-cache"}


def build_parser() -> argparse.ArgumentParser:
    """The ``arrowmix`` parser with every subcommand registered."""
    parser = Parser(
        prog="arrowmix",
        description=(
            "Convert corpora to Arrow chunks; inspect and clean arrowmix caches; verify\n"
            "recorded digests; list the rows a training step saw."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"arrowmix {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chunk.add_parser(sub)
    cache_ls.add_parser(sub)
    cleanup_cache.add_parser(sub)
    fingerprint.add_parser(sub)
    verify.add_parser(sub)
    rows_seen.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    try:
        status: int = args.func(args)
    except (CommandError, ArrowmixError, OSError) as exc:
        print(f"arrowmix: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("arrowmix: interrupted", file=sys.stderr)
        return 130
    return status
