"""The JSON value arrowmix records in an Arrow file's schema metadata (key ``arrowmix``).

Cache files, chunk manifests and digests record what they are (kind, fingerprint, version,
checksum...) under one key. Both the IPC reader/writer (:mod:`arrowmix._storage.ipc`) and
the integrity checks (:mod:`arrowmix._storage.integrity`) read it, so it sits below both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from arrowmix._version import __version__

__all__ = ["META_KEY", "read_meta", "with_meta"]

META_KEY = b"arrowmix"


def with_meta(schema: pa.Schema, meta: Mapping[str, Any] | None) -> pa.Schema:
    """``schema`` with our JSON metadata (plus the arrowmix version) attached."""
    if meta is None:
        return schema
    existing = dict(schema.metadata or {})
    existing[META_KEY] = json.dumps({**meta, "version": __version__}, sort_keys=True).encode()
    return schema.with_metadata(existing)


def read_meta(schema: pa.Schema) -> dict[str, Any]:
    """Our JSON metadata from a schema, ``{}`` when absent."""
    raw = (schema.metadata or {}).get(META_KEY)
    return dict(json.loads(raw)) if raw else {}
