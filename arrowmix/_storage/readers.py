"""Readers that turn raw corpus files (text, JSON Lines, CSV, Parquet) into record batches.

Every reader streams: memory stays bounded by one block whatever the file size. Files may be
local paths or fsspec URLs, compressed or not (the compression is inferred from the suffix:
``.gz``, ``.bz2``, ``.xz``, ``.zst``...). A malformed input raises
:class:`~arrowmix.exceptions.InputFormatError` naming the file and the 1-based line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from arrowmix._storage import text_lines
from arrowmix._storage.fs import is_local, local_path
from arrowmix.exceptions import InputFormatError

__all__ = ["FORMATS", "read_batches"]

_BLOCK = 16 * 2**20
_ROWS = 65536
_PARQUET_ROWS = 256 * 1024  # chunks._BATCH_ROWS: the record batches of the chunks written


def _open(path: str, storage_options: Mapping[str, Any] | None, text: bool = False) -> Any:
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
    """JSON Lines: one object per line; blank lines skipped; keys from the first block of rows.

    A key first seen after the first block raises, naming its line; each block's types are
    inferred on their own (see ``ingest.input_batches`` for how blocks are made one schema).
    A file that is one JSON array, or ``field`` (the member of the file's object holding the
    rows), is read whole by :mod:`arrowmix._storage.json_docs`.
    """
    from arrowmix._storage import json_docs, json_fast

    with _open(path, storage_options) as f:
        whole = field is not None or json_docs.is_json_array(f.read(4096))
        if whole:
            f.seek(0)
            data = f.read()
    if whole:
        yield from json_docs.read_json_document(data, path, field)
        return
    schema: pa.Schema | None = None
    with _open(path, storage_options) as f:
        for block, line in json_fast.blocks(f, _BLOCK):
            fast = json_fast.parse_block(block, schema)
            batches = fast if fast is not None else _json_rows(block, line, path, schema)
            for batch in batches:
                schema = schema or batch.schema
                yield batch


def _json_rows(
    block: bytes, line: int, path: str, schema: pa.Schema | None
) -> Iterator[pa.RecordBatch]:
    """The rows of ``block`` (whose first line is ``line``) parsed one line at a time."""
    rows: list[Any] = []
    first = line
    for line_no, raw in _numbered_lines(block.splitlines(keepends=True), path, line):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{path}:{line_no}: invalid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise InputFormatError(
                f"{path}:{line_no}: expected a JSON object per line, got {type(obj).__name__}."
            )
        rows.append(obj)
        if len(rows) == _ROWS:
            batch = _rows_batch(rows, schema, path, first)
            schema = schema or batch.schema
            yield batch
            rows, first = [], line_no + 1
    if rows:
        yield _rows_batch(rows, schema, path, first)


def _numbered_lines(f: Any, path: str, start: int = 1) -> Iterator[tuple[int, str]]:
    """Decode binary lines one by one, so an encoding error names its exact line."""
    for line_no, raw in enumerate(f, start=start):
        try:
            yield line_no, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputFormatError(f"{path}:{line_no}: not valid UTF-8 ({exc.reason}).") from exc


def _rows_batch(rows: list[Any], schema: pa.Schema | None, path: str, first: int) -> pa.RecordBatch:
    try:
        if schema is not None:
            extra = {k for r in rows for k in r} - set(schema.names)
            if extra:
                raise InputFormatError(
                    f"{path}: rows from line {first} on have key(s) {sorted(extra)} that earlier "
                    f"rows did not; known keys: {schema.names}."
                )
        # Every key of every row (pyarrow's from_pylist keeps the first row's only), each
        # column inferred on its own: casting to earlier rows' types is the caller's, without
        # loss (a schema given to from_pylist would truncate 2.5 to 2).
        names = list(dict.fromkeys(k for r in rows for k in r))
        return pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputFormatError(
            f"{path}: rows from line {first} on do not fit the types of earlier rows: {exc}"
        ) from exc


def read_csv(
    path: str,
    storage_options: Mapping[str, Any] | None,
    column_types: Mapping[str, pa.DataType] | None = None,
    delimiter: str = ",",
) -> Iterator[pa.RecordBatch]:
    r"""CSV with a header row; values are kept as strings unless every value of a column parses.

    Types are inferred from the first block by pyarrow, except for ``column_types`` (a later
    file of a corpus is read with the first file's types: ``007`` stays a string where the
    first file has text, instead of becoming 7); ragged rows name their line. ``delimiter``
    separates the fields (one character: ``"\t"`` for TSV).
    """
    import pyarrow.csv as pacsv

    convert = pacsv.ConvertOptions(column_types=dict(column_types or {}))
    parse = pacsv.ParseOptions(delimiter=delimiter)
    with _open(path, storage_options) as f:
        try:
            reader = pacsv.open_csv(f, parse_options=parse, convert_options=convert)
            yield from reader
        except pa.ArrowInvalid as exc:
            where = _locate_csv_error(path, storage_options, exc, delimiter)
            raise InputFormatError(where) from exc


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
        except (csv.Error, UnicodeDecodeError) as err:
            return f"{path}:{rows.line_num}: {err}"
    return f"{path}: cannot parse as CSV: {exc}"


def read_parquet(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """Parquet row groups as record batches, of the chunk writer's batch size (no re-batching)."""
    import pyarrow.parquet as pq

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
