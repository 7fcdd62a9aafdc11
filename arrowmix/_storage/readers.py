"""Readers that turn raw corpus files (text, JSON Lines, CSV, Parquet) into record batches.

Every reader streams: memory stays bounded by one block whatever the file size. Files may be
local paths or fsspec URLs, compressed or not (the compression is inferred from the suffix:
``.gz``, ``.bz2``, ``.xz``, ``.zst``...). A malformed input raises
:class:`~arrowmix.exceptions.InputFormatError` naming the file and the 1-based line.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix._storage import text_lines
from arrowmix._storage.fs import is_local, local_path
from arrowmix.exceptions import InputFormatError

__all__ = ["FORMATS", "read_batches", "readable_path"]

_BLOCK = 16 * 2**20
_ROWS = 65536
_PARQUET_ROWS = 256 * 1024  # chunks._BATCH_ROWS: the record batches of the chunks written
#: Suffixes fsspec decompresses (``compression="infer"``): such files are read through it.
_COMPRESSED = (".gz", ".bz2", ".xz", ".lzma", ".zst", ".lz4", ".zip", ".snappy")


def readable_path(path: str) -> str:
    """``path`` for a message: ``zip://member::archive`` reads ``member in archive``."""
    if path.startswith("zip://") and "::" in path:
        member, archive = path[len("zip://") :].split("::", 1)
        return f"{member} in {archive}"
    return path


def _open(path: str, storage_options: Mapping[str, Any] | None, text: bool = False) -> Any:
    """``path`` opened for reading; a local file without a compression suffix by ``open``.

    Other files go through fsspec, which decompresses by the suffix (``compression="infer"``).
    """
    if is_local(path) and not path.lower().endswith(_COMPRESSED):
        if text:
            return open(local_path(path), encoding="utf-8", newline="")
        return open(local_path(path), "rb")
    import fsspec  # keeps `import arrowmix` light

    url = local_path(path) if is_local(path) else path
    options = dict(storage_options or {})
    if text:
        options.update(encoding="utf-8", newline="")
    return fsspec.open(url, "rt" if text else "rb", compression="infer", **options)


def read_text(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """One row ``{"text": line}`` per line (UTF-8; newline and trailing carriage return dropped)."""
    line_no = 0
    rest = b""
    with _open(path, storage_options) as f:
        while True:
            block = f.read(_BLOCK)
            data = rest + block
            if not block:
                if data:
                    yield _text_batch([data], path, line_no)
                return
            lines = data.split(b"\n")
            rest = lines.pop()
            for start in range(0, len(lines), _ROWS):
                part = lines[start : start + _ROWS]
                yield _text_batch(part, path, line_no)
                line_no += len(part)


def _text_batch(lines: list[bytes], path: str, first_line: int) -> pa.RecordBatch:
    texts = []
    for i, raw in enumerate(lines):
        try:
            texts.append(raw.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as exc:
            raise InputFormatError(
                f"{path}:{first_line + i + 1}: not valid UTF-8 ({exc.reason} at byte "
                f"{exc.start} of the line)."
            ) from exc
    return pa.record_batch({"text": pa.array(texts, type=pa.string())})


def read_json(
    path: str, storage_options: Mapping[str, Any] | None, field: str | None = None
) -> Iterator[pa.RecordBatch]:
    """JSON typed as HF ``datasets`` types it: :mod:`arrowmix._storage.json_values`.

    JSON Lines: every key of the file's first 10 MiB is a column, ISO 8601 dates are
    timestamps, values of mixed types are JSON text; a malformed line raises naming it. Later
    chunks are made one schema with the first by ``ingest.input_batches``. A file that is one
    JSON array, or ``field`` (the member of the file's object holding the rows), is read whole
    by :mod:`arrowmix._storage.json_docs`.
    """
    from arrowmix._storage import json_docs
    from arrowmix._storage.json_values import json_batches

    with _open(path, storage_options) as f:
        whole = field is not None or json_docs.is_json_array(f.read(4096))
        if whole:
            f.seek(0)
            data = f.read()
    if whole:
        yield from json_docs.read_json_document(data, path, field)
        return
    with _open(path, storage_options) as f:
        yield from json_batches(f, path)


def read_csv(
    path: str,
    storage_options: Mapping[str, Any] | None,
    column_types: Mapping[str, pa.DataType] | None = None,
    delimiter: str = ",",
    names: Sequence[str] | None = None,
    header: bool = True,
    usecols: Sequence[str | int] | None = None,
    on_bad_lines: str = "error",
) -> Iterator[pa.RecordBatch]:
    r"""CSV with a header row, with the values and types HF ``datasets`` gives (pandas' rules).

    See :mod:`arrowmix._storage.csv_values`: missing and NA cells are nulls, types come from
    the first rows, dates stay text. ``column_types``: a later file of a corpus is read with
    the first file's types (``007`` stays a string where the first file has text, instead of
    becoming 7). Rows with fewer fields than the header get missing values, as in HF; one
    with more raises naming its line (see :mod:`arrowmix._storage.csv_ragged`).
    ``delimiter`` separates the fields (one character: ``"\t"`` for TSV).

    pandas' (HF's) ``names``, ``header`` and ``usecols``: ``names`` are the columns' names,
    one per field; ``header=False`` reads the first row as data (the columns are then named
    ``"0"``, ``"1"``... without ``names``); with ``header`` and ``names``, the header row is
    skipped. ``usecols``: the columns kept (names, or field positions), in the file's order.
    ``on_bad_lines="skip"`` (or ``"warn"``) drops the rows with more fields than the header
    instead of raising (see :func:`~arrowmix._storage.csv_ragged.padded_csv`).

    Raises:
        InputFormatError: ``names`` has another length than the rows, or ``usecols`` names
            a column the file does not have.
    """
    import pyarrow.csv as pacsv

    from arrowmix._storage.csv_ragged import is_width_error, padded_csv
    from arrowmix._storage.csv_values import (
        csv_convert_options,
        csv_kept,
        csv_names,
        typed_batches,
    )

    # Quoted values may span lines, as pandas (HF) reads them.
    parse = pacsv.ParseOptions(newlines_in_values=True, delimiter=delimiter)

    def batches(source: Any) -> Iterator[pa.RecordBatch]:
        with source() as f:
            raw = pacsv.open_csv(f, parse_options=parse).schema.names
        cols = csv_names(raw, path, names, header)
        kept = csv_kept(cols, path, usecols)
        read = pacsv.ReadOptions(column_names=cols, skip_rows=1 if header else 0)
        rows = 0
        with source() as f:
            reader = pacsv.open_csv(
                f,
                read_options=read,
                parse_options=parse,
                convert_options=csv_convert_options(cols),
            )
            for batch in typed_batches(iter(reader), path, column_types):
                rows += batch.num_rows
                yield batch if kept is None else batch.select(kept)
        if not rows:  # a header without rows: its columns still count, as in HF
            out = cols if kept is None else kept
            yield pa.RecordBatch.from_arrays([pa.nulls(0)] * len(out), names=out)

    done = 0
    try:
        for batch in batches(lambda: _open(path, storage_options)):
            done += batch.num_rows
            yield batch
        return
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" in str(exc):  # HF (pandas) raises too: no columns to parse
            raise InputFormatError(
                f"{readable_path(path)}: the CSV file is empty (no header row, so no "
                "columns to parse). Remove it from the data files or give it a header."
            ) from exc
        if not is_width_error(exc):
            raise InputFormatError(
                _locate_csv_error(path, storage_options, exc, delimiter)
            ) from exc
    # Rows of another width than the header's: read as HF reads them (csv_ragged.py).
    with _open(path, storage_options, text=True) as f:
        data = padded_csv(f, path, delimiter, on_bad_lines)
    try:
        for batch in batches(lambda: pa.BufferReader(data)):
            if done >= batch.num_rows:
                done -= batch.num_rows  # given before the first such row
                continue
            yield batch.slice(done)
            done = 0
    except pa.ArrowInvalid as exc:
        raise InputFormatError(f"{path}: cannot parse as CSV: {exc}") from exc


def _locate_csv_error(
    path: str, storage_options: Mapping[str, Any] | None, exc: Exception, delimiter: str = ","
) -> str:
    with _open(path, storage_options, text=True) as f:
        rows = csv.reader(f, delimiter=delimiter)
        try:
            width = len(next(rows))
            for row in rows:
                if len(row) != width:
                    return (
                        f"{path}:{rows.line_num}: expected {width} columns as in the header, "
                        f"got {len(row)}: {row!r:.120}"
                    )
        except UnicodeDecodeError:
            return _bad_utf8_line(path, storage_options)
        except csv.Error as err:
            return f"{path}:{rows.line_num}: {err}"
    return f"{path}: cannot parse as CSV: {exc}"


def _bad_utf8_line(path: str, storage_options: Mapping[str, Any] | None) -> str:
    """The message naming the first line of ``path`` that is not valid UTF-8 (1-based)."""
    with _open(path, storage_options) as f:
        for line_no, raw in enumerate(f, 1):
            try:
                _decode(raw, path, line_no)
            except InputFormatError as exc:
                return str(exc)
    return f"{path}: not valid UTF-8."


def read_parquet(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """Parquet row groups as record batches, of the chunk writer's batch size (no re-batching).

    A local file is memory-mapped and read by Arrow itself: its pages are decompressed from
    the page cache, with no copy through a Python file object (and no fsspec import).
    """
    import pyarrow.parquet as pq

    if is_local(path) and not path.lower().endswith(_COMPRESSED):
        try:
            pf = pq.ParquetFile(local_path(path), memory_map=True)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputFormatError(f"{path}: not a readable Parquet file: {exc}") from exc
        yield from pf.iter_batches(batch_size=_PARQUET_ROWS)
        return
    with _open(path, storage_options) as f:
        try:
            pf = pq.ParquetFile(f)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputFormatError(f"{path}: not a readable Parquet file: {exc}") from exc
        yield from pf.iter_batches(batch_size=_PARQUET_ROWS)


def _decode(raw: bytes, path: str, line_no: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError(
            f"{path}:{line_no}: not valid UTF-8 ({exc.reason} at byte {exc.start} of the line)."
        ) from exc


def _lines(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line)`` without its newline or trailing carriage return."""
    rest, line_no = b"", 0
    with _open(path, storage_options) as f:
        while block := f.read(_BLOCK):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for raw in lines:
                line_no += 1
                yield line_no, _decode(raw, path, line_no).removesuffix("\r")
    if rest:
        yield line_no + 1, _decode(rest, path, line_no + 1).removesuffix("\r")


def read_paragraphs(
    path: str, storage_options: Mapping[str, Any] | None
) -> Iterator[pa.RecordBatch]:
    """One row ``{"text": paragraph}`` per run of non-blank lines (joined by newlines)."""
    rows: list[str] = []
    current: list[str] = []
    for _, line in _lines(path, storage_options):
        if line.strip():
            current.append(line)
            continue
        if current:
            rows.append("\n".join(current))
            current = []
        if len(rows) >= _ROWS:
            yield pa.record_batch({"text": pa.array(rows, type=pa.string())})
            rows = []
    if current:
        rows.append("\n".join(current))
    if rows:
        yield pa.record_batch({"text": pa.array(rows, type=pa.string())})


def read_document(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """One row ``{"text": the whole file}`` (UTF-8, unchanged)."""
    with _open(path, storage_options) as f:
        text = _decode(f.read(), path, 1)
    yield pa.record_batch({"text": pa.array([text], type=pa.string())})


FORMATS: dict[str, Callable[..., Iterator[pa.RecordBatch]]] = {
    "text": read_text,
    "text-paragraph": read_paragraphs,
    "text-document": read_document,
    "json": read_json,
    "csv": read_csv,
    "parquet": read_parquet,
}

#: HF's text builder's modes (``load_dataset("text")``, ``from_text(keep_linebreaks=True)``);
#: not ``arrowmix chunk`` formats.
_HF_TEXT: dict[str, Callable[..., Iterator[pa.RecordBatch]]] = {
    "text:line": text_lines.read_lines,
    "text:paragraph": text_lines.read_paragraphs,
    "text:document": text_lines.read_document,
}


def read_batches(
    path: str,
    fmt: str,
    storage_options: Mapping[str, Any] | None = None,
    column_types: Mapping[str, pa.DataType] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of one input file in format ``fmt`` (text, json, csv, parquet).

    ``column_types``: the types to parse CSV columns as (other formats carry their types).
    ``options``: the format's reader options by keyword (``delimiter`` for CSV, ``field``
    for JSON, ``keep_linebreaks`` for ``"text:line"``).
    """
    reader = FORMATS.get(fmt) or _HF_TEXT.get(fmt)
    if reader is None:
        raise ValueError(f"Unknown input format {fmt!r}; expected one of {sorted(FORMATS)}.")
    kwargs = dict(options or {})
    if fmt == "csv" and column_types:
        kwargs["column_types"] = column_types
    return reader(path, storage_options, **kwargs)
