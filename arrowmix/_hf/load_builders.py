"""The builders of ``load_dataset``: one split's files into a Dataset, with HF's options.

``json``, ``csv``, ``parquet`` and ``text`` ingest through the ``Dataset.from_*`` machinery
(cached by the files' content, so a rerun reads nothing but the hashes); ``arrow`` maps the
files as they are; ``imagefolder``/``audiofolder`` are in :mod:`arrowmix._hf.load_folder`.
An option HF's builder has and arrowmix does not is refused by name, never ignored.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.inputs.reader_options import (
    builder_options,
    check_options,
    reader_format,
)

__all__ = ["build_split", "builder_options", "check_options"]


def build_split(
    builder: str,
    files: list[str],
    name: str,
    options: Mapping[str, Any],
    cache_dir: str | None,
    features: Any,
    keep_in_memory: bool = False,
    row_counts: list[int] | None = None,
    member_rows: list[int] | None = None,
) -> Dataset:
    """The Dataset of one split's ``files`` read by ``builder`` with HF's ``options``.

    ``row_counts``: gets each file's row count, in order (the streaming shards; a zip
    archive's members count as one file). ``member_rows``: the same with each member of a
    zip archive counted apart (the files HF's builder reads one after the other).
    """
    from arrowmix._dataset.inputs.file_splits import read_splits

    if builder in ("imagefolder", "audiofolder"):
        raise ValueError("folder builders are built by load_folder")  # pragma: no cover
    if builder == "arrow":
        per_file: list[int] = []
        read = _arrow(files, name, features, keep_in_memory, per_file)
        for out in (row_counts, member_rows):
            if out is not None:
                out += per_file
        return read
    from arrowmix._hf.load_archives import expand_archives

    groups = [expand_archives([f]) for f in files]  # a zip's members: one shard, as in HF
    files = [member for group in groups for member in group]
    fmt = reader_format(builder, options)
    columns = options.get("columns") if builder == "parquet" else None
    cast = features if columns is None else None
    counts: dict[str, list[int]] = {}
    ds: Dataset = read_splits(
        files, fmt, name, None, None, cache_dir, cast, keep_in_memory, row_counts=counts
    )
    found = counts.get(name, [])
    if member_rows is not None and len(found) == len(files):
        member_rows += found
    if row_counts is not None and len(found) == len(files):
        rows = iter(found)
        row_counts += [sum(itertools.islice(rows, len(group))) for group in groups]
    if columns is not None:
        missing = sorted(set(columns) - set(ds.column_names))
        if missing:
            raise ValueError(f"`columns` names no column of the files: {missing}.")
        ds = ds.select_columns([c for c in ds.column_names if c in columns])  # file order
        if features is not None:  # HF: the features of the columns read
            ds = ds.cast(_subset(features, ds.column_names))
    return ds


def _subset(features: Any, names: list[str]) -> Any:
    """``features`` (HF ``Features`` or a ``pyarrow.Schema``) of the columns ``names``."""
    import pyarrow as pa

    if isinstance(features, pa.Schema):
        return pa.schema([features.field(n) for n in names if n in features.names])
    return type(features)({n: features[n] for n in names if n in features})


def _arrow(
    files: list[str],
    name: str,
    features: Any,
    keep_in_memory: bool,
    row_counts: list[int] | None = None,
) -> Dataset:
    """HF's ``arrow`` builder: the files' tables end to end (IPC file or stream format)."""
    from arrowmix._dataset.state import derive, state_of
    from arrowmix._dataset.views.concatenate import concatenate_datasets

    parts = [Dataset.from_file(f, in_memory=keep_in_memory) for f in files]
    if row_counts is not None:
        row_counts += [len(p) for p in parts]
    ds = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    if features is not None:
        ds = ds.cast(features)
    return type(ds)(derive(state_of(ds), split=name))
