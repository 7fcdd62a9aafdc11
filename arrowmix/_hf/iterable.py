"""``arrowmix.IterableDataset``: HF ``datasets``' iterable dataset, built on ``to_stream``.

An :class:`IterableDataset` is a recipe (:mod:`arrowmix._hf.iterable_plan`): every method
returns a new one, and ``iter(ds)`` builds a checkpointable stream from it
(``Dataset.to_stream(shuffle=None, infinite=False)`` over the rows to read, then one stage
per method: :mod:`arrowmix._hf.iterable_stages`). Without a shuffle buffer the rows, their
order and their values are HF's, also per DataLoader worker, per node
(:func:`split_dataset_by_node`) and per epoch (``set_epoch`` reorders the shards as HF does).

What differs from HF, on purpose:

- ``shuffle(seed=, buffer_size=)`` reorders the shards as HF does for the same seed, but the
  buffer is arrowmix's window shuffle (``Stream.shuffle``: each window of ``buffer_size`` rows
  is permuted by ``(seed, window, epoch)``), so the order of the rows differs from HF's;
- ``state_dict()`` resumes exactly, a shuffle buffer included (HF drops the buffer's rows
  and refills it), and its content is a stream checkpoint (small, JSON), not HF's layout.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._dataset.formats import check_format
from arrowmix._hf.examples_iterable import as_source
from arrowmix._hf.info import InfoFields
from arrowmix._hf.iterable_cast import IterableCasts, make_cast
from arrowmix._hf.iterable_elastic import (
    ElasticTasks,
    check_state,
    dealt_plan,
    merge_state_dicts,
    tasks_to_run,
)
from arrowmix._hf.iterable_io import IterableIO
from arrowmix._hf.iterable_ops import (
    IterableColumn,
    batch_fn,
    identity,
    keep,
    listed,
    make_columns,
    make_filter,
    make_map,
    make_repeat,
    make_shuffle,
    make_skip,
    make_step,
    make_take,
    subset,
)
from arrowmix._hf.iterable_plan import Op, Source, SourcesOrderFixed, shard_bounds, worker_shards
from arrowmix._hf.iterable_runs import make_runs
from arrowmix._hf.iterable_stages import (
    FormatRows,
    examples_to_batch,
    format_examples_batch,
    infer_features,
    schema_of,
)
from arrowmix._hf.iterable_tensorize import TENSOR_FORMATS, tensorize
from arrowmix._hf.iterable_torch import epoch_cell, register_with_torch, worker
from arrowmix._stream.elastic import merge_states as stream_merge_states
from arrowmix._stream.rng import SeedHolder
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._stream.base import State, Stream

__all__ = ["IterableDataset", "to_iterable_dataset"]

logger = logging.getLogger(__name__)


def _names(columns: str | Sequence[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


class _Rows:
    """The iterator of ``iter(ds)``: the rows of the dataset's live stream."""

    def __init__(self, stream: Stream[Any]) -> None:
        self.stream = stream

    def __iter__(self) -> _Rows:
        return self

    def __next__(self) -> Any:
        return next(self.stream)


class IterableDataset(IterableCasts, IterableIO, InfoFields):
    """An iterable dataset with HF ``datasets``' methods whose checkpoints resume exactly.

    Made by :meth:`arrowmix.Dataset.to_iterable_dataset` (or ``load_dataset(...,
    streaming=True)``). Each method returns a new dataset; iterating reads the rows.

    Example:
        >>> import arrowmix as am
        >>> ds = am.Dataset.from_dict({"a": [0, 1, 2, 3]}).to_iterable_dataset(num_shards=2)
        >>> ds = ds.map(lambda r: {"b": r["a"] * 10}).filter(lambda r: r["a"] != 1)
        >>> it = iter(ds)
        >>> next(it)
        {'a': 0, 'b': 0}
        >>> state = ds.state_dict()
        >>> list(it)
        [{'a': 2, 'b': 20}, {'a': 3, 'b': 30}]
        >>> ds.load_state_dict(state)
        >>> [r["a"] for r in ds]
        [2, 3]
    """

    def __init__(
        self,
        ex_iterable: Any,
        info: Any = None,
        split: Any = None,
        formatting: Any = None,
        *,
        features: Any = None,
        format_type: str | None = None,
        distributed: tuple[int, int, str] | None = None,
    ) -> None:
        """A dataset of ``ex_iterable``'s rows (HF's signature).

        ``ex_iterable``: an examples iterable (:class:`arrowmix.iterable_dataset.ExamplesIterable`
        or any object with HF's protocol); its examples are cast to ``features`` (else
        ``info.features``) when known, as HF does. ``formatting``: HF's ``FormattingConfig``
        (its ``format_type``). Methods and ``to_iterable_dataset`` pass a recipe node.
        """
        if formatting is not None and format_type is None:
            format_type = check_format(getattr(formatting, "format_type", formatting))
        node = ex_iterable
        if not hasattr(node, "build"):
            source = as_source(ex_iterable)
            if source is None:
                raise TypeError(
                    "IterableDataset takes an examples iterable (an object with __iter__ "
                    "yielding (key, example) pairs, num_shards, shuffle_data_sources and "
                    f"shard_data_sources), got {type(ex_iterable).__name__}."
                )
            if features is None and info is not None:
                features = info.features
            node = (
                source
                if features is None
                else Op(source, "cast", make_cast, {"features": features})
            )
        self._node = node
        self._features = features
        self._format = format_type
        self._split = split
        self._info = info
        self._distributed = distributed
        self._epoch: Any = epoch_cell(0)
        self._starting: State | None = None
        self._live: Stream[Any] | ElasticTasks | None = None
        register_with_torch(IterableDataset)

    def _derive(self, node: Any = None, **changes: Any) -> IterableDataset:
        kwargs: dict[str, Any] = {
            "features": self._features,
            "format_type": self._format,
            "split": self._split,
            "info": self._info,
            "distributed": self._distributed,
        }
        kwargs.update(changes)
        return IterableDataset(self._node if node is None else node, **kwargs)

    def _op(self, kind: str, make: Callable[..., Any], **params: Any) -> Op:
        return Op(self._node, kind, make, params)

    def _call_params(
        self,
        function: Callable[..., Any],
        with_indices: bool,
        input_columns: str | Sequence[str] | None,
        batched: bool,
        batch_size: int | None,
        fn_kwargs: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """How ``map`` and ``filter`` call their function, and on what rows."""
        return {
            "function": function,
            "with_indices": with_indices,
            "input_columns": None if input_columns is None else _names(input_columns),
            "batched": batched,
            "batch_size": batch_size,
            "fn_kwargs": dict(fn_kwargs or {}),
            "input_format": self._format,
            "input_schema": schema_of(self._features) if self._format else None,
            "input_typed": self._node.typed,
        }

    # ------------------------------------------------------------------ description
    @property
    def features(self) -> Any:
        """HF ``Features`` of the rows, or None when unknown (after ``map``, as in HF)."""
        return self._features

    @property
    def column_names(self) -> list[str] | None:
        """The columns, or None when the features are unknown."""
        return None if self._features is None else list(self._features)

    @property
    def num_columns(self) -> int | None:
        """The number of columns, or None when the features are unknown."""
        return None if self._features is None else len(self._features)

    @property
    def num_shards(self) -> int:
        """Shards (DataLoader workers read whole shards: at most this many get rows)."""
        n: int = self._node.num_shards
        if self._distributed is not None:
            rank, world, strategy = self._distributed
            if strategy == "shards" or (strategy == "auto" and n % world == 0):
                return len(worker_shards(n, world, rank, contiguous=False))
        return n

    @property
    def n_shards(self) -> int:
        """Same as :attr:`num_shards` (HF's older name)."""
        return self.num_shards

    @property
    def split(self) -> Any:
        """The split name, or None."""
        return self._split

    @property
    def info(self) -> Any:
        """The source dataset's ``DatasetInfo``; its ``features`` are :attr:`features` (HF's).

        Without one, an empty HF ``DatasetInfo`` (None when HF ``datasets`` is not installed).
        """
        info = self._info
        if info is None:
            with contextlib.suppress(ImportError):
                from arrowmix._hf.names import hf_name

                info = hf_name("DatasetInfo")()
        if info is not None and getattr(info, "features", None) != self._features:
            info = copy.copy(info)
            info.features = self._features
        return info

    @property
    def epoch(self) -> int:
        """The epoch chosen by :meth:`set_epoch` (0 by default)."""
        return int(self._epoch)

    @property
    def format(self) -> dict[str, Any]:
        """``{"type": ...}``: the output format."""
        return {"type": self._format}

    def __getitem__(self, column_name: str) -> IterableColumn:
        """The values of column ``column_name``, row after row (HF's ``IterableColumn``)."""
        return IterableColumn(self, column_name)

    def __repr__(self) -> str:
        cols = self.column_names if self._features is not None else "Unknown"
        return f"IterableDataset({{\n    features: {cols},\n    num_shards: {self.num_shards}\n}})"

    # ------------------------------------------------------------------ transforms
    def map(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        drop_last_batch: bool = False,
        remove_columns: str | Sequence[str] | None = None,
        features: Any = None,
        fn_kwargs: Mapping[str, Any] | None = None,
    ) -> IterableDataset:
        """Apply ``function`` to each row (or batch) while iterating, as HF's ``map``.

        The function's output updates the row; ``remove_columns`` drops input columns. The
        features become ``features`` (None, i.e. unknown, by default, as in HF). A format set
        by :meth:`with_format` applies to the function's inputs.
        """
        call = self._call_params(
            function if function is not None else identity,
            with_indices, input_columns, batched, batch_size, fn_kwargs,
        )  # fmt: skip
        op = self._op(
            "map",
            make_map,
            **call,
            drop_last_batch=drop_last_batch,
            remove_columns=None if remove_columns is None else _names(remove_columns),
        )
        return self._derive(op, features=features)

    def filter(
        self,
        function: Callable[..., Any] | None = None,
        with_indices: bool = False,
        input_columns: str | Sequence[str] | None = None,
        batched: bool = False,
        batch_size: int | None = 1000,
        fn_kwargs: Mapping[str, Any] | None = None,
    ) -> IterableDataset:
        """Keep the rows for which ``function`` is true (one bool per row when batched)."""
        call = self._call_params(
            function if function is not None else keep,
            with_indices, input_columns, batched, batch_size, fn_kwargs,
        )  # fmt: skip
        op = self._op("filter", make_filter, **call)
        return self._derive(op)

    def shuffle(
        self,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
        buffer_size: int = 1000,
        max_buffer_input_shards: int = 10,
    ) -> IterableDataset:
        """Shuffle the shards (HF's order for the seed) and the rows in windows of ``buffer_size``.

        The rows of each window of ``buffer_size`` are permuted by ``(seed, window, epoch)``
        (``Stream.shuffle``), so the row order differs from HF's buffer; a checkpoint taken
        anywhere resumes exactly. ``max_buffer_input_shards`` is accepted for HF's signature.
        """
        check_int("buffer_size", buffer_size, minimum=1)
        if generator is not None:  # HF reorders the shards with it; the windows take a seed of it
            rng = generator
            seed = int(copy.deepcopy(generator).integers(2**63 - 1))
        else:
            seed = SeedHolder(seed).value
            rng = np.random.default_rng(seed)
        try:
            node = self._node.shuffle_sources(rng, seed)
        except SourcesOrderFixed:
            node = self._node
        return self._derive(
            Op(node, "shuffle", make_shuffle, {"buffer_size": buffer_size, "seed": seed})
        )

    def set_epoch(self, epoch: int) -> None:
        """Read epoch ``epoch`` next: a new shard order (as HF) and new shuffle windows."""
        epoch = check_int("epoch", epoch, minimum=0)
        if isinstance(self._epoch, int):
            self._epoch = epoch
        else:  # shared with persistent DataLoader workers: change it in place
            self._epoch.fill_(epoch)

    def skip(self, n: int) -> IterableDataset:
        """Every row after the first ``n`` (split among DataLoader workers as in HF).

        After :func:`split_dataset_by_node`, each node (and each of its workers) skips ``n``,
        as in HF.
        """
        n = check_int("n", n, minimum=0)
        whole = self._distributed is None
        return self._derive(Op(self._node, "skip", make_skip, {"n": n}, split_count=whole))

    def take(self, n: int) -> IterableDataset:
        """The first ``n`` rows (split among DataLoader workers as in HF).

        After :func:`split_dataset_by_node`, each node (and each of its workers) takes ``n``,
        as in HF.
        """
        n = check_int("n", n, minimum=0)
        whole = self._distributed is None
        return self._derive(Op(self._node, "take", make_take, {"n": n}, split_count=whole))

    def repeat(self, num_times: int | None) -> IterableDataset:
        """The rows ``num_times`` times over, in the same order; None repeats forever."""
        if num_times is not None:
            check_int("num_times", num_times, minimum=0)
        return self._derive(self._op("repeat", make_repeat, num_times=num_times))

    def shard(self, num_shards: int, index: int, contiguous: bool = True) -> IterableDataset:
        """Part ``index`` of ``num_shards``: whole shards of this dataset, as HF's ``shard``."""
        check_int("num_shards", num_shards, minimum=1)
        check_int("index", index, minimum=0)
        if index >= num_shards:
            raise ValueError(f"index must be in [0, {num_shards}), got {index}.")
        return self._derive(self._node.shard(num_shards, index, contiguous))

    def batch(
        self,
        batch_size: int | None = None,
        by_column: str | Sequence[str] | None = None,
        drop_last_batch: bool = False,
    ) -> IterableDataset:
        """One row per ``batch_size`` rows, each column a list of their values (HF's).

        ``by_column``: one row per run of consecutive rows with equal values in those
        columns (across shards; ``batch_size`` does not cut a run), as HF's.
        """
        features = listed(self._features)
        if by_column is not None:
            if drop_last_batch:
                raise NotImplementedError(
                    "IterableDataset.batch(by_column=..., drop_last_batch=True) is not "
                    "supported: a run of rows has no fixed size to drop."
                )
            cols = _names(by_column)
            self._check_columns(cols)
            return self._derive(self._op("runs", make_runs, columns=cols), features=features)
        if batch_size is None:
            raise ValueError("IterableDataset.batch() misses `batch_size` or `by_column` argument.")
        check_int("batch_size", batch_size, minimum=1)
        ds = self.map(
            batch_fn, batched=True, batch_size=batch_size, drop_last_batch=drop_last_batch
        )
        return ds._derive(ds._node, features=features)

    def select_columns(self, column_names: str | Sequence[str]) -> IterableDataset:
        """Only ``column_names``, in that order."""
        cols = _names(column_names)
        self._check_columns(cols)
        features = None if self._features is None else subset(self._features, cols)
        return self._derive(
            self._op("select", make_columns, how="select", arg=cols), features=features
        )

    def remove_columns(self, column_names: str | Sequence[str]) -> IterableDataset:
        """Every column but ``column_names``."""
        cols = _names(column_names)
        features = None
        if self._features is not None:
            features = subset(self._features, [c for c in self._features if c not in cols])
        return self._derive(
            self._op("remove", make_columns, how="remove", arg=cols), features=features
        )

    def rename_column(self, original_column_name: str, new_column_name: str) -> IterableDataset:
        """Rename one column (it moves to the last place of each row, as in HF)."""
        return self.rename_columns({original_column_name: new_column_name})

    def rename_columns(self, column_mapping: Mapping[str, str]) -> IterableDataset:
        """Rename columns ``{old: new}`` (the renamed columns move to the end of each row)."""
        mapping = dict(column_mapping)
        features = None
        if self._features is not None:
            features = type(self._features)(
                {mapping.get(k, k): v for k, v in self._features.items()}
            )
        return self._derive(
            self._op("rename", make_columns, how="rename", arg=mapping), features=features
        )

    def _resolve_features(self) -> IterableDataset:
        """This dataset with known features: inferred from its first 5 rows when unknown.

        As HF's: the columns in order of first appearance, each typed from its values (as
        ``pyarrow`` infers them); the rows read afterwards are cast to them (a missing
        column reads as None).
        """
        if self._features is not None:
            return self
        rows = list(itertools.islice(self.with_format(None), 5))
        features = infer_features(rows)
        return self._cast(features) if not self._node.typed else self._derive(features=features)

    def with_format(self, type: str | None = None) -> IterableDataset:  # HF's name
        """Rows in format ``type``: None (Python), ``"numpy"``, ``"torch"``, ``"arrow"``..."""
        return self._derive(format_type=check_format(type))

    def _check_columns(self, cols: Sequence[str]) -> None:
        if self._features is None:
            return
        missing = [c for c in cols if c not in self._features]
        if missing:
            raise ValueError(
                f"Column name {missing} not in the dataset. Columns in the dataset: "
                f"{list(self._features)}."
            )

    # ------------------------------------------------------------------ iteration
    def _plan(self, worker: tuple[int, int] | None) -> Any:
        """The recipe this process reads: epoch order, node split, worker split."""
        node, epoch = self._node, self.epoch
        if epoch:
            with contextlib.suppress(SourcesOrderFixed):  # take/skip fix the shard order
                node = node.shuffle_sources(np.random.default_rng(epoch), epoch)
            node = node.shift_rngs(epoch)
        if self._distributed is not None:
            rank, world, strategy = self._distributed
            if strategy == "shards" and node.num_shards < world:
                raise ValueError(
                    f"Cannot iterate with strategy='shards': the dataset has "
                    f"num_shards={node.num_shards}, fewer than world_size={world}."
                )
            if strategy == "shards" or (strategy == "auto" and node.num_shards % world == 0):
                node = node.shard(world, rank, contiguous=False)
            else:
                node = Op(node, "step", make_step, {"step": world, "offset": rank})
        if worker is not None:
            workers, index = worker
            if not worker_shards(node.num_shards, workers, index, contiguous=False):
                logger.warning(
                    "DataLoader worker %d of %d gets no rows: the dataset has %d shards "
                    "(to_iterable_dataset(num_shards=...) sets how many).",
                    index,
                    workers,
                    node.num_shards,
                )
                return None
            node = node.shard(workers, index, contiguous=False).shift_rngs(index)
        return node

    def _stream(self, node: Any, formatted: bool) -> Stream[Any]:
        """The stream of plan ``node`` (None: no rows), formatted, at the dataset's epoch."""
        from arrowmix._stream.sources.iterable import from_iterable

        stream: Stream[Any] = from_iterable(()) if node is None else node.build()
        if formatted and self._format is not None:
            stream = FormatRows(
                stream, self._format, schema_of(self._features), typed=self._node.typed
            )
        if self.epoch:
            stream.set_epoch(self.epoch)
        return stream

    def _old_reader(
        self, formatted: bool, task: Mapping[str, Any], dealt: bool
    ) -> Stream[Any] | None:
        """An old reader's stream of an elastic checkpoint, resumed for this reader.

        ``dealt``: this reader's share of its rows (``task["share"]``); else all of them.
        """
        strategy = "auto" if self._distributed is None else self._distributed[2]
        old = self._derive(distributed=(task["rank"], task["world_size"], strategy))
        old._epoch = self._epoch
        workers = task["num_workers"]
        node = old._plan((workers, task["worker"]) if workers else None)
        if node is None:
            return None
        if dealt:
            node = dealt_plan(node, *task["share"])
        stream = self._stream(node, formatted)
        state = task["stream"]
        if dealt and not task["started"] and state is not None:
            state = stream_merge_states([state])
        if state is not None:
            stream.load_state_dict(state)
        return stream

    def _start(self, formatted: bool = True) -> Any:
        here = worker()
        start, epoch = self._starting, self.epoch
        if start is not None and start.get("epoch", 0) == epoch:
            tasks = tasks_to_run(start, self._distributed, here)
            if tasks is not None:  # an elastic resume: the rows the old readers had left
                read = functools.partial(self._old_reader, formatted)
                self._live = ElasticTasks(tasks, epoch, read)
                return self._live
        stream = self._stream(self._plan(here), formatted)
        if start is not None and start.get("epoch", 0) == epoch and start.get("stream"):
            stream.load_state_dict(start["stream"])
        self._live = stream
        return stream

    def __iter__(self) -> Iterator[Any]:
        return _Rows(self._start())

    def iter(self, batch_size: int, drop_last_batch: bool = False) -> Iterator[Any]:
        """Batches of ``batch_size`` rows: dicts of lists (of tensors or arrays in a format)."""
        check_int("batch_size", batch_size, minimum=1)
        typed = self._node.typed or self._format not in TENSOR_FORMATS
        stream = self._start(formatted=not typed)  # rows a function made: tensorized first
        schema = schema_of(self._features)
        while True:
            rows = list(itertools.islice(stream, batch_size))
            if not rows or (drop_last_batch and len(rows) < batch_size):
                return
            if typed:  # one batch of the table, as HF formats it
                yield format_examples_batch(rows, self._format, schema)
            else:  # HF stacks the tensorized rows
                yield tensorize(examples_to_batch(rows), str(self._format))

    def state_dict(self) -> dict[str, Any]:
        """``{"epoch": e, "stream": <stream checkpoint>}`` after the last row yielded.

        Small and JSON-serialisable; it resumes exactly (a shuffle buffer included). Before
        any iteration, the state loaded last (or the start).
        """
        if self._live is None:
            return dict(self._starting) if self._starting else {"epoch": self.epoch, "stream": None}
        if isinstance(self._live, ElasticTasks):
            return self._live.state_dict()
        return {"epoch": self.epoch, "stream": self._live.state_dict()}

    def load_state_dict(self, state_dict: Mapping[str, Any] | Sequence[Any]) -> None:
        """Resume from ``state_dict()`` at the next iteration (of the same epoch, as in HF).

        Elastic resume: the list of every node's state (or :meth:`merge_state_dicts` of it)
        loads on any ``world_size`` and number of DataLoader workers; the rows the old
        readers had left come out once each.
        """
        if isinstance(state_dict, Sequence) and not isinstance(state_dict, str):
            state_dict = merge_state_dicts(state_dict)
        self._starting = dict(check_state(state_dict))

    @staticmethod
    def merge_state_dicts(states: Sequence[Any]) -> dict[str, Any]:
        """Every node's state in one, which any number of nodes and workers can load.

        ``states``: one entry per node, in rank order: its ``state_dict()``, its
        ``StatefulDataLoader.state_dict()``, or the list of its DataLoader workers' states.
        """
        return merge_state_dicts(states)

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["_live"] = None  # a worker builds its own stream
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._epoch = epoch_cell(self._epoch)
        register_with_torch(IterableDataset)


def to_iterable_dataset(
    ds: Dataset,
    num_shards: int = 1,
    split: Any = None,
    file_rows: Sequence[int] | None = None,
    info: Any = None,
    pieces: Sequence[tuple[int, ...]] | None = None,
) -> IterableDataset:
    """``ds`` as an :class:`IterableDataset` of ``num_shards`` contiguous shards.

    ``file_rows``: the row counts of the files ``ds`` was read from, in order: each is one
    shard, as in HF's ``load_dataset(..., streaming=True)``; ``pieces``: ``Source.pieces``.

    Its ``split`` is ``split`` (None by default, as HF's ``to_iterable_dataset`` gives;
    ``load_dataset(..., streaming=True)`` names it); its ``info`` is ``info`` or, as HF's,
    the features only (the description, citation... are not carried).
    """
    from arrowmix._dataset.state import state_of

    check_int("num_shards", num_shards, minimum=1)
    if num_shards > len(ds):
        raise ValueError(
            f"Unable to shard a dataset of size {len(ds)} into {num_shards} shards (the number "
            "of shards exceeds the number of samples)."
        )
    form = state_of(ds).format
    fmt = form.type
    if fmt is not None and (
        fmt == "custom"
        or form.kwargs
        or (form.columns is not None and set(form.columns) != set(ds.column_names))
    ):
        raise NotImplementedError(
            "Converting a formatted dataset with kwargs or selected columns to a formatted "
            "iterable dataset is not implemented (as in HF datasets). Use "
            "`ds.with_format(None).to_iterable_dataset()`, then `.with_format(type)` or `.map`."
        )
    plain = ds.with_format(None) if fmt is not None else ds
    if file_rows is not None and file_rows and sum(file_rows) == len(ds):
        bounds = tuple(itertools.pairwise(itertools.accumulate(file_rows, initial=0)))
        node = Source(plain, bounds, pieces=tuple(pieces) if pieces else None)
    else:
        node = Source(plain, shard_bounds(len(ds), num_shards))
    if info is None and (full := getattr(ds, "info", None)) is not None:
        info = type(full)(features=full.features)  # HF keeps the features only, not the texts
    return IterableDataset(node, info, split, features=ds.features, format_type=fmt)
