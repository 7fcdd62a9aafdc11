"""Errors for recorded data whose bytes no longer match their record, and where the damage is.

A chunk file listed in its directory's ``_manifest.json``, or a data file of a
``save_to_disk`` listed in its ``state.json``, has a content digest recorded when it was
written. The opener compares it with the digest of the bytes it maps whenever that digest is
computed (whenever the file's ``stat`` identity is not the one recorded), and raises
:func:`mismatch` on a difference: the data is never served under another fingerprint as if
it were the user's.

The error names the file and the record batch and rows the damage is in. ``write_chunks``
(in the manifest) and ``save_to_disk`` (in ``state.json``, :data:`BATCHES_KEY`) record, per
record batch, ``[start, end, rows, digest]``: the byte range written for it (the
first one's includes the file's magic and schema) and the xxh3-64 of those bytes, so the
damaged batch is found by hashing the ranges (on the error path only). A file without that
record (written by an older release) is searched for a batch that fails
``RecordBatch.validate(full=True)`` (damaged offsets, invalid UTF-8); damage to values that
leaves every batch valid is then located by the whole file's digest only, and the error says
so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import xxhash

from arrowmix.exceptions import ChunkFileError

__all__ = ["BATCHES_KEY", "batch_record", "locate", "mismatch"]

#: Key of the per-batch record of each data file in a save's ``state.json``.
BATCHES_KEY = "_arrowmix_batches"


def batch_record(path: str) -> list[list[Any]]:
    """``[start, end, rows, digest]`` of each record batch of the IPC *stream* at ``path``.

    The first batch's range starts at 0 (the schema message is included), as ``write_chunks``
    records it for a file.
    """
    buf = pa.memory_map(path, "r").read_buffer()
    view = memoryview(buf)
    source = pa.BufferReader(buf)
    messages = pa.ipc.MessageReader.open_stream(source)
    schema = None
    out: list[list[Any]] = []
    start = 0
    while True:
        try:
            message = messages.read_next_message()
        except StopIteration:
            break
        end = source.tell()
        if message.type == "schema":
            schema = pa.ipc.read_schema(message)
            continue
        if message.type != "record batch" or schema is None:
            continue  # (dictionary batches belong to the batch after them)
        rows = pa.ipc.read_record_batch(message, schema).num_rows
        out.append([start, end, rows, xxhash.xxh3_64_hexdigest(view[start:end])])
        start = end
    return out


def _recorded(path: str, batches: Any) -> str | None:
    """The batches whose recorded digest differs, as a phrase; None if unusable or all match."""
    try:
        ranges = [(int(a), int(b), int(n), str(d)) for a, b, n, d in batches]
        buf = pa.memory_map(path, "r").read_buffer()
    except (TypeError, ValueError, OSError):
        return None
    view = memoryview(buf)
    found = []
    row = 0
    for i, (start, end, rows, digest) in enumerate(ranges):
        if end > len(view) or xxhash.xxh3_64_hexdigest(view[start:end]) != digest:
            found.append(f"record batch {i} (rows {row} to {row + rows - 1} of the file)")
        row += rows
    if not found:
        return "its footer (every record batch holds what was recorded)"
    return ", ".join(found)


def _structural(path: str) -> str:
    """The first record batch that fails full validation, as a phrase."""
    batches: Iterator[pa.RecordBatch]
    try:
        buf = pa.memory_map(path, "r").read_buffer()
        if bytes(memoryview(buf)[:6]) == b"ARROW1":
            reader = pa.ipc.open_file(buf)
            batches = map(reader.get_batch, range(reader.num_record_batches))
        else:
            batches = iter(pa.ipc.open_stream(buf))
    except (pa.ArrowInvalid, OSError) as exc:
        return f"its footer or schema is unreadable ({exc})"
    start = 0
    i = 0
    try:
        for i, batch in enumerate(batches):
            try:
                batch.validate(full=True)
            except (pa.ArrowInvalid, OSError) as exc:
                last = start + batch.num_rows - 1
                return f"record batch {i} (rows {start} to {last} of the file): {exc}"
            start += batch.num_rows
    except (pa.ArrowInvalid, OSError) as exc:
        return f"record batch {i} or after (from row {start}): {exc}"
    return (
        "somewhere in its values (every record batch is structurally valid, and only the "
        "whole file's digest is recorded)"
    )


def locate(path: str, batches: Any = None) -> str:
    """Where in the Arrow IPC file (or stream) at ``path`` the damage is, as a phrase.

    Args:
        path: The damaged file.
        batches: The per-batch record ``write_chunks`` wrote in the manifest, if any.
    """
    found = None if batches is None else _recorded(path, batches)
    return _structural(path) if found is None else found


def mismatch(
    path: str, actual: str, recorded: str, record: str, repair: str, batches: Any = None
) -> ChunkFileError:
    """The error for ``path`` whose bytes hash to ``actual`` where ``record`` says ``recorded``.

    Args:
        path: The file.
        actual: The digest of the file's bytes now.
        recorded: The digest recorded when it was written.
        record: What recorded it (e.g. ``"its manifest _manifest.json"``).
        repair: How to repair it, a sentence.
        batches: The per-batch record, if any (see :func:`locate`).
    """
    return ChunkFileError(
        f"{path!r} is damaged: it does not hold what {record} recorded when it was written "
        f"(its bytes hash to {actual}, {recorded} recorded; damaged on disk, or changed in place "
        f"by another tool). Where: {locate(path, batches)}. {repair}"
    )
