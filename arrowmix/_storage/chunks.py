"""Chunk files: stream record batches into size-bounded Arrow IPC files, and find them again.

:func:`write_batches` consumes an iterator of record batches of any length with bounded memory:
small input batches are coalesced into record batches of about ``_BATCH_ROWS`` rows (few, large
batches keep ``take`` fast), and a new file starts when ``rows_per_chunk`` rows or
``bytes_per_chunk`` bytes are reached. Every file is written under a temporary name and renamed
into place when complete; a local one is synced to disk on a thread while the next is written
(``writeback.py``), every one before the manifest. Names sort naturally: ``chunk-00000.arrow``,
``chunk-00001.arrow``...

Each chunk's schema metadata marks it as written by arrowmix (``{"kind": "chunk"}`` under the
``arrowmix`` key), its bytes are hashed on the way out, and the manifest ``_manifest.json``
listing every chunk with its rows, size and digest (and each record batch's byte range,
rows and digest, which locate damage: see ``damage.py``) is written last (see
``digests.py``): a directory of marked chunks without a manifest is a write that did not
finish.

Rewriting a local corpus (``overwrite=True``) writes the new one whole into a staging directory
inside ``out_dir`` and then swaps it in (see ``swap.py``): until the swap the old corpus is
complete and openable, and a kill at any point is finished or undone by the next call. What an
overwrite replaces is the previous corpus only: the chunks its manifest lists, marked chunks of
an unfinished write, and the manifest. Any other file stays; a ``chunk-*.arrow`` that arrowmix
did not write is refused (:class:`TargetExistsError`), never deleted.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from arrowmix._storage import integrity
from arrowmix._storage.atomic import remove_dead_tmp
from arrowmix._storage.digests import (
    MANIFEST_NAME,
    ChunkEntry,
    read_manifest,
    remove_manifest,
    stat_entry,
    write_manifest,
)
from arrowmix._storage.fs import ensure_parent, is_local, join, local_path, url_to_fs
from arrowmix._storage.globs import glob_files, has_magic
from arrowmix._storage.ipc import META_KEY, read_meta, write_file_hashed
from arrowmix._storage.swap import STAGING_PREFIX, commit_staged, new_staging, recover_staging
from arrowmix._storage.writeback import Writeback
from arrowmix._validate import check_int
from arrowmix.exceptions import ChunkFileError, TargetExistsError

__all__ = [
    "CHUNK_PATTERN",
    "DEFAULT_BYTES_PER_CHUNK",
    "Spec",
    "is_arrowmix_chunk",
    "list_chunk_files",
    "list_remote_chunks",
    "natural_key",
    "write_batches",
]

DEFAULT_BYTES_PER_CHUNK = 256 * 2**20
CHUNK_PATTERN = re.compile(r"^chunk-(\d+)\.arrow$")
# Few, large record batches make random reads cheap (one `take` per batch touched); the
# writer holds at most one such batch while coalescing small inputs.
_BATCH_ROWS = 256 * 1024
_BATCH_BYTES = 128 * 2**20
_NOT_DATA = re.compile(r"^(cache-|indices-|tmp-)")
_CHUNK_META = {"kind": "chunk", "format": 1}
_T = TypeVar("_T")


def _marked(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the arrowmix chunk marker (no version: same data, same bytes)."""
    meta = dict(schema.metadata or {})
    meta[META_KEY] = json.dumps(_CHUNK_META, sort_keys=True).encode()
    return schema.with_metadata(meta)


def is_arrowmix_chunk(schema: pa.Schema) -> bool:
    """True if a chunk file with this schema was written by ``write_chunks``."""
    try:
        return read_meta(schema).get("kind") == "chunk"
    except (ValueError, AttributeError):
        return False


def write_batches(
    batches: Iterable[pa.RecordBatch],
    out_dir: str,
    *,
    rows_per_chunk: int | None = None,
    bytes_per_chunk: int | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write record batches (one schema) into chunk files in ``out_dir``; return their paths."""
    rows_per_chunk = check_int("rows_per_chunk", rows_per_chunk, minimum=1, none_ok=True)
    bytes_per_chunk = check_int("bytes_per_chunk", bytes_per_chunk, minimum=1, none_ok=True)
    if rows_per_chunk is None and bytes_per_chunk is None:
        bytes_per_chunk = DEFAULT_BYTES_PER_CHUNK
    replaced = _prepare_dir(out_dir, overwrite, storage_options)
    # A corpus to replace: write the new one beside it (inside out_dir), then swap it in.
    staging = None if replaced is None else new_staging(local_path(out_dir))
    dest = out_dir if staging is None else staging
    committing = False
    try:
        entries, schema = _write_all(
            batches, dest, rows_per_chunk, bytes_per_chunk, storage_options=storage_options
        )
        write_manifest(dest, entries, storage_options, schema)  # last: the corpus is complete
        if staging is not None and replaced is not None:
            committing = True  # from the journal on, a failure is finished by recovery
            commit_staged(local_path(out_dir), staging, [e.name for e in entries], replaced)
    except BaseException:
        if staging is not None and not committing:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    paths = [join(out_dir, e.name) for e in entries]
    if is_local(out_dir):
        for path in paths:
            # Validated as written: its first open needs no validation pass.
            _, ident = integrity.verified(local_path(path), remember=False)
            integrity.done(local_path(path), ident, remember=True)
    else:
        fs, _ = url_to_fs(out_dir, storage_options)
        paths = [fs.unstrip_protocol(url_to_fs(p, storage_options)[1]) for p in paths]
    return paths


def _write_all(
    batches: Iterable[pa.RecordBatch],
    dest: str,
    rows_per_chunk: int | None,
    bytes_per_chunk: int | None,
    *,
    storage_options: Mapping[str, Any] | None,
) -> tuple[list[ChunkEntry], pa.Schema | None]:
    """Write the chunk files into ``dest``; return their manifest entries and their schema.

    Input with a schema but no rows gets one empty chunk, so the corpus reopens with it.
    """
    entries: list[ChunkEntry] = []
    it = iter(batches)
    first = next(it, None)
    if first is None:
        return entries, None
    schema = first.schema
    marked = _marked(schema)
    pending = _Pending(_chain(first, it), schema)
    # Local chunks are synced on a thread while the next one is written, all before the
    # manifest (which the caller writes once this returns).
    writeback = Writeback() if is_local(dest) else None
    try:
        while not pending.exhausted or not entries:
            name = f"chunk-{len(entries):05d}.arrow"
            path = join(dest, name)
            part = _validated(pending.take_chunk(rows_per_chunk, bytes_per_chunk), name)
            rows, size, digest, ranges = write_file_hashed(
                path, part, marked, storage_options=storage_options, sync=writeback is None
            )
            if writeback is not None:
                writeback.add(local_path(path))
                entries.append(stat_entry(local_path(path), rows, size, digest, ranges))
            else:
                entries.append(ChunkEntry(name, rows, size, digest, batches=ranges))
            pending.peek()
    except BaseException:
        if writeback is not None:
            writeback.abandon()
        raise
    if writeback is not None:
        writeback.finish()
    return entries, marked


def _validated(batches: Iterator[pa.RecordBatch], name: str) -> Iterator[pa.RecordBatch]:
    """``batches``, each structurally validated (offsets, UTF-8...) before it is written."""
    for batch in batches:
        try:
            batch.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise ValueError(f"Invalid Arrow data for {name}, not written: {exc}") from exc
        yield batch


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


class _Pending:
    """Cut a batch iterator into chunks, coalescing small batches into large ones."""

    def __init__(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> None:
        self._it = batches
        self._schema = schema
        self._head: pa.RecordBatch | None = None
        self.exhausted = False
        self.peek()

    def peek(self) -> None:
        while self._head is None or self._head.num_rows == 0:
            nxt = next(self._it, None)
            if nxt is None:
                self.exhausted = self._head is None or self._head.num_rows == 0
                return
            if not nxt.schema.equals(self._schema):
                raise ValueError(
                    "All batches written to chunks must share one schema; expected\n"
                    f"{self._schema}\ngot\n{nxt.schema}"
                )
            self._head = nxt

    def _next_piece(self, max_rows: int, max_bytes: int | None) -> pa.RecordBatch | None:
        self.peek()
        if self.exhausted or self._head is None:
            return None
        head = self._head
        if max_bytes is not None and head.nbytes > max_bytes:
            # Cut by the head's average row size so a chunk ends near its byte budget.
            per_row = max(1, head.nbytes // head.num_rows)
            max_rows = min(max_rows, max(1, -(-max_bytes // per_row)))
        if head.num_rows <= max_rows:
            self._head = None
            return head
        self._head = head.slice(max_rows)
        return head.slice(0, max_rows)

    def take_chunk(self, max_rows: int | None, max_bytes: int | None) -> Iterator[pa.RecordBatch]:
        rows_left = max_rows if max_rows is not None else 2**62
        bytes_used = 0
        group: list[pa.RecordBatch] = []
        group_rows = group_bytes = 0
        while rows_left > 0 and (max_bytes is None or bytes_used < max_bytes):
            budget = None if max_bytes is None else max_bytes - bytes_used
            piece = self._next_piece(min(rows_left, _BATCH_ROWS - group_rows), budget)
            if piece is None:
                break
            group.append(piece)
            group_rows += piece.num_rows
            group_bytes += piece.nbytes
            rows_left -= piece.num_rows
            bytes_used += piece.nbytes
            if group_rows >= _BATCH_ROWS or group_bytes >= _BATCH_BYTES:
                yield _coalesce(group)
                group, group_rows, group_bytes = [], 0, 0
        if group:
            yield _coalesce(group)


def _coalesce(group: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(group) == 1:
        return group[0]
    return pa.Table.from_batches(group).combine_chunks().to_batches()[0]


def _prepare_dir(
    out_dir: str, overwrite: bool, storage_options: Mapping[str, Any] | None
) -> list[str] | None:
    """Check ``out_dir``; the names of a local corpus to replace (None: nothing to replace)."""
    if is_local(out_dir):
        d = local_path(out_dir)
        _check_local_dir(d)
        recover_staging(d)  # a rewrite killed earlier: finish or undo it first
        manifest = os.path.join(d, MANIFEST_NAME)
        if os.path.isdir(manifest):
            raise TargetExistsError(
                f"`out_dir` {out_dir!r} has a directory in the place of the manifest "
                f"{manifest!r}; move it away (write_chunks writes a file there)."
            )
    existing = _existing_chunks(out_dir, storage_options)
    if existing and not overwrite:
        raise FileExistsError(
            f"`out_dir` {out_dir!r} already holds {len(existing)} chunk file(s) "
            f"(e.g. {existing[0]!r}); pass `overwrite=True` or choose an empty directory."
        )
    if is_local(out_dir):
        os.makedirs(d, exist_ok=True)
        # Temporary files of killed writers of chunks (and of markers such as _COMPLETE.json)
        remove_dead_tmp(d, lambda n: bool(CHUNK_PATTERN.match(n)) or n[0] == "_")
        return _replaceable(d, existing) if existing else None
    # The manifest goes first: a rewrite killed half-way must not look complete.
    remove_manifest(out_dir, storage_options)
    chunks = [p for p in existing if not p.endswith(MANIFEST_NAME)]
    fs, p = url_to_fs(out_dir, storage_options)
    ensure_parent(fs, p, out_dir)
    for path in chunks:
        fs.rm(url_to_fs(path, storage_options)[1])
    return None


def _replaceable(d: str, existing: list[str]) -> list[str]:
    """The chunk names of the corpus in ``d`` that an overwrite replaces; refuse foreign ones.

    Replaced: the chunks the manifest lists and chunks arrowmix marked (an unfinished write).
    """
    manifest = read_manifest(d) or {}
    names = sorted(
        os.path.basename(p) for p in existing if CHUNK_PATTERN.match(os.path.basename(p))
    )
    foreign = [n for n in names if n not in manifest and not _marked_file(os.path.join(d, n))]
    if foreign:
        raise TargetExistsError(
            f"`out_dir` {d!r} holds chunk file(s) that write_chunks did not write: "
            f"{', '.join(foreign[:5])}{' ...' if len(foreign) > 5 else ''}. overwrite=True "
            "replaces only a corpus written by write_chunks; move them away first."
        )
    return names


def _marked_file(path: str) -> bool:
    try:
        with pa.memory_map(path) as source:
            return is_arrowmix_chunk(pa.ipc.open_file(source).schema)
    except (OSError, pa.ArrowInvalid):
        return False


def _check_local_dir(d: str) -> None:
    """Raise ``NotADirectoryError`` naming ``d`` (or its ancestor) if a file is in the way."""
    probe = os.path.abspath(d)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if os.path.exists(probe) and not os.path.isdir(probe):
        where = "is a file" if probe == os.path.abspath(d) else f"is below the file {probe!r}"
        raise NotADirectoryError(
            errno.ENOTDIR, f"`out_dir` {d!r} {where}; chunk files are written into a directory."
        )


def _existing_chunks(out_dir: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    if is_local(out_dir):
        d = local_path(out_dir)
        names = os.listdir(d) if os.path.isdir(d) else []
        return [os.path.join(d, n) for n in names if _is_corpus_file(n)]
    fs, p = url_to_fs(out_dir, storage_options)
    if not fs.isdir(p):
        return []
    found = [f for f in fs.ls(p, detail=False) if _is_corpus_file(f.rsplit("/", 1)[-1])]
    return [fs.unstrip_protocol(f) for f in found]


def _is_corpus_file(name: str) -> bool:
    return bool(CHUNK_PATTERN.match(name)) or name == MANIFEST_NAME


def natural_key(path: str) -> list[Any]:
    """Sort key of a path that orders its numbers by value (``chunk-2`` before ``chunk-10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


Spec = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def list_chunk_files(spec: Spec, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Resolve a directory, glob, file, URL or list of them to chunk file paths.

    A directory yields its own ``*.arrow`` files (not those of subdirectories) except
    arrowmix's cache, indices and temporary files; a glob is expanded as every surface does
    (``arrowmix._storage.globs``: ``**`` is recursive). Natural order (``chunk-2`` before
    ``chunk-10``).
    """
    return _each_spec(spec, lambda s: _resolve_one(s, storage_options))


def list_remote_chunks(
    spec: Spec, storage_options: Mapping[str, Any] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Remote chunk files of ``spec`` (as :func:`list_chunk_files`) with their listing entries.

    Each entry is the store's description of the object (size, ETag, modification time...)
    from the listing itself: one request per directory, with no existence checks around it.
    """
    parents: dict[str, dict[str, dict[str, Any]]] = {}  # files named one by one: one listing
    return _each_spec(spec, lambda s: _listed_remote(s, storage_options, parents))


def _each_spec(spec: Spec, resolve: Callable[[str], list[_T]]) -> list[_T]:
    """What ``resolve`` finds for each spec, in order; a spec finding nothing is an error."""
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not specs:
        raise ChunkFileError("`path_or_glob_or_list` is an empty list: no chunk files to open.")
    out: list[_T] = []
    for s in (os.fspath(x) for x in specs):
        try:
            found = resolve(s)
        except PermissionError as exc:
            raise PermissionError(exc.errno, f"Listing {s!r} was refused: {exc}") from exc
        if not found:
            raise ChunkFileError(
                f"No Arrow chunk files (*.arrow) found at {s!r}; write some with "
                "`arrowmix.write_chunks(data, out_dir)`."
            )
        out.extend(found)
    return out


def _resolve_one(s: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    if is_local(s):
        p = local_path(s)
        if os.path.isdir(p):
            listed = os.listdir(p)
            if any(n.startswith(STAGING_PREFIX) for n in listed):
                recover_staging(p)  # a rewrite killed earlier: finish or undo it first
                listed = os.listdir(p)
            names = [n for n in listed if n.endswith(".arrow") and not _NOT_DATA.match(n)]
            return sorted((os.path.join(p, n) for n in names), key=natural_key)
        if has_magic(p):
            return sorted(glob_files(p), key=natural_key)
        if os.path.isfile(p):
            return [p]
        raise ChunkFileError(f"No such file or directory: {s!r}.")
    return [url for url, _ in _listed_remote(s, storage_options)]


def _listed_remote(
    s: str,
    storage_options: Mapping[str, Any] | None,
    parents: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """``(url, entry)`` of the chunk files of one remote spec, in natural order.

    ``parents``: the entries of directories listed already, by path, for specs naming one
    ``.arrow`` file each (then found in their directory's listing, made once).
    """
    fs, p = url_to_fs(s, storage_options)
    parent, _, name = fs._strip_protocol(p).rstrip("/").rpartition("/")
    if parents is not None and name.endswith(".arrow") and not has_magic(p):
        if parent not in parents:
            try:
                listed = fs.ls(parent, detail=True)
            except FileNotFoundError:
                listed = []
            parents[parent] = {fs._strip_protocol(e["name"]).rstrip("/"): e for e in listed}
        entry = parents[parent].get(f"{parent}/{name}")
        if entry is None:  # a store that lists nothing (HTTP without an index): ask the file
            entry = _file_info(fs, p)
        if entry is not None and entry.get("type") != "directory":
            return [(fs.unstrip_protocol(entry["name"]), entry)]
        if entry is None:
            raise ChunkFileError(f"No such file or directory: {s!r}.")
    if has_magic(p):
        found = list(glob_files(s, storage_options).values())
    else:
        # One listing says all: a directory (its entries), a file (itself), or nothing.
        try:
            listed = fs.ls(p, detail=True)
        except FileNotFoundError:
            listed = []
        me = fs._strip_protocol(p).rstrip("/")
        if len(listed) == 1 and fs._strip_protocol(listed[0]["name"]).rstrip("/") == me:
            found = [e for e in listed if e.get("type") != "directory"]
        else:
            found = [
                e for e in listed
                if e.get("type") != "directory" and e["name"].endswith(".arrow")
                and not _NOT_DATA.match(e["name"].rstrip("/").rsplit("/", 1)[-1])
            ]  # fmt: skip
        if not found and me.endswith(".arrow"):  # a file the store does not list (HTTP)
            info = _file_info(fs, p)
            found = [] if info is None else [info]
            listed = listed or found
        if not listed:
            raise ChunkFileError(f"No such file or directory: {s!r}.")
    urls = [(fs.unstrip_protocol(e["name"]), e) for e in found]
    return sorted(urls, key=lambda u: natural_key(u[0]))


def _file_info(fs: Any, path: str) -> dict[str, Any] | None:
    """``fs.info`` of the file ``path``, or None when there is no such file."""
    try:
        info: dict[str, Any] = fs.info(path)
    except FileNotFoundError:
        return None
    return None if info.get("type") == "directory" else info
