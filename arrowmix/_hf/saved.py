"""``save_to_disk`` / ``load_from_disk``: HF ``datasets``' dataset directory, both ways.

The layout is HF's: ``data-00000-of-0000N.arrow`` (Arrow IPC *stream* files, HF's features in
their schema metadata), ``state.json`` (fingerprint, format, the data files in order) and
``dataset_info.json`` (features and the description texts). A directory written here opens in
HF's ``load_from_disk``, and one HF wrote opens here.

A save writes the view's rows (its indices applied) into a temporary sibling directory and
renames it into place last, so a killed save never leaves a directory that looks complete. It
replaces only a previous save (or an empty directory) and refuses any other path that exists,
so it never deletes a file it did not write; a save killed between its renames is finished or
undone by the next save or load of that path (see ``arrowmix._storage.swap``).
A load pins the directory it read, so it sees one save whole while another process re-saves
(``arrowmix._storage.snapshot``); a re-save moves the files a live process uses in the old
directory into the new one (``arrowmix._hf.carry_over``).
``state.json`` also records the content fingerprint of the files written
(``_arrowmix_content``, a key HF ignores) and each file's digest: a load refuses files that
no longer hold what was saved (bit rot, an edit in place), naming the file, instead of
serving their rows.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._cache.paths import SAVED_DIR_FILE_RE
from arrowmix._dataset.state import estimate_nbytes, state_of, view_range
from arrowmix._dataset.verify import DIGESTS_KEY
from arrowmix._hf.carry_over import carry_over
from arrowmix._hf.info import INFO_NAMES, INFO_TEXTS, dataset_with_info, info_entry
from arrowmix._storage.damage import BATCHES_KEY, batch_record, mismatch
from arrowmix._storage.digests import few, file_digest
from arrowmix._storage.fs import is_local, local_path
from arrowmix._storage.snapshot import read_pinned
from arrowmix._storage.swap import new_save_names, recover_saves
from arrowmix.exceptions import (
    ArrowmixError,
    ChunkFileError,
    SavedDatasetError,
    TargetExistsError,
    WriteError,
)

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["load_from_disk", "save_to_disk"]

STATE_NAME = "state.json"
INFO_NAME = "dataset_info.json"
#: HF's ``config.DATASETDICT_JSON_FILENAME``: ``{"splits": [...]}`` of a DatasetDict save.
DICT_NAME = "dataset_dict.json"
CONTENT_KEY = "_arrowmix_content"
#: HF's ``config.MAX_SHARD_SIZE``: the default ``max_shard_size``.
_MAX_SHARD_SIZE = "500MB"
#: Rows per record batch in a saved file (HF's ``DEFAULT_MAX_BATCH_SIZE``).
_BATCH_ROWS = 1000
#: Files a previous save (and arrowmix's caches of a loaded save) may hold besides the JSONs.
_SAVED_FILE_RE = SAVED_DIR_FILE_RE


def _local_dir(path: str | os.PathLike[str], what: str) -> str:
    p = os.fspath(path)
    if not is_local(p):
        raise NotImplementedError(
            f"`{what}` reads and writes local directories; got the URL {p!r}. Use "
            "`write_chunks` and `Dataset.from_chunks` for remote storage."
        )
    return os.path.abspath(os.path.expanduser(local_path(p)))


def recover(parent: str) -> None:
    """Finish or undo the saves into ``parent`` of dead writers, keeping what is in use."""
    recover_saves(parent, carry=carry_over)


def save_target(path: str | os.PathLike[str]) -> str:
    """The directory a save at ``path`` writes: through symbolic links, the one they point to.

    The links stay, and lead to the new save (as an editor saves a file through a link).
    """
    return os.path.realpath(_local_dir(path, "save_to_disk"))


def not_a_directory(target: str) -> str:
    """Why ``target``, which exists, cannot be saved to, in the words of an error message."""
    if os.path.islink(target):  # realpath left a link: a loop
        return "it is a symbolic link that never reaches a directory (a loop)"
    return "it is a file, not a directory"


def _num_shards(
    ds: Dataset, max_shard_size: int | str | None, num_shards: int | None, num_proc: int | None
) -> int:
    from arrowmix._remote.stats import parse_size
    from arrowmix._validate import check_int

    if num_shards is not None and max_shard_size is not None:
        raise ValueError("Pass either `max_shard_size` or `num_shards` to save_to_disk, not both.")
    if num_shards is not None:
        n = int(check_int("num_shards", num_shards, minimum=1))
        if n > max(ds.num_rows, 1):
            raise ValueError(f"`num_shards`={n} is more than the dataset's {ds.num_rows} row(s).")
        return n
    limit = parse_size(max_shard_size or _MAX_SHARD_SIZE, "max_shard_size")
    least = check_int("num_proc", num_proc, minimum=1) if num_proc is not None else 1
    nbytes = estimate_nbytes(state_of(ds))
    return max(1, min(ds.num_rows, max(nbytes // limit + 1, least)))


def _schema(ds: Dataset) -> pa.Schema:
    """The saved files' schema: the columns and HF's features of every column."""
    from arrowmix._storage.metadata import kept_or_none as hf_only

    schema = ds.schema
    try:
        meta = ds.features.arrow_schema.metadata  # every column described, as HF writes
    except ImportError:
        meta = hf_only(state_of(ds).table.schema)
    return schema.with_metadata(meta or {})


def _info(ds: Dataset, schema: pa.Schema) -> dict[str, Any]:
    """The ``dataset_info.json`` contents (HF's ``asdict(DatasetInfo)``, first keys sorted)."""
    try:
        from datasets.utils.py_utils import asdict  # type: ignore[import-untyped, import-not-found, unused-ignore]

        info: dict[str, Any] = asdict(ds.info)
    except ImportError:
        info = dict(info_entry(schema))
    return {k: info[k] for k in sorted(info)}


def _state(ds: Dataset, files: list[str]) -> dict[str, Any]:
    f, cols = ds.format, state_of(ds).fmt_columns
    for key, value in f["format_kwargs"].items():
        try:
            json.dumps(value)
        except TypeError as exc:
            raise TypeError(
                f"save_to_disk keeps the format in {STATE_NAME}; format keyword {key!r} "
                f"({value!r}) is not JSON serializable. Save `ds.with_format(...)` without it."
            ) from exc
    return {
        "_data_files": [{"filename": name} for name in files],
        "_fingerprint": ds.fingerprint,
        "_format_columns": None if cols is None else list(cols),
        "_format_kwargs": f["format_kwargs"],
        "_format_type": f["type"],
        "_output_all_columns": f["output_all_columns"],
        "_split": ds.split,
    }


def save_to_disk(
    ds: Dataset,
    dataset_path: str | os.PathLike[str],
    max_shard_size: int | str | None = None,
    num_shards: int | None = None,
    num_proc: int | None = None,
) -> None:
    """Write ``ds`` as HF's dataset directory at ``dataset_path`` (replacing a previous save).

    ``dataset_path`` must be absent, an empty directory or a directory a previous
    ``save_to_disk`` wrote (which is replaced whole, atomically); anything else is refused.
    Through a symbolic link, the directory it points to is written and the link kept.

    Raises:
        TargetExistsError: ``dataset_path`` is a file, or a non-empty directory that is not a
            previous save, or a previous save that also holds other files (named).
        PermissionError: ``dataset_path`` holds files this dataset reads.
        WriteError: a file could not be written (a full disk...); the message names it and
            the previous save is left as it was.
        TypeError: a format keyword is not JSON serializable (as in HF).
        ValueError: both or invalid ``max_shard_size``/``num_shards``.
    """
    target = save_target(dataset_path)
    parent = os.path.dirname(target)
    recover(parent)  # saves killed earlier beside it: finish or undo them first
    _check_replaceable(target)
    check_not_read_from([("the dataset", ds)], target)
    n = _num_shards(ds, max_shard_size, num_shards, num_proc)
    schema = _schema(ds)
    names = [f"data-{i:05d}-of-{n:05d}.arrow" for i in range(n)]
    with swapped_in(target) as swap:
        rows = ds.num_rows
        for i, name in enumerate(names):
            swap.current = os.path.join(swap.tmp, name)
            _write_shard(ds, swap.current, schema, rows * i // n, rows * (i + 1) // n)
        swap.current = swap.tmp
        state = _saved_state(ds, swap.tmp, names)
        # state.json last: a save directory with a readable state.json is complete.
        for fname, content in ((INFO_NAME, _info(ds, schema)), (STATE_NAME, state)):
            swap.current = os.path.join(swap.tmp, fname)
            write_json(swap.current, content, sort_keys=fname == STATE_NAME)


class _Swap(SimpleNamespace):
    tmp: str
    current: str


@contextlib.contextmanager
def swapped_in(target: str) -> Iterator[_Swap]:
    """A new directory ``swap.tmp`` beside ``target``, renamed over it when the block ends.

    The block writes the new content into ``swap.tmp`` and sets ``swap.current`` to the path
    it is writing (named by a :class:`WriteError`). A previous ``target`` is replaced only
    once the new one is complete and synced; on any error ``swap.tmp`` is removed and the
    previous ``target`` is left as it was.
    """
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp, old = new_save_names(target)
    os.makedirs(tmp)
    swap = _Swap(tmp=tmp, current=target)
    try:
        yield swap
        swap.current = target
        _fsync(tmp)
        _swap_in(tmp, target, old)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, ArrowmixError):
            why = exc.strerror or str(exc)
            raise WriteError(
                exc.errno, f"save_to_disk could not write {swap.current!r}: {why}"
            ) from exc
        raise
    _fsync(parent)
    if os.path.lexists(old):
        carry_over(old, target)  # what a live process uses there (a map in progress)
        shutil.rmtree(old, ignore_errors=True)


def check_not_read_from(named: Iterable[tuple[str, Dataset]], target: str) -> None:
    """Refuse to save over a directory holding files one of the ``(name, dataset)`` reads."""
    for name, ds in named:
        mine = [os.path.realpath(f) for f in ds.cache_files if is_local(f)]
        if any(f == target or f.startswith(target + os.sep) for f in mine):
            raise PermissionError(
                f"Cannot save to {target!r}: {name} reads files in that directory. Save it "
                "to another directory."
            )


def _write_shard(ds: Dataset, path: str, schema: pa.Schema, start: int, stop: int) -> None:
    """Write rows ``[start, stop)`` of ``ds`` as one synced Arrow IPC stream file at ``path``."""
    with pa.OSFile(path, "wb") as sink:
        with pa.ipc.new_stream(sink, schema) as writer:
            for a in range(start, stop, _BATCH_ROWS):
                part = view_range(state_of(ds), a, min(a + _BATCH_ROWS, stop))
                writer.write_table(part.replace_schema_metadata(schema.metadata))
            if start == stop:
                writer.write_table(schema.empty_table())
        sink.flush()
        os.fsync(sink.fileno())


def _saved_state(ds: Dataset, tmp: str, names: list[str]) -> dict[str, Any]:
    """``state.json``'s content, with the content fingerprint and digests of the files."""
    from arrowmix._dataset.inputs.builders import from_chunks

    state = _state(ds, names)
    state[CONTENT_KEY] = from_chunks([os.path.join(tmp, x) for x in names]).fingerprint
    state[DIGESTS_KEY] = {x: file_digest(os.path.join(tmp, x)) for x in names}  # verify
    state[BATCHES_KEY] = {x: batch_record(os.path.join(tmp, x)) for x in names}  # locate
    return state


def write_json(path: str, content: dict[str, Any], sort_keys: bool) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(content, fh, indent=2, sort_keys=sort_keys)
        fh.flush()
        os.fsync(fh.fileno())


def _swap_in(tmp: str, target: str, old: str) -> None:
    """Rename ``tmp`` to ``target``, moving a previous ``target`` to ``old`` first."""
    moved = False
    if os.path.lexists(target):
        os.rename(target, old)
        moved = True
    try:
        os.rename(tmp, target)
    except BaseException:
        if moved:
            os.rename(old, target)
        raise


def _fsync(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # not supported everywhere; the data files themselves are synced
    finally:
        os.close(fd)


def _check_replaceable(target: str) -> None:
    """Refuse a target that is not absent, an empty directory, or a previous save.

    A previous save may also hold arrowmix's cache files of a dataset loaded from it; any
    other file (a README, a subdirectory such as a corpus) makes it the user's.
    """
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
    if STATE_NAME not in names or INFO_NAME not in names:
        raise TargetExistsError(
            f"Cannot save to {target!r}: the directory is not empty and is not a dataset "
            f"directory written by save_to_disk (it holds {few(names)}). save_to_disk only "
            "replaces a previous save; choose an empty or new directory."
        )
    foreign = [
        x
        for x in names
        if x not in (STATE_NAME, INFO_NAME)
        and not (_SAVED_FILE_RE.match(x) and os.path.isfile(os.path.join(target, x)))
    ]
    if foreign:
        raise TargetExistsError(
            f"Cannot save to {target!r}: besides a previous save it holds file(s) that "
            f"save_to_disk did not write ({few(foreign)}); replacing the directory would "
            "delete them. Move them away or save to another directory."
        )


def read_json(directory: str, name: str) -> dict[str, Any]:
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"No {name} in {directory!r}: not a dataset directory written by save_to_disk"
            + (
                " (it holds a DatasetDict)"
                if os.path.isfile(os.path.join(directory, "dataset_dict.json"))
                else ""
            )
            + "."
        )
    try:
        with open(path, encoding="utf-8") as fh:
            content = json.load(fh)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise SavedDatasetError(
            f"{path!r} is damaged (not valid JSON: {exc}); save the dataset again."
        ) from exc
    if not isinstance(content, dict):
        raise SavedDatasetError(f"{path!r} does not hold a JSON object.")
    return content


def _data_files(directory: str, state: dict[str, Any]) -> list[str]:
    """The data files ``state.json`` lists, each a plain file name inside ``directory``."""
    where = os.path.join(directory, STATE_NAME)
    listed = state.get("_data_files")
    if not isinstance(listed, list):
        raise SavedDatasetError(
            f"{where!r} has no `_data_files` list (got {listed!r:.80}); it is damaged or not "
            "written by save_to_disk."
        )
    files = []
    for entry in listed:
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise SavedDatasetError(
                f"{where!r}: an entry of `_data_files` has no file name: {entry!r:.80}."
            )
        if name in ("", ".", "..") or os.path.basename(name) != name or "/" in name:
            raise SavedDatasetError(
                f"{where!r} lists the data file {name!r}, which is not a file inside the "
                "directory; refusing to read outside it."
            )
        files.append(os.path.join(directory, name))
    return files


def load_from_disk(
    dataset_path: str | os.PathLike[str],
    keep_in_memory: bool | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    verify: bool = False,
) -> Any:
    """The dataset that ``save_to_disk`` (arrowmix's or HF's) wrote at ``dataset_path``.

    A directory a ``DatasetDict.save_to_disk`` wrote (``dataset_dict.json`` and one folder
    per split) gives a ``DatasetDict``, as HF's ``load_from_disk`` does.

    The rows are memory-mapped (``keep_in_memory=True`` copies them into memory), with the
    saved format, features, description texts and fingerprint. The fingerprint is the saved
    one while the data files still hold what arrowmix wrote (a directory HF wrote keeps
    HF's, as HF does). Only local directories (``storage_options`` None).

    A data file whose ``stat`` identity changed since it was hashed is hashed at its first
    load and must match the digest ``save_to_disk`` recorded in ``state.json``.
    ``verify=True`` first hashes every data file in full, whatever its identity (see
    ``docs/guarantees.md``).

    While another process re-saves the directory, the load gets one save whole: it pins the
    directory it read and starts again on the new one when it was replaced meanwhile.

    Raises:
        FileNotFoundError: ``state.json`` or ``dataset_info.json`` (or a data file) is missing.
        SavedDatasetError: ``state.json`` is damaged, has no ``_data_files`` list, or names a
            data file outside the directory.
        ChunkFileError: a data file does not hold what was saved (the message names it).
        ValueError: ``verify=True`` on a directory with no recorded digests (HF wrote it).
        SavedDatasetError: the directory was re-saved during each of 10 attempts (2.4 s).

    Example:
        >>> import arrowmix as am, tempfile, os
        >>> d = os.path.join(tempfile.mkdtemp(), "saved")
        >>> ds = am.Dataset.from_dict({"x": [1, 2]}).with_format("numpy")
        >>> ds.save_to_disk(d)
        >>> back = am.load_from_disk(d)
        >>> back.format["type"], back.fingerprint == ds.fingerprint
        ('numpy', True)
    """
    _refuse_storage_options(storage_options)
    directory = _local_dir(dataset_path, "load_from_disk")
    # Saves killed earlier (beside the directory links lead to): finish or undo them.
    recover(os.path.dirname(os.path.realpath(directory)))
    if is_dict_dir(directory):
        from arrowmix._hf.saved_dict import load_dict

        return load_dict(directory, keep_in_memory, verify=verify)
    return load_saved(directory, keep_in_memory, verify)


def _refuse_storage_options(storage_options: dict[str, Any] | None) -> None:
    if storage_options:
        raise NotImplementedError(
            "load_from_disk reads local directories; `storage_options` is not supported. "
            "Use `Dataset.from_chunks` for remote storage."
        )


def load_saved(directory: str, keep_in_memory: bool | None, verify: bool) -> Dataset:
    """The ``Dataset`` of the save (not a ``DatasetDict``) at the local ``directory``.

    Read pinned to one version of the directory (:func:`read_pinned`): a re-save meanwhile
    makes it read the new version whole, never a mix, and never calls either one damaged.
    """
    return read_pinned(directory, lambda: _load_once(directory, keep_in_memory, verify))


def _load_once(directory: str, keep_in_memory: bool | None, verify: bool) -> Dataset:
    """One attempt at :func:`load_saved`, by path."""
    from arrowmix._dataset.inputs.builders import from_chunks

    state = read_json(directory, STATE_NAME)
    info = read_json(directory, INFO_NAME)
    files = _data_files(directory, state)
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"Data file {f!r} listed in {STATE_NAME} is missing.")
    if verify:
        _verify(directory, state)
    mapped = from_chunks(files)
    _check_recorded(directory, state, files, mapped.fingerprint)
    ds = _with_saved_state(mapped, state, info)
    if keep_in_memory:
        from arrowmix._dataset.views.in_memory import in_memory_copy

        ds = in_memory_copy(ds)
    return ds


def _check_recorded(
    directory: str, state: dict[str, Any], files: list[str], content_fp: str
) -> None:
    """Raise ``ChunkFileError`` if a data file mapped is not what the save recorded.

    The digests compared are those ``from_chunks`` just mapped the files under (remembered
    per file version, so nothing is hashed again). A save of an older arrowmix records one
    content fingerprint for all files, and a save by HF nothing. Files of a save that
    replaced the one read meanwhile also differ: the caller's pin then reads again
    (:func:`load_saved`), so only damage to the version read reaches the user.
    """
    recorded = state.get(DIGESTS_KEY)
    repair = f"Save the dataset again (`save_to_disk`) from its source, or restore {directory!r}."
    if isinstance(recorded, dict):
        for f in files:
            want = recorded.get(os.path.basename(f))
            if isinstance(want, str) and (got := file_digest(f)) != want:
                record = state.get(BATCHES_KEY)
                batches = record.get(os.path.basename(f)) if isinstance(record, dict) else None
                raise mismatch(f, got, want, f"its save's {STATE_NAME}", repair, batches)
        return
    content = state.get(CONTENT_KEY)
    if isinstance(content, str) and content != content_fp:
        raise ChunkFileError(
            f"{directory!r} is damaged: its data files do not hold what {STATE_NAME} recorded "
            f"when it was saved (content fingerprint {content_fp}, {content} recorded; damaged "
            f"on disk, or changed in place by another tool). {repair}"
        )


def _with_saved_state(ds: Dataset, state: dict[str, Any], info: dict[str, Any]) -> Dataset:
    """``ds`` (the saved files) with the saved texts, format, fingerprint and split."""
    from arrowmix._dataset.map_options import user_fingerprint

    content_fp = ds.fingerprint
    texts = {k: info.get(k) for k in INFO_TEXTS + INFO_NAMES}
    ds = dataset_with_info(ds, SimpleNamespace(**texts))
    fmt_kwargs = state.get("_format_kwargs") or {}
    ds = ds.with_format(
        state.get("_format_type"),
        state.get("_format_columns"),
        bool(state.get("_output_all_columns", False)),
        **fmt_kwargs,
    )
    content = state.get(CONTENT_KEY)
    saved = state.get("_fingerprint")
    if isinstance(saved, str) and (content is None or content == content_fp):
        ds = type(ds)(replace(state_of(ds), fingerprint=user_fingerprint(saved)[0]))
    split = state.get("_split")
    if isinstance(split, str):
        ds = type(ds)(replace(state_of(ds), split=split))
    return ds


def is_dict_dir(directory: str) -> bool:
    """Whether ``directory`` is a ``DatasetDict`` save (``dataset_dict.json``, no state)."""
    return os.path.isfile(os.path.join(directory, DICT_NAME)) and not os.path.isfile(
        os.path.join(directory, STATE_NAME)
    )


def _verify(directory: str, state: dict[str, Any]) -> None:
    """Raise ``ChunkFileError`` naming each data file whose bytes differ from the record."""
    from arrowmix._hf.verify import check_saved

    problems = check_saved(directory, state).problems
    if problems:
        listed = "; ".join(f"{p!r}: {why}" for p, why in problems)
        raise ChunkFileError(
            f"{len(problems)} data file(s) of {directory!r} do not hold what save_to_disk "
            f"wrote (damaged on disk, or changed by another tool): {listed}."
        )
