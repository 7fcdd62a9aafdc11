"""Corpus ingestion: raw files (text, JSON Lines, CSV, Parquet) into cached Arrow chunks.

The result is content-addressed: the output directory ``<cache root>/ingested/<fp>/`` is named
by a hash of the format, the reader version and the full content (xxh3) of every input file, so
reopening the same files reads them once to hash them and converts nothing. A directory only
counts as finished when its ``_COMPLETE.json`` marker exists (written atomically last); a crash
mid-way leaves an unmarked directory that the next run rebuilds. A file lock serialises
processes ingesting the same content. The chunks are a cache and are checked like one before
they are served (:func:`arrowmix._cache.generated.served`, as ``from_generator``'s): a
damaged, edited or missing marker, manifest or chunk makes the run convert the files again,
with a :class:`~arrowmix.exceptions.CacheWarning`.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import xxhash
from filelock import FileLock

from arrowmix._cache import generated
from arrowmix._cache.paths import cache_root, is_caching_enabled, temp_cache_dir
from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.inputs.builders import from_chunks
from arrowmix._dataset.mapping.conform import Conformer
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage import trust
from arrowmix._storage.atomic import atomic_sink
from arrowmix._storage.cast import has_null_type
from arrowmix._storage.chunks import write_batches
from arrowmix._storage.digests import file_digest
from arrowmix._storage.fs import is_local, local_path, url_to_fs
from arrowmix._storage.globs import expand_inputs
from arrowmix._storage.readers import read_batches, readable_path
from arrowmix.exceptions import SchemaMismatchError

logger = logging.getLogger("arrowmix")

__all__ = ["ingest", "input_batches", "text_format"]

_READER_VERSION = 1
#: Formats whose reader changed what it gives since version 1: their key names the version,
#: so a cache of the old answer is never reused. The other formats' keys, and so their
#: fingerprints, are unchanged. csv 2, json 2: HF's values and types; csv 3: a file without
#: a header, or a header-only file of other columns, raises (version 2 skipped it).
_FORMAT_VERSIONS = {"csv": 3, "json": 2}
_MARKER = "_COMPLETE.json"


def _content_hash(path: str, storage_options: Mapping[str, Any] | None) -> str:
    """xxh3-64 of the file's bytes; a local file's is remembered per version (digests.py)."""
    if is_local(path):
        return file_digest(path, manifest={})
    h = xxhash.xxh3_64()
    fs, p = url_to_fs(path, storage_options)
    with fs.open(p, "rb") as f:
        while block := f.read(8 * 2**20):
            h.update(block)
    return h.hexdigest()


def input_batches(
    files: Sequence[str],
    fmt: str,
    storage_options: Mapping[str, Any] | None = None,
    source_column: str | None = None,
    column_types: Mapping[str, pa.DataType] | None = None,
    options: Mapping[str, Any] | None = None,
    counts: list[int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of all ``files`` in order, in one schema, every value kept.

    The first file's columns, in order; a later file (or block) missing one gets nulls, and
    one with another column is refused naming the file and the column. Types follow the
    ``map`` rule (``arrowmix._dataset.mapping.conform``): a column all-null so far takes a
    later type, later values are cast when none changes, otherwise an error names the
    column, both types, the file and the row. ``source_column``: also a string column of that
    name holding each row's file. ``column_types``: CSV columns parsed as these types (HF's
    ``features`` of a CSV: ``"007"`` stays text in a string column). ``options``: the
    reader's options (``read_batches``). ``counts``: each file's row count is appended to it
    once the file is read.
    """
    conform = Conformer(f"the {fmt} reader", verb="read by")
    names: list[str] | None = None
    # CSV: later files parsed as the first file's types
    types: dict[str, pa.DataType] = dict(column_types or {})
    for path in files:
        row = 0
        for batch in read_batches(path, fmt, storage_options, types, options):
            n = batch.num_rows
            if names is None:
                names = batch.schema.names
                types = {f.name: f.type for f in batch.schema if not has_null_type(f.type)}
            batch = _with_source(_aligned(batch, names, path, row), source_column, path)
            if not n and fmt == "csv":
                continue  # a header without rows: its columns checked, nothing to keep
            where = f"{path!r}, its rows {row + 1}..{row + n} (1-based)"
            yield from conform.push(batch, where, row + 1)
            row += n
        if counts is not None:
            counts.append(row)
    yield from conform.flush()


def _aligned(batch: pa.RecordBatch, names: list[str], path: str, row: int) -> pa.RecordBatch:
    if batch.schema.names == names:
        return batch
    extra = [n for n in batch.schema.names if n not in names]
    if extra and not batch.num_rows:  # a CSV header without rows
        raise SchemaMismatchError(
            f"{readable_path(path)}: its header has the column(s) "
            f"{', '.join(map(repr, extra))} that the first input file's rows do not "
            f"({names}), as HF datasets refuses it. Ingest files of one layout together."
        )
    if extra:
        raise SchemaMismatchError(
            f"{readable_path(path)}: its rows from row {row + 1} (1-based) have the column(s) "
            f"{', '.join(map(repr, extra))} that the first input file's rows do not "
            f"({names}). Ingest files of one layout together, or add the column(s) to the "
            "first file."
        )
    have = set(batch.schema.names)
    cols = [batch.column(c) if c in have else pa.nulls(batch.num_rows) for c in names]
    return pa.RecordBatch.from_arrays(cols, names=names)


def _with_source(batch: pa.RecordBatch, source_column: str | None, path: str) -> pa.RecordBatch:
    if source_column is None:
        return batch
    if source_column in batch.schema.names:
        raise SchemaMismatchError(
            f"{path} already has a column {source_column!r}; choose another `source_column`."
        )
    source = pa.array([path] * batch.num_rows, type=pa.string())
    return batch.append_column(source_column, source)


_TEXT_MODES = {"line": "text", "paragraph": "text-paragraph", "document": "text-document"}


def text_format(sample_by: str) -> str:
    """The reader name of a ``from_text`` ``sample_by`` mode (HF's text builder's modes)."""
    if sample_by not in _TEXT_MODES:
        raise ValueError(
            f"`sample_by` must be 'line', 'paragraph' or 'document', got {sample_by!r}."
        )
    return _TEXT_MODES[sample_by]


def ingest(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    fmt: str,
    storage_options: Mapping[str, Any] | None = None,
    source_column: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    column_types: Mapping[str, pa.DataType] | None = None,
    options: Mapping[str, Any] | None = None,
    row_counts: list[int] | None = None,
) -> Dataset:
    """Convert input files to Arrow chunks once (cached by content) and open them.

    With ``source_column`` the files' paths are part of the result, so of its fingerprint;
    so are ``column_types`` (see :func:`input_batches`).
    ``cache_dir`` (a local directory) replaces the cache root as the home of the chunks (and
    so of the results derived from them), as HF's ``cache_dir`` does. ``options``: the
    reader's options (``read_batches``); given ones are part of the fingerprint.
    ``row_counts``: each input file's row count is appended to it, in the files' order (kept
    in the marker, so a rerun reads no file for them; the streaming shards of HF's
    ``load_dataset`` are the files).
    """
    files = expand_inputs(paths, storage_options)
    digests = [_content_hash(f, storage_options) for f in files]
    key: tuple[Any, ...] = ("ingest", fmt, _READER_VERSION, digests)
    if fmt in _FORMAT_VERSIONS:
        key = (*key, ("reader", _FORMAT_VERSIONS[fmt]))
    if source_column is not None:
        key = (*key, source_column, files)
    if column_types:
        key = (*key, ("types", sorted((k, str(t)) for k, t in column_types.items())))
    options = {k: v for k, v in (options or {}).items() if v is not None}
    if options:
        key = (*key, sorted(options.items()))
    fp = hash_value(key)
    if cache_dir is not None:
        root = os.fspath(cache_dir)
        if not is_local(root):
            raise ValueError(f"`cache_dir` must be a local directory, got {root!r}.")
        root = local_path(root)
    else:
        root = cache_root() if is_caching_enabled() else temp_cache_dir()
    out = os.path.join(root, "ingested", fp)
    marker = os.path.join(out, _MARKER)
    os.makedirs(out, exist_ok=True)
    with FileLock(os.path.join(root, "ingested", f"{fp}.lock")):
        info = generated.served(out, "ingested corpus", "Converting its input files again.")
        if info is None:
            counts: list[int] = []
            batches = input_batches(
                files, fmt, storage_options, source_column, column_types, options, counts
            )
            first = next(batches, None)
            if first is None:
                raise ValueError(f"The {fmt} input {files} holds no rows.")
            chunk_paths = write_batches(itertools.chain([first], batches), out, overwrite=True)
            with trust.batch():  # written and hashed just now (the manifest's digests)
                for path in chunk_paths:
                    trust.vouch(path)
            info = {
                "fingerprint": fp,
                "format": fmt,
                "inputs": [os.path.basename(f) for f in files],
                "content_hashes": digests,
                "chunks": [os.path.basename(p) for p in chunk_paths],
                "input_rows": counts,
            }
            with atomic_sink(marker) as sink:
                sink.write(trust.marker_bytes(info))
        else:  # HF's words for a load it did not have to prepare again
            logger.info("Found cached dataset %s (%s)", fmt, out)
        if row_counts is not None:
            row_counts += _input_rows(
                marker, info, files, fmt, storage_options, column_types, options
            )
    return from_chunks(out)


def _input_rows(
    marker: str,
    info: dict[str, Any],
    files: Sequence[str],
    fmt: str,
    storage_options: Mapping[str, Any] | None,
    column_types: Mapping[str, pa.DataType] | None,
    options: Mapping[str, Any] | None,
) -> list[int]:
    """Each input file's row count, from the marker (called under the ingest lock).

    A marker written before the counts were kept lacks them: the files are read once to
    count their rows, and the counts are added to the marker (chunks and fingerprint are
    unchanged), so later runs read only the marker.
    """
    counts = info.get("input_rows")
    if counts is None or len(counts) != len(files):
        counts = []
        for _ in input_batches(files, fmt, storage_options, None, column_types, options, counts):
            pass
        info["input_rows"] = counts
        with atomic_sink(marker) as sink:
            sink.write(trust.marker_bytes(info))
    return [int(n) for n in counts]
