"""The permutation of a shuffled view, without holding it in anonymous memory.

``shuffle(seed)`` views the rows through ``np.random.default_rng(seed).permutation(n)``, as
HF ``datasets`` does (the values are pinned). numpy computes that permutation as
``arange(n)`` shuffled in place by one Fisher-Yates pass. The result is written to a file
mapping (an unlinked scratch file in the cache directory), whose pages are page cache the
kernel can write back and drop:

- up to :data:`~arrowmix._dataset.fisher_yates.MIN_ROWS` rows, numpy's pass runs over that
  mapping itself (it touches every page: 8 bytes a row resident until it ends);
- above, :func:`arrowmix._dataset.fisher_yates.replay` replays the same pass out of core,
  in bounded memory (about 300 MiB peak whatever ``n``): the top steps in batches over a
  scratch file, the last rows with numpy's own shuffle, bit for bit the same values;
- rows beyond ``2**32`` (64-bit draws) keep numpy's pass over the mapping.

The view's indices file is then written from that mapping, and a later run memory-maps the
indices file (found by the digest of what it is made of, :func:`sources`) without computing
the permutation again.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from arrowmix._dataset import fisher_yates
from arrowmix._dataset.indices import INDICES_FILE_MIN_ROWS, IndexMap
from arrowmix._storage import fs, windows
from arrowmix._storage.file_meta import read_meta
from arrowmix._storage.integrity import CHECKSUM_KEY

__all__ = ["parent_token", "permutation", "scratch", "sources"]

_BLOCK = 1 << 15  # rows written per step of arange (256 KiB)


def permutation(n: int, seed: int, directory: str | None) -> np.ndarray:
    """``np.random.default_rng(seed).permutation(n)``; file-backed for large ``n``.

    ``directory`` (local) holds the scratch file; None (or a URL, or a small ``n``) computes
    it in memory.
    """
    rng = np.random.default_rng(seed)
    arr = scratch(n, directory)
    if arr is None:
        return rng.permutation(n)
    if fisher_yates.replayable(n):
        assert directory is not None  # (a scratch file was made there)
        fisher_yates.replay(n, seed, arr, fs.local_path(directory))
        return arr
    for lo in range(0, n, _BLOCK):
        arr[lo : lo + _BLOCK] = np.arange(lo, min(n, lo + _BLOCK), dtype=np.int64)
    rng.shuffle(arr)
    return arr


def scratch(n: int, directory: str | None) -> np.ndarray | None:
    """A writable int64 array of ``n`` backed by an unlinked file in ``directory``.

    None when ``n`` is small or ``directory`` is None or a URL (use memory then).
    """
    if n < INDICES_FILE_MIN_ROWS or directory is None or not fs.is_local(directory):
        return None
    local = fs.local_path(directory)
    os.makedirs(local, exist_ok=True)
    mapped = windows.scratch(local, n * 8)  # its pages can be handed back (windows.release)
    return np.frombuffer(mapped, dtype=np.int64)  # a plain ndarray: numpy's fast shuffle


def parent_token(indices: IndexMap | None, indices_file: str | None) -> Any:
    """What identifies a view's mapping cheaply: its range, its file's checksum, or its bytes."""
    if indices is None:
        return None
    if indices.array is None:
        return ["range", indices.start, indices.stop]
    if indices_file is not None and fs.is_local(indices_file):
        with (
            contextlib.suppress(OSError, pa.ArrowInvalid),
            pa.memory_map(fs.local_path(indices_file)) as f,
        ):
            checksum = read_meta(pa.ipc.open_file(f).schema).get(CHECKSUM_KEY)
            if checksum:
                return ["file", checksum]
    data = np.ascontiguousarray(indices.array, dtype=np.int64).data
    return ["array", xxhash.xxh3_64_hexdigest(data)]


def sources(*parts: Any) -> str:
    """A digest of what a mapping is computed from (JSON-serialisable ``parts``)."""
    return xxhash.xxh3_64_hexdigest(json.dumps(parts, separators=(",", ":")).encode())
