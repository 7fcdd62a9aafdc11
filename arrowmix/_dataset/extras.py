"""Rows added, pandas, and the ways out of :class:`~arrowmix.Dataset`, kept apart.

``from_generator``, ``from_pandas``, ``add_item``, ``repeat``, ``to_pandas``, ``to_polars``
and the exporters ``to_csv``/``to_json``/``to_parquet`` (with HF's signatures), the
training stream ``to_stream`` and ``to_ray``: a mixin whose methods delegate to
``generator``, ``additions``, ``export``, ``to_stream`` and the Ray integration.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from arrowmix._dataset.page_cache import DEFAULT_SHUFFLE, DefaultShuffle, warn_global_past_memory
from arrowmix._dataset.state import state_of
from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetExtras"]


def _ds(obj: DatasetExtras) -> Dataset:
    return cast("Dataset", obj)


class DatasetExtras:
    """Mixin of :class:`~arrowmix.Dataset`: generators, pandas, rows added, the ways out."""

    @classmethod
    def from_generator(
        cls,
        generator: Callable[..., Any],
        features: Any = None,
        cache_dir: str | None = None,
        keep_in_memory: bool = False,
        gen_kwargs: Mapping[str, Any] | None = None,
        num_proc: int | None = None,
        split: Any = None,
        fingerprint: str | None = None,
    ) -> Dataset:
        """The rows ``generator(**gen_kwargs)`` yields (dicts), cached by the generator.

        As HF ``datasets``: the rows are written to chunk files under the cache root, named
        by the fingerprint of the generator (its code and captured values, by value), its
        ``gen_kwargs`` and ``features``; a rerun, in a new process too, opens those files
        and does not call the generator (``fingerprint=`` names the rows yourself). Rows are
        streamed to the files in blocks (bounded memory); a generator that raises leaves
        nothing that a rerun takes for finished. ``features`` (HF ``Features`` or a
        ``pyarrow.Schema``) types the columns; ``num_proc`` is accepted and the generator
        runs in this process. As in HF, ``split`` (a name or a ``NamedSplit``; ``"train"``
        when not given) is ``ds.split``, and ``fingerprint`` is the result's fingerprint (the
        root of the fingerprints of what is computed from it).

        Example:
            >>> import arrowmix as am
            >>> def squares(n):
            ...     for i in range(n):
            ...         yield {"i": i, "sq": i * i}
            >>> am.Dataset.from_generator(squares, gen_kwargs={"n": 4})["sq"]
            [0, 1, 4, 9]
        """
        from arrowmix._dataset.inputs.file_splits import finish_ingest, schema_of, with_split
        from arrowmix._dataset.inputs.generator import from_generator
        from arrowmix._dataset.state import derive, state_of

        if num_proc is not None:
            check_int("num_proc", num_proc, minimum=1)
        ds = from_generator(
            generator, schema_of(None, features), gen_kwargs, cache_dir, fingerprint
        )
        if fingerprint is not None:
            ds = type(ds)(derive(state_of(ds), fingerprint=fingerprint))
        return with_split(
            finish_ingest(ds, None, keep_in_memory), "train" if split is None else split
        )

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        features: Any = None,
        info: Any = None,
        split: Any = None,
        preserve_index: bool | None = None,
    ) -> Dataset:
        """A dataset over a ``pandas.DataFrame`` (in memory), as HF ``datasets`` builds it.

        The index becomes a column ``__index_level_0__`` unless it is a plain range
        (``preserve_index=None``, pyarrow's rule, as in HF); ``features``/``info`` type the
        columns as in :meth:`from_dict`.
        """
        from arrowmix._dataset.inputs.file_splits import schema_of, with_split
        from arrowmix._dataset.views.additions import from_pandas
        from arrowmix._hf.info import dataset_with_info

        ds = from_pandas(df, schema_of(None, features, info), preserve_index)
        return with_split(dataset_with_info(ds, info), split)

    @classmethod
    def from_polars(
        cls, df: Any, features: Any = None, info: Any = None, split: Any = None
    ) -> Dataset:
        """A dataset over a ``polars.DataFrame`` (in memory, polars' Arrow types), as HF's."""
        from arrowmix._dataset.inputs.builders import from_arrow
        from arrowmix._dataset.inputs.file_splits import schema_of, with_split
        from arrowmix._dataset.inputs.py_columns import typed_table
        from arrowmix._hf.info import dataset_with_info

        table = df.to_arrow()
        schema = schema_of(None, features, info)
        if schema is not None:
            table = typed_table({n: table.column(n) for n in table.column_names}, schema)
        return with_split(dataset_with_info(from_arrow(table), info), split)

    @classmethod
    def from_sql(
        cls,
        sql: Any,
        con: Any,
        features: Any = None,
        cache_dir: str | None = None,
        keep_in_memory: bool = False,
        **kwargs: Any,
    ) -> Dataset:
        """The rows of a SQL query or table name, read with ``pandas.read_sql``, as HF's.

        ``con``: a URI string, a SQLAlchemy engine or connection, or a ``sqlite3``
        connection; ``kwargs``: ``read_sql``'s ``index_col``, ``columns``, ``params``,
        ``coerce_float``, ``parse_dates``, ``chunksize``. ``features`` type the columns as
        in :meth:`from_pandas`. The rows are written under the cache root (``cache_dir``)
        and memory-mapped (in memory with ``keep_in_memory``); each call reads the
        database again.
        """
        from arrowmix._dataset.inputs.file_splits import finish_ingest, schema_of, with_split
        from arrowmix._dataset.inputs.sql import from_sql, read_sql_kwargs

        options = read_sql_kwargs(kwargs)
        ds = from_sql(sql, con, schema_of(None, features), cache_dir, options)
        return with_split(finish_ingest(ds, None, keep_in_memory), "train")

    @classmethod
    def from_buffer(
        cls, buffer: Any, info: Any = None, split: Any = None, indices_buffer: Any = None
    ) -> Dataset:
        """The rows of an Arrow IPC stream in a ``pyarrow.Buffer`` (in memory), as HF's.

        ``indices_buffer`` (a stream of one column of row positions) views the rows through
        it; ``info`` gives the column types as in :meth:`from_dict`; ``split`` is
        ``ds.split``.
        """
        import pyarrow as pa

        from arrowmix._dataset.inputs.file_splits import with_split

        def read(buf: Any) -> pa.Table:
            return pa.ipc.open_stream(pa.BufferReader(buf)).read_all()

        indices = None if indices_buffer is None else read(indices_buffer)
        built = cast("type[Dataset]", cls)(read(buffer), info=info, indices_table=indices)
        return with_split(built, split)

    def add_item(self, item: Mapping[str, Any], new_fingerprint: str | None = None) -> Dataset:
        """This view with the row ``item`` (a dict of every column) added at the end (HF's)."""
        from arrowmix._dataset.views.additions import add_item

        return add_item(_ds(self), item, new_fingerprint)

    def repeat(self, num_times: int) -> Dataset:
        """The rows ``num_times`` times over, in order (HF's ``repeat``); a view, no copy."""
        from arrowmix._dataset.views.additions import repeat

        return repeat(_ds(self), num_times)

    def to_megatron(
        self, prefix: str | os.PathLike[str], *, column: str = "input_ids", dtype: Any = None
    ) -> int:
        """Write ``column`` as Megatron ``<prefix>.bin``/``<prefix>.idx``; the bytes written.

        See :func:`arrowmix._dataset.inputs.token_corpus.to_megatron` (docs/formats.md).
        """
        from arrowmix._dataset.inputs.token_corpus import to_megatron

        return to_megatron(_ds(self), prefix, column=column, dtype=dtype)

    def to_pandas(self, batch_size: int | None = None, batched: bool = False) -> Any:
        """The view as a ``pandas.DataFrame``; ``batched=True``: an iterator of frames."""
        from arrowmix._dataset.export import DEFAULT_BATCH

        ds = _ds(self)
        if not batched:
            return ds.with_format("pandas")[:]
        size = check_int("batch_size", batch_size or DEFAULT_BATCH, minimum=1)
        return _frames(ds.with_format("pandas"), size)

    def to_polars(self, batch_size: int | None = None, batched: bool = False) -> Any:
        """The view as a ``polars.DataFrame`` (needs polars); ``batched=True``: frames."""
        ds = _ds(self)
        if not batched:
            return ds.with_format("polars")[:]
        size = check_int("batch_size", batch_size or 1000, minimum=1)
        return _frames(ds.with_format("polars"), size)

    def to_csv(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        num_proc: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_csv_kwargs: Any,
    ) -> int:
        """Write the view as CSV (atomically to a path); the number of bytes written.

        HF's arguments: ``batch_size`` rows per ``pandas.DataFrame.to_csv`` call (1000),
        ``num_proc`` processes, ``index=False`` unless given. See ``docs/datasets.md``.
        """
        from arrowmix._dataset.export import to_csv

        return to_csv(
            _ds(self), path_or_buf, batch_size, num_proc, storage_options, **to_csv_kwargs
        )

    def to_json(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        num_proc: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_json_kwargs: Any,
    ) -> int:
        """Write the view as JSON Lines (atomically to a path); the bytes written.

        HF's arguments: ``orient="records"``, ``lines=True`` unless given, ``batch_size``,
        ``num_proc``, ``compression`` inferred from ``.gz``/``.bz2``.
        """
        from arrowmix._dataset.export import to_json

        return to_json(
            _ds(self), path_or_buf, batch_size, num_proc, storage_options, **to_json_kwargs
        )

    def to_sql(
        self, name: str, con: Any, batch_size: int | None = None, **sql_writer_kwargs: Any
    ) -> int:
        """Write the view into SQL table ``name`` (``pandas.DataFrame.to_sql``); rows written.

        HF's arguments: ``batch_size`` rows per call (1000), ``index=False`` unless given; a
        ``sqlite3`` connection, or a URI or SQLAlchemy connection when SQLAlchemy is installed.
        """
        from arrowmix._dataset.export import to_sql

        return to_sql(_ds(self), name, con, batch_size, **sql_writer_kwargs)

    def to_parquet(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **parquet_writer_kwargs: Any,
    ) -> int:
        """Write the view as Parquet (atomically to a path); the Arrow bytes written, as HF.

        ``batch_size`` rows per row group (HF's default: about 100MB); HF's
        ``use_content_defined_chunking`` and ``write_page_index`` apply.
        """
        from arrowmix._dataset.export import to_parquet

        return to_parquet(
            _ds(self), path_or_buf, batch_size, storage_options, **parquet_writer_kwargs
        )

    def to_stream(
        self,
        *,
        shuffle: str | None = DEFAULT_SHUFFLE,
        seed: int | None = None,
        infinite: bool = True,
        num_instances: int = 1,
        instance_rank: int = 0,
        read_ahead: int | str | None = None,
        shard: str | None = None,
        block_size: int | None = None,
        window_blocks: int | None = None,
        provenance: bool | str = False,
    ) -> Any:
        """A checkpointable stream of this dataset's rows (dicts), for training loops.

        Args:
            shuffle: ``"global"`` (a seeded bijection over all rows, O(1) memory; each row
                is a random read, so a corpus larger than the page cache reads at the
                disk's random-read speed: when the default meets such a corpus, a
                ``PerformanceWarning`` says so; passing ``"global"`` silences it), ``"blocks"``
                (a seeded permutation of blocks of ``block_size`` contiguous rows, then a
                shuffle within windows of ``window_blocks`` blocks: near-sequential reads,
                for corpora larger than memory), ``"chunks"`` (a seeded permutation of chunk
                files, then a shuffle within a window of chunks: for remote corpora), or
                ``None`` (in order).
            seed: the shuffle seed; each epoch derives its own order from it.
            infinite: never end, reshuffling every epoch (training); ``False``: one pass.
            num_instances: how many ranks share the data; each reads only its share.
            instance_rank: this rank, in ``[0, num_instances)``.
            read_ahead: over remote chunks read through a bounded cache
                (``from_chunks(..., cache_limit=...)``): how many chunks (an int; default 4)
                or bytes (a size such as ``"2GB"``) to download ahead of the reader, in the
                order the stream reads them. Ignored for local data.
            shard: how the ranks split each epoch. ``"rows"``: the rows of the epoch's
                order in turn (every rank reads rows of every chunk). ``"chunks"``: each
                rank reads one contiguous span of the epoch's chunk order, whole chunks
                but the two at its ends, so over remote chunks it downloads only its own
                share; every rank gets ``len(ds) // num_instances`` rows per epoch and the
                rest of the epoch is not read (``DroppedDataWarning``). Needs
                ``shuffle="chunks"`` or None. Default (None): ``"chunks"`` for a bounded
                remote corpus (``cache_limit=``) read with those shuffles, else ``"rows"``.
            block_size: rows per block of ``shuffle="blocks"`` (default 1024).
            window_blocks: blocks whose rows ``shuffle="blocks"`` shuffles together
                (default 256: windows of 262,144 rows).
            provenance: ``True`` or a source name: every item carries where its rows came
                from, ``{"source", "index", "chunk", "row"}`` (``ds[index]`` reads the row
                back) under ``"__source__"``, through every stage (``collate``: ``sources``,
                ``pack``: ``segment_sources``). Off by default; it changes neither the order
                nor the checkpoint. See "Provenance" in ``docs/streams.md``.

        Example:
            >>> import arrowmix as am
            >>> ds = am.Dataset.from_dict({"x": list(range(6))})
            >>> s = ds.to_stream(shuffle=None, infinite=False, num_instances=2, instance_rank=0)
            >>> [r["x"] for r in s]
            [0, 2, 4]
        """
        from arrowmix._dataset.to_stream import to_stream  # the stream layer loads lazily

        if isinstance(shuffle, DefaultShuffle):  # not the user's choice: say when it is slow
            warn_global_past_memory(state_of(_ds(self)))
            shuffle = "global"
        return to_stream(
            _ds(self),
            read_ahead,
            shuffle=shuffle,
            seed=seed,
            infinite=infinite,
            num_instances=num_instances,
            instance_rank=instance_rank,
            shard=shard,
            block_size=block_size,
            window_blocks=window_blocks,
            provenance=provenance,
        )

    def to_ray(self, *, rows_per_block: int | None = None) -> Any:
        """This view as a ``ray.data.Dataset`` of Arrow blocks, in the same row order.

        See :func:`arrowmix.integrations.ray.to_ray` and ``docs/ray.md``.
        """
        from arrowmix.integrations.ray import to_ray

        return to_ray(_ds(self), rows_per_block=rows_per_block)


def _frames(ds: Dataset, size: int) -> Iterator[Any]:
    for off in range(0, len(ds), size):
        yield ds[off : off + size]
