"""HF's ``get_dataset_config_names`` and friends, for local folders and builders.

They answer from what ``load_dataset`` would read, without reading any data: the folder's
README ``configs:`` (see :mod:`arrowmix._hf.load_card`) and HF's data file rules. A Hub name
raises :class:`~arrowmix.exceptions.NotLocalError`, as ``load_dataset`` does.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "get_dataset_config_names",
    "get_dataset_default_config_name",
    "get_dataset_split_names",
]


def _configs(
    path: Any, data_files: Any, revision: Any = None
) -> tuple[str, dict[str, dict[str, Any]]]:
    from arrowmix._hf.load import _check_local, _local_copy
    from arrowmix._hf.load_card import card_configs

    path = _local_copy(os.fspath(path), revision)
    _check_local(path, data_files)
    isdir = data_files is None and os.path.isdir(path)
    return path, card_configs(path) if isdir else {}


def get_dataset_config_names(
    path: Any, data_files: Any = None, **download_kwargs: Any
) -> list[str]:
    """The configurations ``load_dataset(path, name)`` takes, in the card's order.

    A folder whose README.md lists ``configs:`` gives their names; any other folder, file or
    builder has the one configuration ``"default"``, as in HF. HF's download arguments
    (``revision=``, ``download_config=``...) are accepted and change nothing.

    Example:
        >>> import tempfile
        >>> import arrowmix as am
        >>> folder = tempfile.mkdtemp()
        >>> _ = am.Dataset.from_dict({"a": [1]}).to_parquet(f"{folder}/train.parquet")
        >>> am.get_dataset_config_names(folder)
        ['default']

    Raises:
        NotLocalError: ``path`` is a Hub name or remote (as ``load_dataset``).
    """
    _, configs = _configs(path, data_files, download_kwargs.get("revision"))
    return list(configs) or ["default"]


def get_dataset_default_config_name(
    path: Any, data_files: Any = None, **download_kwargs: Any
) -> str | None:
    """The configuration ``load_dataset(path)`` reads without ``name``; ``None`` if it needs one.

    Raises:
        NotLocalError: ``path`` is a Hub name or remote (as ``load_dataset``).
    """
    from arrowmix._hf.load_card import pick_config

    _, configs = _configs(path, data_files, download_kwargs.get("revision"))
    if not configs:
        return "default"
    try:
        chosen = pick_config(configs, None)
    except ValueError:
        return None
    return next(name for name, params in configs.items() if params is chosen)


def get_dataset_split_names(
    path: Any,
    config_name: str | None = None,
    data_files: Any = None,
    data_dir: str | None = None,
    **download_kwargs: Any,
) -> list[str]:
    """The splits ``load_dataset(path, config_name, data_files=, data_dir=)`` gives, in order.

    Raises:
        NotLocalError: ``path`` is a Hub name or remote (as ``load_dataset``).
        ValueError: the folder has several configurations and none is named (HF's message).
        FileNotFoundError: no data file is found.
    """
    from arrowmix._hf.load import _card_config
    from arrowmix._hf.load_files import resolve_data_files

    path, _ = _configs(path, data_files, download_kwargs.get("revision"))
    card = _card_config(path, config_name, data_dir, data_files)
    files = card[2] if card is not None else resolve_data_files(path, data_dir, data_files)[2]
    return list(files)
