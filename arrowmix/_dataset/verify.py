"""Check recorded digests against the bytes on disk: a chunk corpus or a saved dataset.

What arrowmix records when it writes data the user keeps:

- ``write_chunks``: every chunk's xxh3-64 digest in the directory's ``_manifest.json``;
- ``save_to_disk``: every data file's digest under ``_arrowmix_digests`` in ``state.json``
  (older saves: only the content fingerprint of all files, ``_arrowmix_content``).

A plain open trusts those records while a file's ``stat`` identity (inode, size, mtime,
ctime) is unchanged, and never reads the data to check them: damage that keeps the file's
structure valid (bit rot on disk, a value changed by a tool that restores every time) is not
seen. :func:`check_path` hashes every recorded file in full, at disk speed, and reports each
one that no longer matches (``verify=True`` on ``from_chunks``/``load_from_disk``, and
``arrowmix verify PATH``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from arrowmix._storage.atomic import writer_alive
from arrowmix._storage.chunks import CHUNK_PATTERN
from arrowmix._storage.digests import (
    MANIFEST_NAME,
    content_digest,
    manifest_damage,
    read_manifest,
)
from arrowmix._storage.swap import STAGING_RE

__all__ = ["DIGESTS_KEY", "Report", "check_chunks", "hash_file"]

#: Key of the per-file digests ``save_to_disk`` records in ``state.json``.
DIGESTS_KEY = "_arrowmix_digests"


@dataclass
class Report:
    """What a check found: files checked, bytes hashed, and ``(path, problem)`` pairs."""

    kind: str
    files: int = 0
    nbytes: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)


def hash_file(path: str, report: Report) -> str | None:
    try:
        digest, st = content_digest(path)
    except OSError as exc:
        report.problems.append((path, f"cannot be read: {exc.strerror or exc}"))
        return None
    report.files += 1
    report.nbytes += st.st_size
    return digest


def check_chunks(directory: str) -> Report:
    """Hash every chunk ``directory``'s manifest lists; report missing, extra and changed ones.

    Raises:
        ValueError: ``directory`` has no valid manifest (the message says why: an overwrite
            under way or killed, a damaged manifest, or none at all).
    """
    manifest = read_manifest(directory)
    if manifest is None:
        raise ValueError(_no_manifest(directory))
    report = Report("chunks")
    present = {n for n in os.listdir(directory) if CHUNK_PATTERN.match(n)}
    for name in sorted(present - set(manifest)):
        report.problems.append((os.path.join(directory, name), "not listed in the manifest"))
    for name, entry in sorted(manifest.items()):
        path = os.path.join(directory, name)
        if name not in present:
            report.problems.append((path, "listed in the manifest, missing"))
            continue
        digest = hash_file(path, report)
        if digest is not None and digest != entry.digest:
            report.problems.append(
                (path, f"content digest {digest}, {entry.digest} recorded when written")
            )
    return report


def _no_manifest(directory: str) -> str:
    """Why ``directory`` has no manifest to check against, and what to do."""
    try:
        staged = [m for n in sorted(os.listdir(directory)) if (m := STAGING_RE.match(n))]
    except OSError:
        staged = []
    for m in staged:
        pid = int(m.group("pid"))
        path = os.path.join(directory, m.group(0))
        try:
            alive = writer_alive(pid, os.lstat(path).st_mtime)
        except OSError:
            continue
        if alive:
            return (
                f"{directory!r} is being overwritten by `write_chunks` (process {pid}, "
                f"staging in {m.group(0)}): verify it when that write is done."
            )
        return (
            f"{directory!r} was left mid-overwrite by a `write_chunks` that was killed "
            f"(process {pid}, staging in {m.group(0)}): open it with `from_chunks`, or run "
            f"`arrowmix cleanup-cache {directory}`, which finishes or undoes that write; then "
            "verify again."
        )
    damage = manifest_damage(directory)
    if damage is not None:
        return (
            f"{directory!r} has a damaged manifest {os.path.join(directory, MANIFEST_NAME)!r}: "
            f"{damage}. Its chunks cannot be checked; rewrite the corpus with `write_chunks`."
        )
    return (
        f"{directory!r} has no recorded digests: no {MANIFEST_NAME} (not a `write_chunks` "
        "output) and no state.json (not a `save_to_disk` output)."
    )
