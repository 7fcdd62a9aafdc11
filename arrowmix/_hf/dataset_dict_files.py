"""``DatasetDict``'s files: HF's ``save_to_disk`` layout, the hub folder, and the readers.

A mixin of :class:`~arrowmix.DatasetDict` (its only host), kept apart from the per-split
transforms: ``save_to_disk``/``load_from_disk`` (:mod:`~arrowmix._hf.saved_dict`),
``to_hub_folder`` (:mod:`~arrowmix._hf.hub_folder`) and ``from_csv``/``from_json``/
``from_parquet``/``from_text`` of ``{split: files}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from arrowmix._hf.dataset_dict import DatasetDict

__all__ = ["DatasetDictFiles"]


def _splits(obj: DatasetDictFiles) -> DatasetDict:
    """``obj`` as the :class:`~arrowmix.DatasetDict` it is, its values checked to be Datasets."""
    splits = cast("DatasetDict", obj)
    splits._check_values_type()
    return splits


class DatasetDictFiles:
    """Mixin of :class:`~arrowmix.DatasetDict`: its files, written and read as HF's."""

    def save_to_disk(
        self,
        dataset_dict_path: str | os.PathLike[str],
        max_shard_size: int | str | None = None,
        num_shards: dict[str, int] | None = None,
        num_proc: int | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        """Write HF's layout: ``dataset_dict.json`` and one ``save_to_disk`` folder per split.

        The whole directory is written beside the target and swapped in, so a killed save
        leaves the previous one; as ``Dataset.save_to_disk``, it replaces only a previous
        save (of a DatasetDict) or an empty directory, and never deletes a file it did not
        write. ``num_shards`` is one count per split.
        """
        from arrowmix._hf.dataset_dict import split_values
        from arrowmix._hf.saved_dict import save_dict

        if storage_options:
            raise NotImplementedError(
                "save_to_disk writes local directories; `storage_options` is not supported."
            )
        splits = _splits(self)
        shards = split_values("num_shards", num_shards, list(splits.keys()))
        save_dict(splits, dataset_dict_path, max_shard_size, shards, num_proc)

    def push_to_hub(self, repo_id: str, *args: Any, **kwargs: Any) -> Any:
        """Not here: arrowmix makes no network call; write :meth:`to_hub_folder` and upload it.

        Raises:
            NotLocalError: always, saying how to upload with ``huggingface_hub``.
        """
        from arrowmix._hf.hub_folder import no_push

        raise no_push(repo_id)

    def to_hub_folder(
        self,
        folder: str | os.PathLike[str],
        *,
        config_name: str = "default",
        data_dir: str | None = None,
        max_shard_size: int | str | None = None,
        num_shards: dict[str, int] | None = None,
    ) -> list[str]:
        """Write the folder HF's ``push_to_hub`` would upload, every split; see Dataset's."""
        from arrowmix._hf.dataset_dict import split_values
        from arrowmix._hf.hub_folder import write_hub_folder

        splits = _splits(self)
        shards = split_values("num_shards", num_shards, list(splits.keys()))
        return write_hub_folder(splits, folder, config_name, data_dir, max_shard_size, shards)

    @staticmethod
    def load_from_disk(
        dataset_dict_path: str | os.PathLike[str],
        keep_in_memory: bool | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> DatasetDict:
        """The DatasetDict ``save_to_disk`` (arrowmix's or HF's) wrote at ``dataset_dict_path``.

        Raises:
            FileNotFoundError: the directory has no ``dataset_dict.json`` (it holds a Dataset,
                or nothing saved).
        """
        from arrowmix._hf.saved_dict import load_dict

        if storage_options:
            raise NotImplementedError(
                "load_from_disk reads local directories; `storage_options` is not supported."
            )
        return load_dict(dataset_dict_path, keep_in_memory)

    @staticmethod
    def from_csv(path_or_paths: Mapping[str, Any], **kwargs: Any) -> DatasetDict:
        """``{split: files}`` read with ``Dataset.from_csv`` (``kwargs`` apply to each)."""
        return _from_files("from_csv", path_or_paths, kwargs)

    @staticmethod
    def from_json(path_or_paths: Mapping[str, Any], **kwargs: Any) -> DatasetDict:
        """``{split: files}`` read with ``Dataset.from_json`` (``kwargs`` apply to each)."""
        return _from_files("from_json", path_or_paths, kwargs)

    @staticmethod
    def from_parquet(path_or_paths: Mapping[str, Any], **kwargs: Any) -> DatasetDict:
        """``{split: files}`` read with ``Dataset.from_parquet`` (``kwargs`` apply to each)."""
        return _from_files("from_parquet", path_or_paths, kwargs)

    @staticmethod
    def from_text(path_or_paths: Mapping[str, Any], **kwargs: Any) -> DatasetDict:
        """``{split: files}`` read with ``Dataset.from_text`` (``kwargs`` apply to each)."""
        return _from_files("from_text", path_or_paths, kwargs)


def _from_files(reader: str, paths: Mapping[str, Any], kwargs: dict[str, Any]) -> DatasetDict:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.dataset_dict import DatasetDict

    if not isinstance(paths, Mapping):
        raise TypeError(
            f"DatasetDict.{reader} takes a dict {{split: files}}; got {type(paths).__name__}. "
            f"Use Dataset.{reader} for one split."
        )
    result = getattr(Dataset, reader)(dict(paths), **kwargs)
    assert isinstance(result, DatasetDict)
    return result
