"""Check a saved dataset's recorded digests against its files (``arrowmix verify``).

A ``save_to_disk`` directory (HF's layout, ``state.json``) is checked here, and a
DatasetDict's (``dataset_dict.json``: each split it lists); a chunk corpus by
:func:`arrowmix._dataset.verify.check_chunks`.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from arrowmix._dataset.verify import DIGESTS_KEY, Report, check_chunks, hash_file
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._hf.saved import CONTENT_KEY, DICT_NAME, STATE_NAME, read_json
from arrowmix._storage.snapshot import read_pinned

__all__ = ["check_path", "check_saved", "check_saved_dict"]


def check_saved(directory: str, state: dict[str, Any]) -> Report:
    """Hash every data file ``state.json`` lists; report each whose digest differs.

    Raises:
        ValueError: the state records no digests (a directory HF ``datasets`` wrote).
    """
    names = [str(f["filename"]) for f in state.get("_data_files", [])]
    recorded = state.get(DIGESTS_KEY)
    content = state.get(CONTENT_KEY)
    if not isinstance(recorded, dict) and not isinstance(content, str):
        raise ValueError(
            f"{directory!r} has no recorded digests in state.json (written by HF `datasets`, "
            "not arrowmix): nothing to verify."
        )
    report = Report("saved")
    digests = []
    for name in names:
        path = os.path.join(directory, name)
        digest = hash_file(path, report)
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


def check_saved_dict(directory: str) -> Report:
    """Check each split a DatasetDict's ``dataset_dict.json`` lists, as :func:`check_saved`.

    Raises:
        ValueError: ``dataset_dict.json`` is damaged, or a split records no digests.
    """
    splits = read_json(directory, DICT_NAME).get("splits")
    if not (isinstance(splits, list) and all(_plain(s) for s in splits)):
        raise ValueError(
            f"{os.path.join(directory, DICT_NAME)!r} is damaged: its splits are {splits!r}, "
            "not a list of split names."
        )
    report = Report("saved")
    for split in splits:
        where = os.path.join(directory, split)
        if not os.path.isfile(os.path.join(where, STATE_NAME)):
            report.problems.append((where, f"listed in {DICT_NAME}, but has no {STATE_NAME}"))
            continue
        # Each split pinned too, for a split saved again on its own (as a load does).
        found = read_pinned(where, functools.partial(_check_saved_at, where))
        report.files += found.files
        report.nbytes += found.nbytes
        report.problems += found.problems
    return report


def _plain(name: object) -> bool:
    """Whether ``name`` is a split name naming a folder directly inside the directory."""
    return isinstance(name, str) and name not in ("", ".", "..") and os.sep not in name


def check_path(path: str) -> Report:
    """Check ``path``: a ``save_to_disk`` directory or a chunk directory.

    A save holds ``state.json`` (a Dataset's) or ``dataset_dict.json`` (a DatasetDict's).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: nothing is recorded there to check against.
    """
    directory = os.path.abspath(path)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"{path!r} does not exist.")
    if not os.path.isdir(directory):
        raise ValueError(
            f"{path!r} is a file; verify checks a directory written by `write_chunks` or "
            "`save_to_disk`."
        )
    if os.path.isfile(os.path.join(directory, STATE_NAME)):
        # The version pinned, so that a re-save meanwhile is not reported as damage.
        return read_pinned(directory, functools.partial(_check_saved_at, directory))
    if os.path.isfile(os.path.join(directory, DICT_NAME)):
        return read_pinned(directory, lambda: check_saved_dict(directory))
    return check_chunks(directory)


def _state(directory: str) -> dict[str, Any]:
    return read_json(directory, STATE_NAME)


def _check_saved_at(directory: str) -> Report:
    return check_saved(directory, _state(directory))
