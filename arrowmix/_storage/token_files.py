"""Open token files as zero-copy ``list<dtype>`` columns: Megatron pairs and flat numpy files.

Two kinds of file, one result: the chunks of a ``list<dtype>`` column whose values are the
file's memory map (:mod:`arrowmix._storage.token_arrays`), and the
:class:`~arrowmix._storage.token_arrays.TokenSource` that reopens it in another process.

- **Megatron** (:func:`megatron_source`): rows are the index's sequences (as
  ``megatron.core``'s ``IndexedDataset`` returns them), or its documents (``by="document"``:
  the sequences of each document together). The ``.bin`` is checked against its index.
- **Flat** (:func:`flat_source`): a file of token ids in one dtype (nanoGPT's uint16
  ``train.bin``), whose rows are given by exactly one of: ``eos_id`` (a document ends after
  each such token; a tail without one is the last document), ``offsets`` (document start
  offsets, an array or a ``.npy`` file; a final offset equal to the token count may be given
  or not), or ``seq_len`` (consecutive blocks of ``seq_len`` tokens; a shorter tail is left
  out).

Finding the EOS boundaries reads the whole file once; they are cached under the cache root
(``token-bounds/<content digest>-<dtype>-eos<id>.bounds``, sealed: a damaged copy is computed
again), so the next open (or a worker reopening the corpus) reads only the boundaries.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, cast

import numpy as np
import pyarrow as pa

from arrowmix._storage import trust
from arrowmix._storage.digests import file_digest
from arrowmix._storage.in_place import FileVersion
from arrowmix._storage.local import cache_root
from arrowmix._storage.megatron_index import bin_path, check_bin, idx_path, read_index
from arrowmix._storage.token_arrays import TokenSource, list_chunks, map_bytes
from arrowmix.exceptions import TokenFileError

__all__ = ["flat_source", "megatron_source", "open_flat", "open_megatron"]

_BOUNDS_DIR = "token-bounds"
_SCAN = 1 << 24  # tokens scanned for EOS per step


def megatron_source(prefix: str, by: str = "sequence") -> TokenSource:
    """The source of a Megatron prefix's column; the pair is checked (TokenFileError).

    ``prefix`` may also name either file of the pair (``corpus.bin``, ``corpus.idx``).
    """
    if by not in ("sequence", "document"):
        raise ValueError(f"`by` must be 'sequence' or 'document', got {by!r}.")
    if prefix.endswith((".bin", ".idx")) and not os.path.exists(idx_path(prefix)):
        prefix = prefix[:-4]  # a file of the pair named instead of its prefix
    data, index = os.path.abspath(bin_path(prefix)), os.path.abspath(idx_path(prefix))
    for path, role in ((index, "index"), (data, "data")):
        if not os.path.isfile(path):
            raise TokenFileError(
                f"Megatron prefix {prefix!r} has no {role} file {path!r}: a pair is "
                f"{os.path.basename(data)!r} and {os.path.basename(index)!r}."
            )
    files = (data, index)
    return TokenSource(open_megatron, (data, index, by), tuple(map(FileVersion.of, files)))


def open_megatron(
    data: str, index_path: str, by: str, *, source: TokenSource | None = None
) -> list[pa.Array[Any]]:
    """The column's chunks over ``data`` (see :func:`megatron_source`)."""
    index = read_index(index_path)
    buf = map_bytes(data)
    check_bin(index, data, buf.size)
    item = index.dtype.itemsize
    bounds = np.empty(index.num_sequences + 1, dtype=np.int64)
    bounds[:-1] = index.pointers // item
    bounds[-1] = index.num_tokens
    if by == "document":
        bounds = bounds[np.asarray(index.document_indices)]
    return list_chunks(buf, index.dtype, bounds, source, data)


def flat_source(
    path: str,
    dtype: Any,
    *,
    eos_id: int | None = None,
    offsets: Any = None,
    seq_len: int | None = None,
) -> TokenSource:
    """The source of a flat token file's column (see the module docstring)."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise ValueError(f"`dtype` must be an integer type for token ids, got {dt}.")
    given = [
        n
        for n, v in (("eos_id", eos_id), ("offsets", offsets), ("seq_len", seq_len))
        if v is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "a flat token file has no document boundaries of its own: give exactly one of "
            f"`eos_id=`, `offsets=` or `seq_len=` (got {given or 'none'})."
        )
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise TokenFileError(f"Token file {path!r} does not exist.")
    files = [path]
    if isinstance(offsets, (str, os.PathLike)):
        offsets = os.path.abspath(offsets)
        files.append(offsets)
    elif offsets is not None:
        offsets = np.array(offsets, dtype=np.int64)  # a copy: the caller's may change
    if eos_id is not None:
        info = np.iinfo(dt)
        if isinstance(eos_id, bool) or not isinstance(eos_id, (int, np.integer)):
            raise TypeError(f"`eos_id` must be a token id (an int), got {eos_id!r}.")
        if not info.min <= eos_id <= info.max:
            raise ValueError(
                f"`eos_id` {eos_id} cannot occur in a file of {dt} tokens "
                f"({info.min}..{info.max}): no document would end. Check `eos_id` and `dtype`."
            )
    if seq_len is not None and (isinstance(seq_len, bool) or int(seq_len) < 1):
        raise ValueError(f"`seq_len` must be a positive number of tokens, got {seq_len!r}.")
    args = (path, dt.str, eos_id, offsets, seq_len)
    return TokenSource(open_flat, args, tuple(map(FileVersion.of, files)))


def open_flat(
    path: str,
    dtype: str,
    eos_id: int | None,
    offsets: Any,
    seq_len: int | None,
    *,
    source: TokenSource | None = None,
) -> list[pa.Array[Any]]:
    """The column's chunks over the flat file ``path`` (see :func:`flat_source`)."""
    dt = np.dtype(dtype)
    buf = map_bytes(path)
    if buf.size % dt.itemsize:
        raise TokenFileError(
            f"Token file {path!r} has {buf.size} bytes, not a multiple of the {dt.itemsize} "
            f"bytes of a {dt.name} token: wrong dtype, or the file is truncated."
        )
    tokens = buf.size // dt.itemsize
    if seq_len is not None:
        bounds = np.arange(tokens // int(seq_len) + 1, dtype=np.int64) * int(seq_len)
    elif eos_id is not None:
        bounds = _eos_bounds(path, buf, dt, int(eos_id))
    else:
        bounds = _given_bounds(path, offsets, tokens)
    return list_chunks(buf, dt, bounds, source, path)


def _given_bounds(path: str, offsets: Any, tokens: int) -> np.ndarray:
    where = f"offsets file {offsets!r}" if isinstance(offsets, str) else "`offsets`"
    if isinstance(offsets, str):
        try:
            offsets = np.load(offsets, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise TokenFileError(f"Cannot read {where}: {exc}") from exc
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TokenFileError(
            f"{where} of {path!r} must be a 1-d integer array, got {arr.dtype} {arr.shape}."
        )
    arr = arr.astype(np.int64)
    if not len(arr) or arr[0] != 0:
        raise TokenFileError(f"{where} of {path!r} must start at 0 (the first document).")
    if len(arr) and arr[-1] > tokens:
        raise TokenFileError(
            f"{where} of {path!r} reach token {int(arr[-1])}, past the file's {tokens} tokens."
        )
    bad = np.flatnonzero(np.diff(arr) < 0)
    if len(bad):
        k = int(bad[0]) + 1
        raise TokenFileError(
            f"{where} of {path!r} decrease at position {k} ({int(arr[k])} after {int(arr[k - 1])})."
        )
    return arr if arr[-1] == tokens else np.append(arr, tokens)


def _eos_bounds(path: str, buf: pa.Buffer, dt: np.dtype, eos_id: int) -> np.ndarray:
    """Document boundaries after each ``eos_id`` (cached by the file's content digest).

    The cache file is sealed for the token file's digest, dtype and EOS id
    (:func:`~arrowmix._storage.trust.read_sealed`): a damaged one, or one of another file
    copied in its place, is computed again.
    """
    cached = _bounds_path(path, dt, eos_id)
    if cached is not None:
        found = trust.read_sealed(*cached, "document boundaries of a token file")
        if found is not None and len(found) % 8 == 0:
            return np.frombuffer(found, dtype="<i8").astype(np.int64)
    tokens = np.frombuffer(cast(Any, buf), dtype=dt)
    ends = [np.zeros(1, dtype=np.int64)]
    for lo in range(0, len(tokens), _SCAN):
        ends.append(np.flatnonzero(tokens[lo : lo + _SCAN] == eos_id).astype(np.int64) + lo + 1)
    bounds = np.concatenate(ends)
    if bounds[-1] != len(tokens):
        bounds = np.append(bounds, len(tokens))
    if cached is not None:
        with contextlib.suppress(OSError):  # a read-only cache root: not remembered
            os.makedirs(os.path.dirname(cached[0]), exist_ok=True)
            trust.write_sealed(cached[0], bounds.astype("<i8").tobytes(), cached[1])
    return bounds


def _bounds_path(path: str, dt: np.dtype, eos_id: int) -> tuple[str, str] | None:
    """The boundaries' cache file and the key it is sealed for (None: no cache root)."""
    try:
        root = cache_root()
    except OSError:
        return None
    order = np.dtype(dt).str.replace("<", "le-").replace(">", "be-").replace("|", "")
    key = f"{file_digest(path)}-{order}-eos{eos_id}"
    return os.path.join(root, _BOUNDS_DIR, f"{key}.bounds"), key
