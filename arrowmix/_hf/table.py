"""HF ``datasets``' internals that code written against HF reads: ``ds.data``, ``ds._indices``.

HF keeps a dataset as a ``datasets.table.Table`` (a wrapper whose ``.table`` is the
``pyarrow.Table``) plus an optional indices table (one ``uint64`` column ``"indices"``), and
builds one with ``Dataset(table, indices_table=...)``. :class:`TableView` is that wrapper's
read-only look-alike over a dataset's Arrow table, :func:`indices_view` the indices table, and
:func:`state_from_table` the ``Dataset(table)`` constructor. A contiguous selection is a
sliced table without indices, as in HF (arrowmix keeps it as a range over the whole table).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._hf.state import state_of
from arrowmix._storage.metadata import KEPT_KEY, kept_or_none

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset, DatasetState

__all__ = [
    "TableView",
    "arrow_table_of",
    "data_view",
    "hf_only",
    "indices_view",
    "state_from_table",
]

#: The schema metadata key where HF ``datasets`` keeps a table's features.
HF_META_KEY = KEPT_KEY


class TableView:
    """A read-only stand-in for HF's ``datasets.table.Table``: ``.table`` is the Arrow table.

    Every other attribute (``schema``, ``column_names``, ``num_rows``, ``shape``, ``column``,
    ``slice``, ``to_pydict``...) is the ``pyarrow.Table``'s; ``len()``, ``[]`` and ``==``
    behave as on it. Assigning ``view.table`` changes this object only, never the dataset.
    """

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __getattr__(self, name: str) -> Any:
        if name == "table":  # not set yet (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.table, name)

    @property
    def blocks(self) -> list[list[TableView]]:
        """HF's ``ConcatenationTable.blocks``: this table as its one block, ``[[self]]``."""
        return [[self]]

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, key: Any) -> Any:
        return self.table[key]

    def __eq__(self, other: object) -> bool:
        other_table = other.table if isinstance(other, TableView) else other
        return isinstance(other_table, pa.Table) and bool(self.table.equals(other_table))

    __hash__ = None  # type: ignore[assignment]  # mutable comparison, as pyarrow's Table

    def __repr__(self) -> str:
        return repr(self.table).replace("pyarrow.Table", "TableView", 1)


#: ``schema``'s metadata reduced to HF's features entry (None when it has none).
hf_only = kept_or_none


def _hf_metadata(schema: pa.Schema) -> dict[bytes, bytes] | None:
    """HF's ``{"info": {"features": ...}}`` schema metadata for ``schema``.

    Every column described: by the table's own entry where it describes the column with its
    Arrow type (features declared with ``from_dict(features=)``, or read from an HF file),
    else as HF infers it from the Arrow type (HF's ``Features.from_arrow_schema`` rule).
    Without ``datasets`` installed, the table's own entry as it is.
    """
    own = hf_only(schema)
    try:
        import datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return own
    try:
        entry = json.loads(own[HF_META_KEY]) if own is not None else {}
    except ValueError:
        entry = {}
    entry = entry if isinstance(entry, dict) else {}
    raw_info = entry.get("info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    described = schema.remove_metadata().with_metadata(own) if own else schema.remove_metadata()
    try:
        features = datasets.Features.from_arrow_schema(described)
    except (TypeError, ValueError, NotImplementedError):  # a type HF cannot describe
        return own
    info = {**info, "features": features.to_dict()}
    return {HF_META_KEY: json.dumps({**entry, "info": info}).encode()}


def data_view(ds: Dataset) -> TableView:
    """HF's ``ds.data``: the table under an array mapping, the selected rows of a range one.

    The schema carries HF's features metadata (when ``datasets`` is installed), as HF
    tables do.

    Raises:
        TypeError: the dataset reads its rows on demand (a bounded remote cache, files
            read in place): it has no one table.
    """
    s = state_of(ds)
    if not isinstance(s.table, pa.Table):
        raise TypeError(
            "`ds.data` is an Arrow table in memory or memory-mapped; this dataset reads its "
            f"rows on demand from {s.table.opened_as} and has none. "
            "Use `ds.to_table()` or `ds.iter(batch_size)`."
        )
    table = s.table
    ix = s.indices
    if ix is not None and ix.is_range:
        table = table.slice(ix.start, len(ix))
    return TableView(table.replace_schema_metadata(_hf_metadata(table.schema)))


def indices_view(ds: Dataset) -> TableView | None:
    """HF's ``ds._indices``: None, or a table of one ``uint64`` column ``"indices"``.

    None also for a contiguous selection, which HF stores as a slice of the table.
    """
    ix = state_of(ds).indices
    if ix is None or ix.is_range:
        return None
    assert ix.array is not None  # not a range
    return TableView(pa.table({"indices": pa.array(ix.array.astype(np.uint64, copy=False))}))


def arrow_table_of(obj: Any, what: str) -> pa.Table:
    """The ``pyarrow.Table`` of ``obj``: itself, or the ``.table`` of an HF table wrapper.

    Raises:
        TypeError: neither; the message names ``what``.
    """
    if isinstance(obj, pa.Table):
        return obj
    inner = getattr(obj, "table", None)
    if isinstance(inner, pa.Table):
        return inner
    raise TypeError(
        f"{what} must be a pyarrow.Table or an object with a `.table` pyarrow.Table (HF "
        f"datasets' InMemoryTable, MemoryMappedTable, ConcatenationTable); got "
        f"{type(obj).__name__}."
    )


def state_from_table(
    arrow_table: Any,
    info: Any = None,
    indices_table: Any = None,
    fingerprint: str | None = None,
) -> DatasetState:
    """The state of HF's ``Dataset(arrow_table, info, indices_table=..., fingerprint=...)``.

    The data stays where it is (memory-mapped tables stay mapped); the fingerprint is the
    content's, as for :meth:`~arrowmix.Dataset.from_arrow`, unless given (any string HF
    accepts). ``info.features`` (an HF ``DatasetInfo``) casts the columns as
    ``from_dict(features=...)`` does.

    Raises:
        TypeError: ``arrow_table`` or ``indices_table`` is not a table.
        IndexError: an index in ``indices_table`` is outside the table.
    """
    from arrowmix._dataset.indices import to_positions
    from arrowmix._dataset.inputs.builders import from_arrow
    from arrowmix._dataset.inputs.file_splits import schema_of
    from arrowmix._dataset.inputs.py_columns import typed_table
    from arrowmix._dataset.map_options import user_fingerprint
    from arrowmix._fingerprint.transform import roll

    table = arrow_table_of(arrow_table, "`Dataset(arrow_table)`")
    table = table.replace_schema_metadata(hf_only(table.schema))  # HF's features, kept
    schema = schema_of(None, None, info)
    if schema is not None and not table.schema.equals(schema):
        table = typed_table(dict(zip(table.column_names, table.columns, strict=True)), schema)
    state = state_of(from_arrow(table))
    if info is not None:
        from arrowmix._hf.info import with_info

        assert isinstance(state.table, pa.Table)  # built in memory just above
        state = replace(state, table=with_info(state.table, info))
    changes: dict[str, Any] = {}
    if indices_table is not None:
        ix_table = arrow_table_of(indices_table, "`indices_table`")
        if ix_table.num_columns != 1 or not pa.types.is_integer(ix_table.column(0).type):
            raise TypeError(
                "`indices_table` must have one integer column (HF's 'indices'); got "
                f"{ix_table.schema}."
            )
        sel = to_positions(ix_table.column(0), table.num_rows)
        if not (sel.is_range and sel.start == 0 and sel.stop == table.num_rows):
            changes["indices"] = sel
            changes["fingerprint"] = roll(
                state.fingerprint, "indices_table", {"indices": sel.to_numpy()}
            )
    if fingerprint is not None:
        changes["fingerprint"] = user_fingerprint(fingerprint)[0]
    return replace(state, **changes) if changes else state
