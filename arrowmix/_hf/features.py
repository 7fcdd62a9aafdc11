"""HF ``datasets`` features kept in a table's schema metadata, and ``map(features=...)``.

HF stores its ``Features`` as JSON under the schema metadata key ``huggingface``
(``{"info": {"features": {column: feature}}}``): what Arrow types cannot say, such as the
names of a ``ClassLabel``. arrowmix keeps that key (and no other) from
``from_dict(features=...)``, through ``map`` and into its cache files, so ``ds.features``
gives back what was declared. HF's ``Features.from_arrow_schema`` trusts an entry only where
its Arrow type is the column's, and so does a map: a column whose type it keeps keeps its
entry, a column it adds or retypes gets the one HF infers from its Arrow type.

``map(features=...)`` fixes the output's columns, order and types: each block is cast to
them with the lossless rules of :mod:`arrowmix._storage.cast` (a value that would change
raises, naming the column), and class labels are checked and encoded as HF does (a label
name becomes its index; an index outside the names raises). Media given as NumPy arrays or
PIL images are encoded by HF's own ``encode_example`` (PNG bytes...), as HF stores them.

Only the JSON is read here; ``datasets`` is imported (lazily) only to describe new columns
of a dataset that already carries HF features.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from arrowmix._storage.cast import lossless_cast
from arrowmix._storage.metadata import KEPT_KEY, kept_metadata
from arrowmix.exceptions import SchemaMismatchError

__all__ = [
    "HF_KEY",
    "all_features",
    "export_metadata",
    "cast_to_features",
    "check_labels",
    "label_features",
    "features_schema",
    "images_array",
    "media_values",
    "hf_metadata",
    "output_metadata",
    "renamed_metadata",
]

#: The schema metadata key under which HF ``datasets`` stores its features (the one the
#: core carries: :mod:`arrowmix._storage.metadata`).
HF_KEY = KEPT_KEY

#: The ``huggingface`` entry of a schema's metadata (as a metadata dict), or ``{}``.
hf_metadata = kept_metadata


def _features(schema: pa.Schema) -> dict[str, Any]:
    """The per-column feature dicts of ``schema``'s HF metadata (``{}`` when none)."""
    raw = (schema.metadata or {}).get(HF_KEY)
    if raw is None:
        return {}
    try:
        feats = json.loads(raw)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return {}
    return feats if isinstance(feats, dict) else {}


def _blob(features: dict[str, Any]) -> dict[bytes, bytes]:
    return {HF_KEY: json.dumps({"info": {"features": features}}).encode()}


def all_features(schema: pa.Schema) -> dict[str, Any]:
    """The HF feature dicts of ``schema``'s columns, as HF writes them.

    All of them with HF installed, else the entries its metadata has (HF infers the others
    when it reads the file).
    """
    try:
        import datasets  # type: ignore[import-untyped]  # HF: no type information
    except ImportError:
        return _features(schema)
    try:
        return _features(datasets.Features.from_arrow_schema(schema).arrow_schema)
    except (TypeError, ValueError, NotImplementedError):  # a type HF cannot describe
        return _features(schema)


def export_metadata(schema: pa.Schema) -> dict[bytes, bytes] | None:
    """The metadata of an exported file: every column's HF features, as HF's exporters write."""
    feats = all_features(schema)
    return _blob(feats) if feats else None


def renamed_metadata(schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
    """``schema``'s HF metadata with the columns of ``renamed`` ({old: new}) renamed."""
    feats = _features(schema)
    if not feats:
        return {}
    return _blob({renamed.get(k, k): v for k, v in feats.items()})


def features_schema(features: Any) -> pa.Schema | None:
    """The Arrow schema of ``map(features=...)`` (HF ``Features`` or a ``pyarrow.Schema``).

    Its metadata is only the ``huggingface`` entry (HF's ``Features.arrow_schema`` has it).

    Raises:
        TypeError: ``features`` is neither.
    """
    if features is None:
        return None
    schema = features
    if not isinstance(schema, pa.Schema):
        schema = getattr(features, "arrow_schema", None)
    if not isinstance(schema, pa.Schema):
        raise TypeError(
            "`features` must be an HF datasets `Features` object or a pyarrow.Schema; got a "
            f"{type(features).__name__}."
        )
    return schema.remove_metadata().with_metadata(hf_metadata(schema))


def output_metadata(parent: pa.Schema, out: pa.Schema) -> dict[bytes, bytes]:
    """The HF metadata of a map output ``out`` of a dataset of schema ``parent``.

    ``{}`` when the parent has no HF features. Otherwise every output column is described:
    by the parent's entry when its type is unchanged, else as HF infers it from the Arrow
    type (without ``datasets`` installed, such columns are left out and HF infers them when
    it reads the file).
    """
    feats = _features(parent)
    if not feats:
        return {}
    same = [n for n in out.names if n in parent.names and parent.field(n).type == out.field(n).type]
    kept = {name: feats[name] for name in same if name in feats}
    try:
        import datasets
    except ImportError:
        return _blob(kept)
    try:
        full = datasets.Features.from_arrow_schema(out.remove_metadata().with_metadata(_blob(kept)))
        return hf_metadata(full.arrow_schema)
    except (TypeError, ValueError, NotImplementedError):  # a type HF cannot describe
        return _blob(kept)


def _class_label(arr: pa.Array[Any], feature: dict[str, Any], column: str) -> pa.Array[Any]:
    """HF's ``ClassLabel`` encoding: names become their index, an index must be a class."""
    names = feature.get("names") or []
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        index = {n: i for i, n in enumerate(names)}
        unknown = sorted({v for v in arr.to_pylist() if v is not None and v not in index})
        if unknown:
            raise SchemaMismatchError(
                f"Column {column!r}: the labels {unknown[:5]} are not among the class names "
                f"{names}."
            )
        return pa.array([None if v is None else index[v] for v in arr.to_pylist()], pa.int64())
    if pa.types.is_integer(arr.type) and len(arr):
        hi = pc.max(arr).as_py()
        if hi is not None and hi >= len(names):
            raise SchemaMismatchError(
                f"Column {column!r}: class label {hi} is not below the number of classes "
                f"({len(names)}: {names})."
            )
    return arr


#: HF's media features: stored as ``struct<bytes: binary, path: string>``, never decoded here.
MEDIA = ("Image", "Audio", "Video", "Pdf", "Nifti")


def _media(arr: Any) -> Any:
    """A path (string) or bytes (binary) column as HF's media struct, as its ``cast_storage``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n, mask = len(arr), arr.is_null() if arr.null_count else None
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        parts = [pa.nulls(n, pa.binary()), arr.cast(pa.string())]
    elif pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        parts = [arr.cast(pa.binary()), pa.nulls(n, pa.string())]
    else:
        return arr  # a struct of bytes and path already (cast losslessly after)
    return pa.StructArray.from_arrays(parts, names=["bytes", "path"], mask=mask)


def _raw_media(value: Any) -> bool:
    """Whether ``value`` is media HF encodes on write: a NumPy array, a PIL image, audio."""
    if isinstance(value, dict):
        return "array" in value  # HF's audio: {"array": ..., "sampling_rate": ...}
    return hasattr(value, "__array_interface__") or type(value).__module__.startswith("PIL.")


def _hf_feature(feature: Any) -> Any:
    try:
        from datasets.features.features import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
            generate_from_dict,
        )
    except ImportError as exc:  # pragma: no cover - the features come from HF's
        raise ImportError(
            "Encoding arrays or PIL images into a media column needs HF `datasets` (and PIL)."
        ) from exc
    return generate_from_dict(feature)


def _encoded_value(value: Any, feature: Any) -> Any:
    """``value`` as HF's ``feature.encode_example`` stores it, where it is raw media."""
    inner = getattr(feature, "feature", None)
    if inner is not None and isinstance(value, (list, tuple)):  # List(Image()) and the like
        return [_encoded_value(v, inner) for v in value]
    if isinstance(feature, dict) and isinstance(value, dict):  # {"b": Image()}: a struct
        return {k: _encoded_value(v, feature.get(k)) for k, v in value.items()}
    if value is not None and _raw_media(value) and hasattr(feature, "encode_example"):
        return feature.encode_example(value)
    return value


def media_values(values: list[Any], schema: pa.Schema, column: str) -> list[Any]:
    """``values`` of ``column`` of ``schema`` with raw media encoded as HF's feature says.

    NumPy arrays and PIL images in an ``Image()`` column (or a list of them) become HF's
    ``{"bytes": PNG/TIFF..., "path": None}``, by HF's own ``encode_example``; other values
    are unchanged.
    """

    def raw(v: Any) -> bool:
        if isinstance(v, dict) and not _raw_media(v):
            return any(map(raw, v.values()))
        return _raw_media(v) or (isinstance(v, (list, tuple)) and any(map(raw, v)))

    feature = _features(schema).get(column)
    if not _has_media(feature) or not any(raw(v) for v in values if v is not None):
        return values
    hf_feature = _hf_feature(feature)
    return [_encoded_value(v, hf_feature) for v in values]


def images_array(values: Any) -> pa.Array[Any] | None:
    """``values`` holding PIL images as HF's ``Image()`` stores them; None if they hold none.

    Each image (and any path, bytes or ``{"bytes", "path"}`` among them) is encoded by HF's
    ``Image().encode_example``, as HF's ``map`` stores returned images.
    """
    if not isinstance(values, (list, tuple)):
        return None
    if not any(type(v).__module__.startswith("PIL.") for v in values):
        return None
    image = _hf_feature({"_type": "Image"})
    encoded = [None if v is None else image.encode_example(v) for v in values]
    out: pa.Array[Any] = pa.array(encoded, type=image.pa_type)
    return out


def _arrays_as_media(arr: Any, feature: dict[str, Any]) -> Any:
    """A column of n-D numeric lists (returned NumPy arrays) encoded as HF's media ``feature``."""
    leaf = arr.type
    while pa.types.is_list(leaf) or pa.types.is_large_list(leaf):
        leaf = leaf.value_type
    if not (pa.types.is_integer(leaf) or pa.types.is_floating(leaf) or pa.types.is_boolean(leaf)):
        return arr
    import numpy as np

    dtype = leaf.to_pandas_dtype()
    hf_feature = _hf_feature(feature)
    rows = [None if v is None else np.asarray(v, dtype=dtype) for v in arr.to_pylist()]
    encoded = [None if v is None else hf_feature.encode_example(v) for v in rows]
    out: pa.Array[Any] = pa.array(encoded, type=hf_feature.pa_type)
    return out


def _encode(arr: Any, feature: Any, column: str) -> Any:
    """``arr`` under ``feature`` (an HF feature dict): class labels and media encoded.

    Media paths or bytes become HF's media struct, the values as given: nothing is read or
    decoded.
    """
    if not isinstance(feature, dict):
        return arr
    kind = feature.get("_type")
    mask = arr.is_null() if arr.null_count else None
    if kind == "ClassLabel":
        return _class_label(arr, feature, column)
    if kind in MEDIA:
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            return _arrays_as_media(arr, feature)
        return _media(arr)
    if kind in ("List", "LargeList", "Sequence") and "feature" in feature:
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            return arr
        child = arr.values  # the whole child array: the offsets point into it
        values = _encode(child, feature["feature"], column)
        if values is child:
            return arr
        cls: Any = pa.LargeListArray if pa.types.is_large_list(arr.type) else pa.ListArray
        return cls.from_arrays(arr.offsets, values, mask=mask)
    if kind is None and pa.types.is_struct(arr.type):  # a struct: {field: feature}
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        old = arr.flatten()  # the children as this (maybe sliced) array sees them
        new = [_encode(c, feature.get(n), column) for c, n in zip(old, names, strict=True)]
        if all(a is b for a, b in zip(old, new, strict=True)):
            return arr
        return pa.StructArray.from_arrays(new, names=names, mask=mask)
    return arr


def _has_media(feature: Any) -> bool:
    if isinstance(feature, dict):
        return feature.get("_type") in MEDIA or any(map(_has_media, feature.values()))
    return isinstance(feature, list) and any(map(_has_media, feature))


def _has_label(feature: Any) -> bool:
    """Whether ``feature`` holds a class label or a media feature (values encoded as HF)."""
    if isinstance(feature, dict):
        kind = feature.get("_type")
        return kind == "ClassLabel" or kind in MEDIA or any(map(_has_label, feature.values()))
    return isinstance(feature, list) and any(map(_has_label, feature))


def label_features(parent: pa.Schema, names: list[str]) -> dict[str, Any]:
    """The HF features of the columns ``names`` of ``parent`` that hold class labels."""
    feats = _features(parent)
    return {n: feats[n] for n in names if n in feats and _has_label(feats[n])}


def check_labels(
    batch: pa.RecordBatch, parent: pa.Schema, labels: dict[str, Any], where: str
) -> None:
    """Check the class labels a map returns for columns that keep the input's ``ClassLabel``.

    A returned column of the input's type keeps the input's feature (``output_metadata``),
    so its values must be classes of it (HF raises a ValueError too).

    Raises:
        SchemaMismatchError: a value is not a class; the message names the column.
    """
    for name, feature in labels.items():
        if (
            name not in batch.schema.names
            or batch.schema.field(name).type != parent.field(name).type
        ):
            continue  # retyped: it gets the feature HF infers, not the input's
        try:
            _encode(batch.column(name), feature, name)
        except SchemaMismatchError as exc:
            raise SchemaMismatchError(
                f"{exc} The values come from {where} and the column keeps the input's class "
                "labels; return valid labels, or pass `features=` with the new ones."
            ) from exc


def cast_to_features(batch: pa.RecordBatch, target: pa.Schema, where: str) -> pa.RecordBatch:
    """``batch`` as ``target`` (the schema of ``map(features=...)``): order, types, labels.

    Raises:
        SchemaMismatchError: the columns differ from the features', or a value would change
            (the message names the column and ``where``).
    """
    if sorted(batch.schema.names) != sorted(target.names):
        raise SchemaMismatchError(
            f"The columns {batch.schema.names} returned for {where} do not match `features`' "
            f"columns {target.names}: `features` describes the whole output (remove or add "
            "columns so that they match)."
        )
    feats = _features(target)
    cols = []
    for f in target:
        arr = _encode(batch.column(f.name), feats.get(f.name), f.name)
        cast, why = lossless_cast(arr, f.type, round_floats=True)  # declared
        if why is not None:
            raise SchemaMismatchError(
                f"Column {f.name!r} returned for {where} is {arr.type} and cannot become "
                f"{f.type} as `features` says without changing values: {why}."
            )
        cols.append(cast)
    return pa.RecordBatch.from_arrays(cols, schema=target)
