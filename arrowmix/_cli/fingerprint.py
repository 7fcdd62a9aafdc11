"""``arrowmix fingerprint --explain A B``: which components differ between two fingerprints.

A and B are cache files (or fingerprints looked up in ``--cache-dir``). Each file records
what entered its fingerprint in its metadata field ``record``, a JSON dict of named
components; the two records are compared as nested dicts and every changed, added or
removed path is printed (``kwargs['batch_size']``, ``components['tokenize -> code']``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE
from arrowmix._cli.common import CommandError, resolve_cache_dir
from arrowmix._storage.ipc import read_meta

__all__ = ["add_parser", "diff", "run"]

_FINGERPRINT_RE = re.compile(r"^[0-9a-f]{16}$")
_MAX_VALUE = 60

EPILOG = """\
examples:
  arrowmix fingerprint --explain run1/cache-1111111111111111.arrow run2/cache-2222222222222222.arrow
  arrowmix fingerprint --explain 1111111111111111 2222222222222222 --cache-dir data/chunks

exit status: 0 compared (whether or not they differ), 1 a file is missing, unreadable or
records no fingerprint record, 2 usage error.
"""


def add_parser(subparsers: Any) -> None:
    """Register ``fingerprint``."""
    p = subparsers.add_parser(
        "fingerprint",
        help="explain why two cache files have different fingerprints",
        description=(
            "Compare the fingerprint records stored in two cache files and print each\n"
            "component that changed, appeared or disappeared."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--explain",
        nargs=2,
        required=True,
        metavar=("A", "B"),
        help="two cache files, or two fingerprints found in --cache-dir",
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where to look fingerprints up (default: $ARROWMIX_CACHE or ~/.cache/arrowmix)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the differences between the records of ``args.explain``."""
    (a_arg, b_arg) = args.explain
    a_path, b_path = _locate(a_arg, args.cache_dir), _locate(b_arg, args.cache_dir)
    a_meta, b_meta = _read(a_path), _read(b_path)
    for label, path, meta in (("A", a_path, a_meta), ("B", b_path, b_meta)):
        print(f"{label}: {path}")
        print(
            f"   fingerprint {meta.get('fingerprint', '?')}  kind {meta.get('kind', '?')}  "
            f"parent {meta.get('parent') or '-'}"
        )
    a_rec, b_rec = _record(a_path, a_meta), _record(b_path, b_meta)
    for label, rec in (("A", a_rec), ("B", b_rec)):
        if rec.get("unhashable"):
            print(
                f"Note: {label}'s fingerprint is random (unhashable: {_show(rec['unhashable'])})."
            )
    # The record's own "fingerprint" is the result, shown above; the rest are the inputs.
    changes = [c for c in diff(a_rec, b_rec) if c[1] != "fingerprint"]
    if not changes:
        print("The records are identical: no component differs.")
        return 0
    width = max(len(kind) for kind, _, _, _ in changes)
    for kind, path, before, after in changes:
        if kind == "changed":
            print(f"{kind.ljust(width)}  {path}: {_show(before)} -> {_show(after)}")
        else:
            print(f"{kind.ljust(width)}  {path}: {_show(after if kind == 'added' else before)}")
    counts = {k: sum(c[0] == k for c in changes) for k in ("changed", "added", "removed")}
    print(
        f"{len(changes)} {'component differs' if len(changes) == 1 else 'components differ'}"
        f" ({counts['changed']} changed, {counts['added']} added, {counts['removed']} removed)."
    )
    return 0


def diff(
    a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = ""
) -> Iterator[tuple[str, str, Any, Any]]:
    """``(kind, path, before, after)`` for every leaf that differs between nested dicts.

    Example:
        >>> list(diff({"x": 1, "k": {"n": 1, "m": 2}}, {"x": 1, "k": {"n": 3}, "y": 0}))
        [('removed', "k['m']", 2, None), ('changed', "k['n']", 1, 3), ('added', 'y', None, 0)]
    """
    for key in sorted(set(a) | set(b)):
        path = f"{prefix}[{key!r}]" if prefix else str(key)
        if key not in b:
            yield "removed", path, a[key], None
        elif key not in a:
            yield "added", path, None, b[key]
        elif isinstance(a[key], Mapping) and isinstance(b[key], Mapping):
            yield from diff(a[key], b[key], path)
        elif a[key] != b[key]:
            yield "changed", path, a[key], b[key]


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def _locate(arg: str, cache_dir: str | None) -> str:
    if os.path.exists(arg) or not _FINGERPRINT_RE.match(arg):
        return arg
    directory = resolve_cache_dir(cache_dir)
    names = []
    for name in sorted(os.listdir(directory)):
        m = CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)
        if m is not None and m.group(1) == arg:
            names.append(name)
    if not names:
        raise CommandError(
            f"No cache file of fingerprint {arg} in {directory}. Results of a corpus on local "
            "disk lie beside its chunk files: pass that directory with --cache-dir DIR, or "
            "give the cache files' paths."
        )
    return os.path.join(directory, names[0])


def _read(path: str) -> dict[str, Any]:
    try:
        with pa.memory_map(path, "r") as source:
            return read_meta(pa.ipc.open_file(source).schema)
    except FileNotFoundError as exc:
        raise CommandError(f"{path!r} does not exist.") from exc
    except (pa.ArrowInvalid, OSError, ValueError) as exc:
        raise CommandError(f"Cannot read {path!r} as an Arrow IPC file: {exc}") from exc


def _record(path: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    record = meta.get("record")
    if isinstance(record, str):
        try:
            record = json.loads(record)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"{path!r}: its fingerprint record is not valid JSON: {exc}"
            ) from exc
    if record is None:
        raise CommandError(
            f"{path!r} has no fingerprint record (metadata field 'record'); it was written by a "
            "transform or an arrowmix version that does not record one, so its fingerprint "
            "cannot be explained."
        )
    if not isinstance(record, dict):
        raise CommandError(f"{path!r}: its fingerprint record is not a JSON object.")
    return record
