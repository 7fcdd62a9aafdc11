"""The Dataset: a memory-mapped Arrow table, an optional indices mapping, a fingerprint, a format.

The class is a thin delegator: constructors live in ``build``, indices-producing transforms in
``ops``, formats in ``formats`` and gathering in ``reader``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset import access, state
from arrowmix._dataset.base import DatasetBase
from arrowmix._dataset.extras import DatasetExtras
from arrowmix._dataset.inputs.constructors import DatasetConstructors
from arrowmix._dataset.state import DatasetState, hold_cache_files
from arrowmix._hf.compat import HFCompat

if TYPE_CHECKING:
    from arrowmix._dataset.column import Column

__all__ = ["Dataset", "DatasetState", "hold_cache_files"]


class Dataset(DatasetConstructors, DatasetExtras, HFCompat, DatasetBase):
    """A map-style dataset over Arrow data: random access, memory-mapped, cached transforms.

    Build one with :meth:`from_dict`, :meth:`from_pylist`, :meth:`from_arrow`,
    :meth:`from_file` or :meth:`from_chunks`. ``select``/``shuffle``/``sort``/``shard`` return
    views through an indices mapping (no column data copied); :meth:`flatten_indices`
    materialises one.

    Example:
        >>> import arrowmix as am
        >>> ds = am.Dataset.from_dict({"text": ["a", "bb", "ccc"], "n": [1, 2, 3]})
        >>> len(ds), ds[1]
        (3, {'text': 'bb', 'n': 2})
        >>> ds.sort("n", reverse=True)["text"]
        ['ccc', 'bb', 'a']
    """

    def __init__(
        self,
        arrow_table: DatasetState | Any,
        info: Any = None,
        split: Any = None,
        indices_table: Any = None,
        fingerprint: str | None = None,
    ) -> None:
        """Wrap a state; or, as HF ``datasets``' ``Dataset(table, ...)``, an Arrow table.

        ``arrow_table`` may be a ``pyarrow.Table`` or an HF ``datasets.table.Table``
        (``InMemoryTable``, ``MemoryMappedTable``, ``ConcatenationTable``: their ``.table``),
        viewed through ``indices_table`` (a table of one column of row positions) when
        given; ``info`` (an HF ``DatasetInfo``) gives the column types, ``split`` is
        ignored. The usual way to build a dataset is ``Dataset.from_*``.
        """
        if isinstance(arrow_table, DatasetState):
            self._s = arrow_table
            return
        from arrowmix._hf.table import state_from_table

        self._s = state_from_table(arrow_table, info, indices_table, fingerprint)

    @property
    def fingerprint(self) -> str:
        """16 hex characters identifying the content and lineage of this dataset."""
        return self._s.fingerprint

    @property
    def num_rows(self) -> int:
        """Number of rows in the view."""
        return state.num_rows(self._s)

    @property
    def column_names(self) -> list[str]:
        """Column names, in order."""
        return state.column_names(self._s)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (without arrowmix's file metadata)."""
        return self._s.table.schema.remove_metadata()

    @property
    def format(self) -> dict[str, Any]:
        """The output format set by :meth:`with_format`, as HF ``datasets`` describes it.

        ``{"type": None | "numpy" | "arrow" | "torch", "format_kwargs": {...}, "columns":
        [formatted columns], "output_all_columns": bool}``; ``type`` ``None`` is Python objects.
        """
        return state.format_dict(self._s)

    @property
    def features(self) -> Any:
        """The schema as HF ``datasets.Features``, for code written against HF (needs it installed).

        Features declared with ``from_dict(features=...)`` or ``map(features=...)`` (such as
        ``ClassLabel`` names) are kept, through ``map``, for the columns whose type stays the
        same. arrowmix's own description of the columns is :attr:`schema`.
        """
        import importlib

        try:
            hf = importlib.import_module("datasets")
        except ImportError as exc:
            raise ImportError(
                "`ds.features` converts the schema to HF datasets' `Features` and needs "
                "`datasets` installed; `ds.schema` is the same information as a pyarrow.Schema."
            ) from exc
        from arrowmix._storage.metadata import kept_metadata as hf_metadata

        # HF's own description of the columns (class names...) where the data carries it
        return hf.Features.from_arrow_schema(
            self.schema.with_metadata(hf_metadata(self._s.table.schema))
        )

    @property
    def num_columns(self) -> int:
        """Number of columns."""
        return self._s.table.num_columns

    @property
    def shape(self) -> tuple[int, int]:
        """``(num_rows, num_columns)``."""
        return (self.num_rows, self.num_columns)

    @property
    def cache_files(self) -> list[str]:
        """Every file the dataset uses: chunks, cache files (map/filter results) and indices."""
        return state.cache_files(self._s)

    @property
    def cache_dir(self) -> str:
        """Where results derived from this dataset are written (a local directory or a URL)."""
        return state.cache_dir(self._s)

    def column(self, name: str) -> Column:
        """A lazy, list-like view of column ``name``: nothing is read until it is indexed.

        ``ds[name]`` returns the whole column as one Python list, which on a large corpus
        costs memory in proportion to the column. The view reads only the rows asked for, and
        iterates block by block (see :class:`~arrowmix._dataset.column.Column`).

        Example:
            >>> import arrowmix as am
            >>> col = am.Dataset.from_dict({"x": [1, 2, 3]}).column("x")
            >>> col[0], col[1:], sum(col)
            (1, [2, 3], 6)
        """
        from arrowmix._dataset.column import Column

        return Column(self, name)

    def iter(self, batch_size: int, drop_last_batch: bool = False) -> Iterator[Any]:
        """Iterate over batches of ``batch_size`` rows, in the dataset's format.

        Args:
            batch_size: Rows per batch.
            drop_last_batch: Skip a last batch shorter than ``batch_size``.

        Example:
            >>> import arrowmix as am
            >>> [b["x"] for b in am.Dataset.from_dict({"x": [1, 2, 3]}).iter(batch_size=2)]
            [[1, 2], [3]]
        """
        return access.iter_batches(self._s, batch_size, drop_last_batch)

    def __iter__(self) -> Iterator[Any]:
        return access.iter_rows(self._s)

    def to_list(self) -> list[dict[str, Any]]:
        """The view as a list of row dicts of Python objects (HF's ``to_list``)."""
        cols = self.to_dict()
        return [{k: v[i] for k, v in cols.items()} for i in range(self.num_rows)]

    def to_table(self) -> pa.Table:
        """The view materialised as one ``pyarrow.Table`` (zero-copy without an array mapping)."""
        return state.view_range(self._s, 0, self.num_rows).replace_schema_metadata(None)

    def with_format(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Dataset:
        """A view returning ``type`` objects: None/"python", "numpy", "arrow" or "torch".

        ``columns`` (a name or a list) restricts the formatted columns; the others are left
        out, or returned as Python objects with ``output_all_columns=True``. Columns that a
        later ``map`` adds are formatted too. ``format_kwargs`` (``dtype``, ``device``) apply
        to numeric arrays and tensors. The fingerprint changes with the format, as in HF.

        Example:
            >>> import arrowmix as am
            >>> am.Dataset.from_dict({"x": [1, 2]}).with_format("numpy")["x"]
            array([1, 2])
        """
        from arrowmix._dataset.views.view_ops import set_format

        return set_format(self, type, columns, output_all_columns, format_kwargs)

    def set_format(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> None:
        """HF's in-place :meth:`with_format`: this object switches to the new view."""
        self._s = state.state_of(
            self.with_format(type, columns, output_all_columns, **format_kwargs)
        )

    def reset_format(self) -> None:
        """HF's in-place ``with_format(None)``."""
        self.set_format(None)

    def select(self, indices: Any, **hf_options: Any) -> Dataset:
        """Rows at ``indices`` (range, list, array), as an indices mapping: no data copied.

        HF's ``keep_in_memory``, ``indices_cache_file_name``, ``writer_batch_size`` and
        ``new_fingerprint`` are accepted by keyword (see :meth:`shuffle`).
        """
        from arrowmix._dataset.views import view_ops as ops
        from arrowmix._dataset.views.view_options import view_options

        return ops.select(self, indices, view_options(**hf_options))

    def shuffle(self, seed: int | None = None, generator: Any = None, **hf_options: Any) -> Dataset:
        """A seeded random permutation view (``np.random.default_rng(seed)``, as in HF).

        ``seed=None`` draws the seed from numpy's global generator, as HF ``datasets`` does:
        after ``np.random.seed(0)`` a script's unseeded shuffles are reproducible. HF's
        ``generator=`` (a ``numpy.random.Generator``) draws the permutation instead, as in
        HF (advancing it); the view is then a ``select`` of those rows.

        HF's storage options are accepted by keyword: ``indices_cache_file_name`` (write
        the mapping to that file, whatever its size), ``keep_in_memory`` (never write it),
        ``load_from_cache_file=False`` (write that file again), ``new_fingerprint`` and
        ``writer_batch_size``. None of them changes the rows.
        """
        from arrowmix._dataset.views import view_ops as ops
        from arrowmix._dataset.views.view_options import view_options

        if generator is not None:
            if seed is not None:
                raise ValueError(
                    "Both `seed` and `generator` were provided. Please specify just one of them."
                )
            perm = ops.drawn_permutation(generator, len(self))
            return ops.select(self, perm, view_options(**hf_options))
        return ops.shuffle(self, seed, view_options(**hf_options))

    def sort(
        self,
        column: str | Sequence[str] | None = None,
        reverse: bool | Sequence[bool] = False,
        null_placement: str = "at_end",
        *,
        column_names: str | Sequence[str] | None = None,
        **hf_options: Any,
    ) -> Dataset:
        """A view sorted by ``column`` (stable); several columns sort in order.

        Args:
            column: Column name, or names to sort by in order.
            reverse: Descending order; one flag per column for several columns.
            null_placement: ``"at_end"`` (default) or ``"at_start"`` (HF's ``"last"`` and
                ``"first"`` are accepted too).
            column_names: Same as ``column``, as HF ``datasets`` spells it.
            **hf_options: HF's storage options, as in :meth:`shuffle`.
        """
        from arrowmix._dataset.views import view_ops as ops
        from arrowmix._dataset.views.view_options import view_options

        if (column is None) == (column_names is None):
            raise TypeError("`sort` needs exactly one of `column` or `column_names`.")
        by = column if column is not None else column_names
        assert by is not None  # checked above
        return ops.sort(self, by, reverse, null_placement, view_options(**hf_options))

    def shard(
        self, num_shards: int, index: int, contiguous: bool = True, **hf_options: Any
    ) -> Dataset:
        """The ``index``-th of ``num_shards`` disjoint parts that together cover the dataset.

        Args:
            num_shards: Number of parts.
            index: Which part, in ``range(num_shards)``.
            contiguous: Consecutive rows per part (else every ``num_shards``-th row).
            **hf_options: HF's storage options, as in :meth:`shuffle`.
        """
        from arrowmix._dataset.views import view_ops as ops
        from arrowmix._dataset.views.view_options import view_options

        return ops.shard(self, num_shards, index, contiguous, view_options(**hf_options))

    def train_test_split(
        self,
        test_size: float | int | None = None,
        seed: int | None = None,
        shuffle: bool = True,
        *,
        train_size: float | int | None = None,
        stratify_by_column: str | None = None,
        generator: Any = None,
        **hf_options: Any,
    ) -> Any:
        """Split into a ``DatasetDict`` ``{"train", "test"}`` that also unpacks as a pair.

        Sizes as in HF ``datasets``: a float is a fraction (test rounds up, train down), an int
        a row count, ``None`` the rest (both ``None``: ``test_size=0.25``). The rows drawn for
        a seed are HF's (see :meth:`shuffle` for ``seed=None``).

        Args:
            test_size: Fraction (a float in (0, 1)) or number of rows for test.
            seed: Seed of the shuffle before splitting (the second positional argument).
            shuffle: Shuffle before splitting (else train is the first rows, test the next).
            train_size: Fraction or number of rows for train (keyword only).
            stratify_by_column: Keep each label of this column at its share in both splits.
            generator: HF's ``numpy.random.Generator`` drawing the rows instead of ``seed``.
            **hf_options: HF's ``train_``/``test_indices_cache_file_name`` and
                ``train_``/``test_new_fingerprint`` for each split, and ``keep_in_memory``,
                ``load_from_cache_file``, ``writer_batch_size`` for both (see :meth:`shuffle`).
        """
        from arrowmix._dataset.views.train_test import split_options, train_test_split
        from arrowmix._hf.dataset_dict import SplitPair

        train, test = train_test_split(
            self,
            test_size,
            train_size,
            seed,
            shuffle,
            stratify_by_column,
            split_options(hf_options),
            generator,
        )
        return SplitPair({"train": train, "test": test})

    def flatten_indices(
        self,
        keep_in_memory: bool = False,
        cache_file_name: str | None = None,
        writer_batch_size: int | None = 1000,
        *,
        features: Any = None,
        num_proc: int | None = None,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """Materialise the indices mapping into a cache file (memory-mapped).

        ``cache_file_name`` (with an extension, as in HF) replaces the file's default name
        ``cache-<fingerprint>.arrow`` in :attr:`cache_dir`; ``keep_in_memory=True`` gathers
        the rows in memory instead (no file); ``new_fingerprint`` names the result.
        ``features`` casts the result (:meth:`cast`), as HF's; ``writer_batch_size`` and
        ``num_proc`` are accepted (HF's; the rows are gathered in one pass).
        """
        from arrowmix._dataset.map_options import named
        from arrowmix._dataset.views import view_ops as ops
        from arrowmix._validate import check_int

        del writer_batch_size  # accepted for HF compatibility
        check_int("num_proc", num_proc, minimum=1, none_ok=True)
        out = ops.flatten_indices(
            self,
            cache_file_name=cache_file_name,
            keep_in_memory=keep_in_memory,
            new_fingerprint=new_fingerprint,
        )
        return out if features is None else named(out.cast(features), new_fingerprint)

    def select_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """Keep only ``column_names`` (zero-copy); ``new_fingerprint`` names the result."""
        from arrowmix._dataset.map_options import named
        from arrowmix._dataset.views import view_ops as ops

        return named(ops.select_columns(self, column_names), new_fingerprint)

    def remove_columns(
        self, column_names: str | Sequence[str], new_fingerprint: str | None = None
    ) -> Dataset:
        """Drop ``column_names`` (zero-copy); ``new_fingerprint`` names the result."""
        from arrowmix._dataset.map_options import named
        from arrowmix._dataset.views import view_ops as ops

        return named(ops.remove_columns(self, column_names), new_fingerprint)

    def rename_column(
        self,
        original_column_name: str,
        new_column_name: str,
        new_fingerprint: str | None = None,
    ) -> Dataset:
        """Rename one column (zero-copy).

        Args:
            original_column_name: The column to rename.
            new_column_name: Its new name (not already a column).
            new_fingerprint: The result's fingerprint, instead of the computed one.
        """
        from arrowmix._dataset.map_options import named
        from arrowmix._dataset.views import view_ops as ops

        renamed = ops.rename_column(self, original_column_name, new_column_name)
        return named(renamed, new_fingerprint)

    def rename_columns(
        self, column_mapping: Mapping[str, str], new_fingerprint: str | None = None
    ) -> Dataset:
        """Rename several columns at once, ``{old: new}`` (zero-copy); see rename_column."""
        from arrowmix._dataset.map_options import named
        from arrowmix._dataset.views import view_ops as ops

        return named(ops.rename_columns(self, dict(column_mapping)), new_fingerprint)

    def map(
        self,
        function: Callable[..., Any] | None = None,
        *,
        batched: bool = False,
        batch_size: int | None = 1000,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        fn_kwargs: Mapping[str, Any] | None = None,
        remove_columns: str | Sequence[str] | None = None,
        drop_last_batch: bool = False,
        try_original_type: bool | None = True,
        features: Any = None,
        on_mixed_types: str | None = None,
        num_proc: int | None = None,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        new_fingerprint: str | None = None,
        desc: str | None = None,
        executor: Any = None,
        **hf_options: Any,
    ) -> Dataset:
        """Apply ``function`` to every row (or batch); the result is cached on disk.

        ``async def`` functions are awaited, concurrently. The output is the input columns
        minus ``remove_columns``, updated and extended by the returned columns (a returned
        ``pyarrow.Table`` is the whole output), with HF ``datasets``'s rules
        (``docs/datasets.md``); a batched function may change the number of rows when the
        input columns are removed.

        The result lives in ``cache-<fingerprint>[-<i>-of-<n>].arrow`` files of
        :attr:`cache_dir` (or ``cache_file_name``, which needs an extension) and is reused by
        any later run, in any process, with the same data, function and arguments;
        ``load_from_cache_file=False`` recomputes. ``num_proc`` spreads the work over
        processes. ``executor="ray"`` runs the missing segments as Ray tasks instead
        (``num_proc`` then caps the tasks in flight; the files and the fingerprint are the
        same). HF's ``suffix_template``, ``writer_batch_size`` and ``keep_in_memory`` are
        accepted (``docs/migrating-from-datasets.md``). See ``docs/caching.md`` and
        ``docs/ray.md``. (This method is long only for HF's arguments and their
        documentation: it hands them to the map engine in one call.)

        Args:
            function: ``function(row) -> dict | None``, or with ``batched=True``
                ``function(batch: dict of lists) -> dict of lists``; None keeps the rows.
            batched: Call ``function`` on batches of ``batch_size`` rows.
            batch_size: Rows per batch (None or <= 0: the whole dataset in one batch).
            with_indices: Also pass the row position(s) after the row/batch.
            with_rank: Then pass the rank: with ``num_proc > 1`` the index of the row's
                shard among HF's ``num_proc`` contiguous shards; None without ``num_proc``.
            input_columns: Pass these columns positionally instead of the dict.
            fn_kwargs: Extra keyword arguments for ``function``.
            remove_columns: Input columns left out of the output.
            drop_last_batch: Skip the dataset's last batch if it is incomplete.
            try_original_type: A returned column named like an input column keeps the
                input's type when no value changes (``1.0`` stays ``1``).
            features: The output's columns and types (HF ``Features`` or a
                ``pyarrow.Schema``): each batch is cast to them, and a value that would
                change raises naming the column; HF class labels are encoded and checked.
            on_mixed_types: HF's ``"use_json"`` stores the places of a returned column
                whose values have mixed types as JSON (read back as the values); None
                (the default) raises on mixed types, naming the row.
            num_proc: Processes computing the segments.
            load_from_cache_file: False recomputes even when the cache files exist.
            cache_file_name: Where to write the result instead of :attr:`cache_dir`.
            new_fingerprint: The result's fingerprint, instead of the computed one.
            desc: Label of the progress bar.
            executor: ``"ray"`` runs the missing segments as Ray tasks.
            **hf_options: HF's ``suffix_template``, ``writer_batch_size`` and
                ``keep_in_memory``, accepted; its other arguments raise a TypeError.

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"text": ["a", "bb"]})
            >>> ds.map(lambda row: {"n": len(row["text"])})["n"]
            [1, 2]
            >>> ds.map(lambda b: {"t": b["text"] * 2}, batched=True, remove_columns="text")["t"]
            ['a', 'bb', 'a', 'bb']
        """
        arguments = dict(locals())  # first: the parameters only
        from arrowmix._dataset.mapping.options import map_dataset, method_arguments

        return map_dataset(self, **method_arguments("map", arguments))

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        *,
        batched: bool = False,
        batch_size: int | None = 1000,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        fn_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        load_from_cache_file: bool | None = None,
        cache_file_name: str | None = None,
        new_fingerprint: str | None = None,
        desc: str | None = None,
        executor: Any = None,
        **hf_options: Any,
    ) -> Dataset:
        """Keep the rows for which ``function`` is true; an indices mapping, cached on disk.

        ``function(row) -> bool`` (or ``function(batch) -> list of bool`` with
        ``batched=True``; ``async def`` functions are awaited); the other arguments
        (``with_rank``, ``cache_file_name``, ``executor``...) are as in :meth:`map`. No
        column data is copied: the kept positions are stored in the cache and composed with
        the existing indices mapping.

        Args:
            function: ``function(row) -> bool``, or with ``batched=True``
                ``function(batch) -> list of bool``; None keeps every row.
            batched: Call ``function`` on batches of ``batch_size`` rows.
            batch_size: Rows per batch.
            with_indices: Also pass the row position(s) after the row/batch.
            with_rank: Then pass the rank, as in :meth:`map` (None without ``num_proc``).
            input_columns: Pass these columns positionally instead of the dict.
            fn_kwargs: Extra keyword arguments for ``function``.
            num_proc: Processes computing the segments.
            load_from_cache_file: False recomputes even when the cache files exist.
            cache_file_name: Where to write the kept positions instead of :attr:`cache_dir`.
            new_fingerprint: The result's fingerprint, instead of the computed one.
            desc: Label of the progress bar.
            executor: ``"ray"`` runs the missing segments as Ray tasks.
            **hf_options: As in :meth:`map`.

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"n": [1, 2, 3, 4]})
            >>> ds.filter(lambda row: row["n"] % 2 == 0)["n"]
            [2, 4]
        """
        arguments = dict(locals())  # first: the parameters only
        from arrowmix._dataset.mapping.options import filter_dataset, method_arguments

        return filter_dataset(self, **method_arguments("filter", arguments))

    def cleanup_cache_files(self) -> int:
        """Remove the cache files of this dataset's directory that it does not use.

        Returns how many files were removed. Files in use by any open dataset, or being
        written, stay. A dataset none of whose files lives in its cache directory (in-memory
        or remote data, whose directory is the shared cache root) removes nothing, as in HF
        ``datasets``: other datasets' results live there too. Neither does a remote
        ``cache_dir`` (nothing is removed from object stores).
        """
        return state.remove_unused_cache_files(self._s)
