"""HF ``datasets``' ``add_column`` (``feature=``), ``cast_column``, ``class_encode_column``...

... and ``align_labels_with_mapping``.

The methods are :class:`~arrowmix._hf.compat.HFCompat`'s; the column work is the core's
(``arrowmix._dataset.views.additions``, ``cast``, ``map``); what is HF's here is the
``huggingface`` schema metadata entry, the ``ClassLabel`` that ``class_encode_column``
declares (HF's rule: the sorted distinct values, as strings), read and written as JSON so
that ``datasets`` need not be installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._hf.features import _blob, _features, all_features, features_schema
from arrowmix._hf.state import state_of

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["add_column", "align_labels_with_mapping", "cast_column", "class_encode_column"]


def _one_column_schema(name: str, feature: Any) -> pa.Schema:
    """The schema of ``{name: feature}``: an Arrow type, or an HF feature (HF's metadata kept)."""
    if isinstance(feature, pa.DataType):
        return pa.schema([pa.field(name, feature)])
    import datasets  # type: ignore[import-untyped]  # an HF feature: HF is installed

    schema = features_schema(datasets.Features({name: feature}))
    assert schema is not None
    return schema


def _is_value(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or isinstance(t, pa.ExtensionType))


def add_column(
    ds: Dataset, name: str, column: Any, new_fingerprint: str | None, feature: Any
) -> Dataset:
    """:meth:`~arrowmix.Dataset.add_column` with HF's ``feature=`` kept in the features entry."""
    from arrowmix._dataset.state import derive
    from arrowmix._dataset.views.additions import add_column as add

    schema = None if feature is None else _one_column_schema(name, feature)
    out = add(ds, name, column, new_fingerprint, schema)
    entry = {} if schema is None else _features(schema)
    if not entry:
        return out
    s = state_of(out)
    table = s.table.replace_schema_metadata(_blob({**all_features(s.table.schema), **entry}))
    return type(out)(derive(s, table=table))


def cast_column(ds: Dataset, column: str, feature: Any, new_fingerprint: str | None) -> Dataset:
    """:meth:`~arrowmix.Dataset.cast_column`: ``ds.cast`` of a schema changing one column."""
    from arrowmix._dataset.access import check_column

    check_column(state_of(ds), column)
    one = _one_column_schema(column, feature)
    fields = [one.field(0) if f.name == column else f for f in ds.schema]
    feats = {**all_features(state_of(ds).table.schema), **_features(one)}
    if isinstance(feature, pa.DataType):
        feats.pop(column, None)  # HF infers it from the Arrow type
    schema = pa.schema(fields).with_metadata(_blob(feats) if feats else {})
    out = ds.cast(schema)
    if new_fingerprint is not None:
        out._fingerprint = new_fingerprint
    return out


def class_encode_column(ds: Dataset, column: str, include_nulls: bool) -> Dataset:
    """:meth:`~arrowmix.Dataset.class_encode_column`: two cached maps, HF's rules."""
    if column not in ds.column_names:
        raise ValueError(f"Column ({column}) not in table columns ({ds.column_names}).")
    t = ds.schema.field(column).type
    if not _is_value(t):
        raise ValueError(
            f"Class encoding is only supported for Value column, and column {column} is {t}."
        )
    if not pa.types.is_string(t) or (include_nulls and None in ds.unique(column)):
        ds = ds.map(_Stringify(column, include_nulls), batched=True)
    names = sorted(str(v) for v in ds.unique(column) if include_nulls or v is not None)
    fields = [pa.field(column, pa.int64()) if f.name == column else f for f in ds.schema]
    feats = all_features(state_of(ds).table.schema)
    feats[column] = {"names": names, "_type": "ClassLabel"}
    schema = pa.schema(fields).with_metadata(_blob(feats))
    return ds.map(_ToLabels(column, names, include_nulls), batched=True, features=schema)


class _Stringify:
    """HF's ``stringify_column``: values as ``str`` (nulls kept unless ``include_nulls``)."""

    def __init__(self, column: str, include_nulls: bool) -> None:
        self.column, self.include_nulls = column, include_nulls

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        keep = self.include_nulls
        batch[self.column] = [str(v) if keep or v is not None else None for v in batch[self.column]]
        return batch


class _ToLabels:
    """HF's ``cast_to_class_labels``: each value's index among the sorted names."""

    def __init__(self, column: str, names: list[str], include_nulls: bool) -> None:
        self.column, self.names, self.include_nulls = column, names, include_nulls

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        index = {n: i for i, n in enumerate(self.names)}
        keep = self.include_nulls
        values = batch[self.column]
        batch[self.column] = [index[str(v)] if keep or v is not None else None for v in values]
        return batch


_LISTS = ("List", "LargeList", "Sequence")


def align_labels_with_mapping(ds: Dataset, label2id: dict[str, int], label_column: str) -> Dataset:
    """:meth:`~arrowmix.Dataset.align_labels_with_mapping`: HF's rule, one cached map.

    The new ``ClassLabel`` names are ``label2id``'s keys in the order of their ids; each
    stored id is renumbered by its old name, compared without case. A name the mapping lacks
    raises ``KeyError`` (as in HF).
    """
    if label_column not in ds.column_names:
        raise ValueError(f"Column ({label_column}) not in table columns ({ds.column_names}).")
    feats = all_features(state_of(ds).table.schema)
    entry = feats.get(label_column, {})
    nested = entry.get("_type") in _LISTS and isinstance(entry.get("feature"), dict)
    label = entry["feature"] if nested else entry
    if label.get("_type") != "ClassLabel":
        raise ValueError(
            "Aligning labels with a mapping is only supported for ClassLabel column or List "
            f"column with the inner type ClassLabel, and column {label_column!r} is "
            f"{entry.get('_type') or ds.schema.field(label_column).type}."
        )
    ordered = sorted(label2id.items(), key=lambda kv: kv[1])
    lower = {name.lower(): i for name, i in ordered}
    renumber = [lower[str(name).lower()] for name in label["names"]]  # KeyError as in HF
    new_label = {"names": [name for name, _ in ordered], "_type": "ClassLabel"}
    feats[label_column] = {"feature": new_label, "_type": "List"} if nested else new_label
    schema = ds.schema.with_metadata(_blob(feats))
    return ds.map(_Renumber(label_column, renumber, nested), batched=True, features=schema)


class _Renumber:
    """Each label id ``i`` as ``renumber[i]`` (nulls kept), in lists too when ``nested``."""

    def __init__(self, column: str, renumber: list[int], nested: bool) -> None:
        self.column, self.renumber, self.nested = column, renumber, nested

    def _one(self, v: int | None) -> int | None:
        return None if v is None else self.renumber[v]

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        values = batch[self.column]
        if self.nested:
            batch[self.column] = [None if s is None else [self._one(v) for v in s] for s in values]
        else:
            batch[self.column] = [self._one(v) for v in values]
        return batch
