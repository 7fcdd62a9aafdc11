"""Inputs of a mix or zip must share their schema when it is known."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arrowmix._stream.base import Stream
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["check_schemas"]


def check_schemas(streams: Sequence[Stream[Any]]) -> None:
    """Raise SchemaMismatchError when known input schemas differ (naming columns)."""
    known = [(i, s.schema) for i, s in enumerate(streams) if s.schema is not None]
    if len(known) < 2:
        return
    i0, ref = known[0]
    for i, sch in known[1:]:
        if sch.equals(ref):
            continue
        a = {f.name: str(f.type) for f in ref}
        b = {f.name: str(f.type) for f in sch}
        diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        raise SchemaMismatchError(
            f"streams {i0} and {i} have different schemas; differing columns: {diff} "
            f"(stream {i0}: {[f'{k}: {a.get(k)}' for k in diff]}, stream {i}: "
            f"{[f'{k}: {b.get(k)}' for k in diff]})."
        )
