"""HF's ``DatasetInfo`` fields of a ``load_dataset`` result: builder, configuration, splits, sizes.

HF's packaged builders (``json``, ``csv``, ``parquet``, ``text``, ``arrow``, ``imagefolder``,
``audiofolder``) fill them as they prepare the splits:

- ``builder_name``: the builder; ``dataset_name``: the builder, or the snake-cased name of the
  local folder given as ``path``; ``config_name``: ``"default"``, or the README's configuration;
  ``version``: ``0.0.0``.
- ``splits``: every split of the files (HF prepares all of them, whatever ``split=`` picks),
  with its row count and ``num_bytes``, the Arrow size of the rows HF writes: the sum, over the
  split's files, of each file's table size (a column without a null in a file has no
  validity bitmap in it).
- ``download_size``: the bytes of the data files (each counted once); ``dataset_size``: the
  splits' ``num_bytes``; ``size_in_bytes``: both.

A streaming result has the first four only (HF reads nothing before it streams).
:class:`LoadInfo` holds them on a Dataset's state (``DatasetState.hf_info``): views, maps and
pickles keep it, it is never part of a fingerprint, and :func:`info_fields` gives HF's
``DatasetInfo`` arguments from it.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "LoadInfo",
    "dataset_name",
    "download_size",
    "info_fields",
    "split_bytes",
    "split_infos",
]

#: The version of every HF packaged builder.
_VERSION = "0.0.0"


@dataclass(frozen=True)
class LoadInfo:
    """What ``load_dataset`` knows of the data it read (HF's ``DatasetInfo`` fields)."""

    builder_name: str
    dataset_name: str
    config_name: str
    #: ``(split, num_bytes, num_examples)`` of every split; None for a streaming result.
    splits: tuple[tuple[str, int, int], ...] | None = None
    #: Bytes of the data files; None for a streaming result.
    download_size: int | None = None


def dataset_name(path: str, builder: str) -> str:
    """HF's ``dataset_name``: ``builder`` for a builder's name, else the folder's, snake-cased."""
    if path == builder or not os.path.isdir(path):
        return builder
    name = os.path.basename(os.path.normpath(path))
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)  # HTTPServer -> HTTP_Server
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", name).lower()  # myData -> my_data


def download_size(files: Iterable[str]) -> int:
    """The bytes of ``files``, each path counted once (HF records a download once)."""
    return sum(os.path.getsize(f) for f in dict.fromkeys(files))


def split_bytes(ds: Dataset, file_rows: Sequence[int] | None) -> int:
    """``num_bytes`` of ``ds`` as HF counts it: the sum of each file's table's Arrow size.

    ``file_rows``: the rows of each file, in order (the whole table is one file without them).
    """
    from arrowmix._dataset.state import state_of, view_range

    s = state_of(ds)
    n = len(ds)
    rows = list(file_rows) if file_rows and sum(file_rows) == n else [n]
    bounds = itertools.pairwise(itertools.accumulate(rows, initial=0))
    return sum(_file_bytes(view_range(s, a, b, ahead=False)) for a, b in bounds)


def _file_bytes(table: Any) -> int:
    """The Arrow size of one file's rows as HF's reader gives them.

    A column without a null in the file has no validity bitmap there (the stored one, kept
    for other files' nulls, is not counted).
    """
    size = int(table.nbytes)
    for column in table.columns:
        for chunk in column.chunks:
            if chunk.buffers()[0] is not None and chunk.null_count == 0:
                size -= (chunk.offset + len(chunk) + 7) // 8 - chunk.offset // 8
    return size


def info_fields(info: LoadInfo | None, datasets: Any) -> dict[str, Any]:
    """HF ``DatasetInfo`` keyword arguments of ``info`` (``datasets``: the HF module)."""
    if info is None:
        return {}
    out: dict[str, Any] = {
        "builder_name": info.builder_name,
        "dataset_name": info.dataset_name,
        "config_name": info.config_name,
        "version": _VERSION,
    }
    if info.splits is None:
        return out
    splits = datasets.SplitDict(dataset_name=info.dataset_name)
    for name, num_bytes, num_examples in info.splits:
        splits.add(
            datasets.SplitInfo(
                name=name,
                num_bytes=num_bytes,
                num_examples=num_examples,
                dataset_name=info.dataset_name,
            )
        )
    size = sum(num_bytes for _, num_bytes, _ in info.splits)
    out.update(splits=splits, dataset_size=size, download_size=info.download_size)
    if info.download_size is not None:
        out["size_in_bytes"] = size + info.download_size
    return out


def split_infos(
    splits: Mapping[str, Dataset], file_rows: Mapping[str, Sequence[int]]
) -> tuple[tuple[str, int, int], ...]:
    """``LoadInfo.splits`` of the built ``splits`` (``file_rows``: each split's files' rows)."""
    return tuple(
        (name, split_bytes(ds, file_rows.get(name)), len(ds)) for name, ds in splits.items()
    )
