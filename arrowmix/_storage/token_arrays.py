"""Arrow list arrays whose values are the memory map of a token file, and how to reopen them.

A token file (a Megatron ``.bin``, a flat numpy ``train.bin``) holds token ids back to back
in one dtype. :func:`list_chunks` turns it into ``list<dtype>`` Arrow arrays without copying
a token: each array's values buffer is a slice of the file's read-only memory map, and its
offsets (int32, built in RAM from the document boundaries: 4 bytes per document) say where
each document starts. ``list`` offsets are int32, so a file of more than 2**31 - 1 tokens
becomes several arrays (chunks of the column), cut between documents.

Such a table is an ordinary Arrow table (slices, ``select``, map and the token path read it
as they read chunk files) except that it lives in no Arrow IPC file, so
:func:`~arrowmix._storage.mapped.table_ref` cannot point into one. Each array built here is
registered with the :class:`TokenSource` that built it (keyed by its offsets buffer, dropped
when the array is freed); :func:`token_chunk_ref` answers, for an array or a slice of one,
what reopens it in another process: the source, the chunk and the rows. Reopening
(:meth:`TokenChunkRef.open`) checks that every file is still the version that was opened
(:mod:`arrowmix._storage.in_place`) and raises :class:`~arrowmix.exceptions.ChunkFileError`
otherwise, so a pickled dataset never reads other tokens under its fingerprint.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._storage.in_place import FileVersion, check_all
from arrowmix.exceptions import ChunkFileError, TokenFileError

__all__ = [
    "MAX_CHUNK_TOKENS",
    "TOKEN_FILE",
    "TokenChunkRef",
    "TokenSource",
    "list_chunks",
    "map_bytes",
    "token_chunk_ref",
]

#: Most values of one ``list`` array (its offsets are int32).
MAX_CHUNK_TOKENS = (1 << 31) - 1
#: What a changed token file is called in the error (:func:`~arrowmix._storage.in_place.check_all`).
TOKEN_FILE = "Token file"


def map_bytes(path: str) -> pa.Buffer:
    """The whole file ``path`` as a read-only, memory-mapped Arrow buffer (no copy)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return pa.py_buffer(b"")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return pa.py_buffer(mm)  # the buffer keeps the mapping alive


@dataclass(frozen=True, eq=False)
class TokenSource:
    """What rebuilds a token column: an opener, its arguments, and the files' versions.

    ``opener`` is a module-level function (pickled by name) called as
    ``opener(*args, source=self)``; it returns the column's chunks, built by
    :func:`list_chunks` with ``source``. Sources compare by identity (a pickle keeps one
    source shared by its chunks, so a caller reopening several chunks opens it once).
    ``versions`` are the files it reads, as first opened
    (:class:`~arrowmix._storage.in_place.FileVersion`).
    """

    opener: Callable[..., list[pa.Array[Any]]]
    args: tuple[Any, ...]
    versions: tuple[FileVersion, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The files read, in the opener's order."""
        return tuple(v.path for v in self.versions)

    def check(self) -> None:
        """Raise ChunkFileError unless every file is still the version first opened."""
        check_all(self.versions, TOKEN_FILE)

    def chunks(self) -> list[pa.Array[Any]]:
        """The column's chunks, the files opened again (checked first: ChunkFileError)."""
        self.check()
        return self.opener(*self.args, source=self)


#: Address of a built array's offsets buffer -> (its source, its chunk number).
_BUILT: dict[int, tuple[TokenSource, int]] = {}


@dataclass(frozen=True)
class TokenChunkRef:
    """Rows ``[offset, offset + length)`` of chunk ``chunk`` of a :class:`TokenSource`."""

    source: TokenSource
    chunk: int
    offset: int
    length: int

    def open(self, opened: dict[int, list[pa.Array[Any]]] | None = None) -> pa.Array[Any]:
        """The same rows, reopened from the files (zero-copy); ChunkFileError if changed.

        ``opened``: the sources opened so far by the caller (by ``id``), each opened once.
        """
        opened = {} if opened is None else opened
        chunks = opened.get(id(self.source))
        if chunks is None:
            chunks = opened[id(self.source)] = self.source.chunks()
        if self.chunk >= len(chunks) or self.offset + self.length > len(chunks[self.chunk]):
            raise ChunkFileError(
                f"Token files {list(self.source.files)} no longer hold rows "
                f"[{self.offset}, {self.offset + self.length}) of chunk {self.chunk}."
            )
        return chunks[self.chunk].slice(self.offset, self.length)


def token_chunk_ref(arr: pa.Array[Any]) -> TokenChunkRef | None:
    """How to reopen ``arr`` (an array built here, or a slice of one); None otherwise."""
    if not (pa.types.is_list(arr.type) and len(arr)):
        return None
    offsets = arr.buffers()[1]
    found = _BUILT.get(offsets.address) if offsets is not None else None
    if found is None:
        return None
    source, chunk = found
    return TokenChunkRef(source, chunk, arr.offset, len(arr))


def list_chunks(
    data: pa.Buffer,
    dtype: np.dtype,
    bounds: np.ndarray,
    source: TokenSource | None,
    what: str,
) -> list[pa.Array[Any]]:
    """``list<dtype>`` arrays over ``data``: row ``k`` is tokens ``[bounds[k], bounds[k+1])``.

    ``bounds`` (int64, non-decreasing, rows + 1) index tokens of ``data``. Rows are cut into
    arrays of at most :data:`MAX_CHUNK_TOKENS` tokens; ``source`` (None: not reopenable) is
    registered for each. ``what`` names the file in errors.
    """
    value_type = pa.from_numpy_dtype(dtype)
    out: list[pa.Array[Any]] = []
    offsets: list[np.ndarray] = []
    start, rows = 0, len(bounds) - 1
    while start < rows:
        limit = int(bounds[start]) + MAX_CHUNK_TOKENS
        stop = int(np.searchsorted(bounds, limit, side="right")) - 1
        if stop <= start:
            raise TokenFileError(
                f"{what}: row {start} holds {int(bounds[start + 1] - bounds[start])} tokens, "
                f"more than an Arrow list holds ({MAX_CHUNK_TOKENS})."
            )
        stop = min(stop, rows)
        arr, off = _one_chunk(data, dtype, value_type, bounds[start : stop + 1])
        out.append(arr)
        offsets.append(off)
        start = stop
    if source is not None:
        for k, off in enumerate(offsets):
            _register(off, source, k)
    return out


def _one_chunk(
    data: pa.Buffer, dtype: np.dtype, value_type: pa.DataType, bounds: np.ndarray
) -> tuple[pa.Array[Any], np.ndarray]:
    """One array, and the numpy offsets its offsets buffer wraps (alive as long as it)."""
    first, last = int(bounds[0]), int(bounds[-1])
    item = dtype.itemsize
    values = pa.Array.from_buffers(
        value_type, last - first, [None, data.slice(first * item, (last - first) * item)]
    )
    offsets = np.asarray(bounds - first, dtype=np.int32)
    arr = pa.Array.from_buffers(
        pa.list_(value_type), len(bounds) - 1, [None, pa.py_buffer(offsets.data)], children=[values]
    )
    return arr, offsets


def _register(offsets: np.ndarray, source: TokenSource, chunk: int) -> None:
    """Remember ``offsets``' array until it is freed (the Arrow buffer keeps it alive)."""
    address = offsets.ctypes.data
    _BUILT[address] = (source, chunk)
    weakref.finalize(offsets, _BUILT.pop, address, None)
