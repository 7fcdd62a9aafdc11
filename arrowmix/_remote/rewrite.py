"""Tell a corpus rewritten since it was opened from one damaged or replaced chunk object.

A bounded remote dataset pairs each chunk's digest, read from its directory's manifest, with
the version tag (ETag) of one listing made at the same time. ``write_chunks`` rewrites a
remote corpus by removing its manifest, writing the new chunks, then writing the new
manifest; a rewrite landing between the manifest's read and the listing's answer pairs the
old digests with the new objects' tags, and one landing after the open leaves the old pair
in place while the objects change. Either way a copy's digest no longer matches, which on
its own looks like a damaged object.

So on a mismatch (and on a short answer from a new version) the manifest is read once more,
by one GET: if it is gone, no longer lists the chunk, or records another digest for it, the
corpus was rewritten, and :class:`~arrowmix.exceptions.ObjectChangedError` says so and asks
for a reopen, with no further download. If it still records the digest the dataset opened
with, the object itself is at fault (replaced by hand, or damaged) and the caller's checks
go on. A copy that matches its digest costs no request here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arrowmix._remote.meta import RemoteChunk
from arrowmix._storage.digests import Manifest, read_remote_manifest
from arrowmix.exceptions import ObjectChangedError

__all__ = ["chunk_rewritten", "directory_rewritten", "rewritten_error"]


def chunk_rewritten(chunk: RemoteChunk, storage_options: Mapping[str, Any] | None) -> str | None:
    """How the manifest of ``chunk``'s directory differs now from the one it was opened with.

    One GET of the manifest. None when it still records ``chunk``'s digest, and when it
    cannot be read now (the caller's own checks then decide).
    """
    directory, name = chunk.url.rstrip("/").rsplit("/", 1)
    try:
        manifest = read_remote_manifest(directory, storage_options)
    except OSError:
        return None
    if manifest is None:
        return (
            f"its manifest is gone or unreadable and {name!r} no longer has the digest it "
            "was opened with (a rewrite is under way)"
        )
    entry = manifest.chunks.get(name)
    if entry is None:
        return f"its manifest no longer lists {name!r}"
    if entry.digest != chunk.digest:
        return (
            f"its manifest now records another digest for {name!r} ({entry.digest}, not "
            f"{chunk.digest} as when it was opened)"
        )
    return None


def directory_rewritten(
    directory: str, before: Manifest | None, storage_options: Mapping[str, Any] | None
) -> str | None:
    """How the manifest of ``directory`` differs now from ``before`` (one GET); None if not."""
    try:
        now = read_remote_manifest(directory, storage_options)
    except OSError:
        return None
    if now is None:
        return None if before is None else "its manifest is gone (a rewrite is under way)"
    if before is None or now.chunks != before.chunks:
        return "its manifest changed while the directory was listed"
    return None


def rewritten_error(directory: str, why: str, *, opening: bool = False) -> ObjectChangedError:
    """The error of the corpus in ``directory`` rewritten while a dataset opened or read it.

    ``opening``: the open showed it (nothing was read yet), not a chunk's copy.
    """
    when = "while it was being opened" if opening else "while or after it was opened"
    return ObjectChangedError(
        f"The corpus {directory!r} was rewritten {when}: {why}. Reopen it with `from_chunks` "
        "to read the new version; nothing of the new version was used."
    )
