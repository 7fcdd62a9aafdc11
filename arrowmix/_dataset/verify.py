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
from typing import Any

from arrowmix._storage.chunks import CHUNK_PATTERN
from arrowmix._storage.digests import MANIFEST_NAME, content_digest, read_manifest

__all__ = ["DIGESTS_KEY", "Report", "check_chunks", "check_path", "check_saved"]

#: Key of the per-file digests ``save_to_disk`` records in ``state.json``.
DIGESTS_KEY = "_arrowmix_digests"


@dataclass
class Report:
    """What a check found: files checked, bytes hashed, and ``(path, problem)`` pairs."""

    kind: str
    files: int = 0
    nbytes: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)


def _hash(path: str, report: Report) -> str | None:
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
        ValueError: ``directory`` has no (readable) manifest: nothing is recorded.
    """
    manifest = read_manifest(directory)
    if manifest is None:
        raise ValueError(
            f"{directory!r} has no recorded digests: no readable {MANIFEST_NAME} (not a "
            "`write_chunks` output) and no state.json (not a `save_to_disk` output)."
        )
    report = Report("chunks")
    present = {n for n in os.listdir(directory) if CHUNK_PATTERN.match(n)}
    for name in sorted(present - set(manifest)):
        report.problems.append((os.path.join(directory, name), "not listed in the manifest"))
    for name, entry in sorted(manifest.items()):
        path = os.path.join(directory, name)
        if name not in present:
            report.problems.append((path, "listed in the manifest, missing"))
            continue
        digest = _hash(path, report)
        if digest is not None and digest != entry.digest:
            report.problems.append(
                (path, f"content digest {digest}, {entry.digest} recorded when written")
            )
    return report


def check_saved(directory: str, state: dict[str, Any]) -> Report:
    """Hash every data file ``state.json`` lists; report each whose digest differs.

    Raises:
        ValueError: the state records no digests (a directory HF ``datasets`` wrote).
    """
    from arrowmix._fingerprint.hasher import hash_value
    from arrowmix._hf.saved import _CONTENT_KEY

    names = [str(f["filename"]) for f in state.get("_data_files", [])]
    recorded = state.get(DIGESTS_KEY)
    content = state.get(_CONTENT_KEY)
    if not isinstance(recorded, dict) and not isinstance(content, str):
        raise ValueError(
            f"{directory!r} has no recorded digests in state.json (written by HF `datasets`, "
            "not arrowmix): nothing to verify."
        )
    report = Report("saved")
    digests = []
    for name in names:
        path = os.path.join(directory, name)
        digest = _hash(path, report)
        digests.append(digest)
        want = recorded.get(name) if isinstance(recorded, dict) else None
        if digest is not None and want is not None and digest != want:
            report.problems.append((path, f"content digest {digest}, {want} recorded when saved"))
    # An older save: one fingerprint over all files; a mismatch cannot name the file.
    older = not isinstance(recorded, dict) and None not in digests
    if older and hash_value(("from_chunks", digests)) != content:
        for name in names:
            report.problems.append(
                (os.path.join(directory, name), "the saved content fingerprint differs")
            )
    return report


def check_path(path: str) -> Report:
    """Check ``path``: a ``save_to_disk`` directory (``state.json``) or a chunk directory.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: nothing is recorded there to check against.
    """
    from arrowmix._hf.saved import STATE_NAME, _read_json

    directory = os.path.abspath(path)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"{path!r} does not exist.")
    if not os.path.isdir(directory):
        raise ValueError(
            f"{path!r} is a file; verify checks a directory written by `write_chunks` or "
            "`save_to_disk`."
        )
    if os.path.isfile(os.path.join(directory, STATE_NAME)):
        return check_saved(directory, _read_json(directory, STATE_NAME))
    return check_chunks(directory)
