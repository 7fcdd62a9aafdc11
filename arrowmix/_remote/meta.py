"""Describe a remote Arrow IPC chunk from a few range requests, without downloading it.

An Arrow IPC file starts with ``ARROW1``, the schema message and the record batches, and ends
with a footer (a flatbuffer listing every record batch's offset and metadata length), its
length and ``ARROW1``. :func:`probe` reads the first and last 16 KiB of the object (issued
together; the whole object when it is under 32 KiB), plus the footer or schema when they are
larger and the metadata message of each record batch outside those windows, so the chunk's
schema and row counts cost a few small requests whatever its size. Its content digest comes
from the corpus manifest (``arrowmix._storage.digests``).

The record batch row counts live in the batches' metadata messages, not in the footer; the
tiny flatbuffer reader below extracts them (Footer.recordBatches, Message.header and
RecordBatch.length of the Arrow ``File.fbs``/``Message.fbs`` schemas).

Every request is retried by the one retry layer (:mod:`arrowmix._remote.retry`) on transient
errors and short answers, then raises :class:`~arrowmix.exceptions.RemoteReadError` naming
the object; a short answer is called a replacement only when the object's version changed.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._remote.retry import RETRY, delay, transient
from arrowmix.exceptions import ChunkFileError, ObjectChangedError, RemoteReadError

__all__ = ["RETRY", "RemoteChunk", "fetch_ranges", "probe", "version_tag"]

_MAGIC = b"ARROW1"
_WINDOW = 16 * 1024  # holds the schema and footer of most chunks: one request each
_RECORD_BATCH = 3  # MessageHeader.RecordBatch
#: Info keys that identify one version of an object, most specific first.
_TAG_KEYS = (
    "VersionId", "ETag", "etag", "generation", "md5Hash", "mtime", "LastModified", "created",
)  # fmt: skip


def _norm(value: Any) -> str:
    """One spelling per value: listings and ``info`` give times as datetimes or numbers."""
    if hasattr(value, "timestamp"):
        return f"{value.timestamp():.3f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def version_tag(info: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The size and version identifiers of an object's ``fs.info`` (ETag, VersionId...)."""
    tag = [("size", str(info.get("size")))]
    tag += [(k, _norm(info[k])) for k in _TAG_KEYS if info.get(k) is not None]
    return tuple(tag)


def same_version(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> bool:
    """Whether two tags describe one version: every identifier both carry is equal."""
    da, db = dict(a), dict(b)
    return all(da[k] == db[k] for k in da.keys() & db.keys())


@dataclass(frozen=True)
class RemoteChunk:
    """One remote chunk file as seen when the dataset was opened.

    Attributes:
        url: the object's full URL.
        size: its size in bytes.
        tag: its version identity (size, ETag, VersionId... as the store reports them).
        batch_rows: rows of each record batch.
        digest: its content digest (xxh3 of the whole file, from the corpus manifest).
    """

    url: str
    size: int
    tag: tuple[tuple[str, str], ...]
    batch_rows: tuple[int, ...]
    digest: str

    @property
    def num_rows(self) -> int:
        """Rows in the chunk."""
        return sum(self.batch_rows)

    @property
    def key(self) -> str:
        """The local cache name of this version of the object: ``<hash>-<file stem>``.

        The hash covers the digest too: a copy is only ever made of bytes with that digest,
        so a dataset never finds under its name the bytes of another version of the corpus
        (one opened while the corpus was rewritten may pair a listing's version tag with
        the rewritten manifest's digest).
        """
        ident = json.dumps([self.url, list(self.tag), self.digest]).encode()
        name = self.url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".arrow")
        return f"{xxhash.xxh3_64_hexdigest(ident)}-{name}"


def _check_version(fs: Any, path: str, url: str, tag: Sequence[tuple[str, str]]) -> None:
    """Raise ObjectChangedError if the object's version is no longer ``tag``."""
    fs.invalidate_cache(path)
    try:
        now = version_tag(fs.info(path))
    except FileNotFoundError as exc:
        raise ChunkFileError(f"Remote chunk {url!r} is gone: {exc}") from exc
    except OSError:
        return  # asking failed: the short answer is retried as any transient error
    if not same_version(now, tag):
        raise ObjectChangedError(
            f"Remote chunk {url!r} changed since the dataset was opened (then {dict(tag)}, "
            f"now {dict(now)}); reopen the dataset to read the new version."
        )


def fetch_ranges(
    fs: Any,
    path: str,
    url: str,
    ranges: Sequence[tuple[int, int]],
    tag: Sequence[tuple[str, str]] | None = None,
) -> list[bytes]:
    """The bytes ``[start, stop)`` of each range of object ``path`` (retried, then an error).

    Failed and short answers are asked again, up to ``RETRY.attempts`` requests per range
    (with backoff, longer when throttled). A short answer is a replacement only when the
    object's version is no longer ``tag`` (asked afresh); otherwise it is retried.

    Raises:
        ChunkFileError: the object is gone.
        ObjectChangedError: an answer was short and the object's version is not ``tag``.
        RemoteReadError: the requests kept failing, or were refused (the message names ``url``).
    """
    got: dict[int, bytes] = {}
    last: BaseException | None = None
    for attempt in range(RETRY.attempts):
        pending = [i for i in range(len(ranges)) if i not in got]
        if not pending:
            break
        if attempt:
            time.sleep(delay(attempt, last))
        try:
            answers = fs.cat_ranges(
                [path] * len(pending), [ranges[i][0] for i in pending],
                [ranges[i][1] for i in pending], on_error="return",
            )  # fmt: skip
        except OSError as exc:
            answers = [exc] * len(pending)
        short = False
        for i, data in zip(pending, answers, strict=True):
            a, b = ranges[i]
            if isinstance(data, BaseException):
                last = data
            elif len(data) != b - a:
                short = True
                last = OSError(f"asked for bytes [{a}, {b}), got {len(data)}")
            else:
                got[i] = data
        if short and tag is not None:
            _check_version(fs, path, url, tag)
        if isinstance(last, FileNotFoundError):
            raise ChunkFileError(f"Remote chunk {url!r} is gone: {last}") from last
        if last is not None and not transient(last):
            raise RemoteReadError(f"Reading {url!r} failed: {last!r}") from last
    if len(got) == len(ranges):
        return [got[i] for i in range(len(ranges))]
    raise RemoteReadError(
        f"Reading {url!r} failed {RETRY.attempts} times (last error: {last!r}); giving up."
    ) from last


def probe(
    fs: Any, path: str, url: str, info: Mapping[str, Any], digest: str
) -> tuple[pa.Schema, RemoteChunk]:
    """The schema and :class:`RemoteChunk` description of one remote Arrow IPC file.

    Raises:
        ChunkFileError: the object is not an Arrow IPC file (named in the message).
    """
    size = int(info["size"])
    tag = version_tag(info)
    if size < len(_MAGIC) * 2 + 4:
        raise ChunkFileError(f"{url!r} ({size} bytes) is too small to be an Arrow IPC file.")
    if size <= 2 * _WINDOW:
        (head,) = fetch_ranges(fs, path, url, [(0, size)], tag)
        tail, known = head, {0: head}
    else:
        head, tail = fetch_ranges(fs, path, url, [(0, _WINDOW), (size - _WINDOW, size)], tag)
        known = {0: head, size - _WINDOW: tail}

    def read(offset: int, n: int) -> bytes:
        data = read_known(known, offset, n)
        if data is None:
            (data,) = fetch_ranges(fs, path, url, [(offset, offset + n)], tag)
            known[offset] = data
        return data

    if head[:6] != _MAGIC or tail[-6:] != _MAGIC:
        raise ChunkFileError(
            f"{url!r} is not an Arrow IPC file (no ARROW1 magic at both ends): another format "
            "such as the IPC stream format or Parquet, or a truncated object."
        )
    try:
        footer_len = struct.unpack("<i", tail[-10:-6])[0]
        footer = read(size - 10 - footer_len, footer_len)
        blocks = _footer_blocks(footer)
        meta_len = struct.unpack("<i", read(12, 4))[0]
        schema = pa.ipc.read_schema(pa.py_buffer(read(8, 8 + meta_len)))
        missing = [(o, o + n) for o, n, _ in blocks if read_known(known, o, n) is None]
        for (o, _), data in zip(missing, fetch_ranges(fs, path, url, missing, tag), strict=True):
            known[o] = data
        rows = tuple(_batch_length(read(o, n)) for o, n, _ in blocks)
    except (struct.error, IndexError, pa.ArrowInvalid) as exc:
        raise ChunkFileError(f"{url!r}: cannot read its Arrow IPC footer: {exc}") from exc
    return schema, RemoteChunk(url, size, tag, rows, digest)


def read_known(known: Mapping[int, bytes], offset: int, n: int) -> bytes | None:
    """Bytes ``[offset, offset + n)`` if a fetched window holds them, else None."""
    for start, data in known.items():
        if start <= offset and offset + n <= start + len(data):
            return data[offset - start : offset - start + n]
    return None


# ---- a minimal flatbuffer reader (tables, vectors of structs, scalars) ------------------


def _field(buf: bytes, table: int, index: int) -> int | None:
    """Absolute position of field ``index`` of the table at ``table``; None when absent."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    vlen = struct.unpack_from("<H", buf, vtable)[0]
    if 4 + 2 * index >= vlen:
        return None
    off = int(struct.unpack_from("<H", buf, vtable + 4 + 2 * index)[0])
    return table + off if off else None


def _deref(buf: bytes, pos: int) -> int:
    return pos + int(struct.unpack_from("<I", buf, pos)[0])


def _footer_blocks(footer: bytes) -> list[tuple[int, int, int]]:
    """``(offset, metadata length, body length)`` of each record batch (Footer field 3)."""
    pos = _field(footer, _deref(footer, 0), 3)
    if pos is None:
        return []
    vec = _deref(footer, pos)
    n = int(struct.unpack_from("<I", footer, vec)[0])
    out = []
    for k in range(n):
        offset, meta_len, body_len = struct.unpack_from("<qi4xq", footer, vec + 4 + 24 * k)
        out.append((int(offset), int(meta_len), int(body_len)))
    return out


def _batch_length(message: bytes) -> int:
    """RecordBatch.length of an encapsulated message (continuation, size, flatbuffer)."""
    start = 8 if message[:4] == b"\xff\xff\xff\xff" else 4
    fb = message[start:]
    root = _deref(fb, 0)
    kind = _field(fb, root, 1)
    if kind is None or fb[kind] != _RECORD_BATCH:
        raise ChunkFileError("a footer block does not point at a record batch message")
    header = _field(fb, root, 2)
    if header is None:
        return 0
    length = _field(fb, _deref(fb, header), 0)
    return 0 if length is None else int(struct.unpack_from("<q", fb, length)[0])
