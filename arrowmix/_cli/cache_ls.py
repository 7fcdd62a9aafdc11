"""``arrowmix cache ls [CACHE_DIR] [-r] [--json]``: one line per cache entry, from footers only."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from arrowmix._cache.listing import TMP_KIND, CacheEntry, scan, scan_tree
from arrowmix._cache.records import VERIFIED_KIND
from arrowmix._cli.common import resolve_cache_dir
from arrowmix._cli.humanize import ago, binary_bytes, both_units, table

__all__ = ["add_parser", "run"]

EPILOG = """\
columns:
  FINGERPRINT  the fingerprint in the file name (cache-<fp>*.arrow, indices-<fp>.arrow)
  KIND         what made it: map, filter, indices, flatten, shard ("?" if unrecorded,
               "tmp" for a file being written); "generated" for a from_generator corpus;
               "verified" for the records of files already checked (one line for all)
  FILES        number of files; "3/8" = 3 of 8 segments present (an interrupted map)
  SIZE         KiB/MiB/GiB = powers of 1024; the total also in KB/MB/GB (powers of 1000)
  LAST USED    newest modification time (map touches its cache file on every hit)
  STATUS       in use / locked / writing: cleanup-cache leaves such entries alone

Without CACHE_DIR: the default cache and every directory below it (as with -r), then the
corpora in the current directory that hold results (map/filter results of a corpus on local
disk are stored beside its chunk files, not in the default cache).

examples:
  arrowmix cache ls                      # the default cache ($ARROWMIX_CACHE or ~/.cache/arrowmix)
  arrowmix cache ls data/corpus_chunks   # the cache files beside a chunked corpus
  arrowmix cache ls -r                   # the cache root and the corpora ingested into it
  arrowmix cache ls --json | jq '.entries[] | select(.kind == "map")'
"""


def add_parser(subparsers: Any) -> None:
    """Register ``cache`` and its ``ls`` subcommand."""
    cache = subparsers.add_parser(
        "cache",
        help="inspect a cache directory",
        description="Inspect a cache directory.",
        epilog=(
            "examples:\n"
            "  arrowmix cache ls                 # the default cache, and the corpora here\n"
            "  arrowmix cache ls corpus_chunks   # the results stored beside a corpus\n\n"
            "To remove cache entries: `arrowmix cleanup-cache` (see its --help)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = cache.add_subparsers(dest="cache_command", metavar="COMMAND", required=True)
    ls = sub.add_parser(
        "ls",
        help="list cache entries: fingerprint, kind, parent, rows, size, last used",
        description=(
            "List the cache entries of CACHE_DIR, one line each (all segments of a\n"
            "fingerprint together), newest first, and a total. Reads file footers only."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ls.add_argument(
        "cache_dir",
        nargs="?",
        metavar="CACHE_DIR",
        help="directory to list (default: $ARROWMIX_CACHE or ~/.cache/arrowmix, with -r)",
    )
    ls.add_argument(
        "-r",
        "--recursive",
        action="store_true",
        help="also list the directories below CACHE_DIR (e.g. ingested/<fp>/), with a DIR column",
    )
    ls.add_argument("--json", action="store_true", help="print machine-readable JSON")
    ls.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """List the entries of ``args.cache_dir``."""
    default = args.cache_dir is None
    directory = resolve_cache_dir(args.cache_dir)
    recursive = args.recursive or default
    now = time.time()
    found = _records_as_one(scan_tree(directory) if recursive else scan(directory))
    entries = sorted(found, key=lambda e: (-e.last_used, e.directory, e.key))
    if args.json:
        print(json.dumps(to_json(directory, entries), indent=2))
        return 0
    if default:
        where = "$ARROWMIX_CACHE" if os.environ.get("ARROWMIX_CACHE") else "the default"
        print(f"cache root {directory} ({where}; set ARROWMIX_CACHE to move it)")
    header = ["FINGERPRINT", "KIND", "PARENT", "ROWS", "FILES", "SIZE", "LAST USED", "STATUS"]
    rows = [["DIR", *header] if recursive else header]
    rows += [
        [
            *([os.path.relpath(e.directory, directory)] if recursive else []),
            e.fingerprint or "-",
            e.kind,
            e.parent or "-",
            "-" if e.rows is None else str(e.rows),
            e.segments,
            binary_bytes(e.size),
            ago(e.last_used, now),
            status(e),
        ]
        for e in entries
    ]
    if entries:
        shift = 1 if recursive else 0
        print("\n".join(table(rows, right=[3 + shift, 4 + shift, 5 + shift])))
    print(summary(entries, directory))
    if not recursive and not entries:
        print_recursive_hint(directory, "arrowmix cache ls")
    if default and not print_corpora_here(directory, "`arrowmix cache ls DIR`"):
        print(
            "map/filter results of a corpus on local disk are stored beside its chunk "
            "files: `arrowmix cache ls DIR` lists them"
        )
    return 0


def print_corpora_here(directory: str, how: str) -> bool:
    """Print the corpora of the current directory holding results (outside ``directory``)."""
    corpora = corpora_with_results(os.getcwd(), exclude=directory)
    if corpora:
        print(f"results beside the corpora in the current directory ({how}):")
        for path, found_here in corpora:
            print(f"  {summary(found_here, os.path.relpath(path))}")
    return bool(corpora)


def _records_as_one(entries: list[CacheEntry]) -> list[CacheEntry]:
    """The entries, with the records of verified files of each directory as one entry."""
    records: dict[str, list[CacheEntry]] = {}
    out = []
    for e in entries:
        if e.kind == VERIFIED_KIND:
            records.setdefault(e.directory, []).append(e)
        else:
            out.append(e)
    for directory, group in records.items():
        files = tuple(f for e in group for f in e.files)
        stale = sum(1 for e in group if e.stale)
        why = f"{stale} stale" if stale else None
        out.append(CacheEntry(os.path.basename(directory), VERIFIED_KIND, None, files, stale=why))
    return out


def summary(entries: list[CacheEntry], directory: str) -> str:
    """``"3 entries, 4 files, 1.5 MiB = 1.6 MB in DIR"``."""
    files = sum(len(e.files) for e in entries)
    total = sum(e.size for e in entries)
    return (
        f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}, {files} "
        f"{'file' if files == 1 else 'files'}, {both_units(total)} in {directory}"
    )


def print_recursive_hint(directory: str, command: str) -> None:
    """Say so when ``directory`` holds no entry itself but directories below it do."""
    below = [e for e in scan_tree(directory) if e.kind != TMP_KIND]
    if below:
        dirs = len({e.directory for e in below})
        print(
            f"{len(below)} {'entry' if len(below) == 1 else 'entries'} in {dirs} "
            f"{'directory' if dirs == 1 else 'directories'} below it; add -r to include "
            f"{'it' if len(below) == 1 else 'them'}: `{command} -r {directory}`"
        )


def corpora_with_results(top: str, exclude: str) -> list[tuple[str, list[CacheEntry]]]:
    """The directories directly below ``top`` (and ``top``) that hold cache entries.

    ``exclude`` (the cache root, listed already) and hidden directories are left out; an
    unreadable directory is skipped.
    """
    candidates = [top]
    try:
        with os.scandir(top) as it:
            candidates += sorted(
                d.path for d in it if d.is_dir(follow_symlinks=False) and d.name[0] != "."
            )
    except OSError:
        return []
    out = []
    for path in candidates:
        if os.path.realpath(path) == os.path.realpath(exclude):
            continue
        try:
            entries = [e for e in scan(path, probe=False) if e.kind != TMP_KIND]
        except OSError:
            continue
        if entries:
            out.append((path, entries))
    return out


def status(e: CacheEntry) -> str:
    """The STATUS cell: why cleanup would leave it, or what is wrong with it."""
    if e.kind == TMP_KIND:
        if e.busy is None:
            return f"stale (pid {e.pid} gone)"
        return f"writing (pid {e.pid})" if e.busy.startswith("being written") else "locked"
    if e.busy:
        return e.busy.replace(" by an open dataset", "").replace(" by a writer", "")
    if e.stale:
        return e.stale
    if e.problem:
        return "unreadable"
    if e.num_segments is not None and len(e.files) < e.num_segments:
        return "incomplete"
    return ""


def to_json(directory: str, entries: list[CacheEntry]) -> dict[str, Any]:
    """The ``--json`` document: the directory, every entry, the totals."""
    return {
        "cache_dir": directory,
        "entries": [
            {
                "dir": e.directory,
                "fingerprint": e.fingerprint,
                "kind": e.kind,
                "parent": e.parent,
                "rows": e.rows,
                "size_bytes": e.size,
                "last_used": e.last_used,
                "created": e.created,
                "files": e.paths,
                "num_segments": e.num_segments,
                "busy": e.busy,
                "problem": e.problem,
                "pid": e.pid,
            }
            for e in entries
        ],
        "total_files": sum(len(e.files) for e in entries),
        "total_bytes": sum(e.size for e in entries),
    }
