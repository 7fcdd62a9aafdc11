"""Checksums of the Arrow files arrowmix writes, and checks of the files it opens.

Every cache file arrowmix writes (map and filter segments, indices and flatten files) carries
an xxh3-64 checksum of its whole content under ``checksum`` in its ``arrowmix`` schema
metadata; chunk files stay plain Arrow IPC files. The schema is written before the data, so
the writer first puts a random 16-digit placeholder there, then hashes the finished temporary
file with the two copies of that value (the schema message at the start and the footer at the
end) read as zeros, and writes the digest over both copies before the file is renamed into
place (:func:`seal`). A reader recomputes the same hash over the memory-mapped file
(:func:`problem`): any changed byte (a value, an offset, the footer) makes it differ, and no
array of the file has been read yet.

What is checked when (``open_table(..., check=...)``):

- ``"checksum"`` (cache files): the checksum must be present and match. A file is hashed once
  for as long as its ``stat`` identity (device, inode, size, modification and change times)
  is unchanged: in this process, and in later ones through the record of its directory
  (:mod:`arrowmix._storage.trust`, which also says what survives a power loss); :func:`touch`
  keeps a file trusted after marking it used.
- ``"chunk"`` (chunk files, which cannot be recomputed): a file with a checksum (a cache file
  opened as data) is hashed; any other is structurally validated
  (``RecordBatch.validate(full=True)``: offsets in bounds, valid UTF-8...), so that damaged
  offsets raise instead of crashing the interpreter. Success is also remembered on disk under
  ``$ARROWMIX_CACHE/verified/`` against the same ``stat`` identity, so a large corpus is
  checked once, not at every start; any write to a file changes its change time and brings
  the check back.

Hashing runs at about 15 GB/s and validation at about 10 GB/s on data in the page cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import struct
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._storage import trust
from arrowmix._storage.file_meta import read_meta
from arrowmix._storage.local import root_dir
from arrowmix._storage.windows import address_of, map_pass, windows

__all__ = ["CHECKSUM_KEY", "done", "placeholder", "problem", "seal", "touch", "verified"]

#: Key of the checksum in the ``arrowmix`` schema metadata.
CHECKSUM_KEY = "checksum"
_ZEROS = b"0" * 16
_MAGIC = b"ARROW1"
_CONTINUATION = b"\xff\xff\xff\xff"

# stat identities of files checked by this process
_checked: set[tuple[int, ...]] = set()


def placeholder() -> str:
    """A random value to write as the checksum until :func:`seal` replaces it."""
    return secrets.token_hex(8)


def _pattern(value: str) -> bytes:
    return json.dumps({CHECKSUM_KEY: value})[1:-1].encode()


def _regions(buf: memoryview) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Byte ranges of the schema message and of the footer, or None if not an IPC file."""
    size = len(buf)
    if size < 26 or bytes(buf[:6]) != _MAGIC or bytes(buf[-6:]) != _MAGIC:
        return None
    if bytes(buf[8:12]) == _CONTINUATION:
        head = (8, 16 + struct.unpack("<i", buf[12:16])[0])
    else:  # pre-1.0 layout: no continuation marker
        head = (8, 12 + struct.unpack("<i", buf[8:12])[0])
    footer_len = struct.unpack("<i", buf[size - 10 : size - 6])[0]
    foot = (size - 10 - footer_len, size - 10)
    if not (head[0] < head[1] <= foot[0] < foot[1]) or foot[0] < 0:
        return None
    return head, foot


def _locate(buf: memoryview, value: str) -> tuple[int, int] | str:
    """Offsets of ``value`` as the checksum in the schema message and the footer."""
    regions = _regions(buf)
    if regions is None:
        return "not an Arrow IPC file (bad magic or lengths)"
    pat = _pattern(value)
    found = []
    for lo, hi in regions:
        part = bytes(buf[lo:hi])
        at = part.find(pat)
        if at < 0 or part.find(pat, at + 1) >= 0:
            return "its checksum is not where it was written"
        found.append(lo + at + len(pat) - 17)  # the 16 digits before the closing quote
    return found[0], found[1]


def _digest(buf: memoryview, spots: tuple[int, int]) -> str:
    """The checksum of ``buf`` with the two copies at ``spots`` read as zeros.

    Hashed a window at a time (:func:`~arrowmix._storage.windows.windows`): a large mapped
    file keeps one window resident.
    """
    address = address_of(buf)
    h = xxhash.xxh3_64()
    pos = 0
    for at in (*spots, len(buf)):
        for part in windows(buf[pos:at], address + pos):
            h.update(part)
        if at < len(buf):
            h.update(_ZEROS)
        pos = at + 16
    return h.hexdigest()


def seal(path: str, value: str) -> None:
    """Replace the placeholder ``value`` in the local file at ``path`` by the file's checksum."""
    with open(path, "r+b") as f:
        data = map_pass(path)
        view = memoryview(data)
        spots = _locate(view, value)
        if isinstance(spots, str):
            raise RuntimeError(f"Cannot seal {path!r}: {spots}.")  # a bug, not user data
        digest = _digest(view, spots).encode()
        del view, data
        for at in spots:
            f.seek(at)
            f.write(digest)


def _checksum_of(schema: pa.Schema) -> str | None:
    try:
        value = read_meta(schema).get(CHECKSUM_KEY)
    except ValueError:
        return None
    return value if isinstance(value, str) and len(value) == 16 else None


def problem(buf: pa.Buffer, *, structural: bool) -> str | None:
    """Why the IPC file in ``buf`` must not be used, or None when it checks out.

    Args:
        buf: The whole file.
        structural: Without a checksum, validate the arrays instead (else: report it).
    """
    view = memoryview(buf)
    if _regions(view) is None:
        if structural and bytes(view[:4]) == _CONTINUATION:
            return _stream_problem(buf)
        return "not an Arrow IPC file (bad magic or lengths)"
    try:
        reader = pa.ipc.open_file(buf)
    except (pa.ArrowInvalid, OSError) as exc:
        return f"unreadable footer or schema: {exc}"
    value = _checksum_of(reader.schema)
    if value is None:
        if not structural:
            return "it has no checksum (written by another tool or an older arrowmix)"
        try:
            for i in range(reader.num_record_batches):
                reader.get_batch(i).validate(full=True)
        except (pa.ArrowInvalid, OSError) as exc:
            return f"record batch {i} is damaged: {exc}"
        return None
    spots = _locate(view, value)
    if isinstance(spots, str):
        return spots
    actual = _digest(view, spots)
    if actual != value:
        return f"checksum mismatch (stored {value}, content hashes to {actual}): damaged"
    return None


def _stream_problem(buf: pa.Buffer) -> str | None:
    """Why the IPC *stream* in ``buf`` (a foreign file, no checksum) is damaged, or None."""
    try:
        reader = pa.ipc.open_stream(buf)
        for i, batch in enumerate(reader):
            try:
                batch.validate(full=True)
            except (pa.ArrowInvalid, OSError) as exc:
                return f"record batch {i} is damaged: {exc}"
    except (pa.ArrowInvalid, OSError) as exc:
        return f"unreadable IPC stream: {exc}"
    return None


_identity = trust.identity


def _memo_path(path: str) -> str:
    root = root_dir()  # the parent of the remote copies' directory
    key = xxhash.xxh3_64_hexdigest(os.path.realpath(path).encode())
    return os.path.join(root, "verified", key)


def verified(path: str, *, remember: bool) -> tuple[bool, Any]:
    """Whether ``path`` (local) was checked in its current state; and a token for :func:`done`.

    With ``remember`` the file's own on-disk record (chunk files) is consulted, else the
    record of its directory (cache files).
    """
    ident = _identity(path)
    if ident in _checked:
        return True, ident
    if not remember and trust.trusted(path, ident):
        _checked.add(ident)
        return True, ident
    if remember:
        with (
            contextlib.suppress(OSError, ValueError, KeyError, TypeError),
            open(_memo_path(path), encoding="utf-8") as f,
        ):
            if tuple(json.load(f)["stat"]) == ident:
                _checked.add(ident)
                return True, ident
    return False, ident


def done(path: str, ident: Any, *, remember: bool) -> None:
    """Record that ``path`` (with ``stat`` identity ``ident``) checked out."""
    _checked.add(ident)
    if not remember:
        trust.remember(path, ident)
        return
    memo = _memo_path(path)
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        tmp = f"{memo}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"path": os.path.realpath(path), "stat": list(ident)}, f)
        os.replace(tmp, memo)


def touch(paths: Iterable[str]) -> None:
    """Set local files' modification time to now, keeping checked files trusted.

    A file checked in its state before the touch stays so in this process and in its
    directory's record (written once for all ``paths``).
    """
    with trust.batch():
        for p in paths:
            with contextlib.suppress(OSError):
                before = _identity(p)
                os.utime(p)
                if before in _checked:
                    after = _identity(p)
                    _checked.add(after)
                    trust.moved(p, before, after)
