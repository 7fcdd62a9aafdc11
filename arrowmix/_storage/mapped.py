"""Describe a memory-mapped table by reference (file, record batch, column, slice) and reopen it.

A table opened from Arrow IPC files (``open_table``) keeps its buffers inside the files'
memory mappings; tables derived from it without copying (column selection, renaming,
concatenation, slices, a map result that references its parent's columns) still do. Another
process can rebuild such a table by reopening the same files, memory-mapped, instead of
receiving the data: :func:`table_ref` finds, for every column chunk, the file it lives in (from
``/proc/self/maps``), the record batch and column of that file with the very same buffers, and
the slice; :meth:`TableRef.open` reopens the files and slices the same arrays out of them.

:func:`table_ref` returns None when some chunk does not live in a file mapping (data built in
memory, or a platform without ``/proc/self/maps``): the caller then ships the data instead.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["ChunkRef", "TableRef", "table_ref"]

_MAPS = "/proc/self/maps"


@dataclass(frozen=True)
class ChunkRef:
    """One column chunk: a slice of one column of one record batch of one file.

    Rows ``[offset, offset + length)`` of column ``column`` of record batch ``batch`` of file
    ``file`` (an index into :attr:`TableRef.files`).
    """

    file: int
    batch: int
    column: int
    offset: int
    length: int


@dataclass(frozen=True)
class TableRef:
    """A table as references into memory-mapped Arrow IPC files (a few bytes per chunk)."""

    files: tuple[str, ...]
    schema: pa.Schema
    columns: tuple[tuple[ChunkRef, ...], ...]

    def open(self) -> pa.Table:
        """Reopen the files (memory-mapped, O(1) each) and rebuild the table without copying."""
        from arrowmix._storage.ipc import open_table

        batches = [open_table(f).to_batches() for f in self.files]
        arrays = []
        for field, chunks in zip(self.schema, self.columns, strict=True):
            parts = [
                batches[c.file][c.batch].column(c.column).slice(c.offset, c.length) for c in chunks
            ]
            arrays.append(pa.chunked_array(parts, type=field.type))
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _mappings() -> tuple[list[int], list[tuple[int, int, int, str]]]:
    """``(starts, [(start, end, file start address, path)])`` of this process's file mappings."""
    spans: list[tuple[int, int, int, str]] = []
    with open(_MAPS, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            path = parts[5].rstrip("\n")
            if path.endswith(" (deleted)"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            spans.append((lo, hi, lo - int(parts[2], 16), path))
    spans.sort()
    return [s[0] for s in spans], spans


def _first_address(arr: pa.Array[Any]) -> int | None:
    return next((b.address for b in arr.buffers() if b is not None and b.size), None)


def _signature(arr: pa.Array[Any], base: int) -> tuple[Any, ...]:
    """The array's buffers as ``(offset from base, size)``: the same for an array and slices."""
    return tuple(None if b is None else (b.address - base, b.size) for b in arr.buffers())


def _file_index(path: str) -> dict[tuple[Any, ...], tuple[int, int, int]]:
    """Buffer signatures of every ``(batch, column)`` array of ``path``, opened afresh."""
    buf = pa.memory_map(path, "r").read_buffer()
    out: dict[tuple[Any, ...], tuple[int, int, int]] = {}
    for b, batch in enumerate(pa.ipc.open_file(buf).read_all().to_batches()):
        for j, col in enumerate(batch.columns):
            out.setdefault((col.type, _signature(col, buf.address)), (b, j, col.offset))
    return out


def table_ref(table: pa.Table) -> TableRef | None:
    """``table`` as references into the memory-mapped files it lives in, or None.

    None when a column chunk is not backed by a file mapping of this process (in-memory data,
    a copied or computed column, a deleted file) or the platform has no ``/proc/self/maps``.
    """
    if not os.path.exists(_MAPS):
        return None
    starts, spans = _mappings()
    files: list[str] = []
    indexes: list[dict[tuple[Any, ...], tuple[int, int, int]]] = []
    columns = []
    for col in table.columns:
        refs = []
        for chunk in col.chunks:
            if len(chunk) == 0:
                continue
            addr = _first_address(chunk)
            if addr is None:
                return None  # no buffers (null type): nothing to point at
            k = bisect.bisect_right(starts, addr) - 1
            if k < 0 or not spans[k][0] <= addr < spans[k][1]:
                return None
            base, path = spans[k][2], spans[k][3]
            if path not in files:
                files.append(path)
                try:
                    indexes.append(_file_index(path))
                except (OSError, pa.ArrowInvalid):
                    return None
            i = files.index(path)
            found = indexes[i].get((chunk.type, _signature(chunk, base)))
            if found is None:
                return None
            b, j, src_offset = found
            refs.append(ChunkRef(i, b, j, chunk.offset - src_offset, len(chunk)))
        columns.append(tuple(refs))
    return TableRef(tuple(files), table.schema, tuple(columns))
