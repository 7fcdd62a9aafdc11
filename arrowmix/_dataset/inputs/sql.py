"""``Dataset.from_sql``: the rows of a SQL query or table, read with ``pandas.read_sql``.

As HF ``datasets`` reads them: ``pandas.read_sql(sql, con, chunksize=10_000, ...)``, each
chunk converted with ``pyarrow.Table.from_pandas`` and typed by ``features``. The rows are
written into a corpus under the cache root (``generated/``, as ``from_generator``'s) and
memory-mapped from there. A database changes under its queries, so every call reads it
again: a new corpus each time, which ``cleanup-cache`` removes once no dataset holds it.
"""

from __future__ import annotations

import importlib
import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._fingerprint.hasher import hash_value

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["from_sql", "read_sql_kwargs"]

#: ``pandas.read_sql``'s arguments HF's SQL builder passes on, with HF's defaults.
_READ_DEFAULTS: dict[str, Any] = {
    "index_col": None,
    "columns": None,
    "params": None,
    "coerce_float": True,
    "parse_dates": None,
    "chunksize": 10_000,
}


def read_sql_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """HF's ``from_sql(**kwargs)``: ``pandas.read_sql``'s options, with HF's defaults.

    Raises:
        TypeError: an argument that is not one of them.
    """
    unknown = sorted(set(kwargs) - set(_READ_DEFAULTS))
    if unknown:
        raise TypeError(
            f"from_sql() got an unexpected keyword argument {unknown}; it takes "
            f"{sorted(_READ_DEFAULTS)} (passed to pandas.read_sql)."
        )
    return {**_READ_DEFAULTS, **kwargs}


def _check_sql(sql: Any) -> None:
    if isinstance(sql, str):
        return
    sqlalchemy = sys.modules.get("sqlalchemy")
    if sqlalchemy is None or not isinstance(sql, sqlalchemy.sql.Selectable):
        raise TypeError(
            "Supported types for 'sql' are string and sqlalchemy.sql.Selectable but got "
            f"{type(sql)}: {sql}"
        )


def _batches(
    sql: Any, con: Any, schema: pa.Schema | None, options: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    pd: Any = importlib.import_module("pandas")  # an optional dependency, as in HF
    from arrowmix._dataset.inputs.py_columns import typed_table

    chunksize = options["chunksize"]
    reader = pd.read_sql(sql, con, **options)
    for df in [reader] if chunksize is None else reader:
        table = pa.Table.from_pandas(df).replace_schema_metadata(None)
        if schema is not None:
            if sorted(table.column_names) != sorted(schema.names):
                raise ValueError(
                    f"The query's columns {table.column_names} are not the columns of "
                    f"`features` {schema.names}."
                )
            table = typed_table({n: table.column(n) for n in schema.names}, schema)
        yield from table.to_batches()


def from_sql(
    sql: Any,
    con: Any,
    schema: pa.Schema | None,
    cache_dir: str | os.PathLike[str] | None,
    options: dict[str, Any],
) -> Dataset:
    """The rows ``pandas.read_sql(sql, con, **options)`` gives, in a new cached corpus."""
    from arrowmix._dataset.inputs.generator import corpus_dataset

    _check_sql(sql)
    fp = hash_value(("sql", str(sql), uuid.uuid4().hex))
    return corpus_dataset(
        cache_dir,
        fp,
        lambda: _batches(sql, con, schema, options),
        schema,
        "The SQL query returned no rows and no `features` were given.",
    )
