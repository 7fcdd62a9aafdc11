"""``concatenate_datasets``: rows one after the other (axis 0) or columns side by side (axis 1).

Both follow HF ``datasets``: on axis 0 a column missing from some inputs is filled with nulls,
and a shared column must have one type in all of them (a ``null``-typed column takes the other
type); on axis 1 the inputs must have the same number of rows and distinct column names. The
result keeps a format only when every input has the same one. No column data is copied on axis
0; on axis 1 an input viewed through a shuffled or filtered mapping is flattened first (to a
cache file, memory-mapped), as in HF.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._dataset.indices import IndexMap, load_or_store
from arrowmix._dataset.state import state_of, view_range
from arrowmix._fingerprint.hasher import hash_value
from arrowmix.exceptions import SchemaMismatchError

__all__ = ["concatenate_datasets"]


def concatenate_datasets(datasets: Sequence[Dataset], axis: int = 0) -> Dataset:
    """Rows of ``datasets`` one after the other (``axis=0``), or their columns side by side.

    (``IterableDataset`` inputs give an ``IterableDataset`` reading them lazily, as HF's.)

    On ``axis=0`` a column that some inputs lack is null in their rows; a column the inputs
    share must have the same type in each (or be all-null), else ``SchemaMismatchError``
    names it. Inputs without rows are skipped. On ``axis=1`` the inputs must have the same
    number of rows and no column name twice. The result has the inputs' format when they
    all share it, else none (Python objects).

    Example:
        >>> import arrowmix as am
        >>> a, b = am.Dataset.from_dict({"x": [1, 2]}), am.Dataset.from_dict({"x": [3]})
        >>> am.concatenate_datasets([a, b])["x"]
        [1, 2, 3]
        >>> c = am.Dataset.from_dict({"y": ["a", "b"]})
        >>> am.concatenate_datasets([a, c], axis=1)[0]
        {'x': 1, 'y': 'a'}
    """
    dsets = [_as_dataset(d, i) for i, d in enumerate(datasets)]
    if not dsets:
        raise ValueError("`concatenate_datasets` needs at least one dataset.")
    if axis not in (0, 1):
        raise ValueError(f"`axis` must be 0 (rows) or 1 (columns), got {axis!r}.")
    for d in dsets:
        if state_of(d).reader.arrow is None:
            raise ValueError(
                f"`concatenate_datasets` cannot join datasets read through "
                f"{state_of(d).reader.opened_as}: their rows are read on demand. Open all "
                "their files with one call, or mix their streams."
            )
    if axis == 1:
        return _concat_columns(dsets)
    if not any(len(d) for d in dsets):
        return dsets[0]
    return _concat_rows([d for d in dsets if len(d)])


def _as_dataset(item: Any, i: int) -> Dataset:
    """``item`` as an arrowmix Dataset: itself, or an HF ``datasets.Dataset``'s rows.

    An HF dataset enters by its Arrow table and indices (``item.data``, ``item._indices``),
    without a copy; its fingerprint is then that of its content, and its format is not kept.

    Raises:
        TypeError: neither; the message names the item.
        ValueError: a ``DatasetDict`` (as in HF: pick a split, or concatenate per split).
    """
    if isinstance(item, Dataset):
        return item
    if isinstance(item, dict) and all(isinstance(v, Dataset) for v in item.values()):
        if not item:  # HF's ValueErrors for a DatasetDict
            raise ValueError(
                "Expected a list of Dataset objects, but element at position "
                f"{i} is an empty dataset dictionary."
            )
        raise ValueError(
            f"Dataset at position {i} has at least one split: {list(item.keys())}\n"
            "Please pick one to concatenate with the other datasets, for example: "
            f"dataset['{next(iter(item.keys()))}']"
        )
    data = getattr(item, "data", None)
    if isinstance(getattr(data, "table", None), pa.Table):
        return Dataset(data, indices_table=getattr(item, "_indices", None))
    raise TypeError(
        f"`concatenate_datasets` takes arrowmix Datasets (or HF datasets' Datasets, read "
        f"through their Arrow table); item {i} is a {type(item).__name__}."
    )


def _hf_metadata(dsets: Sequence[Dataset], out: pa.Schema) -> dict[bytes, bytes] | None:
    """HF's features and info texts of the result, merged from the inputs' (as HF does)."""
    from arrowmix._hf.info import merged_metadata

    return merged_metadata([state_of(d).table.schema for d in dsets], out)


def _format_fields(dsets: Sequence[Dataset]) -> dict[str, Any]:
    """The format fields of the result: the inputs' common format, else none."""
    formats = [d.format for d in dsets]
    if all(f == formats[0] for f in formats):
        s = state_of(dsets[0])
        return {
            "fmt": s.fmt,
            "fmt_columns": s.fmt_columns,
            "fmt_all": s.fmt_all,
            "fmt_kwargs": s.fmt_kwargs,
        }
    return {"fmt": None, "fmt_columns": None, "fmt_all": False, "fmt_kwargs": ()}


def _common_info(dsets: Sequence[Dataset]) -> Any:
    """The inputs' ``load_dataset`` info when they all agree, else none (HF's ``from_merge``)."""
    infos = [state_of(d).hf_info for d in dsets]
    return infos[0] if all(i == infos[0] for i in infos) else None


def _aligned_schema(dsets: Sequence[Dataset]) -> pa.Schema:
    """The union of the inputs' columns (in order of appearance), checked as HF aligns them."""
    fields: dict[str, pa.Field[Any]] = {}
    owner: dict[str, int] = {}
    for i, d in enumerate(dsets):
        for f in d.schema:
            known = fields.get(f.name)
            if known is None or (pa.types.is_null(known.type) and not pa.types.is_null(f.type)):
                fields[f.name], owner[f.name] = f, i
            elif not pa.types.is_null(f.type) and not f.type.equals(known.type):
                raise SchemaMismatchError(
                    f"Cannot concatenate: column {f.name!r} is {f.type} in dataset {i} but "
                    f"{known.type} in dataset {owner[f.name]}. Cast one of them first "
                    "(HF datasets refuses this too)."
                )
    everywhere = {name for name in fields if all(name in d.column_names for d in dsets)}
    return pa.schema(
        [f if f.name in everywhere else f.with_nullable(True) for f in fields.values()]
    )


def _arrow(ds: Dataset) -> pa.Table:
    table = state_of(ds).reader.arrow
    assert table is not None  # refused by concatenate_datasets
    return table


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns: missing or all-null columns become typed nulls."""
    table = table.replace_schema_metadata(None)
    if table.schema.equals(schema):
        return table
    arrays = []
    for f in schema:
        if f.name in table.column_names and table.schema.field(f.name).type.equals(f.type):
            arrays.append(table.column(f.name))
        else:
            arrays.append(pa.chunked_array([pa.nulls(table.num_rows, f.type)], type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _concat_rows(dsets: Sequence[Dataset]) -> Dataset:
    schema = _aligned_schema(dsets)
    table = pa.concat_tables([_conform(_arrow(d), schema) for d in dsets])
    table = table.replace_schema_metadata(_hf_metadata(dsets, table.schema))
    mapping = None
    if any(state_of(d).indices is not None for d in dsets):
        parts, offset = [], 0
        for d in dsets:
            ix = state_of(d).indices or IndexMap.from_range(0, state_of(d).table.num_rows)
            parts.append(ix.to_numpy() + offset)
            offset += state_of(d).table.num_rows
        mapping = IndexMap.from_array(np.concatenate(parts))
    offsets: tuple[int, ...] | None = None
    if mapping is None and all(state_of(d).file_offsets for d in dsets):
        acc, base = [0], 0
        for d in dsets:
            acc.extend(base + o for o in state_of(d).file_offsets[1:])  # type: ignore[index]
            base += state_of(d).table.num_rows
        offsets = tuple(acc)
    fp = hash_value(("concatenate", [d.fingerprint for d in dsets]))
    s = state_of(dsets[0])
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(f for d in dsets for f in state_of(d).files),
        file_offsets=offsets,
        cache_dir=s.cache_dir,
        storage_options=s.storage_options,
        holds=tuple(
            h for d in dsets for h in state_of(d).holds if h.path != state_of(d).indices_file
        ),
        **_format_fields(dsets),
        hf_info=_common_info(dsets),
    )
    out = Dataset(state)
    if mapping is not None:
        mapping, path = load_or_store(
            mapping, fp, out.cache_dir, fp, "concatenate_datasets", s.storage_options
        )
        holds = state.holds + hold_cache_files([path] if path else [])
        out = Dataset(replace(state, indices=mapping, indices_file=path, holds=holds))
    return out


def _concat_columns(dsets: Sequence[Dataset]) -> Dataset:
    n = len(dsets[0])
    for i, d in enumerate(dsets):
        if len(d) != n:
            raise ValueError(
                f"Cannot concatenate on axis 1: dataset {i} has {len(d)} rows, dataset 0 has {n}."
            )
    names = [c for d in dsets for c in d.column_names]
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise ValueError(f"Cannot concatenate on axis 1: duplicated column name(s) {dupes}.")
    views = [d if _contiguous(state_of(d).indices) else d.flatten_indices() for d in dsets]
    # referenced, not read: the rows' pages are asked for when they are read
    tables = [view_range(state_of(v), 0, n, ahead=False) for v in views]
    tables = [t.replace_schema_metadata(None) for t in tables]
    schema = pa.schema([f for t in tables for f in t.schema])
    table = pa.Table.from_arrays([c for t in tables for c in t.columns], schema=schema)
    table = table.replace_schema_metadata(_hf_metadata(dsets, table.schema))
    fp = hash_value(("concatenate", 1, [d.fingerprint for d in dsets]))
    s = state_of(dsets[0])
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(dict.fromkeys(f for v in views for f in state_of(v).files)),
        cache_dir=s.cache_dir,
        storage_options=s.storage_options,
        holds=tuple(
            h for v in views for h in state_of(v).holds if h.path != state_of(v).indices_file
        ),
        **_format_fields(dsets),
        hf_info=_common_info(dsets),
    )
    return Dataset(state)


def _contiguous(ix: IndexMap | None) -> bool:
    """Whether a view through ``ix`` is a zero-copy slice of its table."""
    return ix is None or ix.is_range
