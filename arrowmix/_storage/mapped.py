"""Describe a memory-mapped table by reference (file, record batch, column, slice) and reopen it.

A table opened from Arrow IPC files (``open_table``) keeps its buffers inside the files'
memory mappings; tables derived from it without copying (column selection, renaming,
concatenation, slices, a map result that references its parent's columns) still do. Another
process can rebuild such a table by reopening the same files, memory-mapped, instead of
receiving the data: :func:`table_ref` finds, for every column chunk, the file it lives in (from
``/proc/self/maps``), the record batch and column of that file with the very same buffers, and
the slice; :meth:`TableRef.open` reopens the files and slices the same arrays out of them.
What identifies each file version is recorded too, and checked on reopening: a file
rewritten in between raises :class:`ChunkFileError` instead of returning other rows, even
with the same size. A cache file (it carries an arrowmix content checksum) is identified by
that checksum, which names its bytes; its modification time is not compared, because the
cache touches the files it reuses. Any other file (chunk files, saved data) is identified by
its inode, size, modification and change times, checked as every file read in place is
(:mod:`arrowmix._storage.in_place`): a rewrite that restores the size and mtime still moves
the change time, which user space cannot set.

:func:`table_ref` returns None when some chunk does not live in a file mapping (data built in
memory, or a platform without ``/proc/self/maps``): the caller then ships the data instead.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrowmix._storage.in_place import FileVersion
from arrowmix._storage.token_arrays import TokenChunkRef, token_chunk_ref
from arrowmix.exceptions import ChunkFileError

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
    #: A chunk of a token file (Megatron, flat numpy) is a :class:`TokenChunkRef`.
    columns: tuple[tuple[ChunkRef | TokenChunkRef, ...], ...]
    #: Size in bytes of each file when described (empty: not checked).
    sizes: tuple[int, ...] = ()
    #: What identifies each file's version (see the module docstring; empty: not checked):
    #: ``("checksum", value)`` or ``("stat", inode, mtime_ns, ctime_ns)``.
    idents: tuple[tuple[Any, ...], ...] = ()

    def open(self) -> pa.Table:
        """Reopen the files (memory-mapped, O(1) each) and rebuild the table without copying.

        Raises:
            ChunkFileError: a file is missing, or is not the file that was described (another
                size, or no such batch, column or rows); the message names it.
        """
        from arrowmix._storage.ipc import open_table

        for i, (path, size) in enumerate(zip(self.files, self.sizes, strict=False)):
            ident = self.idents[i] if i < len(self.idents) else None
            if ident is not None and ident[0] == "stat":  # the rule of files read in place
                FileVersion(path, size, *ident[1:]).check("Arrow file")
                continue
            try:
                st = os.stat(path)
            except OSError as exc:
                raise ChunkFileError(f"{path!r} cannot be reopened: {exc}") from exc
            if st.st_size != size:
                raise ChunkFileError(
                    f"{path!r} changed since the table was described: {st.st_size} bytes, "
                    f"{size} then."
                )
        tables = [open_table(f) for f in self.files]
        for i, (path, table) in enumerate(zip(self.files, tables, strict=True)):
            ident = self.idents[i] if i < len(self.idents) else None
            if ident is not None and ident[0] == "checksum" and _checksum(table) != ident[1]:
                raise ChunkFileError(
                    f"{path!r} was rewritten since the table was described (its content "
                    f"checksum is {_checksum(table)}, {ident[1]} then). Open the dataset again."
                )
        batches = [t.to_batches() for t in tables]
        arrays = []
        opened: dict[int, list[pa.Array[Any]]] = {}  # token files, each opened once
        for field, chunks in zip(self.schema, self.columns, strict=True):
            parts = [self._array(batches, c, field, opened) for c in chunks]
            arrays.append(pa.chunked_array(parts, type=field.type))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _array(
        self,
        batches: list[list[pa.RecordBatch]],
        c: ChunkRef | TokenChunkRef,
        field: pa.Field[Any],
        opened: dict[int, list[pa.Array[Any]]],
    ) -> pa.Array[Any]:
        if isinstance(c, TokenChunkRef):
            return c.open(opened)
        found = batches[c.file]
        if c.batch < len(found) and c.column < found[c.batch].num_columns:
            col = found[c.batch].column(c.column)
            if col.type == field.type and c.offset + c.length <= len(col):
                return col.slice(c.offset, c.length)
        raise ChunkFileError(
            f"{self.files[c.file]!r} changed since the table was described: it has no rows "
            f"[{c.offset}, {c.offset + c.length}) of type {field.type} in column {c.column} "
            f"of record batch {c.batch}."
        )


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


def _stat_ident(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def _checksum(table: pa.Table) -> str | None:
    """The arrowmix content checksum a cache file carries, or None (chunk files)."""
    from arrowmix._storage.integrity import CHECKSUM_KEY
    from arrowmix._storage.ipc import read_meta

    try:
        value = read_meta(table.schema).get(CHECKSUM_KEY)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _file_index(
    path: str,
) -> tuple[dict[tuple[Any, ...], tuple[int, int, int]], tuple[Any, ...]]:
    """Buffer signatures of every ``(batch, column)`` array of ``path``, opened afresh.

    Also what identifies the file's version (see :attr:`TableRef.idents`).
    """
    from arrowmix._storage.ipc import read_ipc
    from arrowmix._storage.pages import map_file

    st = os.stat(path)
    buf = map_file(path)
    table = read_ipc(buf)
    checksum = _checksum(table)
    ident = ("checksum", checksum) if checksum is not None else ("stat", *_stat_ident(st))
    out: dict[tuple[Any, ...], tuple[int, int, int]] = {}
    for b, batch in enumerate(table.to_batches()):
        for j, col in enumerate(batch.columns):
            out.setdefault((col.type, _signature(col, buf.address)), (b, j, col.offset))
    return out, ident


def table_ref(table: pa.Table) -> TableRef | None:
    """``table`` as references into the memory-mapped files it lives in, or None.

    None when a column chunk is not backed by a file mapping of this process (in-memory data,
    a copied or computed column, a deleted file) or the platform has no ``/proc/self/maps``.
    """
    if not os.path.exists(_MAPS):
        return None
    starts, spans = _mappings()
    files: list[str] = []
    sizes: list[int] = []
    idents: list[tuple[Any, ...]] = []
    indexes: list[dict[tuple[Any, ...], tuple[int, int, int]]] = []
    columns: list[tuple[ChunkRef | TokenChunkRef, ...]] = []
    for col in table.columns:
        refs: list[ChunkRef | TokenChunkRef] = []
        for chunk in col.chunks:
            if len(chunk) == 0:
                continue
            token = token_chunk_ref(chunk)
            if token is not None:  # a view of a token file's memory map
                refs.append(token)
                continue
            addr = _first_address(chunk)
            if addr is None:
                return None  # no buffers (null type): nothing to point at
            k = bisect.bisect_right(starts, addr) - 1
            if k < 0 or not spans[k][0] <= addr < spans[k][1]:
                return None
            base, path = spans[k][2], spans[k][3]
            if path not in files:
                try:
                    size = os.stat(path).st_size
                    index, ident = _file_index(path)
                except (OSError, pa.ArrowInvalid):
                    return None
                sizes.append(size)
                indexes.append(index)
                idents.append(ident)
                files.append(path)
            i = files.index(path)
            found = indexes[i].get((chunk.type, _signature(chunk, base)))
            if found is None:
                return None
            b, j, src_offset = found
            refs.append(ChunkRef(i, b, j, chunk.offset - src_offset, len(chunk)))
        columns.append(tuple(refs))
    return TableRef(tuple(files), table.schema, tuple(columns), tuple(sizes), tuple(idents))
