"""Open remote chunks without downloading them: ``from_chunks(url, cache_limit=...)``.

Each chunk is described by its directory's manifest (written last by ``write_chunks``: its
rows and content digest; a directory without one, or whose files do not match it, is refused,
since hashing the files would download them all) and by one listing of each spec (its size
and version, from the listing entries themselves). The schema is the one the manifest records;
a manifest written before schemas were recorded has none, and the first chunk of its
directory is read instead, by a few range requests (:func:`~arrowmix._remote.meta.probe`).
The other chunks' schemas and rows are checked when their copies are first read.

Opening a directory costs one round trip, not a chain of them: its manifest is read (then,
for an old manifest, its first chunk probed, at the size the manifest records) on a thread
while the directory is listed. What the listing then says wins: a first chunk other than the
one probed, or a size other than the manifest's, is probed again or refused as before
(after one more read of the manifest: one that changed meanwhile is a rewrite, not an
incomplete corpus).

The dataset's table is a :class:`~arrowmix._dataset.tables.remote.RemoteRows` that downloads a
chunk into the bounded cache directory when a read first needs it; each copy is checked
against the digest the manifest records, so a corpus rewritten while it was opened is never
read under the other version's fingerprint; it raises
:class:`~arrowmix.exceptions.ObjectChangedError` (see :mod:`arrowmix._remote.rewrite`).
The fingerprint is the one the same files get when read from a local directory (it hashes
the same digests), so results cached from a local copy of the corpus are reused, and the
other way round.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from glob import has_magic
from typing import Any

import pyarrow as pa

from arrowmix._dataset.dataset import Dataset, DatasetState
from arrowmix._dataset.tables.remote import RemoteRows
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._remote.cache import check_fits, parse_size
from arrowmix._remote.meta import RemoteChunk, probe, version_tag
from arrowmix._remote.retry import remote_fs
from arrowmix._remote.rewrite import directory_rewritten, rewritten_error
from arrowmix._storage.chunks import Spec, list_chunk_files, list_remote_chunks, natural_key
from arrowmix._storage.digests import (
    MANIFEST_NAME,
    ChunkEntry,
    Manifest,
    has_manifest_file,
    manifest_problems,
    mismatch_error,
    read_remote_manifest,
)
from arrowmix._storage.fs import is_local, url_to_fs
from arrowmix.exceptions import ArrowmixError, IncompleteCorpusError, SchemaMismatchError

__all__ = ["from_remote_chunks"]

_THREADS = 8

#: What a dataset's first reads import on first use (``with_format``, ``to_stream``, the
#: seeded chunk order: 30-40 ms in all), imported while the store answers the open instead.
_READ_PATH = ("numpy.random", "arrowmix._dataset.views.view_ops", "arrowmix._dataset.to_stream",
              "arrowmix._dataset.rows")  # fmt: skip


def _load_read_path() -> None:
    """Import :data:`_READ_PATH` (the process is otherwise idle, waiting for the listing).

    Only ahead of time: a module that cannot be imported fails the read that needs it.
    """
    for name in _READ_PATH:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


@dataclass(frozen=True)
class _Directory:
    """A directory's manifest, and (old manifests) its first chunk as probed early."""

    manifest: Manifest | None
    probed: str | None = None  # the URL of the chunk probed
    probe: Future[tuple[pa.Schema, RemoteChunk]] | None = None  # done: its answer or error

    def schema(self) -> pa.Schema | None:
        """The schema the manifest records (None: none, or an older manifest)."""
        return None if self.manifest is None else self.manifest.schema


def _parent(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[0]


def _bare(url: str) -> str:
    """``url`` without its scheme: the listing spells ``s3a://`` (and ``gcs://``) its own way."""
    return url.split("://", 1)[-1].rstrip("/")


def _named_directory(spec: str) -> str | None:
    """The directory a remote spec names (read before the listing answers), if it is plain."""
    path = spec.rstrip("/")
    parent, _, name = path.rpartition("/")
    if has_magic(parent) or "://" not in path:
        return None
    return parent if has_magic(name) or name.endswith(".arrow") else path


def _probe(
    url: str, info: Mapping[str, Any], digest: str, storage_options: Mapping[str, Any] | None
) -> tuple[pa.Schema, RemoteChunk]:
    fs, path = remote_fs(url, storage_options)
    return probe(fs, path, url, info, digest)


def _connect(url: str, storage_options: Mapping[str, Any] | None) -> None:
    """Make the S3 client chunks download through, while the listing runs.

    s3fs makes it on the first request otherwise: on the way to the first rows. (Only
    ``s3://``: other backends' ``connect`` may mean something else, gcsfs's logs in again.)
    """
    if url.split("://", 1)[0] in ("s3", "s3a"):
        remote_fs(url, storage_options)[0].connect()


def _read_directory(directory: str, storage_options: Mapping[str, Any] | None) -> _Directory:
    """The manifest of ``directory``; for one without a schema, its first chunk probed."""
    try:
        manifest = read_remote_manifest(directory, storage_options)
    except PermissionError as exc:
        raise PermissionError(
            exc.errno, f"Reading the manifest of {directory!r} was refused: {exc}"
        ) from exc
    if manifest is None or not manifest.chunks:
        return _Directory(manifest)
    entry = manifest.chunks[min(manifest.chunks, key=natural_key)]
    url = f"{directory}/{entry.name}"
    if manifest.schema is not None:
        _connect(url, storage_options)
        return _Directory(manifest)
    probed: Future[tuple[pa.Schema, RemoteChunk]] = Future()
    try:  # at the size the manifest records: the listing has not answered yet
        probed.set_result(_probe(url, {"size": entry.size}, entry.digest, storage_options))
    except (ArrowmixError, OSError) as exc:  # raised only if this chunk is the one needed
        probed.set_exception(exc)
    return _Directory(manifest, url, probed)


def _entries(
    files: Sequence[str],
    infos: Sequence[Any],
    directories: Mapping[str, _Directory],
    storage_options: Mapping[str, Any] | None,
) -> list[ChunkEntry]:
    """Each file's manifest entry (rows, digest): its directory's manifest must list it.

    On a mismatch the manifest is read again (one GET): one that changed meanwhile means the
    corpus was rewritten while it was listed, which is no incomplete corpus.
    """
    out = []
    for url, info in zip(files, infos, strict=True):
        directory, name = url.rstrip("/").rsplit("/", 1)
        manifest = directories[directory].manifest
        entry = None if manifest is None else manifest.chunks.get(name)
        if entry is None or entry.size != int(info["size"]):
            changed = directory_rewritten(directory, manifest, storage_options)
            if changed is not None:
                raise rewritten_error(directory, changed, opening=True)
            damaged = manifest is None and has_manifest_file(directory, storage_options)
            why = (
                f"has a damaged manifest {MANIFEST_NAME} (it cannot be parsed, e.g. truncated, "
                "or was edited)" if damaged else
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


def _check_whole(
    specs: Sequence[str],
    files: Sequence[str],
    directories: Mapping[str, _Directory],
    storage_options: Mapping[str, Any] | None,
    allow_incomplete: bool,
) -> None:
    """Refuse a directory named whole whose listing lacks chunks its manifest lists.

    The manifest is read once more first: a listing taken while ``write_chunks`` rewrote the
    directory (it removes the manifest, then the chunks) is a rewrite (ObjectChangedError).
    Chunks removed since ``write_chunks`` are an incomplete corpus, as without ``cache_limit``
    (their rows would be left out silently), unless ``allow_incomplete`` opens the chunks
    present. A glob or named files mean a part of the directory: not checked.
    """
    listed: dict[str, set[str]] = {}
    for url in files:
        directory, name = url.rstrip("/").rsplit("/", 1)
        listed.setdefault(_bare(directory), set()).add(name)
    read = {_bare(d): known for d, known in directories.items()}  # s3a:// is listed as s3://
    for spec in specs:
        directory = spec.rstrip("/")
        known = read.get(_bare(directory))
        if _named_directory(spec) != directory or known is None or known.manifest is None:
            continue  # a glob or named files: a part of the directory is meant
        missing, _ = manifest_problems(listed.get(_bare(directory), set()), known.manifest.chunks)
        if missing:
            changed = directory_rewritten(directory, known.manifest, storage_options)
            if changed is not None:
                raise rewritten_error(directory, changed, opening=True)
            if not allow_incomplete:
                raise mismatch_error(directory, len(known.manifest.chunks), missing, [])


def _refuse_local(files: Sequence[str]) -> None:
    local = [f for f in files if is_local(f)]
    if local:
        raise ValueError(
            f"`cache_limit` bounds the local copies of remote chunks, but {local[0]!r} is a "
            "local file (local files are memory-mapped in place): drop `cache_limit`."
        )


def _schemas(
    pool: ThreadPoolExecutor,
    files: Sequence[str],
    infos: Sequence[Any],
    entries: Sequence[ChunkEntry],
    directories: Mapping[str, _Directory],
    storage_options: Mapping[str, Any] | None,
) -> list[tuple[str, pa.Schema]]:
    """Each directory's schema and where it was read: its manifest, or its first chunk.

    A first chunk probed early is used when the listing agrees it is the first; others are
    probed now (in parallel), with their listing entries. Probed rows must be the manifest's.
    """
    first: dict[str, int] = {}
    for i, f in enumerate(files):
        first.setdefault(_parent(f), i)
    probes = {}
    for d, i in first.items():
        known = directories[d]
        if known.schema() is None:
            probes[i] = known.probe if known.probed == files[i] else pool.submit(
                _probe, files[i], infos[i], entries[i].digest, storage_options
            )  # fmt: skip
    out = []
    for d, i in first.items():
        recorded = directories[d].schema()
        if recorded is not None:
            out.append((f"the manifest of {d!r}", recorded))
            continue
        answer = probes[i]
        assert answer is not None  # set whenever `probed` is
        schema, chunk = answer.result()
        if chunk.num_rows != entries[i].rows:
            raise IncompleteCorpusError(
                f"Chunk file {files[i]!r} has {chunk.num_rows} rows where its manifest records "
                f"{entries[i].rows}: the corpus was altered after `write_chunks`."
            )
        out.append((repr(files[i]), schema))
    return out


def _common_schema(described: Sequence[tuple[str, pa.Schema]]) -> pa.Schema:
    """The one schema of every directory (metadata aside)."""
    where, schema = described[0][0], described[0][1].remove_metadata()
    for other, s in described[1:]:
        if not s.remove_metadata().equals(schema):
            raise SchemaMismatchError(
                f"The chunks described by {other} have a different schema from those "
                f"described by {where}:\n{s.remove_metadata()}\nexpected\n{schema}"
            )
    return schema


def _described(
    spec: Spec, storage_options: Mapping[str, Any] | None, allow_incomplete: bool
) -> tuple[list[str], list[Any], list[ChunkEntry], pa.Schema]:
    """The files of ``spec``, their listing entries and manifest entries, and their schema."""
    specs = [os.fspath(s) for s in ([spec] if isinstance(spec, (str, os.PathLike)) else spec)]
    url_to_fs(specs[0], storage_options)  # its client, made once for both requests
    with ThreadPoolExecutor(_THREADS, thread_name_prefix="arrowmix-open") as pool:
        # The directories the specs name are read while they are listed.
        early = {d: pool.submit(_read_directory, d, storage_options)
                 for d in dict.fromkeys(map(_named_directory, specs)) if d is not None}  # fmt: skip
        listing = pool.submit(list_remote_chunks, specs, storage_options)
        _load_read_path()
        listed = listing.result()
        files = [url for url, _ in listed]
        infos = [info for _, info in listed]
        futures = {
            d: early.get(d) or pool.submit(_read_directory, d, storage_options)
            for d in dict.fromkeys(map(_parent, files))
        }
        directories = {d: fut.result() for d, fut in futures.items()}
        _check_whole(specs, files, directories, storage_options, allow_incomplete)
        entries = _entries(files, infos, directories, storage_options)
        schema = _common_schema(_schemas(pool, files, infos, entries, directories, storage_options))
    return files, infos, entries, schema


def from_remote_chunks(
    spec: Spec,
    cache_dir: str | None,
    storage_options: Mapping[str, Any] | None,
    cache_limit: int | str,
    chunk_cache_dir: str | None,
    allow_incomplete: bool = False,
) -> Dataset:
    """The dataset of the remote chunks of ``spec`` read through a cache of ``cache_limit`` bytes.

    Raises:
        ValueError: a local file in ``spec``, or a bad ``cache_limit``.
        CacheLimitError: the largest chunk does not fit in ``cache_limit``.
        SchemaMismatchError: the chunks' schemas differ.
        IncompleteCorpusError: a directory has no manifest, or it does not list a file, or
            (unless ``allow_incomplete``) a directory named by ``spec`` lacks a chunk its
            manifest lists.
        ObjectChangedError: a directory was rewritten while it was listed.
    """
    limit = parse_size(cache_limit)
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if any(is_local(os.fspath(s)) for s in specs):
        _refuse_local(list_chunk_files(spec, storage_options))
    files, infos, entries, schema = _described(spec, storage_options, allow_incomplete)
    chunks = [
        RemoteChunk(f, int(info["size"]), version_tag(info), (e.rows,), e.digest)
        for f, info, e in zip(files, infos, entries, strict=True)
    ]
    check_fits(limit, chunks)
    # No directory given: each process (each node of a cluster) uses its own default one.
    table = RemoteRows(chunks, schema, chunk_cache_dir, limit, storage_options)
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
