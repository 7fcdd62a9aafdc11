"""Which local files ``load_dataset`` reads, for which split, with which builder (HF's rules).

- ``data_files`` as a path, a glob (``**`` recursive), a list, or a dict ``{split: files}``
  (HF's ``[{"split": ..., "path": ...}]`` list too); a str or list is the ``"train"`` split.
  Relative paths are relative to ``data_dir`` when given (else to the directory ``path``, or
  the working directory for a builder name).
- Without ``data_files``, a directory's files are split as HF splits them, trying in order:
  shards named ``data/{split}-00000-of-00003.ext``; directories named after a split
  (``train/``, ``training/``, ``valid/``, ``dev/``, ``test/``, ``eval/``... at any depth); file
  names holding a split keyword (``train.csv``, ``my_test-0.jsonl``); else every file is
  ``"train"``. Splits come in the order train, validation, test.
- The builder of a directory or file is inferred from the most common file extension (a tie
  goes to Parquet, then Arrow, JSON Lines, JSON, CSV), and the files of other extensions are
  dropped, as in HF. Hidden files and directories (``.name``), ``__pycache__``-like ones and
  HF's metadata files (``README.md``...) are left out unless a pattern names them.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from arrowmix._storage.globs import METADATA_FILES, glob_files, has_magic

__all__ = ["BUILDERS", "builder_of", "default_patterns", "resolve_data_files"]


def _exts(words: str) -> tuple[str, ...]:
    return tuple("." + w for w in words.split())


_IMAGE_EXTENSIONS = _exts(
    "apng blp bmp bufr bw cur dcx dds dib emf eps fit fits flc fli ftc ftu gbr gif grib "
    "icb icns ico iim im j2c j2k jfif jp2 jpc jpe jpeg jpf jpg jpx msp pbm pcd pcx pgm png "
    "pnm ppm ps psd pxr ras rgb rgba sgi tga tif tiff vda vst webp wmf xbm xpm "
)
_AUDIO_EXTENSIONS = _exts(
    "3g2 3gp aiff asf au avi avr caf f4v flac flv htk ircam m4v mat4 mat5 mkv mov mp3 mp4 "
    "mpc2k mxf nist nut ogg ogm opus paf pvf raw rf64 sd2 sds svx voc w64 wav wavex webm "
    "wma wmv wve xi "
)

#: Extension -> (builder, its default options), for the builders arrowmix has.
EXTENSION_TO_BUILDER: dict[str, tuple[str, dict[str, Any]]] = {
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"sep": "\t"}),
    ".json": ("json", {}),
    ".jsonl": ("json", {}),
    ".ndjson": ("json", {}),
    ".parquet": ("parquet", {}),
    ".geoparquet": ("parquet", {}),
    ".gpq": ("parquet", {}),
    ".arrow": ("arrow", {}),
    ".txt": ("text", {}),
    **{ext: ("imagefolder", {}) for ext in _IMAGE_EXTENSIONS},
    **{ext: ("audiofolder", {}) for ext in _AUDIO_EXTENSIONS},
}
#: Extensions of HF builders arrowmix does not have (a directory of them is refused by name).
_OTHER_BUILDERS = {
    ".conll": "conll",
    ".conllu": "conll",
    ".tar": "webdataset",
    ".xml": "xml",
    ".hdf5": "hdf5",
    ".h5": "hdf5",
    ".lance": "lance",
    ".mpeg": "videofolder",
    ".mpg": "videofolder",
    ".pdf": "pdffolder",
    ".zip": "zip archives",
}
BUILDERS = ("arrow", "audiofolder", "csv", "imagefolder", "json", "parquet", "text")
#: The data files of a folder builder may include these (HF's ``METADATA_FILENAMES``).
FOLDER_METADATA = ("metadata.csv", "metadata.jsonl", "metadata.parquet")

_SPLIT_KEYWORDS = {
    "train": ("train", "training"),
    "validation": ("validation", "valid", "dev", "val"),
    "test": ("test", "testing", "eval", "evaluation"),
}
_SEP = "[-._ 0-9]"
_SHARDED = re.compile(r"^(?P<split>\w+(\.\w+)*)-\d{5}-of-\d{5}.*\..*$")


def default_patterns() -> list[dict[str, list[str]]]:
    """HF's split patterns for a directory, tried in order (the first that matches wins)."""
    in_dir = {
        split: [
            p.format(k=k, s=_SEP)
            for k in keys
            for p in ("**/{k}/**", "**/{k}{s}*/**", "**/*{s}{k}/**", "**/*{s}{k}{s}*/**")
        ]
        for split, keys in _SPLIT_KEYWORDS.items()
    }
    in_name = {
        split: [p.format(k=k, s=_SEP) for k in keys for p in ("**/{k}{s}*", "**/*{s}{k}{s}*")]
        for split, keys in _SPLIT_KEYWORDS.items()
    }
    return [in_dir, in_name, {"train": ["**"]}]


def _allowed(path: str) -> bool:
    name = os.path.basename(path)
    known = {*EXTENSION_TO_BUILDER, *_OTHER_BUILDERS}
    return any("." + s.lower() in known for s in name.split(".")[1:]) or name in FOLDER_METADATA


def _glob(base: str, pattern: str) -> list[str]:
    """Files under ``base`` matching ``pattern`` (sorted), as HF's ``resolve_pattern`` finds."""
    full = pattern if os.path.isabs(pattern) else os.path.join(globlib.escape(base), pattern)
    if not has_magic(full):
        if os.path.isfile(full):
            return [os.path.abspath(full)]
        if os.path.isdir(full):  # arrowmix also reads a directory named as data files
            full = os.path.join(globlib.escape(full), "**")
        else:
            return []
    ignored = METADATA_FILES - {os.path.basename(pattern)}
    found = [os.path.abspath(f) for f in glob_files(full) if os.path.basename(f) not in ignored]
    return sorted(found)


def _sharded_splits(base: str) -> dict[str, list[str]] | None:
    files = [f for f in _glob(base, "data/*-[0-9][0-9][0-9][0-9][0-9]-of-*") if _allowed(f)]
    splits: dict[str, list[str]] = {}
    for f in files:
        m = _SHARDED.match(os.path.basename(f))
        if m:
            splits.setdefault(m.group("split"), []).append(f)
    if not splits:
        return None
    first = [s for s in _SPLIT_KEYWORDS if s in splits]
    return {s: splits[s] for s in first + sorted(set(splits) - set(first))}


def _inferred_splits(base: str) -> dict[str, list[str]]:
    if not os.path.isdir(base):
        raise FileNotFoundError(f"Couldn't find a directory at {base!r}.")
    sharded = _sharded_splits(base)
    if sharded:
        return sharded
    for patterns in default_patterns():
        found: dict[str, list[str]] = {}
        for split, pats in patterns.items():
            files = [f for p in pats for f in _glob(base, p)]
            if files:
                found[split] = files
        if found:
            return found
    raise FileNotFoundError(f"The directory at {base!r} doesn't contain any data files.")


def _sanitized(data_files: Any) -> dict[str, list[str]]:
    if isinstance(data_files, (str, os.PathLike)):
        return {"train": [os.fspath(data_files)]}
    if isinstance(data_files, Mapping):
        return {
            str(k): [os.fspath(p) for p in (v if isinstance(v, (list, tuple)) else [v])]
            for k, v in data_files.items()
        }
    items = list(data_files)
    if any(isinstance(i, Mapping) for i in items):
        if not all(isinstance(i, Mapping) and set(i) == {"split", "path"} for i in items):
            raise ValueError(
                "Invalid format for data_files entry: each item must be a dictionary "
                f"{{'split': <split_name>, 'path': <path_or_list_of_paths>}}; got {items}."
            )
        return _sanitized({i["split"]: i["path"] for i in items})
    return {"train": [os.fspath(p) for p in items]}


def _resolved(patterns: dict[str, list[str]], base: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for split, pats in patterns.items():
        files: list[str] = []
        for p in pats:
            found = _glob(base, os.path.expanduser(p))
            if not found and not has_magic(p):
                raise FileNotFoundError(f"Unable to find {os.path.join(base, p)!r}.")
            files.extend(found)
        if not files:
            raise FileNotFoundError(f"No data files match {pats} for the split {split!r}.")
        out[split] = files
    return out


def builder_of(files: list[str]) -> tuple[str | None, dict[str, Any]]:
    """The builder of ``files`` by their most common extension (HF's tie-break), or None."""
    counts = Counter(
        ("." + s.lower(), os.path.basename(f) in FOLDER_METADATA)
        for f in files
        for s in os.path.basename(f).split(".")[1:]
    )

    def key(item: tuple[tuple[str, bool], int]) -> tuple[Any, ...]:
        (ext, is_meta), n = item
        order = (".parquet", ".lance", ".vortex", ".arrow", ".jsonl", ".json", ".csv")
        return (not is_meta, n, *(ext == o for o in order), ext)

    for (ext, _), _n in sorted(counts.items(), key=key, reverse=True):
        if ext == ".zip":  # HF looks into the archives
            from arrowmix._hf.load_archives import member_extensions

            inner = member_extensions(files).most_common(1)
            if inner and inner[0][0] in EXTENSION_TO_BUILDER:
                name, options = EXTENSION_TO_BUILDER[inner[0][0]]
                return name, dict(options)
            return None, {}
        if ext in EXTENSION_TO_BUILDER:
            name, options = EXTENSION_TO_BUILDER[ext]
            return name, dict(options)
        if ext in _OTHER_BUILDERS:
            return _OTHER_BUILDERS[ext], {}
    return None, {}


def _of_builder(files: list[str], builder: str) -> list[str]:
    exts = [e for e, (b, _) in EXTENSION_TO_BUILDER.items() if b == builder]
    pattern = re.compile(
        "|".join(re.escape(e) for e in exts) + r"(\..+)?$", re.IGNORECASE if exts else 0
    )
    keep_meta = builder in ("imagefolder", "audiofolder")
    return [
        f
        for f in files
        if pattern.search(os.path.basename(f))
        or (keep_meta and os.path.basename(f) in FOLDER_METADATA)
        or (not keep_meta and f.lower().endswith(".zip"))  # as in HF (folders: not here)
    ]


def resolve_data_files(
    path: str, data_dir: str | None, data_files: Any
) -> tuple[str, dict[str, Any], dict[str, list[str]]]:
    """``(builder, builder options, {split: files})`` for a builder name or a local path.

    Raises:
        FileNotFoundError: a named file or directory does not exist, or nothing matches.
        ValueError: no builder arrowmix has reads the files, or the splits' formats differ.
    """
    named = path in BUILDERS
    if named:
        base = os.path.abspath(os.path.expanduser(data_dir or "."))
    elif os.path.isfile(path):
        if data_files is None:
            data_files = os.path.abspath(path)
        base = os.path.dirname(os.path.abspath(path))
    else:
        if data_dir and os.path.isabs(data_dir):
            raise ValueError(f"`data_dir` must be relative to the dataset directory {path!r}.")
        base = os.path.abspath(os.path.join(os.path.expanduser(path), data_dir or ""))
    if data_files is not None:
        splits = _resolved(_sanitized(data_files), base)
    elif named and data_dir is None:
        raise ValueError(
            f"Please specify the data files or data directory to load for the {path} dataset "
            f'builder, e.g. `data_files={{"train": "path/to/train/*"}}`.'
        )
    else:
        splits = _inferred_splits(base)
    if named:
        return path, {}, splits
    splits = {s: [f for f in files if _allowed(f)] for s, files in splits.items()}
    inferred = {s: builder_of(f) for s, f in splits.items()}
    builder, options = next(iter(inferred.values()))
    if any(v != (builder, options) for v in inferred.values()):
        raise ValueError(f"Couldn't infer the same data file format for all splits. Got {inferred}")
    if builder is None:
        raise FileNotFoundError(f"No (supported) data files found in {path}")
    if builder not in BUILDERS:
        raise ValueError(
            f"The files at {path!r} are read by HF's {builder!r} builder, which arrowmix does "
            f"not have; arrowmix's builders: {', '.join(BUILDERS)}."
        )
    return builder, options, {s: _of_builder(f, builder) for s, f in splits.items()}
