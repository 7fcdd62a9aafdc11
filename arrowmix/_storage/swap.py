"""Replace what arrowmix wrote at a user's path: write beside it, swap it in, recover a kill.

Two writers replace a previous result at a path the user chose, and neither may lose it nor
touch a file it did not write:

- ``save_to_disk(path)`` writes the new directory as ``.<name>.saving-<pid>-<token>`` beside
  ``path``, renames a previous save to ``.<name>.replaced-<pid>-<token>``, renames the new one
  into place and removes the previous one. A save is complete when its ``state.json`` (written
  last) is there.
- ``write_chunks(out_dir, overwrite=True)`` writes the new corpus (chunks and manifest) into
  ``out_dir/.arrowmix-writing-<pid>-<token>/``. When it is complete, a journal
  (``_commit.json``: the new chunk names and the old ones to remove) is written in it: from
  then on the swap only goes forward. The old manifest is removed (the directory no longer
  looks complete), each new chunk is renamed over its final name, the old chunks not reused are
  removed, and the new manifest is renamed into place last. Files that are not the corpus's
  (a README, cache files) are never touched.

A writer killed with ``kill -9`` leaves its temporary directory. The next save, load,
``from_chunks``, ``write_chunks`` or ``arrowmix cleanup-cache`` of that place calls
:func:`recover_saves` / :func:`recover_staging`, which finish (a complete new result, or a
committed journal) or undo (anything else) the swaps of writers that are gone, and never touch
those of a live writer (the pid in the name, checked with :func:`writer_alive`, which also sees
through pid reuse).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable

from arrowmix._storage.atomic import atomic_sink, fsync_dir, writer_alive

__all__ = [
    "STAGING_PREFIX",
    "STAGING_RE",
    "commit_staged",
    "new_save_names",
    "new_staging",
    "recover_saves",
    "recover_staging",
    "save_complete",
    "save_under_way",
]

#: ``.<name>.saving-<pid>-<token>`` / ``.<name>.replaced-<pid>-<token>`` beside a saved dataset.
SAVE_RE = re.compile(r"^\.(?P<base>.+)\.(?P<kind>saving|replaced)-(?P<pid>\d+)-(?P<tok>[0-9a-f]+)$")
#: ``.arrowmix-writing-<pid>-<token>`` inside a corpus directory being rewritten.
STAGING_PREFIX = ".arrowmix-writing-"
STAGING_RE = re.compile(rf"^{re.escape(STAGING_PREFIX)}(?P<pid>\d+)-(?P<tok>[0-9a-f]+)$")
COMMIT_NAME = "_commit.json"
_STATE_NAME = "state.json"
_DICT_NAME = "dataset_dict.json"
_MANIFEST_NAME = "_manifest.json"


def _token() -> str:
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def _dead(pid: str, path: str) -> bool:
    try:
        written = os.lstat(path).st_mtime
    except OSError:
        return False
    return not writer_alive(int(pid), written)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


# -- save_to_disk -------------------------------------------------------------------------------


def new_save_names(target: str) -> tuple[str, str]:
    """``(saving, replaced)`` temporary paths beside ``target`` for one save by this process."""
    parent, base = os.path.split(target)
    tok = _token()
    return (
        os.path.join(parent, f".{base}.saving-{tok}"),
        os.path.join(parent, f".{base}.replaced-{tok}"),
    )


def save_complete(directory: str) -> bool:
    """Whether ``directory`` holds a whole save: ``state.json`` parses and its files exist.

    A DatasetDict's save is whole when ``dataset_dict.json`` (written last) parses and each
    split it lists is a whole save.
    """
    if os.path.isfile(os.path.join(directory, _DICT_NAME)):
        try:
            with open(os.path.join(directory, _DICT_NAME), encoding="utf-8") as fh:
                splits = json.load(fh)["splits"]
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return isinstance(splits, list) and all(
            isinstance(k, str) and save_complete(os.path.join(directory, k)) for k in splits
        )
    try:
        with open(os.path.join(directory, _STATE_NAME), encoding="utf-8") as fh:
            state = json.load(fh)
        names = [f["filename"] for f in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(
        isinstance(n, str) and os.path.isfile(os.path.join(directory, os.path.basename(n)))
        for n in names
    )


def save_under_way(target: str) -> bool:
    """Whether a live process is saving to ``target`` (its temporary directories are beside it)."""
    parent, base = os.path.split(target)
    try:
        names = os.listdir(parent)
    except OSError:
        return False
    found = (SAVE_RE.match(n) for n in names)
    return any(
        not _dead(m.group("pid"), os.path.join(parent, m.group(0)))
        for m in found
        if m and m.group("base") == base
    )


def recover_saves(
    parent: str,
    base: str | None = None,
    *,
    dry_run: bool = False,
    carry: Callable[[str, str], object] | None = None,
) -> list[str]:
    """Finish or undo the saves into ``parent`` (only of ``base`` if given) of dead writers.

    A target that a kill left missing gets the new save when it is complete, else the previous
    one back. ``carry(replaced, target)`` is called before a replaced save is removed while
    ``target`` holds the new one (to move the files a live process uses there). Returns the
    temporary paths handled (with ``dry_run``: to handle, untouched).
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    groups: dict[tuple[str, str, str], dict[str, str]] = {}
    for name in names:
        m = SAVE_RE.match(name)
        if m and (base is None or m.group("base") == base):
            key = (m.group("base"), m.group("pid"), m.group("tok"))
            groups.setdefault(key, {})[m.group("kind")] = os.path.join(parent, name)
    handled: list[str] = []
    for (name, pid, _), paths in sorted(groups.items()):
        if not all(_dead(pid, p) for p in paths.values()):
            continue
        if dry_run:
            handled.extend(paths.values())
            continue
        target = os.path.join(parent, name)
        saving, replaced = paths.get("saving"), paths.get("replaced")
        if not os.path.lexists(target):
            if saving is not None and save_complete(saving):
                os.rename(saving, target)
                saving = None
            elif replaced is not None:
                os.rename(replaced, target)
                replaced = None
            fsync_dir(parent)
        if replaced is not None and carry is not None and os.path.isdir(target):
            carry(replaced, target)
        for p in (saving, replaced):
            if p is not None:
                _remove(p)
        handled.extend(paths.values())
    return handled


# -- write_chunks(overwrite=True) ---------------------------------------------------------------


def new_staging(out_dir: str) -> str:
    """Create and return a staging directory for a new corpus inside ``out_dir``."""
    path = os.path.join(out_dir, f"{STAGING_PREFIX}{_token()}")
    os.makedirs(path)
    return path


def commit_staged(out_dir: str, staging: str, new: Iterable[str], old: Iterable[str]) -> None:
    """Swap the complete corpus in ``staging`` into ``out_dir``.

    ``new`` are the chunk names in ``staging``; ``old`` the names of the previous corpus's
    chunks in ``out_dir`` (the only other files removed). The journal makes it resumable.
    """
    journal = {"new": sorted(new), "old": sorted(old)}
    with atomic_sink(os.path.join(staging, COMMIT_NAME)) as sink:
        sink.write(json.dumps(journal).encode())
    _roll_forward(out_dir, staging)


def _roll_forward(out_dir: str, staging: str) -> None:
    """Carry out (or finish) the committed swap of ``staging`` into ``out_dir``; idempotent."""
    with open(os.path.join(staging, COMMIT_NAME), encoding="utf-8") as fh:
        journal = json.load(fh)
    new, old = set(journal["new"]), set(journal["old"])
    staged_manifest = os.path.join(staging, _MANIFEST_NAME)
    if os.path.exists(staged_manifest):  # not yet swapped: the old corpus stops being complete
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(out_dir, _MANIFEST_NAME))
    for name in sorted(new):
        src = os.path.join(staging, name)
        if os.path.exists(src):
            os.replace(src, os.path.join(out_dir, name))
    for name in sorted(old - new):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(out_dir, name))
    if os.path.exists(staged_manifest):
        os.replace(staged_manifest, os.path.join(out_dir, _MANIFEST_NAME))
    fsync_dir(out_dir)
    shutil.rmtree(staging, ignore_errors=True)


def recover_staging(out_dir: str, *, dry_run: bool = False) -> list[str]:
    """Finish (journal present) or undo (no journal) the rewrites in ``out_dir`` of dead writers.

    Returns the staging directories handled. Cheap when there are none: one ``scandir``.
    """
    handled: list[str] = []
    try:
        with os.scandir(out_dir) as it:
            found = [(e.path, m) for e in it if (m := STAGING_RE.match(e.name)) and e.is_dir()]
    except OSError:
        return handled
    for path, m in found:
        if not _dead(m.group("pid"), path):
            continue
        if dry_run:
            handled.append(path)
            continue
        if os.path.exists(os.path.join(path, COMMIT_NAME)):
            _roll_forward(out_dir, path)
        else:
            shutil.rmtree(path, ignore_errors=True)
        handled.append(path)
    return handled
