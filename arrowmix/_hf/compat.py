"""HF ``datasets``' names that code written against HF uses, beside arrowmix's own.

The one mixin of :class:`~arrowmix.Dataset` with HF's names, kept apart from the class body:
private attributes HF's users and tests read (``_fingerprint``, ``_data``, ``_indices``,
``_format_type``...), its table view ``data`` and ``info``, ``formatted_as``, one-off
formatted indexing (``_getitem``), ``to_dict(batched=True)``, ``unique``, ``cast``,
``save_to_disk``; HF's column methods (``add_column`` with ``feature=``, ``cast_column``,
``class_encode_column``: :mod:`~arrowmix._hf.columns` does the work); HF's access-time
transforms (``with_transform``, ``set_transform``) and row helpers (``take``, ``skip``,
``batch``, ``to_iterable_dataset``). Each says what it is in arrowmix's terms.

A transform is a format (``"custom"``, as in HF): it runs when rows are read (``ds[i]``,
``ds[a:b]``, ``ds["col"]``, iteration, and the batches a ``map`` receives), on a batch of Python
objects, and nothing is cached. The fingerprint rolls with the function, as with any format.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from arrowmix._hf import columns as hf_columns
from arrowmix._hf import transforms as hf_transforms
from arrowmix._hf.info import InfoFields
from arrowmix._hf.state import set_state, state_of
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.iterable import IterableDataset

__all__ = ["HFCompat"]

#: HF's default ``batch_size`` of ``to_dict(batched=True)`` (``DEFAULT_MAX_BATCH_SIZE``).
_TO_DICT_BATCH = 1000
_GETITEM_ARGS = {"format_type", "format_columns", "output_all_columns", "format_kwargs"}
_Transform = Callable[[dict[str, list[Any]]], dict[str, Any]]
#: Formats whose batches are tables (``batch`` then maps the Python rows).
_TABLE_FORMATS = frozenset({"arrow", "pyarrow", "pa", "pandas", "pd", "polars", "pl"})


def _dataset(obj: HFCompat) -> Dataset:
    """``obj`` as the :class:`~arrowmix.Dataset` it is (the mixin's only host)."""
    return cast("Dataset", obj)


class HFCompat(InfoFields):
    """Mixin of :class:`~arrowmix.Dataset`: HF ``datasets``' names beside arrowmix's own."""

    @property
    def _fingerprint(self) -> str:
        """HF ``datasets``' name of :attr:`fingerprint`, for code written against HF.

        Assigning it (as HF's own transforms do) gives this object that fingerprint, like a
        ``new_fingerprint=`` argument: any string HF accepts, the caller's promise that it
        names these rows.
        """
        return state_of(_dataset(self)).fingerprint

    @_fingerprint.setter
    def _fingerprint(self, value: str) -> None:
        from dataclasses import replace

        from arrowmix._dataset.map_options import user_fingerprint

        ds = _dataset(self)
        set_state(ds, replace(state_of(ds), fingerprint=user_fingerprint(value)[0]))

    @property
    def split(self) -> str | None:
        """HF's split name, or ``None`` (``from_dict`` and the like).

        It is ``split=`` of ``from_csv``/``from_json``/``from_parquet``/``from_text``
        (``"train"`` by default, as in HF), a split's name in a ``DatasetDict`` read from
        files, or the saved name after ``load_from_disk``.

        Views and maps keep it; it is never part of the fingerprint.
        """
        return state_of(_dataset(self)).split

    @property
    def data(self) -> Any:
        """The Arrow table under the view, wrapped like HF's ``datasets.table.Table``.

        ``ds.data.table`` is the ``pyarrow.Table`` (the whole table under a shuffled or
        filtered mapping, the selected rows of a contiguous selection, as in HF); the
        other attributes are the table's. For code written against HF; arrowmix's own
        way to the rows as a table is :meth:`to_table`.
        """
        from arrowmix._hf.table import data_view

        return data_view(_dataset(self))

    @property
    def info(self) -> Any:
        """HF's ``DatasetInfo``: the texts given with ``from_dict(info=...)`` and ``features``.

        For code written against HF (needs ``datasets`` installed). The description,
        citation, homepage and license come from the ``info`` of ``from_dict``/``Dataset``,
        or from an HF ``.arrow`` file's metadata; views keep them, ``concatenate_datasets``
        merges them as HF does, a ``map`` result has none.
        """
        from arrowmix._hf.info import dataset_info

        return dataset_info(_dataset(self))

    @property
    def _data(self) -> Any:
        """HF ``datasets``' private name of :attr:`data`, for code written against HF."""
        return _dataset(self).data

    @property
    def _indices(self) -> Any:
        """HF's indices table (one ``uint64`` column ``"indices"``) or None.

        For code written against HF; None also for a contiguous selection, which HF keeps
        as a slice of :attr:`data`.
        """
        from arrowmix._hf.table import indices_view

        return indices_view(_dataset(self))

    def _getitem(self, key: Any, **format_args: Any) -> Any:
        """HF ``datasets``' indexing with a one-off format, for code written against HF.

        ``format_args``: HF's ``format_type``, ``format_columns``, ``output_all_columns``,
        ``format_kwargs`` (default: this view's); ``ds._getitem(key)`` is ``ds[key]``.
        """
        if not format_args:
            return _dataset(self)[key]
        unknown = sorted(set(format_args) - _GETITEM_ARGS)
        if unknown:
            raise TypeError(f"_getitem() got unexpected keyword argument(s) {unknown}.")
        s = state_of(_dataset(self))
        view = _dataset(self).with_format(
            format_args.get("format_type", s.fmt),
            format_args.get("format_columns", s.fmt_columns),
            format_args.get("output_all_columns", s.fmt_all),
            **(format_args.get("format_kwargs") or dict(s.fmt_kwargs)),
        )
        return view[key]

    def __getitems__(self, keys: list[int]) -> list[Any]:
        """The rows at ``keys``, read in one gather: what torch's ``DataLoader`` calls.

        As HF ``datasets``: ``ds[keys]`` once, cut into rows, so a ``DataLoader(ds,
        batch_size=n)`` reads each batch with one gather instead of ``n`` lookups; equal
        to ``[ds[k] for k in keys]`` in every format (a format whose batches are not a dict
        of columns reads the rows one by one).
        """
        ds = _dataset(self)
        batch = self._getitem(keys)  # ds[keys], through HF's private name as HF reads it
        if not isinstance(batch, dict) or not batch:
            return [ds[k] for k in keys]
        columns = list(batch.items())
        return [{name: values[i] for name, values in columns} for i in range(len(keys))]

    def unique(self, column: str) -> list[Any]:
        """The distinct values of ``column`` in the view, in order of first appearance (HF's).

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [3, 1, 3, 2, 1]}).unique("x")
            [3, 1, 2]
        """
        import pyarrow.compute as pc

        from arrowmix._dataset.access import check_column
        from arrowmix._dataset.state import num_rows, view_range

        s = state_of(_dataset(self))
        check_column(s, column)
        return list(pc.unique(view_range(s, 0, num_rows(s), [column]).column(column)).to_pylist())

    def to_dict(self, batch_size: int | None = None, batched: bool = False) -> Any:
        """The view as ``{column: [values...]}`` of Python objects (HF's ``to_dict``).

        With ``batched=True``, an iterator of such dicts of ``batch_size`` rows each
        (default 1,000, as in HF) instead, so that a large dataset never sits in memory as
        Python objects.

        Example:
            >>> import arrowmix as am
            >>> list(am.Dataset.from_dict({"x": [1, 2, 3]}).to_dict(batch_size=2, batched=True))
            [{'x': [1, 2]}, {'x': [3]}]
        """
        from arrowmix._storage.mixed_json import decode_pydict  # on_mixed_types' JSON

        ds = _dataset(self)
        if not batched:
            table = ds.to_table()
            return decode_pydict(table, table.to_pydict())
        size = check_int("batch_size", batch_size or _TO_DICT_BATCH, minimum=1)
        from arrowmix._dataset.state import view_range

        s, n = state_of(ds), ds.num_rows
        parts = (view_range(s, i, min(i + size, n)) for i in range(0, n, size))
        return (decode_pydict(t, t.to_pydict()) for t in parts)

    @property
    def _format_type(self) -> str | None:
        """HF's name of the format type (``ds.format["type"]``), for code written against HF."""
        return state_of(_dataset(self)).fmt

    @property
    def _format_kwargs(self) -> dict[str, Any]:
        """HF's name of ``ds.format["format_kwargs"]``, for code written against HF."""
        return dict(state_of(_dataset(self)).fmt_kwargs)

    @property
    def _output_all_columns(self) -> bool:
        """HF's name of ``ds.format["output_all_columns"]``, for code written against HF."""
        return state_of(_dataset(self)).fmt_all

    @property
    def _format_columns(self) -> list[str] | None:
        """The formatted columns, None for all (HF's attribute, for code written against HF).

        Assigning it is :meth:`set_format` with the same type and these columns (the
        fingerprint rolls forward, as for any format change).
        """
        cols = state_of(_dataset(self)).fmt_columns
        return list(cols) if cols is not None else None

    @_format_columns.setter
    def _format_columns(self, columns: Sequence[str] | None) -> None:
        s = state_of(_dataset(self))
        _dataset(self).set_format(s.fmt, columns, s.fmt_all, **dict(s.fmt_kwargs))

    @contextlib.contextmanager
    def formatted_as(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Iterator[None]:
        """HF's ``with ds.formatted_as(...):``: :meth:`set_format` inside the block only.

        On leaving the block (also by an exception) the dataset has its previous format and
        fingerprint back. ``ds.with_format(...)`` gives the same view as a new object.

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"x": [1, 2]})
            >>> with ds.formatted_as("numpy"):
            ...     type(ds["x"]).__name__
            'ndarray'
            >>> ds["x"]
            [1, 2]
        """
        before = state_of(_dataset(self))
        try:
            _dataset(self).set_format(type, columns, output_all_columns, **format_kwargs)
            yield
        finally:
            set_state(_dataset(self), before)

    def cast(
        self,
        features: Any,
        batch_size: int | None = 1000,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        num_proc: int | None = None,
    ) -> Dataset:
        """The dataset with new column types: a ``pyarrow.Schema`` or HF ``Features``.

        ``features`` names exactly the dataset's columns (in the order wanted). The result is
        computed like a batched :meth:`map` (cached on disk, ``num_proc``,
        ``cache_file_name``... as there). Values never change: a cast that would overflow or
        truncate (``300`` to ``int8``, ``1.5`` to an int) raises ``SchemaMismatchError``
        naming the column.

        Example:
            >>> import arrowmix as am, pyarrow as pa
            >>> ds = am.Dataset.from_dict({"x": [1, 2]})
            >>> ds.cast(pa.schema([("x", pa.float32())])).schema.field("x").type
            DataType(float)
        """
        from arrowmix._dataset.cast import cast
        from arrowmix._dataset.inputs.file_splits import schema_of

        schema = schema_of(None, features)
        if schema is None:
            raise TypeError("`cast` needs `features`: a pyarrow.Schema or HF `Features`.")
        map_kwargs = {
            "batch_size": batch_size,
            "keep_in_memory": keep_in_memory,
            "load_from_cache_file": load_from_cache_file,
            "cache_file_name": cache_file_name,
            "writer_batch_size": writer_batch_size,
            "num_proc": num_proc,
        }
        return cast(_dataset(self), schema, map_kwargs)

    def save_to_disk(
        self,
        dataset_path: str | os.PathLike[str],
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
        num_proc: int | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        """Write the view as HF ``datasets``' dataset directory (HF's ``save_to_disk``).

        The directory holds ``data-0000i-of-0000N.arrow`` (the view's rows, indices applied,
        in Arrow IPC stream files), ``state.json`` (fingerprint and format) and
        ``dataset_info.json`` (features and texts); :func:`arrowmix.load_from_disk` and HF's
        ``load_from_disk`` open it. ``max_shard_size`` (bytes or ``"500MB"``, the default)
        or ``num_shards`` sets the number of files. The save is atomic: it is written
        beside ``dataset_path`` and renamed into place last (replacing a directory there).
        ``num_proc`` is a least number of files, as in HF (one process writes them); only
        local paths (``storage_options`` None).

        Raises:
            PermissionError: the dataset reads files in ``dataset_path`` (as in HF).
            TypeError: a format keyword is not JSON serializable (as in HF).

        Example:
            >>> import arrowmix as am, tempfile, os
            >>> d = os.path.join(tempfile.mkdtemp(), "saved")
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).select([2, 0]).save_to_disk(d)
            >>> sorted(os.listdir(d))
            ['data-00000-of-00001.arrow', 'dataset_info.json', 'state.json']
            >>> am.load_from_disk(d)["x"]
            [3, 1]
        """
        from arrowmix._hf.saved import save_to_disk

        if storage_options:
            raise NotImplementedError(
                "save_to_disk writes local directories; `storage_options` is not supported. "
                "Use `write_chunks` for remote storage."
            )
        save_to_disk(_dataset(self), dataset_path, max_shard_size, num_shards, num_proc)

    def push_to_hub(self, repo_id: str, *args: Any, **kwargs: Any) -> Any:
        """Not here: arrowmix makes no network call; write :meth:`to_hub_folder` and upload it.

        Raises:
            NotLocalError: always, saying how to upload with ``huggingface_hub``.
        """
        from arrowmix._hf.hub_folder import no_push

        raise no_push(repo_id)

    def align_labels_with_mapping(self, label2id: dict[str, int], label_column: str) -> Dataset:
        """``label_column`` (a ``ClassLabel``, or a list of them) renumbered by ``label2id``.

        HF's ``align_labels_with_mapping``: each id becomes ``label2id`` of its class name
        (names matched without case), and the feature's names become ``label2id``'s keys in the
        order of their ids; a cached ``map``. Needs HF ``datasets`` (the features are HF's).

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"label": [0, 1]}).cast_column(
            ...     "label", am.ClassLabel(names=["neg", "pos"]))
            >>> ds.align_labels_with_mapping({"POS": 0, "NEG": 1}, "label")["label"]
            [1, 0]

        Raises:
            ValueError: no such column, or it is not a ``ClassLabel`` column.
            KeyError: a class name of the column is not in ``label2id``.
        """
        return hf_columns.align_labels_with_mapping(_dataset(self), label2id, label_column)

    def to_hub_folder(
        self,
        folder: str | os.PathLike[str],
        split: str | None = None,
        *,
        config_name: str = "default",
        data_dir: str | None = None,
        max_shard_size: int | str | None = None,
        num_shards: int | None = None,
    ) -> list[str]:
        """Write the folder HF's ``push_to_hub`` would upload; the files written, relative.

        No network call: ``data/<split>-0000i-of-0000N.parquet`` (HF's names and shard
        count) and a ``README.md`` whose ``configs:`` front matter maps the split to its
        files, as HF writes it. Upload it with ``huggingface_hub``'s ``HfApi().upload_folder(
        folder_path=folder, repo_id=..., repo_type="dataset")``; HF's ``load_dataset`` reads
        it, before and after the upload (``docs/migrating-from-datasets.md``). ``split``:
        the dataset's own split, else ``"train"``, as in HF.

        Raises:
            FileExistsError: ``folder`` holds a ``README.md`` or this split's files already.
        """
        from arrowmix._hf.hub_folder import split_of, write_hub_folder

        ds = _dataset(self)
        name = split_of(ds, split)
        return write_hub_folder(
            {name: ds}, folder, config_name, data_dir, max_shard_size, {name: num_shards}
        )

    def _estimate_nbytes(self) -> int:
        """The Arrow bytes of the view's rows (HF's private estimate, used for shard sizes).

        Exact for a contiguous view (a zero-copy slice); for a shuffled or filtered view, the
        table's bytes per row times the rows (nothing is gathered).
        """
        from arrowmix._dataset.state import estimate_nbytes

        return estimate_nbytes(state_of(_dataset(self)))

    @staticmethod
    def load_from_disk(
        dataset_path: str | os.PathLike[str],
        keep_in_memory: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        *,
        verify: bool = False,
    ) -> Dataset:
        """The dataset that a ``save_to_disk`` wrote: :func:`arrowmix.load_from_disk`.

        Raises:
            FileNotFoundError: the directory holds a ``DatasetDict`` (as in HF; use
                :func:`arrowmix.load_from_disk` or ``DatasetDict.load_from_disk``).
        """
        from arrowmix._hf.saved import DICT_NAME, is_dict_dir, load_from_disk

        if is_dict_dir(os.path.abspath(os.fspath(dataset_path))):
            raise FileNotFoundError(
                f"No state.json in {os.fspath(dataset_path)!r}: expected to load a `Dataset`, "
                f"but the directory holds a `DatasetDict` ({DICT_NAME}). Use "
                "`arrowmix.load_from_disk` or `DatasetDict.load_from_disk` instead."
            )
        ds: Dataset = load_from_disk(dataset_path, keep_in_memory, storage_options, verify=verify)
        return ds

    def flatten(self, new_fingerprint: str | None = None, max_depth: int = 16) -> Dataset:
        """Struct columns replaced by their fields, named ``"parent.child"`` (HF's ``flatten``).

        Nested structs are flattened too, up to ``max_depth`` levels. No data is copied.

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"a": [{"b": 1, "c": {"d": "x"}}]})
            >>> ds.flatten()[0]
            {'a.b': 1, 'a.c.d': 'x'}
        """
        from arrowmix._dataset.cast import flatten

        return flatten(_dataset(self), max_depth, new_fingerprint)

    def add_column(
        self,
        name: str,
        column: Any,
        new_fingerprint: str | None = None,
        feature: Any = None,
    ) -> Dataset:
        """This view with ``column`` (a list or array, one value a row) added last as ``name``.

        ``feature`` (an HF feature or a ``pyarrow.DataType``) types it, as in HF; a name
        already present is a ValueError. The rows are copied into memory, as HF does.
        """
        return hf_columns.add_column(_dataset(self), name, column, new_fingerprint, feature)

    def cast_column(self, column: str, feature: Any, new_fingerprint: str | None = None) -> Dataset:
        """The dataset with ``column`` cast to ``feature`` (HF feature or ``pyarrow.DataType``).

        As HF: the other columns keep their types; computed as :meth:`cast` (values never
        change; a lossy cast raises).
        """
        return hf_columns.cast_column(_dataset(self), column, feature, new_fingerprint)

    def class_encode_column(self, column: str, include_nulls: bool = False) -> Dataset:
        """``column`` as class indices of an HF ``ClassLabel`` of its sorted distinct values.

        HF's semantics: non-string values are first turned into strings; nulls stay null
        unless ``include_nulls`` (then ``"None"`` is a class). Only a plain value column.
        """
        return hf_columns.class_encode_column(_dataset(self), column, include_nulls)

    def with_transform(
        self,
        transform: _Transform | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> Dataset:
        """A view whose rows pass through ``transform`` when read (HF's ``with_transform``).

        ``transform`` takes a batch (a dict of lists) and returns a dict of columns; a row is
        a batch of one. ``columns`` restricts what it receives; with
        ``output_all_columns=True`` the other columns are returned as Python objects too.
        ``None`` removes the transform (Python objects again).

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"text": ["a b", "c"]})
            >>> up = ds.with_transform(lambda b: {"n": [len(t.split()) for t in b["text"]]})
            >>> up[0], up[:2], list(up)
            ({'n': 2}, {'n': [2, 1]}, [{'n': 2}, {'n': 1}])
        """
        if transform is None:
            return _dataset(self).with_format(None, columns, output_all_columns)
        return _dataset(self).with_format(
            "custom", columns, output_all_columns, transform=transform
        )

    def set_transform(
        self,
        transform: _Transform | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> None:
        """HF's in-place :meth:`with_transform`: this object switches to the new view."""
        view = self.with_transform(transform, columns, output_all_columns)
        set_state(_dataset(self), state_of(view))

    def take(self, n: int) -> Dataset:
        """The first ``n`` rows (all of them if there are fewer), as a view: HF's ``take``.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).take(2)["x"]
            [1, 2]
        """
        check_int("n", n, minimum=0)
        ds = _dataset(self)
        return ds.select(range(min(n, ds.num_rows)))

    def skip(self, n: int) -> Dataset:
        """Every row after the first ``n``, as a view: HF's ``skip``.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).skip(2)["x"]
            [3]
        """
        check_int("n", n, minimum=0)
        ds = _dataset(self)
        return ds.select(range(min(n, ds.num_rows), ds.num_rows))

    def batch(
        self,
        batch_size: int | None = None,
        by_column: str | list[str] | None = None,
        drop_last_batch: bool = False,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """One row per ``batch_size`` rows, each column a list of their values: HF's ``batch``.

        A cached ``map`` (``drop_last_batch`` drops a last shorter batch); the result keeps
        this view's format (a table format's batches are made of the Python rows). With
        ``by_column`` (a column or a list of them), as HF: one row per run of successive
        rows whose values there are equal (``batch_size`` is then not needed), a null
        being a value of its own. ``new_fingerprint`` names the result.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2, 3]}).batch(2)["x"]
            [[1, 2], [3]]
            >>> am.Dataset.from_dict({"k": ["a", "a", "b", "a"]}).batch(by_column="k")["k"]
            [['a', 'a'], ['b'], ['a']]
        """
        from arrowmix._dataset.map_options import named

        ds = _dataset(self)
        if by_column is not None:
            by = _batch_by_column(ds, by_column, drop_last_batch, num_proc)
            return named(by, new_fingerprint)
        if batch_size is None:
            raise ValueError("Dataset.batch() misses `batch_size` or `by_column` argument.")
        fmt = ds.format
        if fmt["type"] not in _TABLE_FORMATS:
            return hf_transforms.batch(ds, batch_size, drop_last_batch, num_proc, new_fingerprint)
        # A table format: the map reads Python rows; the result keeps the format (HF's).
        plain = ds.with_format(None)
        out = hf_transforms.batch(plain, batch_size, drop_last_batch, num_proc, new_fingerprint)
        kwargs = fmt["format_kwargs"]
        return out.with_format(fmt["type"], fmt["columns"], fmt["output_all_columns"], **kwargs)

    def to_iterable_dataset(self, num_shards: int = 1) -> IterableDataset:
        """An :class:`~arrowmix.IterableDataset` of this view, cut in ``num_shards`` shards.

        HF's ``to_iterable_dataset``: contiguous shards (DataLoader workers read whole
        shards), the view's format kept; built on ``to_stream``, so it resumes exactly.

        Example:
            >>> import arrowmix as am
            >>> ids = am.Dataset.from_dict({"x": [1, 2, 3]}).to_iterable_dataset()
            >>> [r["x"] for r in ids.map(lambda r: {"x": r["x"] + 1})]
            [2, 3, 4]
        """
        from arrowmix._hf.iterable import to_iterable_dataset

        return to_iterable_dataset(_dataset(self), num_shards)


def _batch_by_column(
    ds: Dataset, by_column: str | list[str], drop_last_batch: bool, num_proc: int | None
) -> Dataset:
    from arrowmix._hf.batch_runs import batch_by_columns

    if num_proc:
        raise NotImplementedError("Multiprocessed batching by column is not implemented yet")
    if drop_last_batch:
        raise ValueError(
            "`drop_last_batch` drops a last batch shorter than `batch_size`; batches by "
            "column have no such batch (HF drops a last `batch_size` block of input rows "
            "and the run open there)."
        )
    fmt = ds.format
    out = batch_by_columns(ds, by_column)
    if fmt["type"] is None:
        return out
    return out.with_format(
        fmt["type"], fmt["columns"], fmt["output_all_columns"], **fmt["format_kwargs"]
    )
