"""HF ``datasets``' ``batch(by_column=...)``: one row per run of successive equal keys.

Each result row holds a run of successive rows whose key columns are equal, every column a
list of their values (HF's ``List`` of the column's feature). The runs are found in Arrow
batches, a run that reaches a batch's end carried into the next one, and written into a
corpus under the cache root named by the dataset's fingerprint and the key columns, so a
rerun opens it. A null key is a key of its own: it ends the run before it and starts one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._fingerprint.transform import roll

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["batch_by_columns"]

_READ_ROWS = 10_000


def _changes(key: Any) -> np.ndarray:
    """``out[i]``: row ``i + 1``'s key differs from row ``i``'s (nulls equal only to nulls)."""
    after, before = key[1:], key[:-1]
    differ = pc.fill_null(pc.not_equal(after, before), False)
    one_null = pc.xor(pc.is_null(after), pc.is_null(before))
    return np.asarray(pc.or_(differ, one_null), dtype=bool)


def _run_starts(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    if len(table) < 2:
        return np.zeros(min(len(table), 1), dtype=np.int64)
    cut = np.zeros(len(table) - 1, dtype=bool)
    for name in columns:
        cut |= _changes(table.column(name))
    return np.concatenate([[0], np.flatnonzero(cut) + 1]).astype(np.int64)


def _lists(table: pa.Table, offsets: np.ndarray, schema: pa.Schema) -> pa.RecordBatch:
    end = int(offsets[-1])
    arrays = [
        pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), table.column(name).slice(0, end).combine_chunks()
        )
        for name in table.column_names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _runs(ds: Dataset, columns: Sequence[str], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    pending: pa.Table | None = None  # the run still open at the last batch's end
    for table in ds.with_format("arrow").iter(batch_size=_READ_ROWS):
        if pending is not None:
            table = pa.concat_tables([pending, table])
        starts = _run_starts(table, columns)
        if len(starts) > 1:  # every run but the last is complete
            yield _lists(table, starts, schema)
        last = int(starts[-1])
        pending = table.slice(last)
    if pending is not None and len(pending):
        yield _lists(pending, np.array([0, len(pending)], dtype=np.int64), schema)


def batch_by_columns(ds: Dataset, by_column: str | Sequence[str]) -> Dataset:
    """One row per run of successive rows of ``ds`` with equal ``by_column`` values."""
    from arrowmix._dataset.inputs.generator import corpus_dataset

    columns = [by_column] if isinstance(by_column, str) else list(by_column)
    missing = [c for c in columns if c not in ds.column_names]
    if not columns or missing:
        raise ValueError(
            f"`by_column` must name columns of the dataset; {missing or columns} not in "
            f"{ds.column_names}."
        )
    schema = _list_schema(ds)
    fp = roll(ds.fingerprint, "batch_by_column", {"by_column": columns})
    plain = ds.with_format(None)
    return corpus_dataset(None, fp, lambda: _runs(plain, columns, schema), schema, "")


def _list_schema(ds: Dataset) -> pa.Schema:
    features: Any = ds.features
    try:
        from datasets import Features, List  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return pa.schema([pa.field(f.name, pa.list_(f.type)) for f in ds.schema])
    lists: Any = Features({name: List(feature) for name, feature in features.items()})
    return cast("pa.Schema", lists.arrow_schema)
