"""HF's rule that every split of a ``load_dataset`` call has the first split's types.

HF's builder writes its first split (the first of ``data_files``) with the types it infers,
records them as the builder's features, and writes every later split cast to them: a CSV
``validation`` file whose column holds only integers gets ``float64`` when ``train``'s has a
missing cell, and so does a ``split="validation"`` load alone, since HF prepares every split.
arrowmix does the same where the splits have the same columns and the cast keeps every value;
otherwise each split keeps its own types (HF raises there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arrowmix.exceptions import SchemaMismatchError

__all__ = ["conform_splits"]


def conform_splits(
    order: list[str], splits: dict[str, Any], build: Callable[[str], Any]
) -> dict[str, Any]:
    """``splits`` with each one cast to the types of split ``order[0]`` (built if not there).

    ``order`` lists every split of the call in HF's order; ``build(name)`` builds one split
    that was not asked for (it is read from the cache when loaded before).
    """
    if len(order) < 2 or all(name == order[0] for name in splits):
        return splits
    first = splits[order[0]] if order[0] in splits else build(order[0])
    target = first.schema
    out: dict[str, Any] = {}
    for name, ds in splits.items():
        out[name] = ds if name == order[0] else _cast(ds, target)
    return out


def _cast(ds: Any, target: Any) -> Any:
    if ds.schema.equals(target) or sorted(ds.column_names) != sorted(target.names):
        return ds
    schema = target if ds.column_names == target.names else _ordered(target, ds.column_names)
    try:
        return ds.cast(schema)
    except (SchemaMismatchError, ValueError, TypeError):
        return ds


def _ordered(target: Any, names: list[str]) -> Any:
    import pyarrow as pa

    fields: Mapping[str, Any] = {f.name: f for f in target}
    return pa.schema([fields[n] for n in names], metadata=target.metadata)
