"""Segments of a cached result that a rerun plans with but does not open yet.

Opening a segment costs a memory map, a footer and schema read and a record batch header read
per file (a few pages from disk each when the cache is cold): thousands of segments make a
cached rerun cost seconds. So, once a segment has passed every check of
:func:`arrowmix._dataset.mapping.jobs.check`, what a rerun needs from it (rows, the
metadata it is checked against, a digest of its schema) is noted beside its trusted ``stat``
identity in its directory's record (:func:`arrowmix._storage.trust.note`).

A later rerun then takes a :class:`Pending` segment for a file that is registered as in use
(:func:`arrowmix._cache.inuse.hold`), whose identity is still the one the record vouches for
and whose noted metadata is what the job expects. Its rows are read only when the result's
table is first used: each file is then opened and checked again (identity, and the checksum
if the identity changed) before any of its rows is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._cache.inuse import Hold, hold
from arrowmix._cache.segments import Segment
from arrowmix._storage import fs, trust
from arrowmix._storage.integrity import CHECKSUM_KEY

__all__ = ["FACT_KEYS", "Pending", "note_facts", "pending", "schema_digest"]

#: The metadata keys noted per segment: what reruns compare and read without the file.
FACT_KEYS = (
    "kind",
    "fingerprint",
    "segment",
    "num_segments",
    "input_rows",
    "rows",
    "columns",
    "zero_copy",
    "unchanged",
    CHECKSUM_KEY,
)


@dataclass(frozen=True)
class Pending:
    """A segment vouched for by its recorded identity and facts, not opened yet."""

    seg: Segment
    rows: int
    meta: Mapping[str, Any]
    schema: str


def schema_digest(schema: pa.Schema) -> str:
    """A digest of ``schema``'s fields (names, types, nullability; not its metadata)."""
    return xxhash.xxh3_64_hexdigest(schema.remove_metadata().serialize().to_pybytes())


def note_facts(path: str, table: pa.Table, meta: Mapping[str, Any]) -> None:
    """Note, for later reruns, what a fully checked local segment ``table`` holds."""
    if not fs.is_local(path):
        return
    local = fs.local_path(path)
    facts = {
        "rows": table.num_rows,
        "meta": {k: meta[k] for k in FACT_KEYS if k in meta},
        "schema": schema_digest(table.schema),
    }
    with contextlib.suppress(OSError):
        trust.note(local, trust.identity(local), facts)


def pending(seg: Segment, expect: Mapping[str, Any], holds: list[Hold]) -> Pending | None:
    """``seg`` as a :class:`Pending` segment, or None when it must be opened to be used.

    The file is registered as in use (appended to ``holds``) before its identity is read, so
    a cleanup cannot remove it between this check and its use.
    """
    if not fs.is_local(seg.path):
        return None
    path = fs.local_path(seg.path)
    try:
        registration = hold(path)
        facts = trust.facts(path, trust.identity(path))
    except OSError:
        return None
    holds.append(registration)
    if facts is None:
        return None
    meta = facts.get("meta")
    if not isinstance(meta, dict) or any(meta.get(k) != v for k, v in expect.items()):
        return None
    rows, schema = facts.get("rows"), facts.get("schema")
    if not isinstance(rows, int) or not isinstance(schema, str) or meta.get("unchanged"):
        return None
    return Pending(seg, rows, meta, schema)
