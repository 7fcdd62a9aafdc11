"""Expanding a user's paths, globs and directories to files: one rule for every surface.

A glob means what it means to fsspec and to HF ``datasets`` on every filesystem, local paths
included: ``**`` matches any number of directories (``docs/**/*.rst.gz`` finds the files of
every depth, those directly in ``docs`` too). As in HF, a match inside a hidden directory (a
name starting with ``.``) or a special one (``__pycache__``: starting with ``__``), or a hidden
file, is left out unless the pattern names as many such parts itself (``.cache/**``).

What a *directory* means depends on the surface, and is decided by the caller:

- input files (``from_text/json/csv/parquet``, ``arrowmix chunk``): everything below it, at any
  depth (``<dir>/**``), as HF's ``load_dataset(<dir>)`` reads, without HF's metadata files
  (``README.md``, ``dataset_info.json``...);
- a corpus (``from_chunks`` and every chunk opening): its own ``*.arrow`` files, not those of
  subdirectories (see ``arrowmix._storage.chunks``).
"""

from __future__ import annotations

import glob as globlib
import os
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from arrowmix._storage.fs import is_local, local_path, url_to_fs

__all__ = ["expand_inputs", "glob_files", "has_magic", "path_specs"]

#: Files HF's ``load_dataset`` never reads as data unless named (``FILES_TO_IGNORE``).
METADATA_FILES = frozenset(
    {
        "README.md",
        "config.json",
        "dataset_info.json",
        "dataset_infos.json",
        "dummy_data.zip",
        "dataset_dict.json",
    }
)


def has_magic(pattern: str) -> bool:
    """Whether ``pattern`` holds a glob wildcard (``*``, ``?``, ``[``)."""
    return globlib.has_magic(pattern)


def _count(parts: Sequence[str], prefix: str) -> int:
    return sum(1 for p in parts if p.startswith(prefix) and set(p) != {"."})


def _requested(path: str, pattern: str) -> bool:
    """Whether ``pattern`` asks for ``path`` (HF's rule for hidden and special parts)."""
    parts, pat = PurePosixPath(path).parts, PurePosixPath(pattern).parts
    if _count(parts, ".") != _count(pat, "."):
        return False
    return _count(parts[:-1], "__") == _count(pat[:-1], "__")


def glob_files(
    pattern: str, storage_options: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """The files ``pattern`` matches (recursive ``**``), by path, with fsspec's entries.

    Local patterns give paths in the pattern's form (relative stays relative) and no entries;
    URLs give full URLs. Directories and what :func:`_requested` leaves out are not listed.
    Unsorted: callers order as they need.
    """
    if is_local(pattern):
        p = local_path(pattern)
        return {
            name: {}
            for name in globlib.glob(p, recursive=True)
            if os.path.isfile(name) and _requested(name, p)
        }
    fs, p = url_to_fs(pattern, storage_options)
    p = fs._strip_protocol(p)
    found = fs.glob(p, detail=True)
    return {
        fs.unstrip_protocol(name): e
        for name, e in found.items()
        if _is_file(e, name) and _requested(fs._strip_protocol(name), p)
    }


def _is_file(entry: Mapping[str, Any], name: str) -> bool:
    if entry.get("type") == "file":
        return True
    return bool(entry.get("islink")) and os.path.isfile(os.path.realpath(name))


def path_specs(paths: Any) -> list[str | os.PathLike[str]]:
    """``paths`` (a path, glob or URL, or a list of them) as a list, each checked to be one.

    Raises:
        TypeError: an item is not a ``str`` or ``os.PathLike`` (named with its type).
    """
    specs: list[Any]
    try:
        specs = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    except TypeError:
        specs = [paths]
    bad = [s for s in specs if not isinstance(s, (str, os.PathLike))]
    if bad:
        raise TypeError(
            "Input paths must be paths, globs or URLs (str), or a list of them; got "
            f"{type(bad[0]).__name__} {bad[0]!r}."
        )
    return specs


def expand_inputs(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    storage_options: Mapping[str, Any] | None = None,
) -> list[str]:
    """Input files named by paths, globs, directories (all files below) or URLs, in order.

    Each spec's files are sorted; a spec naming no file raises ``FileNotFoundError``.
    """
    specs = path_specs(paths)
    files: list[str] = []
    for spec in (os.fspath(s) for s in specs):
        found = _expand_one(spec, storage_options)
        if not found:
            raise FileNotFoundError(f"No input files found at {spec!r}.")
        files.extend(found)
    return files


def _expand_one(spec: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    if is_local(spec):
        p = local_path(spec)
        if not has_magic(p):
            if os.path.isfile(p):
                return [p]
            if not os.path.isdir(p):
                return []
            return _tree(os.path.join(p, "**"), None)
        return sorted(glob_files(p))
    fs, p = url_to_fs(spec, storage_options)
    if not has_magic(p):
        if fs.isfile(p):  # a chained URL (``zip://m::archive``) names its file as given
            return [spec if "::" in spec else fs.unstrip_protocol(p)]
        if not fs.isdir(p):
            return []
        return _tree(spec.rstrip("/") + "/**", storage_options)
    return sorted(glob_files(spec, storage_options))


def _tree(pattern: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    """The files below a directory (``<dir>/**``) less HF's metadata files."""
    found = glob_files(pattern, storage_options)
    return sorted(f for f in found if f.rstrip("/").rsplit("/", 1)[-1] not in METADATA_FILES)
