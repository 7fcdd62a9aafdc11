"""Exporters: a dataset's view written to CSV, JSON Lines or Parquet, as HF ``datasets`` does.

The arguments, defaults, batching and return values are HF's (``datasets/io/*.py``):
CSV and JSON are written batch by batch through pandas (``batch_size`` rows a batch, 1000 by
default; ``num_proc`` processes format batches in order) and return the number of bytes written;
Parquet writes row groups of ``batch_size`` rows (HF's size-derived default) with content-defined
chunking and a page index, and returns the sum of the batches' Arrow sizes, as HF does.

A path is written atomically (``arrowmix._storage.atomic.replace_file``): the bytes go to a
temporary file beside the target that is renamed over it only once complete, so a failure midway
leaves the old file, or none, never a partial one; a symlink's target is replaced (the link
stays), the file's permission bits are kept, and a temporary left by a killed export is removed
by the next export to the same path. A binary file object is written in place.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Literal, cast

import pyarrow as pa

from arrowmix._dataset.state import num_rows, state_of, view_range
from arrowmix._storage.atomic import replace_file
from arrowmix._storage.metadata import kept_or_none
from arrowmix._storage.mixed_json import is_json
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["to_csv", "to_json", "to_parquet", "to_sql"]

#: HF's ``config.DEFAULT_MAX_BATCH_SIZE``.
DEFAULT_BATCH = 1000
#: HF's ``config.MAX_ROW_GROUP_SIZE`` (100MB) and ``config.DEFAULT_CDC_OPTIONS``.
_ROW_GROUP_BYTES = 100 << 20
_CDC = {"min_chunk_size": 256 * 1024, "max_chunk_size": 1024 * 1024, "norm_level": 0}
#: ``to_json``'s ``compression`` values (HF's), and the codecs fsspec infers from a name.
_JSON_COMPRESSIONS = (None, "infer", "gzip", "bz2", "xz")
#: fsspec's codec names -> how they are written here (Arrow's codec, or Python's module).
_CODECS = {"gzip": "gzip", "bz2": "bz2", "xz": "xz", "lzma": "xz", "zip": "zip"}
_CODECS |= {"zstd": "zstd", "lz4": "lz4"}  # fsspec knows them when their packages are there

# The dataset a forked worker formats batches of (set before the pool forks).
_WORKER_DS: Any = None


def _table(ds: Dataset, start: int, stop: int) -> pa.Table:
    t = view_range(state_of(ds), start, stop)
    return t.replace_schema_metadata(kept_or_none(t.schema))


@contextlib.contextmanager
def _sink(
    path_or_buf: Any,
    storage_options: Mapping[str, Any] | None,
    compression: str | None = None,
) -> Iterator[Any]:
    """A writable file at ``path_or_buf`` (atomic), through ``compression`` (``_CODECS``).

    xz is Python's ``lzma``, zip fsspec's archive of one member ``file``, the others Arrow's.
    """
    if not isinstance(path_or_buf, (str, bytes, os.PathLike)):
        yield path_or_buf  # a binary file object: written in place, as HF does
        return
    path = os.fsdecode(path_or_buf)
    with replace_file(path, storage_options or None) as raw:
        if compression is None:
            yield raw
        elif compression == "xz":
            import lzma

            with lzma.LZMAFile(cast("IO[bytes]", raw), "wb") as packed:
                yield packed
        elif compression == "zip":
            import zipfile

            with zipfile.ZipFile(raw, "w") as archive, archive.open("file", "w") as member:
                yield member
        else:
            codec = cast('Literal["bz2", "gzip", "lz4", "zstd"]', compression)
            with pa.CompressedOutputStream(raw, codec) as arrow_packed:
                yield arrow_packed


def _json_compression(path_or_buf: Any, compression: Any) -> str | None:
    """How ``to_json(compression=...)`` compresses, as HF decides (fsspec's inference)."""
    if compression not in _JSON_COMPRESSIONS:
        raise NotImplementedError(
            f"`to_json` does not support {compression!r} compression; use one of "
            f"{list(_JSON_COMPRESSIONS)} (as HF datasets)."
        )
    is_path = isinstance(path_or_buf, (str, bytes, os.PathLike))
    if compression and not is_path:
        raise NotImplementedError(
            f"The compression parameter is not supported when writing to a buffer, but "
            f"compression={compression} was passed. Please provide a local path instead."
        )
    if compression != "infer":
        return _CODECS.get(compression) if compression else None
    from fsspec.utils import infer_compression

    inferred = infer_compression(os.fsdecode(path_or_buf))
    if inferred is None:
        return None
    if inferred not in _CODECS:
        raise NotImplementedError(
            f"`to_json` cannot write the {inferred!r} compression its path "
            f"{os.fsdecode(path_or_buf)!r} names; pass compression=None or name the file "
            ".gz, .bz2, .xz or .zip."
        )
    return _CODECS[inferred]


def _check_proc(num_proc: int | None) -> int:
    if num_proc is not None and num_proc <= 0:
        raise ValueError(f"num_proc {num_proc} must be an integer > 0.")
    return 1 if num_proc is None else check_int("num_proc", num_proc, minimum=1)


def _texts(
    ds: Dataset,
    batch_size: int,
    num_proc: int,
    encode: Callable[[tuple[Any, ...]], bytes],
    extra: tuple[Any, ...],
    *,
    empty_batch: bool,
) -> Iterator[bytes]:
    """Each batch's encoded text, in order; ``num_proc`` forked processes encode them.

    An empty view is one empty batch with ``empty_batch`` (as HF: CSV's header line, a JSON
    document that is not JSON Lines), else nothing.
    """
    n = num_rows(state_of(ds))
    tasks = [(off, min(off + batch_size, n), *extra) for off in range(0, n, batch_size)]
    if not tasks and empty_batch:
        tasks = [(0, 0, *extra)]
    global _WORKER_DS
    _WORKER_DS = ds
    try:
        if (
            num_proc == 1
            or len(tasks) == 1
            or "fork" not in multiprocessing.get_all_start_methods()
        ):
            yield from map(encode, tasks)
            return
        with multiprocessing.get_context("fork").Pool(num_proc) as pool:
            yield from pool.imap(encode, tasks)
    finally:
        _WORKER_DS = None


def _csv_batch(task: tuple[Any, ...]) -> bytes:
    start, stop, header, index, kwargs = task
    df = _table(_WORKER_DS, start, stop).to_pandas(integer_object_nulls=True)
    text = df.to_csv(
        path_or_buf=None, header=header if start == 0 else False, index=index, **kwargs
    )
    return str(text).encode("utf-8")


def to_csv(
    ds: Dataset,
    path_or_buf: Any,
    batch_size: int | None = None,
    num_proc: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **to_csv_kwargs: Any,
) -> int:
    """``ds``'s rows as CSV (``pandas.DataFrame.to_csv`` per batch); the bytes written."""
    procs = _check_proc(num_proc)
    to_csv_kwargs.pop("path_or_buf", None)
    header = to_csv_kwargs.pop("header", True)
    index = to_csv_kwargs.pop("index", False)
    size = batch_size or DEFAULT_BATCH
    written = 0
    with _sink(path_or_buf, storage_options) as sink:
        for text in _texts(
            ds, size, procs, _csv_batch, (header, index, to_csv_kwargs), empty_batch=True
        ):
            written += len(text)
            sink.write(text)
    return written


def _json_batch(task: tuple[Any, ...]) -> bytes:
    start, stop, orient, lines, kwargs = task
    df = _table(_WORKER_DS, start, stop).to_pandas(integer_object_nulls=True)
    for col in df.columns:  # Json() columns: their values, not their JSON texts (as HF)
        if is_json(_WORKER_DS.schema.field(col).type):
            df[col] = df[col].map(lambda v: None if v is None else json.loads(v))
    text = str(df.to_json(path_or_buf=None, orient=orient, lines=lines, **kwargs))
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def to_json(
    ds: Dataset,
    path_or_buf: Any,
    batch_size: int | None = None,
    num_proc: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **to_json_kwargs: Any,
) -> int:
    """``ds``'s rows as JSON (JSON Lines records by default); the bytes written (uncompressed)."""
    procs = _check_proc(num_proc)
    to_json_kwargs.pop("path_or_buf", None)
    orient = to_json_kwargs.pop("orient", "records")
    lines = to_json_kwargs.pop("lines", orient == "records")
    if "index" not in to_json_kwargs and orient in ("split", "table"):
        to_json_kwargs["index"] = False
    is_path = isinstance(path_or_buf, (str, bytes, os.PathLike))
    compression = to_json_kwargs.pop("compression", "infer" if is_path else None)
    packed = _json_compression(path_or_buf, compression)
    size = batch_size or DEFAULT_BATCH
    if not lines and size < len(ds):
        raise NotImplementedError(
            "Output JSON will not be formatted correctly when lines = False and batch_size < "
            "number of rows in the dataset. Use pandas.DataFrame.to_json() instead."
        )
    written = 0
    with _sink(path_or_buf, storage_options, packed) as sink:
        for text in _texts(
            ds, size, procs, _json_batch, (orient, lines, to_json_kwargs), empty_batch=not lines
        ):
            written += len(text)
            sink.write(text)
    return written


def _row_group_rows(ds: Dataset) -> int:
    """HF's default Parquet row group: about 100MB of the view's Arrow data."""
    s = state_of(ds)
    n = num_rows(s)
    total = s.table.num_rows
    nbytes = getattr(s.table, "nbytes", 0) * n // total if total else 0
    return max(1, n * _ROW_GROUP_BYTES // nbytes) if nbytes > 0 else 1


def to_parquet(
    ds: Dataset,
    path_or_buf: Any,
    batch_size: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    use_content_defined_chunking: bool | dict[str, Any] = True,
    write_page_index: bool = True,
    **parquet_writer_kwargs: Any,
) -> int:
    """``ds``'s rows as Parquet, ``batch_size`` rows a row group; the batches' Arrow bytes."""
    import pyarrow.parquet as pq

    size = batch_size or _row_group_rows(ds)
    cdc = _CDC if use_content_defined_chunking is True else use_content_defined_chunking
    parquet_writer_kwargs.pop("path_or_buf", None)
    from arrowmix._hf.features import export_metadata

    schema = _table(ds, 0, 0).schema
    schema = schema.with_metadata(export_metadata(schema) or {})
    n = len(ds)
    written = 0
    with _sink(path_or_buf, storage_options) as sink:
        writer = pq.ParquetWriter(
            sink,
            schema=schema,
            use_content_defined_chunking=cdc,
            write_page_index=write_page_index,
            **parquet_writer_kwargs,
        )
        try:
            for off in range(0, n, size):
                batch = _table(ds, off, min(off + size, n))
                writer.write_table(batch.replace_schema_metadata(schema.metadata))
                written += batch.nbytes
            if cdc is not False:
                writer.add_key_value_metadata({"content_defined_chunking": json.dumps(cdc)})
        finally:
            writer.close()
    return written


def to_sql(
    ds: Dataset, name: str, con: Any, batch_size: int | None = None, **to_sql_kwargs: Any
) -> int:
    """``ds``'s rows into SQL table ``name`` through ``pandas.DataFrame.to_sql``, as HF.

    ``batch_size`` rows per call (1000), ``index=False`` unless given; the first call creates
    the table (``if_exists`` as given), the others append. Returns the rows written.
    """
    size = check_int("batch_size", batch_size or DEFAULT_BATCH, minimum=1)
    to_sql_kwargs.pop("sql", None)
    to_sql_kwargs.pop("con", None)
    index = to_sql_kwargs.pop("index", False)
    written = 0
    for off in range(0, len(ds), size):
        kwargs = {**to_sql_kwargs, "if_exists": "append"} if off else to_sql_kwargs
        df = _table(ds, off, min(off + size, len(ds))).to_pandas(integer_object_nulls=True)
        n = df.to_sql(name, con, index=index, **kwargs)
        written += n or len(df)
    return written
