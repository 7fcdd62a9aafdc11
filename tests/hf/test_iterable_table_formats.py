"""``map`` and ``batch`` in a table format (``"arrow"``, ``"pandas"``): HF's rows and types.

The function receives a table and returns one; the returned table replaces the row or the
batch (it is not merged with the inputs), as in HF ``datasets`` 5.2.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
pd = pytest.importorskip("pandas")


def add_arrow(t: pa.Table) -> pa.Table:
    return t.append_column("n", pa.array([0] * len(t)))


def add_arrow_batched(t: pa.Table) -> pa.Table:
    return t.append_column("nb", pa.array([len(t)] * len(t)))


def add_pandas(df: Any) -> Any:
    return df.assign(n=[0] * len(df))


def keep_first_rows(df: Any) -> Any:
    return df.iloc[:1]


def pipelines(lib: Any) -> dict[str, Any]:
    ds = lib.Dataset.from_dict({"id": list(range(7)), "t": list("abcdefg")}).to_iterable_dataset(
        num_shards=2
    )
    arrow, pandas = ds.with_format("arrow"), ds.with_format("pandas")
    return {
        "arrow": arrow.map(add_arrow).map(add_arrow_batched, batched=True, batch_size=3),
        "pandas": pandas.map(add_pandas).map(add_pandas, batched=True, remove_columns="t"),
        "pandas_fewer_rows": pandas.map(keep_first_rows, batched=True, batch_size=3),
        "arrow_batch": arrow.batch(3),
        "pandas_batch": pandas.batch(2, drop_last_batch=True),
    }


def python(row: Any) -> Any:
    if isinstance(row, pa.Table):
        return ("table", row.schema, row.to_pydict())
    if isinstance(row, pd.DataFrame):
        cells = {c: [cell(v) for v in row[c]] for c in row.columns}
        return ("frame", list(row.dtypes.astype(str)), cells)
    return row


def cell(value: Any) -> Any:
    return (type(value).__name__, value.tolist() if hasattr(value, "tolist") else value)


@pytest.mark.parametrize(
    "name", ["arrow", "pandas", "pandas_fewer_rows", "arrow_batch", "pandas_batch"]
)
def test_table_format_map_and_batch_are_hfs(name):
    a, h = pipelines(am)[name], pipelines(hf)[name]
    assert [python(r) for r in a] == [python(r) for r in h]
    assert list(a.with_format(None)) == list(h.with_format(None))
