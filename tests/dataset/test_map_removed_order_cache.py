"""A map cached when returned removed columns came last is never served in that order.

``map`` now keeps a returned column that is also in ``remove_columns`` in its place among
the inputs, as HF does; earlier versions put it last. The files they cached carry the same
function and arguments, so the fingerprint has a component for the new rule: only maps with
``remove_columns`` are recomputed (the other pins are in ``test_fingerprint_pins.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import arrowmix as am

# What the previous rule's maps below were fingerprinted as (in memory or saved and loaded
# alike), and stored under in the old order ``['x', 't', 's', 'n']``.
OLD_ORDER_FINGERPRINT = "7440e75accd66d83"
OLD_ORDER_REMOVE_T = "3f14ae487fa63f40"


def upper(row: dict[str, Any]) -> dict[str, Any]:
    return {"s": row["s"].upper(), "n": len(row["s"])}


def _ds() -> am.Dataset:
    return am.Dataset.from_dict({"x": [1, 2], "s": ["a", "bb"], "t": [0, 0]})


def test_a_map_with_remove_columns_is_not_found_under_its_old_order_fingerprint() -> None:
    out = _ds().map(upper, remove_columns=["s"])
    assert out.column_names == ["x", "s", "t", "n"]  # HF's order
    assert out.fingerprint != OLD_ORDER_FINGERPRINT
    assert _ds().map(upper, remove_columns=["t"]).fingerprint != OLD_ORDER_REMOVE_T


def _stage_old_file(directory: Path, fingerprint: str) -> None:
    """Rewrite the map's cache file as the previous version stored it: named and stamped by
    its fingerprint, its columns in the old order (the returned removed column last)."""
    import json

    import pyarrow as pa

    from arrowmix._storage.ipc import write_file

    (made,) = directory.glob("cache-*.arrow")
    with pa.memory_map(str(made)) as source:
        reader = pa.ipc.open_file(source)
        schema, batches = (
            reader.schema,
            [reader.get_batch(i) for i in range(reader.num_record_batches)],
        )
    meta = json.loads(schema.metadata[b"arrowmix"])
    meta.pop("checksum")
    meta.update(fingerprint=fingerprint, columns=["x", "t", "s", "n"])
    plain = schema.with_metadata({k: v for k, v in schema.metadata.items() if k != b"arrowmix"})
    made.unlink()
    write_file(str(directory / f"cache-{fingerprint}.arrow"), batches, plain, meta=meta)


def test_a_file_cached_in_the_old_order_is_recomputed(tmp_path: Path) -> None:
    _ds().save_to_disk(str(tmp_path / "src"))
    ds = am.load_from_disk(str(tmp_path / "src"))
    assert ds.map(upper, remove_columns=["s"]).column_names == ["x", "s", "t", "n"]
    _stage_old_file(tmp_path / "src", OLD_ORDER_FINGERPRINT)
    out = am.load_from_disk(str(tmp_path / "src")).map(upper, remove_columns=["s"])
    assert out.column_names == ["x", "s", "t", "n"]
    assert out["s"] == ["A", "BB"]
