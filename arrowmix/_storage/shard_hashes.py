"""The hashes an MDS ``index.json`` declares for its shard files, checked at first use.

mosaicml-streaming's writer (``MDSWriter(..., hashes=["sha1", "xxh64"])``) records, for each
shard, the hex digests of its raw file (``raw_data.hashes``) and of its compressed file
(``zip_data.hashes``), by any algorithm of ``hashlib`` or ``xxhash``. Streaming checks the
one algorithm its user names (``validate_hash=``) when it downloads or decompresses a
shard, and nothing when none is named.

``from_mds`` checks every shard the index declares hashes for, always: the first read that
uses a shard (to decode columns, or at open to learn a column's type) hashes the bytes of
the file it reads, the compressed file before it is decompressed or the memory-mapped raw
file, with the fastest algorithm declared (:data:`_PREFERRED`), before any sample is
decoded. A mismatch raises :class:`~arrowmix.exceptions.ChunkFileError` naming the shard,
the algorithm and both digests: a flipped bit in a compressed shard never decompresses into
other values. A shard that matched is recorded against its ``stat`` identity
(:mod:`arrowmix._storage.trust`), so it is hashed once per file version, not at every
process start; any write to it changes the identity, and the first read of an open dataset
refuses it anyway (:mod:`arrowmix._storage.in_place`).

An index whose declared algorithms are all unknown to ``hashlib`` and ``xxhash`` is read
without this check (the shards' layout is still checked).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

import xxhash

from arrowmix._storage import trust
from arrowmix._storage.in_place import FileVersion
from arrowmix.exceptions import ChunkFileError

__all__ = ["declared_hashes", "hash_hex", "verify_hashes"]

#: Algorithms in the order they are picked among those declared: fastest first.
_PREFERRED = ("xxh3_64", "xxh3_128", "xxh128", "xxh64", "xxh32", "blake2b", "md5", "sha1",
              "blake2s", "sha512", "sha384", "sha256", "sha224")  # fmt: skip
# files whose version matched its declared hashes in this process
_verified: set[FileVersion] = set()
_LOCK = threading.Lock()


def declared_hashes(info: Any) -> tuple[tuple[str, str], ...]:
    """The ``hashes`` of one file entry of an MDS index (``raw_data``/``zip_data``).

    Raises:
        ValueError: ``hashes`` is not an object of hex strings (the caller names the shard).
    """
    found = info.get("hashes") if isinstance(info, dict) else None
    if not found:
        return ()
    if not isinstance(found, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in found.items()
    ):
        raise ValueError(f"`hashes` must map algorithm names to hex digests, got {found!r}")
    return tuple(sorted((k, v.lower()) for k, v in found.items()))


def _known(algo: str) -> bool:
    return algo in xxhash.algorithms_available or algo in hashlib.algorithms_available


def _pick(hashes: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    usable = [(a, h) for a, h in hashes if _known(a) and not a.startswith("shake_")]
    if not usable:
        return None
    rank = {a: i for i, a in enumerate(_PREFERRED)}
    return min(usable, key=lambda p: rank.get(p[0], len(rank)))


def hash_hex(algo: str, data: Any) -> str:
    """The hex digest of ``data`` (any buffer) by ``algo``, as streaming's ``get_hash``."""
    if algo in xxhash.algorithms_available:
        return str(getattr(xxhash, algo)(data).hexdigest())
    return hashlib.new(algo, data).hexdigest()


def verify_hashes(shard_version: FileVersion, hashes: Sequence[tuple[str, str]], data: Any) -> None:
    """Check ``data`` (the bytes of the file read) against the ``hashes`` index.json declares.

    Once per file version: a version checked in this process, or recorded as checked, is
    not hashed again. ``data`` must have been read from ``shard_version`` (the caller checks
    the version before and after reading).

    Raises:
        ChunkFileError: the bytes do not hash to what the index declares (named), or the
            file changed since it was opened.
    """
    if not hashes or shard_version in _verified:
        return
    path = shard_version.path
    chosen = _pick(hashes)
    if chosen is None:
        return
    try:
        ident = trust.identity(path)
    except OSError:
        ident = None
    if ident is None or ident[1:] != (shard_version.inode, shard_version.size,
                                      shard_version.mtime_ns, shard_version.ctime_ns):  # fmt: skip
        shard_version.check("MDS shard")  # raises: not the version opened
    assert ident is not None
    if trust.trusted(path, ident):
        with _LOCK:
            _verified.add(shard_version)
        return
    algo, want = chosen
    got = hash_hex(algo, data)
    if got != want:
        shard_version.check("MDS shard")  # written since it was opened: say so instead
        raise ChunkFileError(
            f"MDS shard {path!r} is damaged: its bytes hash to {got} ({algo}) where its "
            f"index.json declares {want}. It is not read: restore the shard from a copy, or "
            "write the dataset again."
        )
    shard_version.check("MDS shard")  # the bytes hashed were this version's
    with _LOCK:
        _verified.add(shard_version)
    trust.record_checked(path, ident)
