"""Open remote chunks without downloading them: ``from_chunks(url, cache_limit=...)``.

Each chunk is described by its directory's manifest (written last by ``write_chunks``: its
rows and content digest; a directory without one, or whose files do not match it, is refused,
since hashing the files would download them all) and one listing per directory (its size and
version). Only the first chunk of each directory is read, by a few range requests
(:func:`~arrowmix._remote.meta.probe`: the schema); the other chunks' schemas and rows are
checked when their copies are first read. The dataset's table is a
:class:`~arrowmix._remote.table.RemoteTable` that downloads a chunk into the bounded
cache directory when a read first needs it. The fingerprint is the one the same files get
when read from a local directory (it hashes the same digests), so results cached from a
local copy of the corpus are reused, and the other way round.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from arrowmix._dataset.dataset import Dataset, DatasetState
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._remote.cache import check_fits, parse_size
from arrowmix._remote.meta import RemoteChunk, probe, version_tag
from arrowmix._remote.retry import remote_fs
from arrowmix._remote.table import RemoteTable
from arrowmix._storage.digests import ChunkEntry, read_manifest
from arrowmix._storage.fs import is_local, url_to_fs
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError, SchemaMismatchError

__all__ = ["from_remote_chunks"]

_PROBE_THREADS = 8


def _infos(files: Sequence[str], storage_options: Mapping[str, Any] | None) -> list[Any]:
    """``fs.info`` of each file, from one fresh listing per directory (not one HEAD each)."""
    listed: dict[str, dict[str, Any]] = {}
    out = []
    for url in files:
        fs, path = url_to_fs(url, storage_options)
        parent = path.rstrip("/").rsplit("/", 1)[0]
        if parent not in listed:
            try:
                entries = fs.ls(parent, detail=True)
            except FileNotFoundError:
                entries = []
            except PermissionError as exc:
                raise PermissionError(
                    exc.errno, f"Listing the chunks of {url!r} was refused: {exc}"
                ) from exc
            listed[parent] = {fs._strip_protocol(e["name"]): e for e in entries}
        info = listed[parent].get(fs._strip_protocol(path))
        if info is None:
            try:
                info = fs.info(path)
            except FileNotFoundError as exc:
                raise ChunkFileError(f"Remote chunk {url!r} not found.") from exc
            except PermissionError as exc:
                raise PermissionError(exc.errno, f"Reading {url!r} was refused: {exc}") from exc
        out.append(info)
    return out


def _describe(
    url: str, info: Mapping[str, Any], digest: str, storage_options: Mapping[str, Any] | None
) -> tuple[pa.Schema, RemoteChunk]:
    fs, path = remote_fs(url, storage_options)
    return probe(fs, path, url, info, digest)


def _entries(
    files: Sequence[str], infos: Sequence[Any], storage_options: Mapping[str, Any] | None
) -> list[ChunkEntry]:
    """Each file's manifest entry (rows, digest): its directory's manifest must list it."""
    manifests: dict[str, Any] = {}
    out = []
    for url, info in zip(files, infos, strict=True):
        directory, name = url.rstrip("/").rsplit("/", 1)
        if directory not in manifests:
            try:
                manifests[directory] = read_manifest(directory, storage_options)
            except PermissionError as exc:
                raise PermissionError(
                    exc.errno, f"Reading the manifest of {directory!r} was refused: {exc}"
                ) from exc
        manifest = manifests[directory]
        entry = None if manifest is None else manifest.get(name)
        if entry is None or entry.size != int(info["size"]):
            why = (
                "has no manifest (an unfinished `write_chunks`, or files written by another "
                "tool)" if manifest is None else
                f"lists {name!r} " + ("not at all" if entry is None else
                                      f"with {entry.size} bytes, not {info['size']}")
            )  # fmt: skip
            raise IncompleteCorpusError(
                f"{directory!r} {why}: `cache_limit` takes each chunk's digest from the "
                "manifest `write_chunks` writes last (hashing the files would download them "
                "all). Rewrite the corpus with `write_chunks`, or open it without `cache_limit`."
            )
        out.append(entry)
    return out


def _refuse_local(files: Sequence[str]) -> None:
    local = [f for f in files if is_local(f)]
    if local:
        raise ValueError(
            f"`cache_limit` bounds the local copies of remote chunks, but {local[0]!r} is a "
            "local file (local files are memory-mapped in place): drop `cache_limit`."
        )


def _probe_directories(
    files: Sequence[str],
    infos: Sequence[Any],
    entries: Sequence[ChunkEntry],
    storage_options: Mapping[str, Any] | None,
) -> dict[int, tuple[pa.Schema, RemoteChunk]]:
    """Schema and chunk of the first file of each directory, by index in ``files``."""
    # One probe per directory (its schema): the manifest has every chunk's rows, and the
    # other chunks' schemas are checked when their copies are first read.
    first: dict[str, int] = {}
    for i, f in enumerate(files):
        first.setdefault(f.rstrip("/").rsplit("/", 1)[0], i)
    probed = sorted(first.values())
    with ThreadPoolExecutor(min(_PROBE_THREADS, len(probed))) as pool:
        described = dict(zip(probed, pool.map(
            lambda i: _describe(files[i], infos[i], entries[i].digest, storage_options), probed
        ), strict=True))  # fmt: skip
    return described


def _checked_schema(
    files: Sequence[str],
    described: dict[int, tuple[pa.Schema, RemoteChunk]],
    entries: Sequence[ChunkEntry],
) -> pa.Schema:
    """The probed chunks' common schema; their rows must match their manifest entries."""
    schema = described[min(described)][0].remove_metadata()
    for i, (s, c) in described.items():
        if not s.remove_metadata().equals(schema):
            raise SchemaMismatchError(
                f"Chunk file {files[i]!r} has a different schema from {files[0]!r}:\n"
                f"{s.remove_metadata()}\nexpected\n{schema}"
            )
        if c.num_rows != entries[i].rows:
            raise IncompleteCorpusError(
                f"Chunk file {files[i]!r} has {c.num_rows} rows where its manifest records "
                f"{entries[i].rows}: the corpus was altered after `write_chunks`."
            )
    return schema


def from_remote_chunks(
    files: Sequence[str],
    cache_dir: str | None,
    storage_options: Mapping[str, Any] | None,
    cache_limit: int | str,
    chunk_cache_dir: str | None,
) -> Dataset:
    """The dataset of remote chunk ``files`` read through a cache of ``cache_limit`` bytes.

    Raises:
        ValueError: a local file among ``files``, or a bad ``cache_limit``.
        CacheLimitError: the largest chunk does not fit in ``cache_limit``.
        SchemaMismatchError: the chunks' schemas differ.
        IncompleteCorpusError: a directory has no manifest, or it does not list a file.
    """
    limit = parse_size(cache_limit)
    _refuse_local(files)
    infos = _infos(files, storage_options)
    entries = _entries(files, infos, storage_options)
    described = _probe_directories(files, infos, entries, storage_options)
    schema = _checked_schema(files, described, entries)
    chunks = [
        described[i][1] if i in described else
        RemoteChunk(f, int(info["size"]), version_tag(info), (e.rows,), e.digest)
        for i, (f, info, e) in enumerate(zip(files, infos, entries, strict=True))
    ]  # fmt: skip
    check_fits(limit, chunks)
    # No directory given: each process (each node of a cluster) uses its own default one.
    table = RemoteTable(chunks, schema, chunk_cache_dir, limit, storage_options)
    offsets = tuple(itertools.accumulate((c.num_rows for c in chunks), initial=0))
    fp = hash_value(("from_chunks", [c.digest for c in chunks]))
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(files),
        file_offsets=offsets,
        cache_dir=cache_dir,
        storage_options=dict(storage_options) if storage_options else None,
    )
    return Dataset(state)
