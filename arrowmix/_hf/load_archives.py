"""Local ``.zip`` data files, read as HF ``datasets``' builders read them.

HF extracts an archive given as a data file and reads every file in it: walked directory by
directory (a directory's files before its subdirectories', each sorted by name), skipping
names that start with ``.`` or ``__``. arrowmix reads the same members in the same order, in
place (``zip://MEMBER::ARCHIVE`` through fsspec, nothing extracted to disk). The builder of
a folder of archives is inferred from the extensions of the files in its first ten archives,
as in HF. Compressed single files (``.gz``, ``.bz2``, ``.xz``...) need nothing here: the
readers decompress them by their extension.
"""

from __future__ import annotations

import os
import zipfile
from collections import Counter

__all__ = ["archive_members", "expand_archives", "member_extensions"]

#: HF's ``config.ARCHIVES_MAX_NUMBER_FOR_MODULE_INFERENCE``.
_INFERENCE_ARCHIVES = 10


def _is_zip(path: str) -> bool:
    return path.lower().endswith(".zip") and "://" not in path


def _hidden(part: str) -> bool:
    return part.startswith((".", "__"))


def _names(path: str) -> list[str]:
    try:
        with zipfile.ZipFile(path) as z:
            return [i.filename for i in z.infolist() if not i.is_dir()]
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{path}: not a readable zip archive ({exc}).") from exc


def archive_members(path: str) -> list[str]:
    """The fsspec URLs of the files in the local zip archive ``path``, in HF's order."""
    members = []
    for name in _names(path):
        parts = [p for p in name.split("/") if p and p != "."]
        if not parts or any(_hidden(p) for p in parts):
            continue
        # pre-order walk: at each level a directory's files (0) before its subdirectories (1)
        key = (*((1, p) for p in parts[:-1]), (0, parts[-1]))
        members.append((key, "/".join(parts)))
    return [f"zip://{name}::{os.path.abspath(path)}" for _, name in sorted(members)]


def expand_archives(files: list[str]) -> list[str]:
    """``files`` with each local ``.zip`` replaced by its members.

    Raises:
        FileNotFoundError: an archive holds no file to read.
    """
    out: list[str] = []
    for f in files:
        if not _is_zip(f):
            out.append(f)
            continue
        members = archive_members(f)
        if not members:
            raise FileNotFoundError(f"The zip archive {f} holds no data file.")
        out.extend(members)
    return out


def member_extensions(files: list[str]) -> Counter[str]:
    """The extensions (``.csv``...) of the files in the first archives among ``files``."""
    counts: Counter[str] = Counter()
    archives = [f for f in files if _is_zip(f)][:_INFERENCE_ARCHIVES]
    for archive in archives:
        for url in archive_members(archive):
            name = url[len("zip://") :].split("::")[0].rsplit("/", 1)[-1]
            counts.update("." + s.lower() for s in name.split(".")[1:])
    return counts
