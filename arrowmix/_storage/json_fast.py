"""The fast path of the JSON Lines reader: a block of lines parsed by ``pyarrow.json``.

``readers.read_json`` reads a file in blocks of whole lines. Each block is first parsed by
Arrow's multithreaded JSON reader (as HF ``datasets`` parses); the result is used only when it
is what the line-by-line reader gives: no column of a date or time type (Arrow infers
timestamps from date-like strings, the line-by-line reader keeps strings) and no key that the
first block lacks. Otherwise (and on any parse error) the block is read line by line, which
gives the same values, or the error naming the line.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

__all__ = ["blocks", "parse_block"]

_ROWS = 65536
_PARSE_BLOCK = 2**20


def blocks(f: Any, size: int) -> Iterator[tuple[bytes, int]]:
    """``(block, its first line's 1-based number)``: about ``size`` bytes of whole lines.

    The first block holds at most ``_ROWS`` lines: the keys of the file are those of its
    first ``_ROWS`` rows, as for the line-by-line reader.
    """
    line, rest = 1, b""
    while block := rest + f.read(size):
        block += f.readline()
        rest = b""
        if line == 1:
            block, rest = _first_lines(block, _ROWS)
        yield block, line
        line += block.count(b"\n")


def _first_lines(block: bytes, n: int) -> tuple[bytes, bytes]:
    """``block`` cut after its ``n``-th line, and the rest."""
    end = -1
    for _ in range(n):
        end = block.find(b"\n", end + 1)
        if end < 0:
            return block, b""
    return block[: end + 1], block[end + 1 :]


def _temporal(t: pa.DataType) -> bool:
    if pa.types.is_temporal(t):
        return True
    if pa.types.is_struct(t):
        return any(_temporal(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _temporal(t.value_type)
    return False


def parse_block(block: bytes, schema: pa.Schema | None) -> list[pa.RecordBatch] | None:
    """The block's rows as Arrow parses them, or None to read the block line by line."""
    import pyarrow.json as paj

    if block.startswith(b"\xef\xbb\xbf"):
        return None  # the line-by-line reader reports a BOM
    size = _PARSE_BLOCK
    while True:
        try:
            table = paj.read_json(io.BytesIO(block), read_options=paj.ReadOptions(block_size=size))
            break
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            if "straddling" in str(exc) and size < len(block):
                size = min(2 * size, len(block))
                continue
            return None
    if any(_temporal(f.type) for f in table.schema):
        return None
    if schema is not None and not set(table.column_names) <= set(schema.names):
        return None
    return table.to_batches(max_chunksize=_ROWS)
