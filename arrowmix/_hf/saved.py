"""``save_to_disk`` / ``load_from_disk``: HF ``datasets``' dataset directory, both ways.

The layout is HF's: ``data-00000-of-0000N.arrow`` (Arrow IPC *stream* files, HF's features in
their schema metadata), ``state.json`` (fingerprint, format, the data files in order) and
``dataset_info.json`` (features and the description texts). A directory written here opens in
HF's ``load_from_disk``, and one HF wrote opens here.

A save writes the view's rows (its indices applied) into a temporary sibling directory and
renames it into place last, so a killed save never leaves a directory that looks complete.
``state.json`` also records the content fingerprint of the files written
(``_arrowmix_content``, a key HF ignores): a load keeps the saved fingerprint only while the
files still have that content, and otherwise names the dataset by its files (so no cached
result of the old rows is ever served for changed ones).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset.state import estimate_nbytes, state_of, view_range
from arrowmix._hf.info import INFO_TEXTS, info_entry
from arrowmix._hooks import dataset_with_info
from arrowmix._storage.fs import is_local, local_path

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["load_from_disk", "save_to_disk"]

STATE_NAME = "state.json"
INFO_NAME = "dataset_info.json"
_CONTENT_KEY = "_arrowmix_content"
#: HF's ``config.MAX_SHARD_SIZE``: the default ``max_shard_size``.
_MAX_SHARD_SIZE = "500MB"
#: Rows per record batch in a saved file (HF's ``DEFAULT_MAX_BATCH_SIZE``).
_BATCH_ROWS = 1000


def _local_dir(path: str | os.PathLike[str], what: str) -> str:
    p = os.fspath(path)
    if not is_local(p):
        raise NotImplementedError(
            f"`{what}` reads and writes local directories; got the URL {p!r}. Use "
            "`write_chunks` and `Dataset.from_chunks` for remote storage."
        )
    return os.path.abspath(os.path.expanduser(local_path(p)))


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
        "_split": None,
    }


def save_to_disk(
    ds: Dataset,
    dataset_path: str | os.PathLike[str],
    max_shard_size: int | str | None = None,
    num_shards: int | None = None,
    num_proc: int | None = None,
) -> None:
    """Write ``ds`` as HF's dataset directory at ``dataset_path`` (replacing one there).

    Raises:
        PermissionError: ``dataset_path`` holds files this dataset reads.
        TypeError: a format keyword is not JSON serializable (as in HF).
        ValueError: both or invalid ``max_shard_size``/``num_shards``.
    """
    from arrowmix._dataset.build import from_chunks

    target = _local_dir(dataset_path, "save_to_disk")
    mine = {os.path.dirname(os.path.abspath(f)) for f in ds.cache_files if is_local(f)}
    if target in mine:
        raise PermissionError(
            f"Cannot save to {target!r}: the dataset reads files in that directory. Save it "
            "to another directory."
        )
    n = _num_shards(ds, max_shard_size, num_shards, num_proc)
    schema = _schema(ds)
    names = [f"data-{i:05d}-of-{n:05d}.arrow" for i in range(n)]
    parent, base = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{base}.saving-{uuid.uuid4().hex[:8]}")
    os.makedirs(tmp)
    try:
        rows = ds.num_rows
        for i, name in enumerate(names):
            start, stop = rows * i // n, rows * (i + 1) // n
            with pa.OSFile(os.path.join(tmp, name), "wb") as sink:
                with pa.ipc.new_stream(sink, schema) as writer:
                    for a in range(start, stop, _BATCH_ROWS):
                        part = view_range(state_of(ds), a, min(a + _BATCH_ROWS, stop))
                        writer.write_table(part.replace_schema_metadata(schema.metadata))
                    if start == stop:
                        writer.write_table(schema.empty_table())
                sink.flush()
                os.fsync(sink.fileno())
        state = _state(ds, names)
        state[_CONTENT_KEY] = from_chunks([os.path.join(tmp, x) for x in names]).fingerprint
        for fname, content in ((STATE_NAME, state), (INFO_NAME, _info(ds, schema))):
            with open(os.path.join(tmp, fname), "w", encoding="utf-8") as fh:
                json.dump(content, fh, indent=2, sort_keys=fname == STATE_NAME)
        old = None
        if os.path.lexists(target):
            old = os.path.join(parent, f".{base}.replaced-{uuid.uuid4().hex[:8]}")
            os.rename(target, old)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True) if os.path.isdir(old) else os.remove(old)


def _read_json(directory: str, name: str) -> dict[str, Any]:
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
    with open(path, encoding="utf-8") as fh:
        content = json.load(fh)
    if not isinstance(content, dict):
        raise ValueError(f"{path!r} does not hold a JSON object.")
    return content


def load_from_disk(
    dataset_path: str | os.PathLike[str],
    keep_in_memory: bool | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Dataset:
    """The dataset that ``save_to_disk`` (arrowmix's or HF's) wrote at ``dataset_path``.

    The rows are memory-mapped (``keep_in_memory=True`` copies them into memory), with the
    saved format, features, description texts and fingerprint. The fingerprint is the saved
    one while the data files still hold what arrowmix wrote (a directory HF wrote keeps
    HF's, as HF does); after a change of their content it is that of the files. Only local
    directories (``storage_options`` None).

    Raises:
        FileNotFoundError: ``state.json`` or ``dataset_info.json`` (or a data file) is missing.

    Example:
        >>> import arrowmix as am, tempfile, os
        >>> d = os.path.join(tempfile.mkdtemp(), "saved")
        >>> ds = am.Dataset.from_dict({"x": [1, 2]}).with_format("numpy")
        >>> ds.save_to_disk(d)
        >>> back = am.load_from_disk(d)
        >>> back.format["type"], back.fingerprint == ds.fingerprint
        ('numpy', True)
    """
    if storage_options:
        raise NotImplementedError(
            "load_from_disk reads local directories; `storage_options` is not supported. "
            "Use `Dataset.from_chunks` for remote storage."
        )
    from arrowmix._dataset.build import from_chunks
    from arrowmix._dataset.map_options import user_fingerprint

    directory = _local_dir(dataset_path, "load_from_disk")
    state = _read_json(directory, STATE_NAME)
    info = _read_json(directory, INFO_NAME)
    files = [os.path.join(directory, f["filename"]) for f in state["_data_files"]]
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"Data file {f!r} listed in {STATE_NAME} is missing.")
    ds = from_chunks(files)
    content_fp = ds.fingerprint
    texts = {k: info.get(k) for k in INFO_TEXTS}
    ds = dataset_with_info(ds, SimpleNamespace(**texts))
    fmt_kwargs = state.get("_format_kwargs") or {}
    ds = ds.with_format(
        state.get("_format_type"),
        state.get("_format_columns"),
        bool(state.get("_output_all_columns", False)),
        **fmt_kwargs,
    )
    content = state.get(_CONTENT_KEY)
    saved = state.get("_fingerprint")
    if isinstance(saved, str) and (content is None or content == content_fp):
        ds = type(ds)(replace(state_of(ds), fingerprint=user_fingerprint(saved)[0]))
    if keep_in_memory:
        from arrowmix._dataset.in_memory import in_memory_copy

        ds = in_memory_copy(ds)
    return ds
