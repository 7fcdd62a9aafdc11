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

__all__ = ["build_split", "builder_options", "check_options"]

#: Options of HF's builder configs that change nothing here (the text is UTF-8, sizes of
#: read blocks are arrowmix's own).
_HARMLESS = {"chunksize", "block_size", "use_threads", "batch_size", "writer_batch_size"}
_OPTIONS = {
    "json": {"field", "encoding", "on_mixed_types"},
    "csv": {"sep", "delimiter", "encoding"},
    "text": {"keep_linebreaks", "sample_by", "encoding"},
    "parquet": {"columns"},
    "arrow": set(),
    "imagefolder": {"drop_labels", "drop_metadata"},
    "audiofolder": {"drop_labels", "drop_metadata"},
}


def builder_options(builder: str) -> set[str]:
    """The options ``builder`` takes (those that change nothing here included)."""
    return _OPTIONS[builder] | _HARMLESS


def check_options(builder: str, options: Mapping[str, Any]) -> None:
    """Refuse an option ``builder`` does not take, or an encoding other than UTF-8.

    Raises:
        ValueError: naming the option and the ones the builder takes.
    """
    known = _OPTIONS[builder]
    for name, value in options.items():
        if name in _HARMLESS:
            continue
        if name not in known:
            raise ValueError(
                f"The {builder} builder of arrowmix's load_dataset does not take {name!r}; it "
                f"takes {sorted(known) or 'no option'} (and data_files, data_dir, split, "
                "features, cache_dir)."
            )
        if name == "encoding" and str(value).lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise ValueError(
                f"arrowmix reads UTF-8 text only (got encoding={value!r}); convert the files "
                "first, e.g. `iconv -f ENCODING -t UTF-8`."
            )


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
    fmt: Any
    if builder == "json":
        fmt = ("json", {"field": options.get("field")})
    elif builder == "csv":
        sep = options.get("delimiter", options.get("sep"))
        fmt = ("csv", {"delimiter": sep} if sep not in (None, ",") else {})
    elif builder == "text":
        fmt = _text_format(options)
    else:
        fmt = "parquet"
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
        if features is not None:
            ds = ds.cast(features)
    return ds


def _text_format(options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    sample_by = options.get("sample_by", "line")
    if sample_by not in ("line", "paragraph", "document"):
        raise ValueError(
            f"`sample_by` must be 'line', 'paragraph' or 'document', got {sample_by!r}."
        )
    if sample_by == "line" and options.get("keep_linebreaks"):
        return "text:line", {"keep_linebreaks": True}
    return f"text:{sample_by}", {}


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
