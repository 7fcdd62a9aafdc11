"""Dataset constructors and ``write_chunks``: where root fingerprints come from.

Roots hash content, never paths or mtimes: in-memory tables hash their Arrow data; chunk files
enter by the xxh3 digest of their full content. ``write_chunks`` records those digests in the
corpus manifest as it writes, so opening an arrowmix corpus reads no data; a foreign file is
hashed in full once and its digest remembered (see ``_storage/digests.py``). A moved corpus
keeps its fingerprint (and so its cache); a chunk rewritten in place gets a new one.

A directory opened by ``from_chunks`` must be complete: when it has a manifest, its chunk
files must be exactly those listed; when it has none, none of its chunks may carry the
arrowmix chunk marker (that is a ``write_chunks`` that did not finish). Directories of
foreign chunk files (no marker, no manifest) open as they are.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from arrowmix._dataset.dataset import Dataset, DatasetState, hold_cache_files
from arrowmix._dataset.inputs.corpus_edges import empty_corpus
from arrowmix._dataset.inputs.py_columns import (
    check_columns,
    inferred,
    json_where_mixed,
    optimized_batch,
    optimized_column,
    typed_table,
)
from arrowmix._dataset.row_batches import conformed, rows_batch
from arrowmix._dataset.state import state_of
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage.chunks import is_arrowmix_chunk, list_chunk_files, write_batches
from arrowmix._storage.digests import (
    MANIFEST_NAME,
    few,
    file_digest,
    has_manifest_file,
    manifest_problems,
    mismatch_error,
    read_manifest,
)
from arrowmix._storage.fs import is_local, local_path, url_to_fs
from arrowmix._storage.ipc import open_table
from arrowmix._storage.metadata import kept_or_none as hf_only
from arrowmix._storage.mixed_json import no_mixed_types
from arrowmix._validate import check_int
from arrowmix.exceptions import (
    ChunkFileError,
    IncompleteCorpusError,
    InvalidTypeError,
    SchemaMismatchError,
)

__all__ = [
    "from_arrow",
    "from_chunks",
    "from_dict",
    "from_file",
    "from_pylist",
    "optimized_batch",
    "write_chunks",
]

_ROWS_PER_BATCH = 8192


def from_arrow(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> Dataset:
    """A dataset over an in-memory Arrow table, record batch or iterable of record batches."""
    if isinstance(data, pa.RecordBatch):
        table = pa.Table.from_batches([data])
    elif isinstance(data, pa.Table):
        table = data
    else:
        batches = list(data)
        if not batches:
            raise ValueError("`from_arrow` got no record batches; the schema is unknown.")
        table = pa.Table.from_batches(batches)
    fp = hash_value(("from_arrow", table))
    return Dataset(DatasetState(table=table, fingerprint=fp))


def from_dict(
    mapping: Mapping[str, Sequence[Any]],
    schema: pa.Schema | None = None,
    on_mixed_types: str | None = None,
) -> Dataset:
    """A dataset from ``{"column": [values...]}``; see :func:`typed_table` for ``schema``.

    ``on_mixed_types="use_json"`` (without ``schema``): see ``arrowmix._storage.mixed_json``.
    """
    check_columns(mapping)
    lengths = {k: len(v) for k, v in mapping.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"All columns must have the same length; got lengths {lengths}.")
    if schema is not None:
        return from_arrow(typed_table(mapping, schema))
    infer = json_where_mixed if no_mixed_types(on_mixed_types) else inferred
    return from_arrow(
        pa.table({k: optimized_column(k, v, infer(k, v)) for k, v in mapping.items()})
    )


def from_pylist(
    rows: Sequence[Mapping[str, Any]],
    schema: pa.Schema | None = None,
    on_mixed_types: str | None = None,
) -> Dataset:
    """A dataset from a list of row dicts (missing keys become nulls)."""
    if rows is None or isinstance(rows, (str, bytes, Mapping)) or not hasattr(rows, "__iter__"):
        raise InvalidTypeError(
            f"`rows` must be a list of row dicts, got {type(rows).__name__} {rows!r:.80}."
        )
    rows = list(rows)
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise InvalidTypeError(
                f"`rows` must be a list of row dicts; row {i} is {type(r).__name__} {r!r:.80}."
            )
    if no_mixed_types(on_mixed_types) and schema is None:
        names = list(dict.fromkeys(k for r in rows for k in r))
        return from_dict({n: [r.get(n) for r in rows] for n in names}, None, on_mixed_types)
    if schema is None:
        if not rows:
            return from_arrow(pa.table({}))
        return from_arrow(pa.Table.from_batches([optimized_batch(rows_batch(rows, 0))]))
    extra = sorted({k for r in rows for k in r} - set(schema.names))
    if extra:
        raise SchemaMismatchError(f"Row keys {extra} are not in the schema {schema.names}.")
    return from_arrow(typed_table({n: [r.get(n) for r in rows] for n in schema.names}, schema))


def from_file(
    path: str | os.PathLike[str],
    storage_options: Mapping[str, Any] | None = None,
    *,
    in_memory: bool = False,
    schema: pa.Schema | None = None,
    indices_filename: str | os.PathLike[str] | None = None,
) -> Dataset:
    """A dataset over one Arrow IPC file (either format), memory-mapped when local.

    ``in_memory`` copies the rows into memory; ``schema`` casts them as
    :func:`typed_table` does; ``indices_filename`` views them through the positions in that
    file's one integer column (HF's indices files).

    Raises:
        TypeError: the indices file does not hold one integer column.
    """
    ds = from_chunks([os.fspath(path)], storage_options=storage_options)
    if schema is not None and not ds.schema.equals(schema):
        s = state_of(ds)
        assert isinstance(s.table, pa.Table)  # local or copied chunks: one Arrow table
        table = typed_table(dict(zip(ds.column_names, s.table.columns, strict=True)), schema)
        fp = hash_value(("from_file", s.fingerprint, schema.to_string()))
        ds = Dataset(replace(s, table=table, fingerprint=fp))
    if indices_filename is not None:
        ix_path = os.fspath(indices_filename)
        ix_table = open_table(ix_path, storage_options, check="chunk")
        if ix_table.num_columns != 1 or not pa.types.is_integer(ix_table.column(0).type):
            raise TypeError(
                f"Indices file {ix_path!r} must hold one integer column (HF's 'indices'); it "
                f"has {ix_table.schema.remove_metadata()}."
            )
        ds = ds.select(ix_table.column(0))
    if in_memory:
        from arrowmix._dataset.views.in_memory import in_memory_copy

        ds = in_memory_copy(ds)
    return ds


def from_chunks(
    path_or_glob_or_list: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    cache_dir: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    *,
    allow_incomplete: bool = False,
    cache_limit: int | str | None = None,
    chunk_cache_dir: str | None = None,
    verify: bool = False,
) -> Dataset:
    """A dataset over Arrow IPC chunk files: a directory, glob, fsspec URL or list of them.

    The files are memory-mapped (local) and concatenated without copying. ``cache_dir``
    overrides where derived results go (default: beside the first chunk): a local directory or
    an fsspec URL, reached with ``storage_options`` like the chunks. ``cache_limit`` (remote
    chunks only) opens them from their footers and reads them through a bounded local cache
    in ``chunk_cache_dir`` (see :mod:`arrowmix._dataset.remote`).

    Local files are opened as one version even while another process rewrites them (see
    :mod:`arrowmix._storage.corpus_open`): the fingerprint always describes the bytes mapped.
    ``verify=True`` hashes every chunk a manifest lists in full and compares it with the
    digest recorded when it was written.

    Raises:
        IncompleteCorpusError: a directory written by ``write_chunks`` is unfinished (no
            manifest) or does not match its manifest; ``allow_incomplete=True`` opens the
            files present instead.
        ChunkFileError: ``verify=True`` and a chunk does not hold what was recorded; or the
            corpus kept changing while opened (a rewrite is in progress).
    """
    _check_paths(path_or_glob_or_list)
    check = _completeness_check(allow_incomplete, storage_options)
    try:  # (a rewrite killed in a directory is finished or undone while it is listed)
        if cache_limit is None and _all_local(path_or_glob_or_list):
            from arrowmix._storage.corpus_open import open_local_chunks

            files, tables, digests = open_local_chunks(
                path_or_glob_or_list, verify=verify, check_complete=check
            )
            return _chunks_dataset(files, tables, digests, cache_dir, storage_options)
        if cache_limit is not None and not verify:
            from arrowmix._dataset.remote import from_remote_chunks

            # It lists the spec itself, while it reads the manifests.
            return from_remote_chunks(
                path_or_glob_or_list, cache_dir, storage_options, cache_limit, chunk_cache_dir,
                allow_incomplete,
            )  # fmt: skip
        files = list_chunk_files(path_or_glob_or_list, storage_options)
    except ChunkFileError:
        empty = empty_corpus(path_or_glob_or_list, cache_dir, storage_options)
        if empty is None:
            raise
        return empty
    if verify:
        _verify_remote(files, storage_options)
    if cache_limit is not None:
        from arrowmix._dataset.remote import from_remote_chunks

        return from_remote_chunks(
            path_or_glob_or_list, cache_dir, storage_options, cache_limit, chunk_cache_dir,
            allow_incomplete,
        )  # fmt: skip
    tables = [open_table(f, storage_options, check="chunk") for f in files]
    if check is not None:
        check(path_or_glob_or_list, files, tables)
    digests = [file_digest(f, storage_options) for f in files]
    return _chunks_dataset(files, tables, digests, cache_dir, storage_options)


def _completeness_check(
    allow_incomplete: bool, storage_options: Mapping[str, Any] | None
) -> Callable[..., None] | None:
    """What ``from_chunks`` calls to refuse an incomplete corpus (None: allowed)."""
    if allow_incomplete:
        return None
    return lambda spec, fs, ts, known=None: _check_complete(spec, fs, ts, storage_options, known)


def _all_local(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> bool:
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    return all(is_local(os.fspath(s)) for s in specs)


def _verify_remote(files: Sequence[str], storage_options: Mapping[str, Any] | None) -> None:
    """Hash remote chunks listed in a manifest (their local copies) against the manifest."""
    from arrowmix._storage.digests import content_digest
    from arrowmix._storage.ipc import local_copy

    manifests: dict[str, Any] = {}
    for f in files:
        d = f.rsplit("/", 1)[0]
        if d not in manifests:
            manifests[d] = read_manifest(d, storage_options) or {}
        entry = manifests[d].get(f.rsplit("/", 1)[-1])
        if entry is not None and content_digest(local_copy(f, storage_options))[0] != entry.digest:
            from arrowmix.exceptions import ChunkFileError

            raise ChunkFileError(
                f"Chunk file {f!r} does not hold what its manifest {MANIFEST_NAME} recorded "
                f"when it was written (digest {entry.digest}): damaged, or changed by another "
                "tool. Rewrite it from its source."
            )


def _chunks_dataset(
    files: Sequence[str],
    tables: Sequence[pa.Table],
    digests: Sequence[str],
    cache_dir: str | None,
    storage_options: Mapping[str, Any] | None,
) -> Dataset:
    schema = tables[0].schema.remove_metadata()
    for f, t in zip(files, tables, strict=True):
        if not t.schema.remove_metadata().equals(schema):
            raise SchemaMismatchError(
                f"Chunk file {f!r} has a different schema from {files[0]!r}:\n"
                f"{t.schema.remove_metadata()}\nexpected\n{schema}"
            )
    table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])
    table = table.replace_schema_metadata(hf_only(tables[0].schema))  # HF's features
    offsets = tuple(itertools.accumulate((t.num_rows for t in tables), initial=0))
    fp = hash_value(("from_chunks", list(digests)))
    state = DatasetState(
        table=table,
        fingerprint=fp,
        files=tuple(files),
        file_offsets=offsets,
        cache_dir=cache_dir,
        storage_options=dict(storage_options) if storage_options else None,
        holds=hold_cache_files(files),
    )
    return Dataset(state)


def _check_paths(spec: Any) -> None:
    items = [spec] if isinstance(spec, (str, os.PathLike)) else spec
    if isinstance(spec, (list, tuple)) and not spec:
        list_chunk_files(spec)  # its error for an empty list (with `cache_limit` too)
    if isinstance(spec, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in items):
        return
    if isinstance(spec, (str, os.PathLike)):
        return
    raise InvalidTypeError(
        "`path_or_glob_or_list` must be a path, a glob, a URL or a list of them, got "
        f"{type(spec).__name__} {spec!r:.80}."
    )


def _directories(
    spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    storage_options: Mapping[str, Any] | None,
) -> list[str]:
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out = []
    for s in (os.fspath(x) for x in specs):
        if is_local(s):
            if os.path.isdir(local_path(s)):
                out.append(local_path(s))
        else:
            fs, p = url_to_fs(s, storage_options)
            if fs.isdir(p):
                out.append(s)
    return out


def _check_complete(
    spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    files: Sequence[str],
    tables: Sequence[pa.Table],
    storage_options: Mapping[str, Any] | None,
    known: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a directory that is an unfinished or altered ``write_chunks`` output.

    ``known``: the manifests already read for the (absolute) directories of ``spec``, whose
    files are then those of ``files`` (listed in the same open).
    """
    by_path = dict(zip(files, tables, strict=True))
    for directory in _directories(spec, storage_options):
        key = os.path.abspath(directory) if is_local(directory) else directory
        if known is not None and key in known:
            listed = [f for f in files if os.path.dirname(os.path.abspath(f)) == key]
            manifest = known[key]
        else:
            listed = list_chunk_files(directory, storage_options)
            manifest = read_manifest(directory, storage_options)
        # A file listed now but not opened: the directory changed meanwhile (a rewrite).
        inside = [(f, by_path[f]) for f in listed if f in by_path]
        names = [os.path.basename(f) for f in listed]
        hint = (
            "Rewrite it with `write_chunks`, or pass `allow_incomplete=True` to open the "
            "files present."
        )
        if manifest is None:
            marked = [os.path.basename(f) for f, t in inside if is_arrowmix_chunk(t.schema)]
            if marked and has_manifest_file(directory, storage_options):
                raise IncompleteCorpusError(
                    f"Chunk directory {directory!r} has a damaged manifest "
                    f"{os.path.join(directory, MANIFEST_NAME)!r} (it cannot be parsed, e.g. "
                    f"truncated, or was edited), so its {len(marked)} arrowmix chunk(s) "
                    f"({few(marked)}) cannot be checked. {hint}"
                )
            if marked:
                raise IncompleteCorpusError(
                    f"Chunk directory {directory!r} looks like an unfinished `write_chunks`: "
                    f"{len(marked)} of its files ({few(marked)}) were written by arrowmix, "
                    f"but its manifest {MANIFEST_NAME} (written last, when every chunk is "
                    f"complete) is missing. {hint}"
                )
            continue
        missing, extra = manifest_problems(names, manifest)
        if missing or extra:
            raise mismatch_error(directory, len(manifest), missing, extra)


def write_chunks(
    data: Any,
    out_dir: str | os.PathLike[str],
    rows_per_chunk: int | None = None,
    bytes_per_chunk: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    *,
    overwrite: bool = False,
) -> list[str]:
    """Stream ``data`` into Arrow IPC chunk files in ``out_dir``; return their paths.

    ``data`` is a Dataset, a ``pyarrow.Table``, or an iterable (any length, consumed lazily
    with bounded memory) of row dicts or of record batches. Split by ``rows_per_chunk`` and/or
    ``bytes_per_chunk`` (default 256 MiB). Each file is written under a temporary name and
    renamed into place when complete.

    Args:
        data: A Dataset, a ``pyarrow.Table``, or an iterable of row dicts or record batches.
        out_dir: Directory (or fsspec URL) for ``chunk-00000.arrow``...
        rows_per_chunk: Start a new chunk file every this many rows.
        bytes_per_chunk: Start a new chunk file every this many bytes.
        storage_options: Passed to fsspec for a URL.
        overwrite: Replace the chunk files already in ``out_dir`` (otherwise they are a
            ``FileExistsError``). The same rows give byte-identical chunks, so the
            fingerprints of a rewritten corpus, and the caches built on them, stay valid.

    Returns:
        The paths of the chunk files written, in order.

    Example:
        >>> import arrowmix as am, tempfile
        >>> out = tempfile.mkdtemp()
        >>> rows = ({"text": str(i)} for i in range(10))
        >>> [p.rsplit("/", 1)[-1] for p in am.write_chunks(rows, out, rows_per_chunk=4)]
        ['chunk-00000.arrow', 'chunk-00001.arrow', 'chunk-00002.arrow']
        >>> len(am.Dataset.from_chunks(out))
        10
    """
    rows_per_chunk = check_int("rows_per_chunk", rows_per_chunk, minimum=1, none_ok=True)
    _check_data(data)
    return write_batches(
        _batches_of(data, min(_ROWS_PER_BATCH, rows_per_chunk or _ROWS_PER_BATCH)),
        os.fspath(out_dir),
        rows_per_chunk=rows_per_chunk,
        bytes_per_chunk=bytes_per_chunk,
        overwrite=overwrite,
        storage_options=storage_options,
    )


def _check_data(data: Any) -> None:
    """Refuse ``data`` that write_chunks cannot read, before ``out_dir`` is touched."""
    if isinstance(data, (Dataset, pa.Table, pa.RecordBatch)):
        return
    if isinstance(data, (str, bytes, Mapping)) or not hasattr(data, "__iter__"):
        raise InvalidTypeError(
            "`data` must be a Dataset, a pyarrow Table, or an iterable of row dicts or record "
            f"batches; got {type(data).__name__} {data!r:.80}. For a dict of columns use "
            "Dataset.from_dict."
        )


def _batches_of(data: Any, rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    if isinstance(data, Dataset):
        for table in data.with_format("arrow").iter(batch_size=65536):
            yield from table.to_batches()
        if data.num_rows == 0:  # no rows, a known schema: one empty chunk keeps it
            yield _empty_batch(data.schema)
        return
    if isinstance(data, pa.Table):
        yield from data.to_batches() if data.num_rows else [_empty_batch(data.schema)]
        return
    if isinstance(data, pa.RecordBatch):
        yield data
        return
    if isinstance(data, (str, bytes, Mapping)):
        raise TypeError(
            "`data` must be a Dataset, a pyarrow Table, or an iterable of row dicts or record "
            f"batches; got {type(data).__name__}. For a dict of columns use Dataset.from_dict."
        )
    yield from _from_iterable(iter(data), rows_per_batch)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def _from_iterable(it: Iterator[Any], rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    first = next(it, None)
    if first is None:
        return
    items = itertools.chain([first], it)
    if isinstance(first, (pa.RecordBatch, pa.Table)):
        yield from conformed(_record_batches(items))
        return
    if not isinstance(first, Mapping):
        raise TypeError(f"Rows must be dicts; item 0 is {type(first).__name__}: {first!r:.80}.")
    yield from conformed(_row_blocks(items, rows_per_batch))


def _record_batches(items: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    for i, b in enumerate(items):
        if isinstance(b, pa.Table):
            yield from b.to_batches()
        elif isinstance(b, pa.RecordBatch):
            yield b
        else:
            raise TypeError(
                f"`data` yielded a pyarrow RecordBatch first, then a {type(b).__name__} (item "
                f"{i}): give record batches (or Tables) only."
            )


def _row_blocks(items: Iterator[Any], rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    start = 0
    while rows := list(itertools.islice(items, rows_per_batch)):
        yield rows_batch(rows, start)
        start += len(rows)
