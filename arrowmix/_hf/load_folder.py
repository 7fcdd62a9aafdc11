"""``imagefolder`` and ``audiofolder``: a directory of media files as rows, with HF's rules.

Each media file (an image or audio extension) is a row ``{"image": {"bytes": None, "path":
<absolute path>}}`` (``"audio"`` for audiofolder): the column holds the file's path, as HF
stores it before decoding, with HF's ``Image()`` / ``Audio()`` feature. arrowmix does not
decode media: read the bytes with ``open(row["image"]["path"], "rb")``, or decode with PIL /
an audio library in a ``map`` or a ``set_transform``.

Labels: when every media file sits at the same depth and their parent directories have more
than one name, a ``"label"`` column holds the parent directory's name as a ``ClassLabel``
(names sorted), unless ``drop_labels=True`` (``drop_labels=False`` always adds it).

Metadata: a ``metadata.csv``, ``metadata.jsonl`` or ``metadata.parquet`` among the files
gives the rows instead (no labels then, unless ``drop_metadata=True``): one row per line of
the metadata, whose ``file_name`` column (a path relative to the metadata file) becomes the
media column, in its place (``<name>_file_name`` becomes ``<name>``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.state import derive, state_of
from arrowmix._hf.load_files import EXTENSION_TO_BUILDER, FOLDER_METADATA

__all__ = ["build_folder"]

_COLUMN = {"imagefolder": "image", "audiofolder": "audio"}
_FEATURE = {"imagefolder": "Image", "audiofolder": "Audio"}
_MEDIA = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _is_media(path: str, builder: str) -> bool:
    root, ext = os.path.splitext(path)
    second = os.path.splitext(root)[1]
    return any(EXTENSION_TO_BUILDER.get(e.lower(), ("",))[0] == builder for e in (ext, second))


def build_folder(
    builder: str, splits: Mapping[str, list[str]], options: Mapping[str, Any], features: Any
) -> dict[str, Dataset]:
    """The Datasets of ``{split: files}`` read by a folder builder (see the module)."""
    media = {s: [f for f in files if _is_media(f, builder)] for s, files in splits.items()}
    meta = {
        s: [f for f in files if os.path.basename(f) in FOLDER_METADATA]
        for s, files in splits.items()
    }
    use_meta = any(meta.values()) and not options.get("drop_metadata")
    labels = sorted({os.path.basename(os.path.dirname(f)) for fs in media.values() for f in fs})
    depths = {f.replace("\\", "/").count("/") for fs in media.values() for f in fs}
    drop = options.get("drop_labels")
    add_labels = not use_meta and (
        (len(labels) > 1 and len(depths) == 1) if drop is None else not drop
    )
    out = {}
    for split in splits:
        if use_meta:
            table = _from_metadata(meta[split], builder)
        else:
            table = _from_files(media[split], builder, labels if add_labels else None)
        ds = Dataset.from_arrow(table)
        if features is not None:
            ds = ds.cast(features)
        out[split] = type(ds)(derive(state_of(ds), split=split))
    return out


def _with_features(table: pa.Table, feats: dict[str, Any]) -> pa.Table:
    blob = json.dumps({"info": {"features": feats}})
    return table.replace_schema_metadata({"huggingface": blob})


def _from_files(files: list[str], builder: str, labels: list[str] | None) -> pa.Table:
    column = _COLUMN[builder]
    paths = pa.array([{"bytes": None, "path": f} for f in files], type=_MEDIA)
    cols: dict[str, Any] = {column: paths}
    feats: dict[str, Any] = {column: {"_type": _FEATURE[builder]}}
    if labels is not None:
        index = {name: i for i, name in enumerate(labels)}
        cols["label"] = pa.array(
            [index[os.path.basename(os.path.dirname(f))] for f in files], pa.int64()
        )
        feats["label"] = {"names": labels, "_type": "ClassLabel"}
    return _with_features(pa.table(cols), feats)


def _read_metadata(path: str) -> pa.Table:
    from arrowmix._storage.readers import read_batches

    fmt = {".csv": "csv", ".jsonl": "json", ".parquet": "parquet"}[os.path.splitext(path)[1]]
    return pa.Table.from_batches(list(read_batches(path, fmt)))


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _media_column(name: str) -> str | None:
    if name == "file_name":
        return ""
    if name.endswith("_file_name"):
        return name[: -len("_file_name")]
    return None


def _from_metadata(meta_files: list[str], builder: str) -> pa.Table:
    exts = {os.path.splitext(f)[1] for f in meta_files}
    if len(exts) > 1:
        raise ValueError(f"Found metadata files with different extensions: {sorted(exts)}")
    tables = [(f, _read_metadata(f)) for f in meta_files]
    if not tables:
        return _from_files([], builder, None)
    names: list[str] = []
    cols: list[Any] = []
    feats: dict[str, Any] = {}
    first = tables[0][1]
    for name in first.column_names:
        target = _media_column(name)
        if target is None or not _is_text(first.schema.field(name).type):
            names.append(name)
            chunks: list[Any] = [c for _, t in tables for c in t.column(name).chunks]
            cols.append(pa.chunked_array(chunks, type=first.schema.field(name).type))
            continue
        target = target or _COLUMN[builder]
        paths = [
            {"bytes": None, "path": _inside(os.path.dirname(f), rel, f)}
            for f, t in tables
            for rel in t.column(name).to_pylist()
        ]
        names.append(target)
        media: Any = pa.array(paths, type=_MEDIA)
        cols.append(pa.chunked_array([media]))
        feats[target] = {"_type": _FEATURE[builder]}
    if not feats:
        raise ValueError(
            f"`file_name` or `*_file_name` must be a column of the metadata files {meta_files}."
        )
    from arrowmix._hf.features import all_features

    table = pa.table(dict(zip(names, cols, strict=True)))
    plain = all_features(table.select([n for n in names if n not in feats]).schema)
    return _with_features(
        table, {n: feats.get(n, plain.get(n)) for n in names if n in feats or n in plain}
    )


def _inside(directory: str, rel: str | None, meta_file: str) -> str | None:
    """``rel`` joined to the metadata file's directory; a path escaping it is refused."""
    if rel is None:
        return None
    norm = os.path.normpath(rel).replace("\\", "/")
    if "://" in rel or os.path.isabs(rel) or norm == ".." or norm.startswith("../"):
        raise ValueError(
            f"{meta_file}: invalid file_name {rel!r}: it must be a relative path inside the "
            "metadata file's directory."
        )
    return os.path.join(directory, norm)
