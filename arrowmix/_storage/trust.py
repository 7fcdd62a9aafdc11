"""Records of verified cache files, one per cache directory, so a file is hashed once.

A cache file whose checksum matched is recorded against its ``stat`` identity (device, inode,
size, modification and change times) in ``$ARROWMIX_CACHE/verified/dir-<hash>.json``, one
JSON file per cache directory (written atomically), so that a later process trusts it without
reading its bytes. Any write to the file, or a replacement by another file, changes that
identity and brings the hash back.

Power loss: a record is trusted in another boot only when the file's bytes were on disk when
it was written: the file was synced by this process before it was recorded (``synced``), or
its change time predates the boot (its bytes were read from disk). Other records name the
boot (``/proc/sys/kernel/random/boot_id``) they were made in, and a file they vouch for is
hashed again after a reboot, so a file torn by a power loss is never trusted.

An entry may also hold *facts* about the file (:func:`note`, :func:`facts`): what a reader
learnt from it once checked (rows, metadata), so that a later process can plan with a file it
has not opened yet. Facts count only while the entry vouches for the file's current identity;
they are kept under their own key of the record, which older readers ignore.

Several processes may update one record: each merges its entries into what is on disk when
it writes; an entry lost in a race only costs one more hash.

:func:`check` serves caches that know each file's size and content digest (remote copies,
generated corpora): a file is hashed once per ``stat`` identity, then trusted by it. File
times come from the kernel's coarse clock (a tick of 1-10 ms), so a write within the tick of
the identity checked would leave it unchanged: :func:`check` and :func:`vouch` record a file
only once that tick has passed (waiting for it if needed), and only if it is still unchanged.

:func:`write_sealed` and :func:`read_sealed` serve caches whose files record nothing else
about themselves (token boundaries, markers of cached corpora): the file carries its own
seal, a trailer with the xxh3 digest of its payload and of the *key* it was computed for
(what it was computed from: a content digest, a dtype...). A file damaged, truncated,
emptied, or moved or copied in the place of another key's file is not served: the caller
computes it again, with a ``CacheWarning`` naming the file.

:func:`corpus_problem` checks a corpus arrowmix keeps as a cache (``from_generator``'s,
``load_dataset``'s and ``from_json``/``from_csv``... ingested chunks) before it is served:
its ``_COMPLETE.json`` marker (sealed by :func:`marker_bytes`), its manifest, and each chunk
against the manifest's size and digest (:func:`check`).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import secrets
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import xxhash

from arrowmix._storage.in_place import coarse_ns
from arrowmix._storage.local import root_dir

__all__ = [
    "batch",
    "check",
    "corpus_problem",
    "facts",
    "file_digest",
    "flush",
    "identity",
    "marker_bytes",
    "moved",
    "note",
    "read_sealed",
    "record_checked",
    "remember",
    "synced",
    "trusted",
    "vouch",
    "write_sealed",
]

_Ident = tuple[int, ...]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, ValueError):
        return None


def _boot_time_ns() -> int | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return int(next(ln.split()[1] for ln in f if ln.startswith("btime "))) * 10**9
    except (OSError, StopIteration, ValueError):
        return None


_BOOT = _read("/proc/sys/kernel/random/boot_id")
_BOOT_NS = _boot_time_ns()
# identities of files this process synced to disk, and of files it checked by digest
_synced: set[_Ident] = set()
_known: set[_Ident] = set()
# loaded records by record path: {name: [*identity, boot, durable(, facts)]}; changed names
_records: dict[str, dict[str, list[Any]]] = {}
_changed: dict[str, set[str]] = {}
_batching = 0
# record paths by (what the root depends on, directory), and the directory of each record
_paths: dict[tuple[str | None, str | None, str], str] = {}
_batch_paths: dict[str, str] = {}
# the on-disk state (inode, size, mtime) of each record as this process last read or wrote it
_stamps: dict[str, tuple[int, ...] | None] = {}
_dirs: dict[str, str] = {}
# the records above are shared by the process's threads (downloads run in a pool)
_LOCK = threading.RLock()


def _record_path(directory: str) -> str:
    found = _batch_paths.get(directory)  # the root cannot change inside a batch
    if found is not None:
        return found
    env = os.environ
    where = (env.get("ARROWMIX_CACHE"), env.get("HOME"), directory)  # what root_dir reads
    found = _paths.get(where)
    if found is None:
        key = xxhash.xxh3_64_hexdigest(os.path.realpath(directory).encode())
        found = _paths[where] = os.path.join(root_dir(), "verified", f"dir-{key}.json")
    if _batching:
        _batch_paths[directory] = found
    return found


def _stamp(record: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(record)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _load(record: str) -> dict[str, list[Any]]:
    """The entries of ``record``, each with its facts when it has some.

    Facts are kept under their own key on disk, so an arrowmix that knows none reads the rest.
    """
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        with open(record, encoding="utf-8") as f:
            data = json.load(f)
        files, noted = data["files"], data.get("facts") or {}
        if isinstance(files, dict) and isinstance(noted, dict):
            out = {k: v[:7] for k, v in files.items() if isinstance(v, list) and len(v) == 7}
            for k, v in noted.items():
                if k in out and isinstance(v, dict):
                    out[k].append(v)
            return out
    return {}


def _entries(path: str) -> tuple[str, str, dict[str, list[Any]]]:
    directory, name = os.path.split(os.path.abspath(path))
    with _LOCK:
        record = _record_path(directory)
        _dirs[record] = directory
        if record not in _records:
            _stamps[record] = _stamp(record)
            _records[record] = _load(record)
        return record, name, _records[record]


def identity(path: str) -> _Ident:
    """The ``stat`` identity of ``path``: device, inode, size, modification and change times."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _vouched(path: str, ident: _Ident) -> list[Any] | None:
    """The entry of ``path`` when it vouches for ``path`` in state ``ident``."""
    _, name, files = _entries(path)
    entry = files.get(name)
    if entry is None or tuple(entry[:5]) != ident:
        return None
    return entry if entry[6] or (_BOOT is not None and entry[5] == _BOOT) else None


def trusted(path: str, ident: _Ident) -> bool:
    """Whether the record of ``path``'s directory vouches for ``path`` in state ``ident``."""
    return _vouched(path, ident) is not None


def facts(path: str, ident: _Ident) -> dict[str, Any] | None:
    """The facts noted about ``path`` when the record vouches for it in state ``ident``."""
    entry = _vouched(path, ident)
    found = entry[7] if entry is not None and len(entry) == 8 else None
    return found if isinstance(found, dict) else None


def note(path: str, ident: _Ident, found: dict[str, Any]) -> None:
    """Keep ``found`` (JSON values) with the entry vouching for ``path`` in state ``ident``."""
    _, name, files = _entries(path)
    entry = files.get(name)
    if entry is not None and tuple(entry[:5]) == ident and entry[7:] != [found]:
        _set(path, [*entry[:7], found])


def synced(ident: _Ident) -> None:
    """Note that the file with identity ``ident`` was synced to disk by this process."""
    _synced.add(ident)


def remember(path: str, ident: _Ident) -> None:
    """Record that ``path`` (identity ``ident``) checked out; written at once unless batched."""
    durable = ident in _synced or (_BOOT_NS is not None and ident[4] < _BOOT_NS)
    _set(path, [*ident, _BOOT, durable])


def moved(path: str, before: _Ident, after: _Ident) -> None:
    """``path`` went from ``before`` to ``after`` without a content change (a touch)."""
    _, name, files = _entries(path)
    entry = files.get(name)
    if entry is not None and tuple(entry[:5]) == before:
        _set(path, [*after, *entry[5:]])


def check(path: str, size: int, digest: str) -> str | None:
    """What is wrong with ``path`` if it does not hold ``size`` bytes of xxh3-64 ``digest``.

    None when it does: known from an earlier check of the file in its current ``stat``
    identity (in this process, or recorded), else hashed now and recorded.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    ident = identity(path)
    if ident not in _known and not trusted(path, ident):
        _reload(path)  # another process may have recorded it since this one read the record
    if ident in _known or trusted(path, ident):
        _known.add(ident)
        return None
    if ident[2] != size:
        return f"{ident[2]} bytes where {size} were recorded (truncated or replaced)"
    got = file_digest(path)
    if got != digest:
        return f"damaged: its bytes hash to {got} where {digest} was recorded"
    _record_settled(path, ident)
    return None


def _reload(path: str) -> None:
    """Read ``path``'s directory record again, keeping this process's unwritten entries."""
    with _LOCK:
        record, _, files = _entries(path)
        ours = {n: files[n] for n in _changed.get(record, ()) if n in files}
        _records[record] = {**_load(record), **ours}


def _record_settled(path: str, ident: _Ident) -> None:
    """Record ``path`` in state ``ident`` once its time tick has passed, if still unchanged.

    A file stamped in the future (beyond the wait of at most 0.1 s) is not recorded.
    """
    for _ in range(100):
        if coarse_ns() > max(ident[3], ident[4]):
            break
        time.sleep(0.001)
    else:
        return
    with contextlib.suppress(FileNotFoundError):
        if identity(path) == ident:
            _known.add(ident)
            remember(path, ident)


def record_checked(path: str, ident: _Ident) -> None:
    """Record that ``path`` checked out in state ``ident`` (hashed by the caller).

    Recorded once the time tick of ``ident`` has passed, and only if ``path`` is still in
    that state, as :func:`check` records what it hashed.
    """
    _record_settled(path, ident)


def file_digest(path: str) -> str:
    """The xxh3-64 digest of the whole (non-empty) file at ``path``."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return xxhash.xxh3_64_hexdigest(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return xxhash.xxh3_64_hexdigest(m)


def vouch(path: str, *, durable: bool = False) -> None:
    """Record ``path`` as checked in its current state (its writer checked its bytes).

    ``durable``: its bytes were synced to disk before its current identity (e.g. a rename).
    """
    ident = identity(path)
    if durable:
        _synced.add(ident)
    _record_settled(path, ident)


def _set(path: str, entry: list[Any]) -> None:
    with _LOCK:
        record, name, files = _entries(path)
        files[name] = entry
        _changed.setdefault(record, set()).add(name)
        if not _batching:
            flush()


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Write the records changed inside the block once, at its end."""
    global _batching
    with _LOCK:
        _batching += 1
    try:
        yield
    finally:
        with _LOCK:
            _batching -= 1
            if not _batching:
                _batch_paths.clear()
                flush()


def flush() -> None:
    """Write every changed record (merged into what is on disk now), atomically."""
    with _LOCK:
        _flush()


def _flush() -> None:
    while _changed:
        record, names = _changed.popitem()
        ours = _records[record]
        with contextlib.suppress(OSError):
            files = ours  # unless another process wrote the record since this one read it
            if _stamps.get(record, ()) != _stamp(record):
                files = {**_load(record), **{n: ours[n] for n in names if n in ours}}
            present = set(os.listdir(_dirs[record]))  # entries of removed files are dropped
            files = {n: e for n, e in files.items() if n in present}
            _records[record] = files
            os.makedirs(os.path.dirname(record), exist_ok=True)
            tmp = f"{record}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            try:
                data = {
                    "dir": _dirs[record],
                    "files": {n: e[:7] for n, e in files.items()},
                    "facts": {n: e[7] for n, e in files.items() if len(e) == 8},
                }
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(json.dumps(data, separators=(",", ":")))  # C encoder: 10x dump
                os.replace(tmp, record)
                _stamps[record] = _stamp(record)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise


_SEAL = b"AMXSEAL1"
_TRAILER = struct.Struct("<QI8s8s")  # payload bytes, key bytes, digest, magic


def _seal_digest(payload: bytes, key: bytes) -> bytes:
    h = xxhash.xxh3_64(payload)
    h.update(key)
    return h.digest()


def write_sealed(path: str, payload: bytes, key: str) -> None:
    """Write ``payload`` to ``path`` atomically, sealed for ``key`` (see the module)."""
    from arrowmix._storage.atomic import atomic_sink

    k = key.encode()
    trailer = _TRAILER.pack(len(payload), len(k), _seal_digest(payload, k), _SEAL)
    with atomic_sink(path, sync=False) as sink:
        sink.write(payload)
        sink.write(k)
        sink.write(trailer)


def read_sealed(path: str, key: str, what: str) -> bytes | None:
    """The payload of the sealed file ``path`` when it is whole and sealed for ``key``.

    None when there is no such file; also, with a ``CacheWarning`` naming the file and
    ``what`` it holds (it is then computed again), when its seal does not match.
    """
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    k = key.encode()
    problem = None
    if len(blob) < _TRAILER.size:
        problem = f"{len(blob)} bytes, shorter than its seal (truncated or emptied)"
    else:
        size, klen, digest, magic = _TRAILER.unpack_from(blob, len(blob) - _TRAILER.size)
        if magic != _SEAL or size + klen + _TRAILER.size != len(blob):
            problem = "its seal is missing or its length does not match (damaged or truncated)"
        elif blob[size : size + klen] != k:
            problem = "it was computed for another input (moved or copied in its place)"
        elif _seal_digest(blob[:size], k) != digest:
            problem = "its bytes do not hash to its seal (damaged)"
        else:
            return blob[:size]
    from arrowmix._warn import warn
    from arrowmix.exceptions import CacheWarning

    warn(f"Cache file {path!r} ({what}) cannot be used: {problem}. Computing it again.",
         CacheWarning)  # fmt: skip
    return None


def marker_bytes(info: dict[str, Any]) -> bytes:
    """The JSON of a cached corpus's marker ``info``, sealed (its ``seal``: an xxh3 of the rest)."""
    body = {k: v for k, v in info.items() if k != "seal"}
    seal = xxhash.xxh3_64_hexdigest(json.dumps(body, sort_keys=True).encode())
    return json.dumps({**body, "seal": seal}, indent=1).encode()


def _marker(path: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        with open(path, "rb") as f:
            info = json.loads(f.read())
    except FileNotFoundError:
        return None, "its marker is missing"
    except (OSError, ValueError) as exc:
        return None, f"its marker {path!r} cannot be read ({exc})"
    if not isinstance(info, dict):
        return None, f"its marker {path!r} is not a JSON object"
    seal = info.get("seal")
    if seal is not None and json.loads(marker_bytes(info))["seal"] != seal:
        return None, f"its marker {path!r} does not match its seal (damaged or edited)"
    return info, None


def corpus_problem(out: str, marker: str) -> tuple[dict[str, Any] | None, str | None]:
    """The marker of the finished cached corpus in ``out``, or why it must not be served.

    Checked: the marker parses (and matches its seal, when it has one), the manifest lists
    the chunks, every chunk holds the size and digest the manifest records (a ``stat`` for
    a chunk already checked in its current identity), and the marker's ``input_rows`` (when
    it has them) add up to the manifest's rows.
    """
    from arrowmix._storage.digests import MANIFEST_NAME, read_manifest

    info, why = _marker(marker)
    if info is None:
        return None, why
    entries = read_manifest(out)
    if not entries:
        return None, f"its manifest {os.path.join(out, MANIFEST_NAME)!r} is missing or damaged"
    with batch():
        for name, entry in entries.items():
            try:
                why = check(os.path.join(out, name), entry.size, entry.digest)
            except FileNotFoundError:
                why = "it is missing"
            if why is not None:
                return None, f"chunk {name!r}: {why}"
    counts = info.get("input_rows")
    if counts is not None:
        rows = sum(e.rows for e in entries.values())
        if not isinstance(counts, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts
        ):
            return None, f"its marker's input_rows are not row counts: {counts!r}"
        if sum(counts) != rows:
            return None, f"its marker's input_rows add up to {sum(counts)}, its chunks hold {rows}"
    return info, None
