"""Deterministic serialisation for hashing, built on dill.

Extended by the function-hashing work: for now, a plain dill dump with recursion.
"""

from __future__ import annotations

from typing import Any

__all__ = ["dumps"]


def dumps(obj: Any) -> bytes:
    """Serialise ``obj`` for hashing (not for loading back)."""
    import dill  # noqa: PLC0415 - dill is slow to import; only needed for exotic values

    return bytes(dill.dumps(obj, recurse=True))
