"""``arrowmix cleanup-cache``: remove cache files (all, old ones, or down to a size budget)."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any

from arrowmix._cache.cleanup import plan_cleanup, remove_idle_locks, remove_planned
from arrowmix._cache.listing import TMP_KIND, scan_tree, scan_with_records
from arrowmix._cli.cache_ls import print_corpora_here, print_recursive_hint
from arrowmix._cli.common import resolve_cache_dir
from arrowmix._cli.humanize import binary_bytes, both_units, parse_duration, parse_size
from arrowmix._hf.carry_over import carry_over
from arrowmix._storage.swap import recover_saves, recover_staging

__all__ = ["add_parser", "run"]

_FINGERPRINT_RE = re.compile(r"^[0-9a-f]{16}$")

DESCRIPTION = """\
Remove cache files (cache-<fp>.arrow, its segments cache-<fp>-<i>-of-<n>.arrow, and
indices-<fp>.arrow) from CACHE_DIR, and temporary files (tmp-<pid>-...partial) left by writers
that are gone (those of the digest cache in CACHE_DIR/digests/ included). With no filter
every cache file goes. Never removed: chunk files (the data),
files whose name is not one of these exact patterns, entries a running process is writing
(a held cache-<fp>.lock), files held by an open dataset, and --keep fingerprints. All segments
of a fingerprint go together. Lock files nobody holds go too (cache-<fp>.lock, and the
<key>.pin / <key>.dl files of a bounded chunk cache). Interrupted writes of processes that are
gone are finished or undone first: a killed save_to_disk of a directory in CACHE_DIR
(.<name>.saving-* / .<name>.replaced-*) and a killed write_chunks(overwrite=True) of CACHE_DIR
(.arrowmix-writing-*). Prints each file and the bytes freed."""

EPILOG = """\
examples:
  arrowmix cleanup-cache --dry-run                  # what would go from the default cache
  arrowmix cleanup-cache data/corpus_chunks         # every cache file beside the corpus
  arrowmix cleanup-cache --older-than 7d            # entries not used for a week
  arrowmix cleanup-cache --max-size 20GB            # least recently used first, until <= 20 GB
  arrowmix cleanup-cache -r --older-than 30d        # also below: ingested corpora's results
  arrowmix cleanup-cache --older-than 30d --max-size 500GiB --keep 0123456789abcdef

units:
  DURATION  45s, 30m, 12h, 7d, 2w, 1d12h
  SIZE      500MB, 20GB (powers of 1000); 1.5GiB, 20G (powers of 1024); 123 (bytes);
            printed as MiB/GiB (powers of 1024), totals with MB/GB beside them
  --older-than 0s and --max-size 0 select every entry not in use

exit status: 0 done (files in use are skipped), 1 error (e.g. CACHE_DIR missing, a file could
not be removed), 2 usage error.
"""


def _fingerprint(text: str) -> str:
    fp = text.strip().lower()
    if not _FINGERPRINT_RE.match(fp):
        raise argparse.ArgumentTypeError(
            f"invalid fingerprint {text!r}: expected 16 hex characters as shown by "
            "`arrowmix cache ls`"
        )
    return fp


def add_parser(subparsers: Any) -> None:
    """Register ``cleanup-cache``."""
    p = subparsers.add_parser(
        "cleanup-cache",
        help="remove cache files: all, --older-than, or down to --max-size",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "cache_dir",
        nargs="?",
        metavar="CACHE_DIR",
        help="directory to clean (default: $ARROWMIX_CACHE or ~/.cache/arrowmix)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print what would be removed, remove nothing"
    )
    p.add_argument(
        "-r",
        "--recursive",
        action="store_true",
        help="also clean the directories below CACHE_DIR (e.g. ingested/<fp>/); --max-size"
        " then applies to the whole tree",
    )
    p.add_argument(
        "--older-than",
        type=parse_duration,
        metavar="DURATION",
        help="remove entries last used longer ago than DURATION",
    )
    p.add_argument(
        "--max-size",
        type=parse_size,
        metavar="SIZE",
        help="remove least recently used entries until the cache holds at most SIZE "
        "(20GB = 20*1000^3 bytes, 20GiB = 20*1024^3)",
    )
    p.add_argument(
        "--keep",
        type=_fingerprint,
        nargs="+",
        action="extend",
        default=[],
        metavar="FINGERPRINT",
        help="never remove these fingerprints",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Plan, print and (unless ``--dry-run``) apply the cleanup of ``args.cache_dir``."""
    directory = resolve_cache_dir(args.cache_dir)
    verb = "would recover" if args.dry_run else "recovered"
    for path in recover_staging(directory, dry_run=args.dry_run):
        print(f"{verb} interrupted write_chunks  {path}", flush=True)
    for path in recover_saves(directory, dry_run=args.dry_run, carry=carry_over):
        print(f"{verb} interrupted save_to_disk  {path}", flush=True)
    entries = scan_tree(directory) if args.recursive else scan_with_records(directory)
    plan = plan_cleanup(entries, time.time(), args.older_than, args.max_size, args.keep)
    reasons = dict(plan)
    verb = "would remove" if args.dry_run else "removed"

    def report(path: str, size: int, why: str | None) -> None:
        if why is None:
            print(f"{verb}  {path}  {binary_bytes(size)}  ({reasons[path]})", flush=True)
        else:
            print(f"skipped  {path}  ({why})", flush=True)

    result = remove_planned(plan, dry_run=args.dry_run, on_file=report)
    directories = {directory, *(e.directory for e in entries)}
    for path in remove_idle_locks(sorted(directories), dry_run=args.dry_run):
        print(f"{verb} lock  {path}  (no writer holds it)", flush=True)
    for e in entries:
        if e.busy and e.kind != TMP_KIND:
            for path in e.paths:
                print(f"kept  {path}  ({e.busy})")
    n = len(result.removed)
    summary = "Would free" if args.dry_run else "Freed"
    print(
        f"{summary} {both_units(result.freed)} ({result.freed} bytes) by removing "
        f"{n} {'file' if n == 1 else 'files'}."
    )
    if args.max_size is not None:
        data = sum(e.size for e in entries if e.kind != TMP_KIND)
        left = data - sum(size for path, size in result.removed if not _is_tmp(path))
        if left > args.max_size:
            print(
                f"Note: {both_units(left)} remain, above --max-size "
                f"{both_units(args.max_size)}: the rest is in use, locked or kept."
            )
    command = "arrowmix cleanup-cache" + (" --dry-run" if args.dry_run else "")
    if not args.recursive and not entries:
        print_recursive_hint(directory, command)
    if args.cache_dir is None:  # the cache root: a corpus's results lie beside its chunks
        print_corpora_here(directory, f"not included: `{command} DIR` for one")
    failed = [path for path, why in result.skipped if why.startswith("cannot remove")]
    if failed:
        print(f"arrowmix: error: {len(failed)} file(s) could not be removed", file=sys.stderr)
        return 1
    return 0


def _is_tmp(path: str) -> bool:
    return os.path.basename(path).startswith("tmp-")
