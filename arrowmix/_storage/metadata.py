"""The one schema metadata entry that arrowmix carries from a table to what is derived from it.

Arrow files written by arrowmix keep exactly one entry of their schema metadata through every
transform, into cache files and saved datasets: the entry under the key ``huggingface``, where
HF ``datasets`` keeps its ``Features`` and ``DatasetInfo`` texts, so that HF reads arrowmix's
files as its own. The key is part of the file format; the core carries the entry without
reading it, and the HF layer (:mod:`arrowmix._hf`) is what reads and writes its content.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["KEPT_KEY", "kept_metadata", "kept_or_none"]

#: The schema metadata key carried through transforms (HF ``datasets``' own key).
KEPT_KEY = b"huggingface"


def kept_metadata(schema: pa.Schema) -> dict[bytes, bytes]:
    """The carried entry of ``schema``'s metadata (as a metadata dict), or ``{}``."""
    meta = schema.metadata or {}
    return {KEPT_KEY: meta[KEPT_KEY]} if KEPT_KEY in meta else {}


def kept_or_none(schema: pa.Schema) -> dict[bytes, bytes] | None:
    """``schema``'s metadata reduced to the carried entry (None when it has none)."""
    return kept_metadata(schema) or None
