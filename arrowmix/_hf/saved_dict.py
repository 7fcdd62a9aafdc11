"""A ``DatasetDict``'s ``save_to_disk`` directory, HF's layout: both ways.

``dataset_dict.json`` (``{"splits": [...]}``) and one folder per split, each a
``Dataset.save_to_disk`` directory (:mod:`arrowmix._hf.saved`). The whole directory is
written beside the target (``.<name>.saving-<pid>-<token>``, ``dataset_dict.json`` last) and
renamed into place, as a Dataset's save is, so a killed save leaves the previous one (the next
save or load of the place finishes or undoes it: :func:`arrowmix._storage.swap.recover_saves`).
It replaces only a previous DatasetDict save or an empty directory, and never deletes a file
it did not write.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from arrowmix._hf.saved import (
    DICT_NAME,
    INFO_NAME,
    STATE_NAME,
    _check_replaceable,
    _local_dir,
    check_not_read_from,
    load_saved,
    not_a_directory,
    recover,
    save_target,
    save_to_disk,
    swapped_in,
    write_json,
)
from arrowmix._storage.digests import few
from arrowmix._storage.snapshot import read_pinned
from arrowmix.exceptions import SavedDatasetError, TargetExistsError

if TYPE_CHECKING:
    from arrowmix._hf.dataset_dict import DatasetDict

__all__ = ["load_dict", "save_dict"]


def _check_dict_replaceable(target: str) -> None:
    """Refuse a target that is not absent, an empty directory or a previous DatasetDict save."""
    if not os.path.lexists(target):
        return
    if os.path.islink(target) or not os.path.isdir(target):
        raise TargetExistsError(
            f"Cannot save to {target!r}: {not_a_directory(target)}; save_to_disk writes a "
            "directory and never replaces a file it did not write."
        )
    names = sorted(os.listdir(target))
    if not names:
        return
    if DICT_NAME not in names:
        raise TargetExistsError(
            f"Cannot save a DatasetDict to {target!r}: the directory is not empty and is not "
            f"a DatasetDict directory written by save_to_disk (it holds {few(names)}). "
            "Choose an empty or new directory."
        )
    foreign = []
    for name in names:
        path = os.path.join(target, name)
        if name == DICT_NAME:
            continue
        if not os.path.isdir(path) or os.path.islink(path):
            foreign.append(name)
            continue
        try:
            _check_replaceable(path)
        except TargetExistsError:
            foreign.append(name + os.sep)
    if foreign:
        raise TargetExistsError(
            f"Cannot save to {target!r}: besides a previous DatasetDict save it holds "
            f"file(s) that save_to_disk did not write ({few(foreign)}); replacing the "
            "directory would delete them. Move them away or save to another directory."
        )


def save_dict(
    dd: DatasetDict,
    dataset_dict_path: str | os.PathLike[str],
    max_shard_size: int | str | None,
    num_shards: dict[str, int | None],
    num_proc: int | None,
) -> None:
    """Write ``dd`` as HF's DatasetDict directory at ``dataset_dict_path``, swapped in whole.

    Raises:
        TargetExistsError: the path is a file or a directory that is not a previous
            DatasetDict save (or holds other files besides one).
        PermissionError: a split reads files in the directory.
        WriteError: a file could not be written; the previous save is left as it was.
        ValueError: a split name that is not a plain name (HF's rule).
    """
    from arrowmix._dataset.inputs.file_splits import check_split_name

    for split, _ in dd.items():  # not iter(dd): a SplitPair iterates its Datasets
        check_split_name(split)
    target = save_target(dataset_dict_path)
    parent = os.path.dirname(target)
    recover(parent)  # saves killed earlier beside it: finish or undo them first
    _check_dict_replaceable(target)
    check_not_read_from(((f"split {k!r}", ds) for k, ds in dd.items()), target)
    with swapped_in(target) as swap:
        for split, ds in dd.items():
            where = os.path.join(swap.tmp, split)
            save_to_disk(ds, where, max_shard_size, num_shards[split], num_proc)
        # dataset_dict.json last: with it, the directory is a whole save.
        swap.current = os.path.join(swap.tmp, DICT_NAME)
        write_json(swap.current, {"splits": list(dd.keys())}, sort_keys=False)


def _splits(directory: str) -> list[str]:
    from arrowmix._dataset.inputs.file_splits import check_split_name
    from arrowmix._hf.saved import read_json

    where = os.path.join(directory, DICT_NAME)
    splits = read_json(directory, DICT_NAME).get("splits")
    if not isinstance(splits, list):
        raise SavedDatasetError(f"{where!r} has no `splits` list; it is damaged.")
    for split in splits:
        try:
            check_split_name(split)
        except ValueError as exc:
            raise SavedDatasetError(
                f"{where!r} lists the split {split!r}, which is not a folder name inside the "
                "directory; refusing to read outside it."
            ) from exc
    return [str(s) for s in splits]


def load_dict(
    dataset_dict_path: str | os.PathLike[str],
    keep_in_memory: bool | None = None,
    *,
    verify: bool = False,
) -> DatasetDict:
    """The DatasetDict saved at ``dataset_dict_path`` (arrowmix's or HF's save).

    Raises:
        FileNotFoundError: no ``dataset_dict.json`` there (the message says when the
            directory holds a Dataset instead), or a split's files are missing.
        SavedDatasetError: ``dataset_dict.json`` is damaged or names a split outside it.
    """
    from arrowmix._hf.dataset_dict import DatasetDict

    directory = _local_dir(dataset_dict_path, "load_from_disk")
    recover(os.path.dirname(os.path.realpath(directory)))
    recover(directory)  # a split saved on its own there and killed
    # One pin for the whole directory: every split comes from the same save (each split is
    # pinned too, for a split re-saved on its own: see load_saved).
    splits = read_pinned(directory, lambda: _load_splits(directory, keep_in_memory, verify))
    return DatasetDict(splits)


def _load_splits(directory: str, keep_in_memory: bool | None, verify: bool) -> dict[str, Any]:
    """Each split of the DatasetDict save at ``directory`` (one attempt at the whole dict)."""
    if not os.path.isfile(os.path.join(directory, DICT_NAME)):
        is_ds = all(os.path.isfile(os.path.join(directory, n)) for n in (STATE_NAME, INFO_NAME))
        raise FileNotFoundError(
            f"No such file: {os.path.join(directory, DICT_NAME)!r}. Expected to load a "
            + (
                "`DatasetDict`, but the directory holds a `Dataset`: use "
                "`arrowmix.load_from_disk` or `Dataset.load_from_disk`."
                if is_ds
                else "`DatasetDict`, but the directory is not one."
            )
        )
    return {
        split: load_saved(os.path.join(directory, split), keep_in_memory, verify)
        for split in _splits(directory)
    }
