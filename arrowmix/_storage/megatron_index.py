r"""Megatron's indexed token files: the ``MMIDIDX`` index (``.idx``) beside its data (``.bin``).

A Megatron corpus is a pair of files sharing a prefix. ``<prefix>.bin`` holds the token ids of
every sequence back to back, in one numpy dtype; ``<prefix>.idx`` describes them:

==========  ======================  ============================================================
bytes       type                    field
==========  ======================  ============================================================
9           ``b"MMIDIDX\\0\\0"``      magic
8           ``<u8``                 version (1)
1           ``<u1``                 dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                                    6 float64, 7 float32, 8 uint16)
8           ``<u8``                 S, the number of sequences
8           ``<u8``                 D, the number of document indices (documents + 1)
4 S         ``<i4``                 sequence lengths (tokens)
8 S         ``<i8``                 sequence pointers (byte offsets into the ``.bin``)
8 D         ``<i8``                 document indices: sequence ``[d[k], d[k+1])`` is document k
(S)         ``<i1``                 sequence modes, multimodal corpora only (not read here)
==========  ======================  ============================================================

:func:`read_index` maps the three arrays with numpy memmaps (nothing is read but the
header) and checks what can be checked without reading the data: the header, the index's size
against the counts it declares, the document indices (first 0, last S, non-decreasing), the
pointers (contiguous, as every Megatron writer lays them out) and the ``.bin``'s size. Every
problem raises :class:`~arrowmix.exceptions.TokenFileError` naming the file and what is wrong.

:func:`write_pair` writes a pair atomically: both files go to temporaries beside their
targets; the old ``.idx`` is removed first and the new one renamed into place last, so a pair
is never seen half written (a crash leaves a ``.bin`` without its ``.idx``, which
:func:`read_index` refuses).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

import numpy as np

from arrowmix._storage.atomic import fsync_dir, tmp_name
from arrowmix.exceptions import TokenFileError

__all__ = [
    "DTYPE_CODES",
    "HEADER_SIZE",
    "MAGIC",
    "MegatronIndex",
    "bin_path",
    "check_bin",
    "code_of",
    "idx_path",
    "read_index",
    "write_pair",
]

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
#: magic, version, dtype code, sequence count, document index count.
HEADER_SIZE = len(MAGIC) + 8 + 1 + 8 + 8
#: Megatron's dtype codes (``megatron.core.datasets.indexed_dataset.DType``).
DTYPE_CODES: dict[int, np.dtype] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.int8),
    3: np.dtype(np.int16),
    4: np.dtype(np.int32),
    5: np.dtype(np.int64),
    6: np.dtype(np.float64),
    7: np.dtype(np.float32),
    8: np.dtype(np.uint16),
}
_BLOCK = 1 << 22  # sequences checked per vectorised step (bounded temporaries)


def bin_path(prefix: str) -> str:
    """``<prefix>.bin``."""
    return f"{prefix}.bin"


def idx_path(prefix: str) -> str:
    """``<prefix>.idx``."""
    return f"{prefix}.idx"


def code_of(dtype: np.dtype) -> int:
    """Megatron's code for ``dtype``; ValueError naming the types it has codes for."""
    for code, known in DTYPE_CODES.items():
        if known == dtype:
            return code
    names = ", ".join(str(d) for d in DTYPE_CODES.values())
    raise ValueError(f"Megatron's index has no dtype code for {dtype}; it has {names}.")


@dataclass(frozen=True)
class MegatronIndex:
    """One ``.idx`` file, its arrays memory-mapped (read-only numpy views)."""

    path: str
    dtype: np.dtype
    #: Tokens of each sequence (int32, ``S``).
    lengths: np.ndarray
    #: Byte offset of each sequence in the ``.bin`` (int64, ``S``).
    pointers: np.ndarray
    #: Sequence index where each document starts, then ``S`` (int64, ``D``).
    document_indices: np.ndarray

    @property
    def num_sequences(self) -> int:
        """S: sequences in the index."""
        return len(self.lengths)

    @property
    def num_tokens(self) -> int:
        """Tokens in the ``.bin`` the index describes."""
        if not len(self.lengths):
            return 0
        return int(self.pointers[-1]) // self.dtype.itemsize + int(self.lengths[-1])


def _header(path: str, size: int, head: bytes) -> tuple[np.dtype, int, int]:
    if size < HEADER_SIZE:
        raise TokenFileError(
            f"Megatron index {path!r} is truncated: {size} bytes, shorter than its "
            f"{HEADER_SIZE}-byte header."
        )
    if head[: len(MAGIC)] != MAGIC:
        raise TokenFileError(
            f"{path!r} is not a Megatron index: it starts with {head[: len(MAGIC)]!r}, "
            f"not the magic {MAGIC!r}."
        )
    version, code, seqs, docs = struct.unpack_from("<QBQQ", head, len(MAGIC))
    if version != VERSION:
        raise TokenFileError(
            f"Megatron index {path!r} has version {version}; arrowmix reads version {VERSION}."
        )
    if code not in DTYPE_CODES:
        raise TokenFileError(
            f"Megatron index {path!r} has dtype code {code}, out of range (codes are "
            f"1 to {max(DTYPE_CODES)})."
        )
    return DTYPE_CODES[code], seqs, docs


def read_index(path: str) -> MegatronIndex:
    """Map and check the index ``path`` (see the module docstring).

    Raises:
        TokenFileError: a missing or truncated file, a bad magic or version, a dtype code out
            of range, document indices or pointers that do not describe a Megatron corpus.
    """
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(HEADER_SIZE)
    except OSError as exc:
        raise TokenFileError(f"Cannot open Megatron index {path!r}: {exc}") from exc
    dtype, seqs, docs = _header(path, size, head)
    need = HEADER_SIZE + 12 * seqs + 8 * docs
    if size < need:
        raise TokenFileError(
            f"Megatron index {path!r} is truncated: {size} bytes, but its header declares "
            f"{seqs} sequences and {docs} document indices ({need} bytes)."
        )
    if size not in (need, need + seqs):  # + seqs: the modes of a multimodal corpus
        raise TokenFileError(
            f"Megatron index {path!r} has {size - need} bytes after the arrays its header "
            f"declares ({seqs} sequences, {docs} document indices): not one index."
        )
    lengths = _map(path, np.int32, HEADER_SIZE, seqs)
    pointers = _map(path, np.int64, HEADER_SIZE + 4 * seqs, seqs)
    documents = _map(path, np.int64, HEADER_SIZE + 12 * seqs, docs)
    index = MegatronIndex(path, dtype, lengths, pointers, documents)
    _check_documents(index)
    _check_pointers(index)
    return index


def _map(path: str, dtype: type, offset: int, count: int) -> np.ndarray:
    if not count:
        return np.empty(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))


def _check_documents(index: MegatronIndex) -> None:
    d, n = index.document_indices, index.num_sequences
    if not len(d) or int(d[0]) != 0 or int(d[-1]) != n:
        first = int(d[0]) if len(d) else None
        last = int(d[-1]) if len(d) else None
        raise TokenFileError(
            f"Megatron index {index.path!r}: its document indices must run from 0 to the "
            f"sequence count {n}; they run from {first} to {last}."
        )
    for lo in range(0, len(d) - 1, _BLOCK):
        block = np.asarray(d[lo : lo + _BLOCK + 1])
        bad = np.flatnonzero(np.diff(block) < 0)
        if len(bad):
            k = lo + int(bad[0])
            raise TokenFileError(
                f"Megatron index {index.path!r}: document index {k + 1} ({int(d[k + 1])}) is "
                f"below the one before it ({int(d[k])})."
            )


def _check_pointers(index: MegatronIndex) -> None:
    """Lengths non-negative, pointers contiguous from 0 (each after the one before)."""
    item, start = index.dtype.itemsize, 0
    for lo in range(0, index.num_sequences, _BLOCK):
        lengths = np.asarray(index.lengths[lo : lo + _BLOCK], dtype=np.int64)
        pointers = np.asarray(index.pointers[lo : lo + _BLOCK])
        if (lengths < 0).any():
            k = lo + int(np.flatnonzero(lengths < 0)[0])
            raise TokenFileError(
                f"Megatron index {index.path!r}: sequence {k} has length {int(lengths[k - lo])}."
            )
        expected = start + np.concatenate([[0], np.cumsum(lengths[:-1] * item)])
        bad = np.flatnonzero(pointers != expected)
        if len(bad):
            k = lo + int(bad[0])
            raise TokenFileError(
                f"Megatron index {index.path!r}: sequence {k} starts at byte "
                f"{int(pointers[k - lo])}, not {int(expected[k - lo])} where the sequence before "
                "it ends. arrowmix reads corpora whose sequences lie back to back, as "
                "Megatron's writers lay them out."
            )
        start = int(expected[-1] + lengths[-1] * item)


def check_bin(index: MegatronIndex, path: str, size: int) -> None:
    """Raise unless the ``.bin`` at ``path`` (``size`` bytes) is the one ``index`` describes."""
    want = index.num_tokens * index.dtype.itemsize
    if size < want:
        raise TokenFileError(
            f"Megatron data {path!r} is shorter than its index {index.path!r} says: {size} "
            f"bytes, the index describes {index.num_tokens} tokens of {index.dtype} "
            f"({want} bytes). The file is truncated."
        )
    if size > want:
        raise TokenFileError(
            f"Megatron data {path!r} ({size} bytes) and index {index.path!r} ({want} bytes of "
            f"{index.dtype} tokens) are not one pair: the prefixes' files were mixed up or one "
            "of them was rewritten alone."
        )


def write_pair(
    prefix: str,
    dtype: np.dtype,
    batches: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    sync: bool = True,
) -> tuple[int, int]:
    """Write ``<prefix>.bin`` and ``<prefix>.idx``, one document per sequence, atomically.

    ``batches`` yields ``(values, lengths)``: the tokens of consecutive sequences back to
    back, as ``dtype`` (the caller checks the values fit), and each sequence's length.
    Returns ``(sequences, tokens)`` written.
    """
    data, index = bin_path(prefix), idx_path(prefix)
    parent = os.path.dirname(os.path.abspath(data))
    os.makedirs(parent, exist_ok=True)
    tmp_bin = os.path.join(parent, tmp_name(os.path.basename(data)))
    tmp_idx = os.path.join(parent, tmp_name(os.path.basename(index)))
    try:
        with open(tmp_bin, "wb") as f:
            lengths = _write_data(f, dtype, batches)
            _flush(f, sync)
        with open(tmp_idx, "wb") as f:
            _write_index(f, dtype, lengths)
            _flush(f, sync)
        with contextlib.suppress(FileNotFoundError):
            os.remove(index)  # from here on, no .idx pairs with a .bin of another write
        os.replace(tmp_bin, data)
        os.replace(tmp_idx, index)
    except BaseException:
        for tmp in (tmp_bin, tmp_idx):
            with contextlib.suppress(OSError):
                os.remove(tmp)
        raise
    if sync:
        fsync_dir(parent)
    return len(lengths), int(lengths.sum())


def _write_data(
    f: IO[bytes], dtype: np.dtype, batches: Iterable[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    parts = [np.empty(0, dtype=np.int64)]
    for values, lengths in batches:
        arr = np.ascontiguousarray(values, dtype=dtype)
        if arr.size:
            f.write(arr.data.cast("B"))
        parts.append(np.asarray(lengths, dtype=np.int64))
    return np.concatenate(parts)


def _write_index(f: IO[bytes], dtype: np.dtype, lengths: np.ndarray) -> None:
    if len(lengths) and int(lengths.max()) > np.iinfo(np.int32).max:
        raise ValueError(
            f"a sequence of {int(lengths.max())} tokens does not fit Megatron's int32 lengths."
        )
    seqs = len(lengths)
    f.write(MAGIC + struct.pack("<QBQQ", VERSION, code_of(dtype), seqs, seqs + 1))
    f.write(lengths.astype("<i4").tobytes())
    pointers = np.zeros(seqs, dtype="<i8")
    np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    f.write(pointers.tobytes())
    f.write(np.arange(seqs + 1, dtype="<i8").tobytes())


def _flush(f: IO[bytes], sync: bool) -> None:
    f.flush()
    if sync:
        os.fsync(f.fileno())
