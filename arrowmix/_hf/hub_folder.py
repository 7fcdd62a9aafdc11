"""HF's ``push_to_hub`` repository layout, written to a local folder for an upload.

arrowmix makes no network call. :func:`write_hub_folder` writes what HF ``datasets``'
``push_to_hub`` uploads to a dataset repository: each split's rows as Parquet shards
``data/<split>-0000i-of-0000N.parquet`` (HF's names, HF's shard count for ``max_shard_size``
or ``num_shards``) and a ``README.md`` whose YAML front matter maps the splits to their files
(``configs:``), as HF writes it. ``huggingface_hub``'s ``HfApi().upload_folder(folder_path=...,
repo_id=..., repo_type="dataset")`` then makes the repository, and HF's
``load_dataset(repo_id)`` (or ``load_dataset(folder)`` before the upload) reads the splits.

The Parquet files carry HF's features in their schema metadata (``ClassLabel`` names, media
features), which is where HF reads them back from; the README's ``dataset_info`` block (sizes
and features that HF also writes there) is left out, as the Hub computes it from the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from arrowmix.exceptions import NotLocalError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["README", "hub_readme", "no_push", "split_of", "write_hub_folder"]

#: HF's ``config.REPOCARD_FILENAME``.
README = "README.md"
#: YAML 1.1 words a plain scalar would be read as (quoted, as ``yaml.dump`` quotes them).
_YAML_WORDS = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"}
_PLAIN = re.compile(r"^[A-Za-z_][\w.\-/*]*$")


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain when it reads back as itself, else JSON-quoted."""
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text)


def no_push(repo_id: str) -> NotLocalError:
    """The error ``push_to_hub`` raises: no network, and the two steps that replace it."""
    return NotLocalError(
        f"push_to_hub({repo_id!r}): arrowmix makes no network call. Write the folder HF would "
        "upload with `ds.to_hub_folder(folder)` (or `dataset_dict.to_hub_folder(folder)`), then "
        "upload it with huggingface_hub: `HfApi().upload_folder(folder_path=folder, "
        f"repo_id={repo_id!r}, repo_type='dataset')`."
    )


def hub_readme(config_name: str, data_dir: str, splits: list[str]) -> str:
    """The ``README.md`` HF's ``push_to_hub`` writes for ``splits``, less ``dataset_info``."""
    lines = ["---", "configs:", f"- config_name: {_scalar(config_name)}", "  data_files:"]
    for split in splits:
        lines += [f"  - split: {_scalar(split)}", f"    path: {_scalar(f'{data_dir}/{split}-*')}"]
    return "\n".join([*lines, "---", ""])


def write_hub_folder(
    splits: Mapping[str, Dataset],
    folder: str | os.PathLike[str],
    config_name: str = "default",
    data_dir: str | None = None,
    max_shard_size: int | str | None = None,
    num_shards: Mapping[str, int | None] | None = None,
) -> list[str]:
    """Write ``splits`` as HF's ``push_to_hub`` would upload them; the files, relative.

    Raises:
        ValueError: ``config_name`` is ``"data"`` (as in HF), a split name HF refuses, or
            both ``max_shard_size`` and a split's ``num_shards``.
        FileExistsError: ``folder`` already holds a ``README.md`` or files of one of the
            splits (nothing is written then).
        NotImplementedError: ``folder`` is a URL (a local folder is what is uploaded).
    """
    from arrowmix._dataset.inputs.file_splits import check_split_name
    from arrowmix._hf.saved import _local_dir, _num_shards
    from arrowmix._storage.atomic import atomic_sink

    if config_name == "data":
        raise ValueError("`config_name` cannot be 'data'. Please, choose another name.")
    data_dir = data_dir or (config_name if config_name != "default" else "data")
    root = _local_dir(folder, "to_hub_folder")
    for split in splits:
        check_split_name(split)
    taken = [os.path.join(root, README)] if os.path.exists(os.path.join(root, README)) else []
    if os.path.isdir(os.path.join(root, data_dir)):
        names = os.listdir(os.path.join(root, data_dir))
        taken += [
            os.path.join(root, data_dir, n) for n in names if n.split("-", 1)[0] in set(splits)
        ]
    if taken:
        raise FileExistsError(
            f"{taken[0]!r} exists: write the Hub folder into a new or empty folder (all the "
            "splits at once: `DatasetDict.to_hub_folder`)."
        )
    counts = {
        s: _num_shards(ds, max_shard_size, (num_shards or {}).get(s), None)
        for s, ds in splits.items()
    }
    _remove_dead_staging(root)
    # Every shard is written into a staging directory first, then renamed into place, the
    # README last: a job killed while writing leaves no shard set that looks complete (only
    # the staging directory, removed by the next call on this folder).
    staging = os.path.join(root, f"{_STAGING}{os.getpid()}-{secrets.token_hex(4)}")
    os.makedirs(staging)
    written: list[str] = []
    try:
        for split, ds in splits.items():
            n = counts[split]
            for i in range(n):
                rel = f"{data_dir}/{split}-{i:05d}-of-{n:05d}.parquet"
                shard = ds.shard(num_shards=n, index=i, contiguous=True)
                shard.to_parquet(os.path.join(staging, f"{len(written)}.parquet"))
                written.append(rel)
        os.makedirs(os.path.join(root, data_dir), exist_ok=True)
        for k, rel in enumerate(written):
            os.replace(os.path.join(staging, f"{k}.parquet"), os.path.join(root, rel))
        with atomic_sink(os.path.join(root, README)) as sink:
            sink.write(hub_readme(config_name, data_dir, list(splits)).encode())
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [*written, README]


_STAGING = ".arrowmix-hub-writing-"


def _remove_dead_staging(root: str) -> None:
    """Remove the staging directories that killed calls left in ``root`` (their pid is gone)."""
    from arrowmix._storage.atomic import writer_alive

    with contextlib.suppress(OSError), os.scandir(root) as it:
        for d in it:
            if d.name.startswith(_STAGING):
                pid = d.name[len(_STAGING) :].split("-", 1)[0]
                if pid.isdigit() and not writer_alive(int(pid), d.stat().st_mtime):
                    shutil.rmtree(d.path, ignore_errors=True)


def split_of(ds: Dataset, split: Any) -> str:
    """The split a Dataset is written as: ``split``, else its own, else ``"train"`` (HF's)."""
    from arrowmix._dataset.inputs.file_splits import split_name

    if split is None:
        split = ds.split if ds.split is not None else "train"
    return str(split_name(split))
