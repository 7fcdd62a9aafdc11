"""``DatasetDict``: HF ``datasets``' dict of split name -> :class:`~arrowmix.Dataset`.

Each method applies the Dataset method of the same name to every split and returns a new
``DatasetDict`` (or a dict of the splits' answers), with HF's signatures: per-split arguments
are dicts keyed by split (``cache_file_names``, ``indices_cache_file_names``, ``seeds``,
``num_shards``). Each split is computed and cached on its own fingerprint, so a change to one
split recomputes only that one. ``train_test_split`` returns a :class:`SplitPair`, a
``DatasetDict`` that also unpacks as ``train, test``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arrowmix._hf.dataset_dict_files import DatasetDictFiles
from arrowmix._warn import warn

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.iterable_dict import IterableDatasetDict

__all__ = ["DatasetDict", "SplitPair", "split_values"]

#: HF's order of preference for the split named in a "pick a split" message.
_SUGGESTED = ("train", "test", "validation")


class _BindSplit(functools.partial):  # type: ignore[type-arg]
    """``function`` called with the split name after its other arguments (HF's ``bind``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, *self.args, **kwargs)


#: HF's arguments that arrowmix's Dataset methods take only when not at HF's default.
_HF_DEFAULTS = {"disable_nullable": False, "keep_in_memory": False, "writer_batch_size": 1000}


def _given(kw: dict[str, Any]) -> dict[str, Any]:
    """``kw`` without HF's optional arguments left at their defaults."""
    return {k: v for k, v in kw.items() if k not in _HF_DEFAULTS or v != _HF_DEFAULTS[k]}


def split_values(name: str, value: Any, keys: Sequence[str]) -> dict[str, Any]:
    """A per-split argument as ``{split: value}``: ``None`` for each split when not given."""
    if value is None:
        return dict.fromkeys(keys)
    if not isinstance(value, Mapping):
        raise ValueError(
            f"Please provide one `{name}` per split of the DatasetDict, e.g. "
            f"{{{', '.join(f'{k!r}: ...' for k in keys)}}}; got {value!r:.60}."
        )
    return {k: value.get(k) for k in keys}


class DatasetDict(DatasetDictFiles, dict[str, "Dataset"]):
    """A dict of split name -> Dataset with HF ``datasets``' transforms applied per split.

    Example:
        >>> import arrowmix as am
        >>> dd = am.DatasetDict({"train": am.Dataset.from_dict({"x": [1, 2, 3]}),
        ...                      "test": am.Dataset.from_dict({"x": [4]})})
        >>> dd.map(lambda r: {"y": r["x"] * 10}).num_rows
        {'train': 3, 'test': 1}
        >>> dd.filter(lambda r: r["x"] > 1)["train"]["x"]
        [2, 3]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from arrowmix._dataset.inputs.file_splits import split_name

        # HF's NamedSplit keys (datasets.Split.TRAIN) are kept as their names: they compare
        # and hash as those strings, so ``dd[datasets.Split.TRAIN]`` and ``dd["train"]`` agree.
        super().__init__({split_name(k): v for k, v in dict(*args, **kwargs).items()})

    def __setitem__(self, key: Any, value: Dataset) -> None:
        from arrowmix._dataset.inputs.file_splits import split_name

        super().__setitem__(split_name(key), value)

    def _check_values_type(self) -> None:
        from arrowmix._dataset.dataset import Dataset

        for name, ds in self.items():
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"Values in `DatasetDict` should be of type `Dataset` but got type "
                    f"'{type(ds)}' for split {name!r}."
                )

    def _each(self, call: Callable[[str, Dataset], Dataset]) -> DatasetDict:
        self._check_values_type()
        return DatasetDict({k: call(k, ds) for k, ds in self.items()})

    def _forward(
        self,
        method: str,
        *args: Any,
        per_split: Mapping[str, tuple[str, Any]] | None = None,
        **kwargs: Any,
    ) -> DatasetDict:
        """``Dataset.<method>(*args, **kwargs)`` on each split, into a new DatasetDict.

        ``per_split`` maps a Dataset argument to ``(the DatasetDict's argument name, its
        {split: value} or None)``: each split gets its own value (None when not given).
        """
        keys = list(self.keys())
        own = {
            arg: split_values(name, given, keys) for arg, (name, given) in (per_split or {}).items()
        }
        return self._each(
            lambda k, ds: getattr(ds, method)(*args, **kwargs, **{a: v[k] for a, v in own.items()})
        )

    def _ask(self, call: Callable[[Dataset], Any]) -> dict[str, Any]:
        self._check_values_type()
        return {k: call(ds) for k, ds in self.items()}

    def __getitem__(self, k: Any) -> Dataset:
        from arrowmix._dataset.inputs.file_splits import split_name

        k = split_name(k)
        if isinstance(k, str) and k not in self and len(self) > 0:
            raise KeyError(f"Unknown split {k!r}; available splits: {list(self.keys())}.")
        if isinstance(k, str) or len(self) == 0:
            return super().__getitem__(k)
        found = [s for s in _SUGGESTED if s in self]
        pick = found[0] if found else next(iter(self.keys()))
        raise KeyError(
            f"Invalid key: {k}. Please first select a split. For example: "
            f"`my_dataset_dictionary['{pick}'][{k}]`. Available splits: {sorted(self.keys())}"
        )

    def __enter__(self) -> DatasetDict:
        return self

    def __exit__(self, *exc: object) -> None:
        for ds in self.values():
            ds.__exit__(*exc)

    def __repr__(self) -> str:
        body = "\n".join(f"{k}: {v!r}" for k, v in self.items())
        return "DatasetDict({\n" + "\n".join("    " + line for line in body.split("\n")) + "\n})"

    # -- what each split says -------------------------------------------------------------

    @property
    def data(self) -> dict[str, Any]:
        """Each split's Arrow table (HF's ``Dataset.data``)."""
        return self._ask(lambda ds: ds.data)

    @property
    def cache_files(self) -> dict[str, Any]:
        """Each split's cache files, as HF lists them: ``[{"filename": path}, ...]``."""
        return self._ask(lambda ds: [{"filename": f} for f in ds.cache_files])

    @property
    def num_columns(self) -> dict[str, int]:
        """Each split's number of columns."""
        return self._ask(lambda ds: ds.num_columns)

    @property
    def num_rows(self) -> dict[str, int]:
        """Each split's number of rows."""
        return self._ask(lambda ds: ds.num_rows)

    @property
    def column_names(self) -> dict[str, list[str]]:
        """Each split's column names."""
        return self._ask(lambda ds: ds.column_names)

    @property
    def shape(self) -> dict[str, tuple[int, int]]:
        """Each split's ``(rows, columns)``."""
        return self._ask(lambda ds: ds.shape)

    def unique(self, column: str) -> dict[str, list[Any]]:
        """Each split's distinct values of ``column``, in order of first appearance."""
        return self._ask(lambda ds: ds.unique(column))

    def cleanup_cache_files(self) -> dict[str, int]:
        """Remove each split's unused cache files; the number removed per split."""
        return self._ask(lambda ds: ds.cleanup_cache_files())

    # -- columns, types and formats -------------------------------------------------------

    def flatten(self, max_depth: int = 16) -> DatasetDict:
        """Each split with its struct columns flattened (see ``Dataset.flatten``)."""
        return self._forward("flatten", max_depth=max_depth)

    def cast(self, features: Any) -> DatasetDict:
        """Each split cast to ``features`` (see ``Dataset.cast``)."""
        return self._forward("cast", features)

    def cast_column(self, column: str, feature: Any) -> DatasetDict:
        """Each split with ``column`` cast to ``feature`` (see ``Dataset.cast_column``).

        Example:
            >>> import arrowmix as am, pyarrow as pa
            >>> dd = am.DatasetDict({"train": am.Dataset.from_dict({"x": [1, 2]})})
            >>> dd.cast_column("x", pa.float32())["train"].schema.field("x").type
            DataType(float)
        """
        return self._forward("cast_column", column, feature)

    def class_encode_column(self, column: str, include_nulls: bool = False) -> DatasetDict:
        """Each split's ``column`` as class indices (see ``Dataset.class_encode_column``).

        As in HF, each split takes the class names of its own distinct values: splits that
        hold different values get different ``ClassLabel`` names, so one label would have
        other numbers in different splits. That is never silent: a ``UserWarning`` names
        each split's classes; encode every split with the same names instead with
        ``cast_column(column, ClassLabel(names=...))``.

        Example:
            >>> import arrowmix as am
            >>> dd = am.DatasetDict({"train": am.Dataset.from_dict({"y": ["b", "a", "b"]})})
            >>> dd.class_encode_column("y")["train"]["y"]
            [1, 0, 1]
        """
        out = self._forward("class_encode_column", column, include_nulls=include_nulls)
        names = {k: list(getattr(ds.features[column], "names", [])) for k, ds in out.items()}
        if len({tuple(v) for v in names.values()}) > 1:
            warn(
                f"class_encode_column({column!r}): the splits hold different classes, so the "
                f"same label gets other numbers in different splits: {names}. Encode every "
                f"split with one list of names: cast_column({column!r}, "
                "ClassLabel(names=[...])).",
                UserWarning,
            )
        return out

    def align_labels_with_mapping(self, label2id: dict[str, int], label_column: str) -> DatasetDict:
        """Each split's ``ClassLabel`` renumbered to ``label2id`` (``Dataset``'s method)."""
        return self._forward("align_labels_with_mapping", label2id, label_column)

    def remove_columns(self, column_names: str | Sequence[str]) -> DatasetDict:
        """Each split without ``column_names``."""
        return self._forward("remove_columns", column_names)

    def select_columns(self, column_names: str | Sequence[str]) -> DatasetDict:
        """Each split with only ``column_names``."""
        return self._forward("select_columns", column_names)

    def rename_column(self, original_column_name: str, new_column_name: str) -> DatasetDict:
        """Each split with a column renamed."""
        return self._forward("rename_column", original_column_name, new_column_name)

    def rename_columns(self, column_mapping: dict[str, str]) -> DatasetDict:
        """Each split with columns renamed ``{old: new}``."""
        return self._forward("rename_columns", column_mapping)

    def with_format(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> DatasetDict:
        """Each split in the output format ``type`` (see ``Dataset.with_format``)."""
        return self._forward("with_format", type, columns, output_all_columns, **format_kwargs)

    def set_format(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> None:
        """Set the output format of every split in place (HF's in-place form)."""
        self._check_values_type()
        for ds in self.values():
            ds.set_format(type, columns, output_all_columns, **format_kwargs)

    def with_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], dict[str, Any]] | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> DatasetDict:
        """Each split read through ``transform`` (see ``Dataset.with_transform``)."""
        return self._forward("with_transform", transform, columns, output_all_columns)

    def set_transform(
        self,
        transform: Callable[[dict[str, list[Any]]], dict[str, Any]] | None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
    ) -> None:
        """HF's in-place :meth:`with_transform`: every split switches to its new view."""
        self._check_values_type()
        for ds in self.values():
            ds.set_transform(transform, columns, output_all_columns)

    def reset_format(self) -> None:
        """Reset every split to Python objects, in place."""
        self._check_values_type()
        for ds in self.values():
            ds.reset_format()

    @contextlib.contextmanager
    def formatted_as(
        self,
        type: str | None = None,
        columns: str | Sequence[str] | None = None,
        output_all_columns: bool = False,
        **format_kwargs: Any,
    ) -> Iterator[None]:
        """Every split in the format ``type`` inside a ``with`` block, restored after it."""
        self._check_values_type()
        with contextlib.ExitStack() as stack:
            for ds in self.values():
                stack.enter_context(
                    ds.formatted_as(type, columns, output_all_columns, **format_kwargs)
                )
            yield

    # -- transforms ------------------------------------------------------------------------

    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        with_split: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: str | Sequence[str] | None = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_names: dict[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        features: Any = None,
        disable_nullable: bool = False,
        fn_kwargs: dict[str, Any] | None = None,
        num_proc: int | None = None,
        desc: str | None = None,
        try_original_type: bool | None = True,
        on_mixed_types: str | None = None,
    ) -> DatasetDict:
        """``Dataset.map`` on every split, each cached by its own fingerprint.

        ``with_split=True`` passes the split name to ``function`` after its other arguments
        (``function(example, [idx, rank,] split)``); ``cache_file_names`` is one file per
        split, ``{split: path}``.
        """
        kw = {
            "with_indices": with_indices,
            "with_rank": with_rank,
            "input_columns": input_columns,
            "batched": batched,
            "batch_size": batch_size,
            "drop_last_batch": drop_last_batch,
            "remove_columns": remove_columns,
            "keep_in_memory": keep_in_memory,
            "load_from_cache_file": load_from_cache_file,
            "writer_batch_size": writer_batch_size,
            "features": features,
            "disable_nullable": disable_nullable,
            "fn_kwargs": fn_kwargs,
            "num_proc": num_proc,
            "desc": desc,
            "try_original_type": try_original_type,
            "on_mixed_types": on_mixed_types,
        }
        fns = {
            k: _BindSplit(function, k) if with_split and function else function for k in self.keys()
        }
        return self._forward(
            "map",
            per_split={
                "function": ("function", fns),
                "cache_file_name": ("cache_file_names", cache_file_names),
            },
            **_given(kw),
        )

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        with_rank: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        cache_file_names: dict[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        fn_kwargs: dict[str, Any] | None = None,
        num_proc: int | None = None,
        desc: str | None = None,
    ) -> DatasetDict:
        """``Dataset.filter`` on every split (``cache_file_names``: ``{split: path}``)."""
        kw = {
            "with_indices": with_indices,
            "with_rank": with_rank,
            "input_columns": input_columns,
            "batched": batched,
            "batch_size": batch_size,
            "keep_in_memory": keep_in_memory,
            "load_from_cache_file": load_from_cache_file,
            "writer_batch_size": writer_batch_size,
            "fn_kwargs": fn_kwargs,
            "num_proc": num_proc,
            "desc": desc,
        }
        return self._forward(
            "filter",
            function,
            per_split={"cache_file_name": ("cache_file_names", cache_file_names)},
            **_given(kw),
        )

    def flatten_indices(
        self,
        keep_in_memory: bool = False,
        cache_file_names: dict[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
        new_fingerprint: str | None = None,
    ) -> DatasetDict:
        """``Dataset.flatten_indices`` on every split (``cache_file_names``: per split)."""
        return self._forward(
            "flatten_indices",
            keep_in_memory,
            per_split={"cache_file_name": ("cache_file_names", cache_file_names)},
            writer_batch_size=writer_batch_size,
            new_fingerprint=new_fingerprint,
        )

    def sort(
        self,
        column_names: str | Sequence[str],
        reverse: bool | Sequence[bool] = False,
        null_placement: str = "at_end",
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_names: dict[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
    ) -> DatasetDict:
        """``Dataset.sort`` on every split (``indices_cache_file_names``: per split)."""
        return self._forward(
            "sort",
            column_names,
            reverse,
            null_placement,
            per_split={
                "indices_cache_file_name": ("indices_cache_file_names", indices_cache_file_names)
            },
            keep_in_memory=keep_in_memory,
            load_from_cache_file=load_from_cache_file,
            writer_batch_size=writer_batch_size,
        )

    def shuffle(
        self,
        seeds: int | dict[str, int | None] | None = None,
        seed: int | None = None,
        generators: dict[str, Any] | None = None,
        keep_in_memory: bool = False,
        load_from_cache_file: bool | None = None,
        indices_cache_file_names: dict[str, str | None] | None = None,
        writer_batch_size: int | None = 1000,
    ) -> DatasetDict:
        """``Dataset.shuffle`` on every split: ``seeds`` one seed for all, or one per split.

        ``seed`` is HF's alias of ``seeds`` (not both). A split without a seed draws one from
        numpy's global generator, as ``Dataset.shuffle(seed=None)`` does. ``generators``: HF's
        ``{split: numpy.random.Generator}``, drawing those splits' permutations instead.
        """
        if seed is not None and seeds is not None:
            raise ValueError("Please specify seed or seeds, but not both")
        given = seed if seed is not None else seeds
        per = (
            given
            if isinstance(given, Mapping) or given is None
            else dict.fromkeys(self.keys(), given)
        )
        return self._forward(
            "shuffle",
            per_split={
                "seed": ("seeds", per),
                "generator": ("generators", generators),
                "indices_cache_file_name": ("indices_cache_file_names", indices_cache_file_names),
            },
            keep_in_memory=keep_in_memory,
            load_from_cache_file=load_from_cache_file,
            writer_batch_size=writer_batch_size,
        )

    def to_iterable_dataset(self, num_shards: int | dict[str, int] = 1) -> IterableDatasetDict:
        """``Dataset.to_iterable_dataset`` on every split (``num_shards``: one or per split)."""
        from arrowmix._hf.iterable_dict import IterableDatasetDict

        per = num_shards if isinstance(num_shards, Mapping) else dict.fromkeys(self, num_shards)
        return IterableDatasetDict(
            {split: ds.to_iterable_dataset(per.get(split, 1)) for split, ds in self.items()}
        )


class SplitPair(DatasetDict):
    """``train_test_split``'s result: ``{"train": ..., "test": ...}`` that unpacks as a pair.

    A :class:`DatasetDict` in every way except iteration: ``train, test = split`` (and
    ``for ds in split``) gives the two Datasets, as arrowmix's ``train_test_split`` always
    did; ``split.keys()`` gives the names (a list). ``split.train`` / ``split.test`` name
    them too. Its transforms (``split.map(...)``) return a plain :class:`DatasetDict`.
    """

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values())

    def keys(self) -> list[str]:  # type: ignore[override]
        """The split names, ``["train", "test"]`` (a list, as arrowmix's pair always gave)."""
        return list(super().keys())

    @property
    def train(self) -> Dataset:
        """The train split."""
        return self["train"]

    @property
    def test(self) -> Dataset:
        """The test split."""
        return self["test"]
