"""Content digests of chunk files, and the corpus manifest that records them.

A chunk's *digest* is the xxh3-64 of the whole file's bytes. ``write_chunks`` computes it
while writing (the bytes pass through a hashing sink) and lists every chunk, with its row
count, size, digest and (local files) inode, modification and change times, in the
directory's manifest ``_manifest.json``, written atomically after the last chunk. The manifest
also records the chunks' Arrow schema (``schema``: the IPC schema message, base64), so a
remote corpus opens without reading any chunk; manifests written before it was recorded
have no ``schema`` and stay valid (the reader then reads the first chunk's footer). It
ends with a ``checksum`` of everything else it records (:func:`_seal`): a manifest edited by
hand (a chunk's rows or digest changed) or damaged is refused as damaged wherever it is read,
since a remote corpus opened with ``cache_limit`` places rows by the row counts it records.
Manifests written before the checksum was recorded have none and stay valid; their row
counts must still be whole numbers adding up to the total they record.

:func:`file_digest` answers a digest without reading data when it can:

1. the file is listed in its directory's manifest with the same size, inode, mtime and
   ctime as recorded when it was written: the recorded digest (a ``stat`` and one small
   JSON read);
2. the digest cache under the cache root (``<root>/digests/``) holds the digest of this
   exact file version, keyed by real path, size, inode, mtime and ctime (nanoseconds);
3. otherwise the file is hashed in full (xxh3 runs at several GB/s from the page cache), and
   the result remembered in the digest cache.

A digest-cache record is written atomically (``tmp-<pid>-<rand>-<key>.partial``, renamed into
place); one left by a killed process is removed by the next process's first record write in
its directory (``digests/<xx>/``) and by ``arrowmix cleanup-cache`` of the cache root.

Files are never sampled: any change of content yields another digest, so derived results
can never be served for data they were not computed from. The change time (ctime) is part of
every stat key because user space cannot set it: a rewrite that restores the size, inode and
mtime (a reproducible tarball extracted over a corpus, ``os.utime`` after an in-place write)
still moves the ctime, so the file is hashed again. Remote files are hashed from
their local read-through copy (whose name is tied to the object's version), so a remote
chunk and a local copy of it have the same digest.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import mmap
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix._storage.atomic import atomic_sink, remove_dead_tmp
from arrowmix._storage.fs import is_local, join, local_path, url_to_fs
from arrowmix._storage.local import cache_root
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "ChunkEntry",
    "HashingWriter",
    "Manifest",
    "content_digest",
    "digest_shards",
    "file_digest",
    "few",
    "has_manifest_file",
    "is_digest_record",
    "manifest_damage",
    "manifest_problems",
    "mismatch_error",
    "read_local_manifest",
    "read_manifest",
    "read_remote_manifest",
    "remove_manifest",
    "stat_entry",
    "version_digest",
    "write_manifest",
]

MANIFEST_NAME = "_manifest.json"
MANIFEST_FORMAT = 1
_KIND = "arrowmix-chunks"
_DIGESTS_DIR = "digests"
#: A digest-cache record's name: the xxh3-128 of the file version, in ``digests/<key[:2]>/``.
_RECORD_RE = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class ChunkEntry:
    """One chunk as the manifest records it."""

    name: str
    rows: int
    size: int
    digest: str
    inode: int | None = None
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    #: Per record batch ``[start, end, rows, digest]`` of its bytes (see ``damage.py``); not
    #: compared (the file's digest covers them) and not hashed (JSON lists).
    batches: Any = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        """The manifest's JSON object for this chunk (stat fields only when known)."""
        out: dict[str, Any] = {
            "name": self.name,
            "rows": self.rows,
            "size": self.size,
            "digest": self.digest,
        }
        if self.mtime_ns is not None:
            out["inode"] = self.inode
            out["mtime_ns"] = self.mtime_ns
        if self.ctime_ns is not None:
            out["ctime_ns"] = self.ctime_ns
        if self.batches is not None:
            out["batches"] = self.batches
        return out

    def matches(self, st: os.stat_result) -> bool:
        """Whether ``st`` is the file version recorded (size, inode, mtime and ctime)."""
        return (
            self.ctime_ns is not None
            and self.ctime_ns == st.st_ctime_ns
            and self.mtime_ns == st.st_mtime_ns
            and self.inode == st.st_ino
            and self.size == st.st_size
        )


#: Bytes hashed and passed on at once: a record batch's buffers (tens of MB) go to the sink
#: in pieces of this size, each still in the CPU cache from its hashing when written; one
#: ``write`` of many MB costs the kernel several times the CPU time of the same bytes in
#: such pieces (``docs/benchmarks.md``, "load_dataset").
WRITE_PIECE = 256 * 1024


class HashingWriter:
    """A file-like sink that hashes every byte written through it (for ``pa.PythonFile``)."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._h = xxhash.xxh3_64()
        self._part = xxhash.xxh3_64()
        self._mark = 0
        self.size = 0
        self.closed = False

    def write(self, data: Any) -> int:
        """Hash ``data`` and pass it on (in pieces of :data:`WRITE_PIECE` bytes)."""
        view = memoryview(data).cast("B")
        for start in range(0, view.nbytes, WRITE_PIECE):
            piece = view[start : start + WRITE_PIECE]
            self._h.update(piece)
            self._part.update(piece)
            self._sink.write(piece)
        self.size += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        """Bytes written so far."""
        return self.size

    def flush(self) -> None:
        """Flush the underlying sink."""
        self._sink.flush()

    def close(self) -> None:
        """Mark closed; the underlying sink is closed by its owner."""
        self.closed = True

    def hexdigest(self) -> str:
        """xxh3-64 of everything written (equal to hashing the finished file)."""
        return self._h.hexdigest()

    def mark(self) -> tuple[int, int, str]:
        """``(start, end, digest)`` of the bytes written since the last mark (or the start)."""
        out = (self._mark, self.size, self._part.hexdigest())
        self._mark = self.size
        self._part.reset()
        return out


@dataclass(frozen=True)
class Manifest:
    """A corpus manifest: its chunks by file name, and their schema when it records one."""

    chunks: dict[str, ChunkEntry]
    schema: pa.Schema | None


def write_manifest(
    out_dir: str,
    entries: Sequence[ChunkEntry],
    storage_options: Mapping[str, Any] | None = None,
    schema: pa.Schema | None = None,
) -> None:
    """Write ``_manifest.json`` into ``out_dir`` atomically: the corpus is complete.

    ``schema``: the chunks' schema, as written in them (recorded when given).
    """
    body: dict[str, Any] = {
        "kind": _KIND,
        "format": MANIFEST_FORMAT,
        "rows": sum(e.rows for e in entries),
        "chunks": [e.as_json() for e in entries],
    }
    if schema is not None:
        body["schema"] = base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")
    body["checksum"] = _seal(body)
    with atomic_sink(join(out_dir, MANIFEST_NAME), storage_options) as sink:
        sink.write(json.dumps(body, indent=1).encode())


def remove_manifest(out_dir: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Remove ``out_dir``'s manifest (first step of overwriting a corpus)."""
    if is_local(out_dir):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(local_path(out_dir), MANIFEST_NAME))
        return
    fs, p = url_to_fs(join(out_dir, MANIFEST_NAME), storage_options)
    if fs.exists(p):
        fs.rm_file(p)


_MANIFESTS: dict[tuple[str, int, int, int, int], dict[str, ChunkEntry]] = {}


def read_manifest(
    directory: str, storage_options: Mapping[str, Any] | None = None
) -> dict[str, ChunkEntry] | None:
    """The chunks a directory's manifest lists, by file name; None without a manifest.

    A manifest that cannot be parsed counts as absent (the directory then looks unfinished).
    Local manifests are parsed once per version (inode, size, mtime, ctime).
    """
    if is_local(directory):
        return read_local_manifest(local_path(directory))[0]
    manifest = read_remote_manifest(directory, storage_options)
    return None if manifest is None else manifest.chunks


def read_remote_manifest(
    directory: str, storage_options: Mapping[str, Any] | None = None
) -> Manifest | None:
    """A remote directory's manifest with the schema it records; None without a parsable one.

    One GET, with no existence check before it.
    """
    path = join(directory, MANIFEST_NAME)
    fs, p = url_to_fs(path, storage_options)
    try:
        try:
            raw = fs.cat_file(p, start=0)  # ranged: s3fs asks for the size first otherwise
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            raise
        except OSError:  # a store refusing an open range (an empty object): read it whole
            raw = fs.cat_file(p)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise _manifest_is_a_directory(path) from exc
    return _parse_body(raw)


def has_manifest_file(directory: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``directory`` has a manifest file (damaged, when it reads as no manifest)."""
    if is_local(directory):
        return os.path.lexists(os.path.join(local_path(directory), MANIFEST_NAME))
    fs, p = url_to_fs(directory, storage_options)
    return bool(fs.exists(f"{p.rstrip('/')}/{MANIFEST_NAME}"))


def _manifest_is_a_directory(path: str) -> ChunkFileError:
    return ChunkFileError(
        f"The manifest {path!r} is a directory, not a file: move it away (write_chunks "
        "writes the corpus manifest there)."
    )


def read_local_manifest(
    directory: str,
) -> tuple[dict[str, ChunkEntry] | None, tuple[int, int, int, int] | None]:
    """A local directory's manifest, and the identity of the manifest file that was read.

    The identity is ``(inode, size, mtime_ns, ctime_ns)``; ``(None, None)`` without a
    manifest. A manifest that cannot be parsed gives ``(None, identity)``.
    """
    path = os.path.join(directory, MANIFEST_NAME)
    try:
        st = os.stat(path)
        ident = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = _MANIFESTS.get((path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        if cached is not None:
            return cached, ident
        with open(path, "rb") as f:
            raw = f.read()
            st = os.fstat(f.fileno())  # what was read: replaced meanwhile, its own key
    except FileNotFoundError:
        return None, None
    except IsADirectoryError as exc:
        raise _manifest_is_a_directory(path) from exc
    ident = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    entries = _parse_manifest(raw)
    if entries is not None:
        _MANIFESTS[(path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)] = entries
    return entries, ident


def _parse_manifest(raw: bytes) -> dict[str, ChunkEntry] | None:
    manifest = _parse_body(raw)
    return None if manifest is None else manifest.chunks


def _seal(body: Mapping[str, Any]) -> str:
    """The checksum of a manifest body: xxh3-64 of its canonical JSON, without the checksum."""
    rest = {k: v for k, v in body.items() if k != "checksum"}
    return xxhash.xxh3_64_hexdigest(
        json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()
    )


def _whole(value: Any) -> int:
    """A count the manifest records: a non-negative int (else the manifest is damaged)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _parse_body(raw: bytes) -> Manifest | None:
    """The manifest ``raw`` holds; None when it is not one, or it is damaged or edited."""
    try:
        return _checked_body(raw)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def manifest_damage(directory: str) -> str | None:
    """Why a local directory's manifest is not valid; None when it is valid or absent."""
    try:
        with open(os.path.join(directory, MANIFEST_NAME), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    try:
        _checked_body(raw)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return str(exc) if isinstance(exc, ValueError) else f"a malformed entry ({exc!r})"
    return None


def _checked_body(raw: bytes) -> Manifest:
    """The manifest ``raw`` holds; raises ``ValueError`` saying why it is not a valid one."""
    if not raw.strip():
        raise ValueError("it is empty")
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"it is not valid JSON ({exc}), e.g. truncated") from exc
    if not isinstance(body, dict):
        raise ValueError("it does not hold a JSON object")
    if body.get("kind") != _KIND or body.get("format") != MANIFEST_FORMAT:
        raise ValueError(
            f"it is not an arrowmix manifest of format {MANIFEST_FORMAT} (kind "
            f"{body.get('kind')!r}, format {body.get('format')!r})"
        )
    if "checksum" in body and body["checksum"] != _seal(body):
        raise ValueError("its checksum does not match what it records (edited, or damaged)")
    entries = [
        ChunkEntry(
            name=str(c["name"]),
            rows=_whole(c["rows"]),
            size=_whole(c["size"]),
            digest=str(c["digest"]),
            inode=c.get("inode"),
            mtime_ns=c.get("mtime_ns"),
            ctime_ns=c.get("ctime_ns"),
            batches=c.get("batches"),
        )
        for c in body["chunks"]
    ]
    if "rows" in body and _whole(body["rows"]) != sum(e.rows for e in entries):
        raise ValueError(
            f"its chunks' row counts add up to {sum(e.rows for e in entries)}, not the "
            f"{body['rows']} it records"
        )
    return Manifest({e.name: e for e in entries}, _schema(body.get("schema")))


def _schema(recorded: Any) -> pa.Schema | None:
    """The schema a manifest records; None when absent or unreadable (the chunk tells then)."""
    if not isinstance(recorded, str):
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(recorded, validate=True)))
    except (binascii.Error, ValueError, pa.ArrowException):
        return None


def stat_entry(path: str, rows: int, size: int, digest: str, batches: Any = None) -> ChunkEntry:
    """A manifest entry for a just-written local file (its inode, mtime and ctime included)."""
    st = os.stat(path)
    return ChunkEntry(
        os.path.basename(path),
        rows,
        size,
        digest,
        inode=st.st_ino,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        batches=batches,
    )


def file_digest(
    path: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    manifest: Mapping[str, ChunkEntry] | None = None,
) -> str:
    """The content digest of one chunk file (see the module docstring for how it is found).

    Args:
        path: A local path or fsspec URL.
        storage_options: fsspec options for a URL.
        manifest: The manifest of the file's directory, when the caller has read it already.
    """
    if not is_local(path):
        from arrowmix._storage.ipc import local_copy

        return _hashed(local_copy(path, storage_options))
    local = local_path(path)
    st = os.stat(local)
    if manifest is None:
        manifest = read_manifest(os.path.dirname(os.path.abspath(local))) or {}
    entry = manifest.get(os.path.basename(local))
    if entry is not None and entry.matches(st):
        return entry.digest
    return _hashed(local, st)


_MEMO: dict[tuple[str, int, int, int, int], str] = {}


def _hashed(local: str, st: os.stat_result | None = None) -> str:
    """Full-content digest of a local file, remembered per file version."""
    while True:
        digest = version_digest(local, st or os.stat(local))
        if digest is not None:
            return digest
        st = None  # replaced while being hashed: ask about the file there now


def _version(real: str, st: os.stat_result) -> tuple[str, int, int, int, int]:
    return (real, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def version_digest(local: str, st: os.stat_result) -> str | None:
    """The digest of the version ``st`` of the local file ``local``, or None if it is gone.

    Answered from the in-process memo or the on-disk digest cache, else by hashing the file.
    None when the file at ``local`` is not that version any more (replaced or rewritten):
    nothing is remembered then under ``st``, so a cache entry always describes the bytes
    hashed.
    """
    real = os.path.realpath(local)
    version = _version(real, st)
    if version in _MEMO:
        return _MEMO[version]
    record = _record_path(version)
    digest = _read_record(record)
    if digest is None:
        try:
            digest = _hash_file(real)
            if _version(real, os.stat(real)) != version:
                return None
        except FileNotFoundError:
            return None
        _write_record(record, digest)
    _MEMO[version] = digest
    return digest


def _hash_file(path: str) -> str:
    return content_digest(path)[0]


def content_digest(path: str) -> tuple[str, os.stat_result]:
    """xxh3-64 of a local file's bytes, read now (no cache), and the ``fstat`` of what was read."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_size == 0:
            return xxhash.xxh3_64_hexdigest(b""), st
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            digest = xxhash.xxh3_64_hexdigest(m)
    return digest, st


def _record_path(version: tuple[str, int, int, int, int]) -> str | None:
    try:
        root = cache_root()
    except OSError:
        return None
    key = xxhash.xxh3_128_hexdigest(json.dumps(version).encode())
    return os.path.join(root, _DIGESTS_DIR, key[:2], key)


def _read_record(record: str | None) -> str | None:
    if record is None:
        return None
    try:
        with open(record, encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 16 and all(c in "0123456789abcdef" for c in text) else None


def _write_record(record: str | None, digest: str) -> None:
    if record is None:
        return
    shard = os.path.dirname(record)
    if shard not in _SWEPT:  # once per directory and process: a listing costs ~0.5 ms
        _SWEPT.add(shard)
        with contextlib.suppress(OSError):  # a read-only cache root: left in place
            remove_dead_tmp(shard, _is_record)  # temporaries of killed writers
    # A read-only cache root: the file is hashed again next time.
    with contextlib.suppress(OSError), atomic_sink(record) as sink:
        sink.write(digest.encode())


_SWEPT: set[str] = set()  # record directories this process has removed dead temporaries in


def _is_record(name: str) -> bool:
    return _RECORD_RE.match(name) is not None


def digest_shards(cache_dir: str) -> list[str]:
    """The digest cache's record directories (``digests/<xx>/``) under ``cache_dir``."""
    top = os.path.join(cache_dir, _DIGESTS_DIR)
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return []
    return [os.path.join(top, n) for n in names if re.fullmatch(r"[0-9a-f]{2}", n)]


def is_digest_record(directory: str, name: str) -> bool:
    """Whether ``name`` in ``directory`` is the name of a digest-cache record."""
    parent, shard = os.path.split(os.path.abspath(directory))
    return (
        os.path.basename(parent) == _DIGESTS_DIR
        and _RECORD_RE.match(name) is not None
        and name[:2] == shard
    )


def manifest_problems(
    found: Iterable[str], manifest: Mapping[str, ChunkEntry]
) -> tuple[list[str], list[str]]:
    """(missing, extra) file names of a directory against its manifest."""
    names = {os.path.basename(f.rstrip("/")) for f in found}
    missing = sorted(set(manifest) - names)
    extra = sorted(names - set(manifest))
    return missing, extra


def mismatch_error(
    directory: str, chunks: int, missing: Sequence[str], extra: Sequence[str]
) -> IncompleteCorpusError:
    """The error of a chunk directory whose files are not the ``chunks`` its manifest lists."""
    parts = [f"missing {few(missing)}"] if missing else []
    parts += [f"not listed {few(extra)}"] if extra else []
    return IncompleteCorpusError(
        f"Chunk directory {directory!r} does not match its manifest {MANIFEST_NAME} "
        f"({chunks} chunk(s)): {'; '.join(parts)}. Rewrite it with `write_chunks`, or pass "
        "`allow_incomplete=True` to open the files present."
    )


def few(names: Sequence[str], limit: int = 5) -> str:
    """``names`` for a message: the first ``limit`` of them, and how many more."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
