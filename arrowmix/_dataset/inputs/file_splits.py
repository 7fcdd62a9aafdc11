"""Files read as one Dataset or as a ``DatasetDict`` of splits, and the types given with them.

``from_csv``/``from_json``/``from_parquet``/``from_text`` (and HF's ``load_dataset``) read
``{split: files}`` through :func:`read_splits`; split names are checked as HF checks them;
``features``/``schema``/``info`` become one Arrow schema (:func:`schema_of`), applied after
ingest (:func:`finish_ingest`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "check_split_name",
    "csv_types",
    "finish_ingest",
    "read_splits",
    "schema_of",
    "split_name",
    "with_split",
]


def read_splits(
    paths: Any,
    fmt: Any,
    split: str | None,
    storage_options: Mapping[str, Any] | None,
    source_column: str | None,
    cache_dir: str | os.PathLike[str] | None,
    features: Any,
    keep_in_memory: bool,
    opener: Callable[[Any], Dataset] | None = None,
    row_counts: dict[str, list[int]] | None = None,
) -> Any:
    """The files as one Dataset, or a ``{split: files}`` dict as a ``DatasetDict``.

    ``fmt``: the reader's format, or ``(format, its options)``.

    One Dataset's ``split`` is ``split`` or ``"train"`` (as in HF); with a dict and ``split``
    given, only that split's Dataset. ``opener(files)``: opens them instead of ingesting.
    ``row_counts``: gets each ingested split's files' row counts, ``{split: [rows per file]}``.
    """
    from arrowmix._dataset.inputs.ingest import ingest
    from arrowmix._dataset.state import derive, state_of
    from arrowmix._hf.dataset_dict import DatasetDict

    fmt, options = fmt if isinstance(fmt, tuple) else (fmt, None)
    types = csv_types(features) if fmt == "csv" else None

    def one(files: Any, name: str) -> Dataset:
        if opener is not None:
            opened = opener(files)
            return type(opened)(derive(state_of(opened), split=name))
        ds = ingest(
            files,
            fmt,
            storage_options,
            source_column,
            cache_dir,
            column_types=types,
            options=options,
            row_counts=None if row_counts is None else row_counts.setdefault(name, []),
        )
        ds = finish_ingest(ds, features, keep_in_memory, fmt)
        return type(ds)(derive(state_of(ds), split=name))

    if split is not None:
        split = split_name(split)
        check_split_name(split)
    if not isinstance(paths, Mapping):
        return one(paths, split or "train")
    paths = {split_name(name): files for name, files in paths.items()}
    for name in paths:
        check_split_name(name)
    if split is not None:
        if split not in paths:
            raise ValueError(f"Unknown split {split!r}; the files are given for {list(paths)}.")
        return one(paths[split], split)
    return DatasetDict({name: one(files, name) for name, files in paths.items()})


def with_split(ds: Dataset, split: Any) -> Dataset:
    """``ds`` named as the split ``split`` (``ds.split``; unchanged when ``split`` is None)."""
    from arrowmix._dataset.state import derive, state_of

    if split is None:
        return ds
    return type(ds)(derive(state_of(ds), split=str(split_name(split))))


def split_name(name: Any) -> Any:
    """A split name as a ``str``: HF's ``NamedSplit`` (``datasets.Split.TRAIN``) by its name.

    Anything else is returned as it is (for :func:`check_split_name` to judge).
    """
    if not isinstance(name, str) and type(name).__name__ == "NamedSplit":
        return str(name)
    return name


def check_split_name(name: Any) -> None:
    r"""Refuse a split name HF refuses (it must match ``\w+(\.\w+)*``).

    Raises:
        ValueError: ``name`` is not such a string.
    """
    import re

    if not isinstance(name, str) or not re.fullmatch(r"\w+(\.\w+)*", name):
        raise ValueError(
            f"Split name should match '^\\w+(\\.\\w+)*$' but got {name!r}: letters, digits "
            "and underscores, optionally separated by dots."
        )


def csv_types(features: Any) -> dict[str, pa.DataType] | None:
    """The types HF parses CSV columns as, given ``features``: its ``Value`` ones.

    HF reads such a column straight as its type (``"007"`` stays text in a string column);
    the others (class labels, media, nested) are parsed as usual and cast after
    (``finish_ingest``). A ``pyarrow.Schema`` gives every scalar column.
    """
    import json

    schema = None if features is None else schema_of(None, features)
    if schema is None:
        return None
    raw = (schema.metadata or {}).get(b"huggingface")
    kinds = json.loads(raw).get("info", {}).get("features", {}) if raw else {}
    found = {
        f.name: f.type
        for f in schema
        if not pa.types.is_nested(f.type)
        and not isinstance(f.type, pa.ExtensionType)
        and kinds.get(f.name, {}).get("_type", "Value") == "Value"
    }
    return found or None


def finish_ingest(ds: Dataset, features: Any, keep_in_memory: bool, fmt: str = "") -> Dataset:
    """An ingested dataset cast to HF-style ``features`` and copied into memory, if asked.

    As HF's builders of format ``fmt``: JSON rows get a missing value in each column of
    ``features`` the files do not have; text's one column is named by one-column
    ``features``.
    """
    from arrowmix._dataset.views.in_memory import in_memory_copy

    if features is not None:
        names = list(features.names if isinstance(features, pa.Schema) else features)
        if fmt.startswith("text") and len(names) == 1 and ds.column_names == ["text"]:
            ds = ds.rename_column("text", names[0])
        if fmt == "json":
            schema = schema_of(None, features)
            for name in names:
                if name not in ds.column_names and schema is not None:
                    ds = ds.add_column(name, pa.nulls(len(ds), schema.field(name).type))
        ds = ds.cast(features)
    return in_memory_copy(ds) if keep_in_memory else ds


def schema_of(schema: Any, features: Any, info: Any = None) -> pa.Schema | None:
    """``schema``, or the Arrow schema of HF-style ``features`` (``Features.arrow_schema``).

    ``info`` (an HF ``DatasetInfo``) gives its ``features`` when ``features`` is None; both
    given and different is a ValueError, as in HF. HF's ``from_dict(mapping, features)``
    (the features as the second positional argument) is understood.
    """
    if schema is not None and not isinstance(schema, pa.Schema) and features is None:
        schema, features = None, schema  # HF's from_dict(mapping, Features(...)), positional
    info_features = getattr(info, "features", None) if info is not None else None
    if info_features is not None:
        if features is not None and features != info_features:
            raise ValueError(
                "Features specified in `features` and `info.features` can't be different:\n"
                f"{features}\n{info_features}"
            )
        features = info_features
    if features is None:
        given: pa.Schema | None = schema
        return given
    if schema is not None:
        raise TypeError("Give `schema` or `features`, not both.")
    found = features if isinstance(features, pa.Schema) else getattr(features, "arrow_schema", None)
    if not isinstance(found, pa.Schema):
        raise TypeError(
            "`features` must be a pyarrow.Schema or an HF datasets `Features` object; got a "
            f"{type(features).__name__}."
        )
    from arrowmix._storage.metadata import kept_metadata as hf_metadata

    return found.remove_metadata().with_metadata(hf_metadata(found))  # HF's features kept
