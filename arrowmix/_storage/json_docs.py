"""JSON files that are one document rather than JSON Lines: an array, or a field of an object.

HF ``datasets``' JSON builder reads three layouts; JSON Lines is ``readers.read_json``'s, these
are the other two. Both parse the whole file (a JSON document cannot be streamed line by line):

- a JSON array: ``[{...}, {...}]`` gives one row per object; an array of other values (strings,
  numbers) gives one row ``{"text": value}`` per value;
- ``field="data"``: the file is one object and its ``"data"`` member holds the rows, as an
  array (as above) or as columns (``{"a": [...], "b": [...]}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from arrowmix.exceptions import InputFormatError

__all__ = ["is_json_array", "read_json_document"]

_ROWS = 65536


def is_json_array(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a JSON array (after a BOM and white space)."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"[")


def read_json_document(data: bytes, path: str, field: str | None) -> Iterator[pa.RecordBatch]:
    """The rows of one JSON document: an array, or the member ``field`` of an object."""
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFormatError(f"{path}: not a valid JSON document: {exc}") from exc
    if field is not None:
        if not isinstance(doc, dict) or field not in doc:
            found = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
            raise InputFormatError(
                f"{path}: `field={field!r}` names no member of the file's top-level object "
                f"(found: {found})."
            )
        doc = doc[field]
    if isinstance(doc, dict) and all(isinstance(v, list) for v in doc.values()):
        yield from _column_batches(doc, path)
        return
    if not isinstance(doc, list):
        raise InputFormatError(
            f"{path}: expected a JSON array of rows{f' in field {field!r}' if field else ''}, "
            f"got a {type(doc).__name__}; give `field=` to read a member of an object."
        )
    rows = [r if isinstance(r, dict) else {"text": r} for r in doc]
    for start in range(0, len(rows), _ROWS):
        yield _batch(rows[start : start + _ROWS], path)


def _batch(rows: Sequence[Mapping[str, Any]], path: str) -> pa.RecordBatch:
    names = list(dict.fromkeys(k for r in rows for k in r))
    try:
        return pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputFormatError(f"{path}: the rows' values have no common type: {exc}") from exc


def _column_batches(columns: Mapping[str, list[Any]], path: str) -> Iterator[pa.RecordBatch]:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise InputFormatError(
            f"{path}: the columns {sorted(columns)} have different lengths {sorted(lengths)}."
        )
    try:
        table = pa.table(dict(columns))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputFormatError(f"{path}: a column's values have no common type: {exc}") from exc
    yield from table.to_batches(max_chunksize=_ROWS)
