"""JSON Lines typed as HF ``datasets``' JSON builder types them.

HF parses a file in chunks of 10 MiB (whole lines) with ``pyarrow.json``, and so does this
module: every key of a file's first chunk is a column (rows without it get ``None``), in the
order keys first appear, and ISO 8601 date strings are ``timestamp[s]`` where every value of
the column is one. As HF's default ``on_mixed_types="use_json"``, the places where values
disagree (dicts with different keys, a str among ints, containers among scalars: the rule of
:mod:`arrowmix._storage.mixed_json`) are stored as JSON text in Arrow's ``arrow.json`` type,
HF's ``Json()`` feature, and read back as the values given. The first chunk is also read line
by line to find those places, as HF reads it, when it holds objects (a flat chunk cannot
hold such places without ``pyarrow.json`` refusing it); so is any chunk ``pyarrow.json``
refuses, which names the first malformed line (invalid JSON or UTF-8, not an object).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from arrowmix._storage.mixed_json import encode_at, mixed_paths, retyped
from arrowmix.exceptions import InputFormatError

__all__ = ["JSON_CHUNK", "json_batches"]

#: Bytes of JSON Lines parsed at once (HF's JSON ``chunksize``).
JSON_CHUNK = 10 << 20
_ROWS = 65536
_Path = tuple[Any, ...]  # (column, then struct keys or 0 for list items)


def json_batches(f: Any, path: str) -> Iterator[pa.RecordBatch]:
    """The record batches of the JSON Lines file open as ``f`` (binary), named ``path``."""
    places: list[_Path] = []
    offset = 0
    while chunk := f.read(JSON_CHUNK):
        first = offset == 0
        size = len(chunk)
        if first and chunk.startswith(codecs.BOM_UTF8):
            chunk = chunk[len(codecs.BOM_UTF8) :]
        tail = f.readline()
        chunk += tail
        line = _Line(f, offset)
        table, places = _chunk_table(chunk, path, line, places, scan=first)
        offset += size + len(tail)
        if table.num_columns:
            yield from table.to_batches(max_chunksize=_ROWS)


class _Line:
    """The 1-based number of the line at byte ``offset`` of the file ``f``, counted when used.

    Counting the lines of every chunk costs a pass over the data; only error messages need
    the number, so it is counted then (the file is read again up to ``offset``).
    """

    def __init__(self, f: Any, offset: int) -> None:
        self._f, self._offset = f, offset
        self._n: int | None = None if offset else 1

    def value(self) -> int:
        """The line number (counted the first time)."""
        if self._n is None:
            pos, left, n = self._f.tell(), self._offset, 1
            self._f.seek(0)
            while left > 0 and (block := self._f.read(min(left, 8 << 20))):
                n += block.count(b"\n")
                left -= len(block)
            self._f.seek(pos)
            self._n = n
        return self._n

    def __format__(self, spec: str) -> str:
        return format(self.value(), spec)

    def __str__(self) -> str:
        return str(self.value())

    __repr__ = __str__


def _chunk_table(
    chunk: bytes, path: str, line: _Line, places: list[_Path], scan: bool
) -> tuple[pa.Table, list[_Path]]:
    """One chunk as a table, and the JSON places known after it.

    ``scan``: look for places line by line too, unless ``pyarrow.json`` reads the chunk with
    no struct anywhere (then no dicts can differ in their keys, and a scalar of another type
    would have made it fail).
    """
    rows = None
    if scan:
        try:
            table = _parsed(chunk, None, places, path, line)
            if not any(map(_has_struct, table.schema.types)):
                return table, places
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        rows = _rows(chunk, path, line)
        places = _merged(places, _mixed(rows))
    try:
        return _parsed(chunk, rows, places, path, line), places
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        if rows is None:
            rows = _rows(chunk, path, line)  # raises naming a malformed line
        more = _merged(places, _mixed(rows))
        if more == places:
            raise InputFormatError(
                f"{path}: the rows from line {line} on cannot be read as one table: {exc}"
            ) from exc
        return _parsed(chunk, rows, more, path, line), more


def _parsed(
    chunk: bytes, rows: list[dict[str, Any]] | None, places: list[_Path], path: str, line: _Line
) -> pa.Table:
    if places:
        rows = rows if rows is not None else _rows(chunk, path, line)
        chunk = _encoded(rows, places)
    table = _pyarrow_json(chunk)
    for place in places:
        name, inner = place[0], place[1:]
        if name in table.column_names:
            i = table.column_names.index(name)
            col = table.column(i)
            table = table.set_column(i, name, col.cast(retyped(col.type, inner)))
    return table


def _pyarrow_json(chunk: bytes) -> pa.Table:
    """``chunk`` parsed by ``pyarrow.json`` with HF's block sizes (raises ``ArrowInvalid``).

    Read in place (a ``BufferReader`` over the bytes): HF's ``BytesIO`` costs a copy of them.
    """
    import pyarrow.json as paj

    block = max(JSON_CHUNK // 32, 16 << 10)
    if len(chunk) // 8 > block:
        block = len(chunk)
    while True:
        try:
            source: Any = pa.BufferReader(chunk)  # a NativeFile: the stubs name only IO
            table = paj.read_json(source, read_options=paj.ReadOptions(block_size=block))
            table.validate()
            return table
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            straddles = "straddling" in str(exc) or "JSON conversion to" in str(exc)
            if not straddles or block >= len(chunk):
                raise
            block *= 2


def _has_struct(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return True
    inner = getattr(t, "value_type", None)  # list types
    return inner is not None and _has_struct(inner)


def _rows(chunk: bytes, path: str, first_line: _Line) -> list[dict[str, Any]]:
    """The objects of ``chunk``, line by line (blank lines skipped); a bad line is named."""
    rows: list[dict[str, Any]] = []
    for i, raw in enumerate(chunk.split(b"\n")):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputFormatError(
                f"{path}:{first_line.value() + i}: not valid UTF-8 ({exc.reason})."
            ) from exc
        except json.JSONDecodeError as exc:
            raise InputFormatError(f"{path}:{first_line.value() + i}: invalid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            kind = type(obj).__name__
            where = f"{path}:{first_line.value() + i}"
            raise InputFormatError(f"{where}: expected a JSON object per line, got {kind}.")
        rows.append(obj)
    return rows


def _mixed(rows: list[dict[str, Any]]) -> list[_Path]:
    """The places of ``rows`` whose values need JSON, each column on its own."""
    names = dict.fromkeys(k for r in rows for k in r)
    return [(name, *p) for name in names for p in mixed_paths([r.get(name) for r in rows])]


def _merged(places: list[_Path], found: list[_Path]) -> list[_Path]:
    """``places`` and ``found``; a place inside another is covered by it (HF's rule)."""
    out = list(places)
    for place in found:
        if any(place[: len(p)] == p for p in out):
            continue
        out = [p for p in out if p[: len(place)] != place] + [place]
    return out


def _encoded(rows: list[dict[str, Any]], places: list[_Path]) -> bytes:
    """The rows as JSON Lines with the values at ``places`` replaced by their JSON text."""
    out = []
    for row in rows:
        for place in places:
            if place[0] in row:
                row = {**row, place[0]: encode_at(row[place[0]], place[1:])}
        out.append(json.dumps(row))
    return "\n".join(out).encode()
