"""``from_chunks`` of a corpus directory that lists no chunk: an empty dataset.

A directory whose manifest lists no chunk (``write_chunks`` of an iterable with no rows, whose
schema is unknown) opens as an empty dataset with no columns. Input with a schema but no rows
is written as one empty chunk, and opens with its columns. A directory holding chunk files
whose manifest lists none (edited, or another corpus's) is no empty corpus: the error about
its files stands, never an empty dataset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage.chunks import list_chunk_files
from arrowmix._storage.digests import read_manifest
from arrowmix._storage.fs import is_local, local_path
from arrowmix.exceptions import ChunkFileError

__all__ = ["empty_corpus"]

Spec = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def _local_dirs(spec: Spec) -> list[str]:
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out = []
    for s in specs:
        if isinstance(s, (str, os.PathLike)) and is_local(os.fspath(s)):
            p = local_path(os.fspath(s))
            if os.path.isdir(p):
                out.append(p)
    return out


def _has_chunk_files(directory: str) -> bool:
    try:
        return bool(list_chunk_files(directory))
    except ChunkFileError:
        return False


def empty_corpus(
    spec: Spec, cache_dir: str | None, storage_options: Mapping[str, Any] | None
) -> Dataset | None:
    """An empty dataset when ``spec`` is one local directory whose manifest lists no chunk."""
    dirs = _local_dirs(spec)
    if len(dirs) != 1 or not isinstance(spec, (str, os.PathLike)):
        return None
    if read_manifest(dirs[0]) != {} or _has_chunk_files(dirs[0]):
        return None
    state = DatasetState(
        table=pa.table({}),
        fingerprint=hash_value(("from_chunks", [])),
        files=(),
        file_offsets=(0,),
        cache_dir=cache_dir,
        storage_options=dict(storage_options) if storage_options else None,
        holds=hold_cache_files([]),
    )
    return Dataset(state)
