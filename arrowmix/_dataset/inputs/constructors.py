"""The constructors of :class:`~arrowmix.Dataset` (classmethods), kept apart from the class body.

Each delegates to the module that does the work: ``build`` (in-memory data, Arrow files and
chunk directories), ``ingest`` (raw text, JSON Lines, CSV and Parquet files, cached by content)
and the Ray integration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset.inputs.file_splits import read_splits, schema_of, with_split

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetConstructors"]


class DatasetConstructors:
    """Mixin holding ``Dataset.from_*``."""

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Sequence[Any]],
        schema: pa.Schema | None = None,
        *,
        features: Any = None,
        on_mixed_types: str | None = None,
        info: Any = None,
        split: Any = None,
    ) -> Dataset:
        """A dataset from ``{"column": [values...]}`` (in memory).

        With ``schema`` (a ``pyarrow.Schema``; HF's ``features=`` is accepted too, a
        ``Features`` object or a schema), values of a compatible type are cast to it (ints to
        a float or string column, whole floats to ints); a lossy cast raises
        ``SchemaMismatchError`` naming the column. HF's ``info=`` (a ``DatasetInfo``) gives
        its ``features`` the same way, and its description, citation, homepage and license
        are kept for ``ds.info``; ``split`` is ignored. Without a schema, HF's
        ``on_mixed_types="use_json"`` stores the places of a column whose values have mixed
        types (a str among ints, dicts with different keys) as JSON, read back as the values
        given (``docs/migrating-from-datasets.md``). ``split`` (a name or HF's ``NamedSplit``)
        is the result's ``ds.split``, as in HF (``None`` when not given).
        """
        from arrowmix._dataset.inputs import builders as build
        from arrowmix._hf.info import dataset_with_info

        built = build.from_dict(mapping, schema_of(schema, features, info), on_mixed_types)
        return with_split(dataset_with_info(built, info), split)

    @classmethod
    def from_pylist(
        cls,
        rows: Sequence[Mapping[str, Any]],
        schema: pa.Schema | None = None,
        *,
        features: Any = None,
        on_mixed_types: str | None = None,
        info: Any = None,
        split: Any = None,
    ) -> Dataset:
        """A dataset from a list of row dicts (missing keys become nulls); see from_dict."""
        from arrowmix._dataset.inputs import builders as build
        from arrowmix._hf.info import dataset_with_info

        built = build.from_pylist(rows, schema_of(schema, features, info), on_mixed_types)
        return with_split(dataset_with_info(built, info), split)

    @classmethod
    def from_list(
        cls,
        rows: Sequence[Mapping[str, Any]],
        schema: pa.Schema | None = None,
        *,
        features: Any = None,
        on_mixed_types: str | None = None,
        info: Any = None,
        split: Any = None,
    ) -> Dataset:
        """HF ``datasets``' name for :meth:`from_pylist`."""
        return cls.from_pylist(
            rows, schema, features=features, on_mixed_types=on_mixed_types, info=info, split=split
        )

    @classmethod
    def from_arrow(cls, table_or_record_batches: Any) -> Dataset:
        """A dataset over a ``pyarrow.Table``, a record batch or an iterable of record batches."""
        from arrowmix._dataset.inputs import builders as build

        return build.from_arrow(table_or_record_batches)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None = None,
        *,
        in_memory: bool = False,
        info: Any = None,
        split: Any = None,
        indices_filename: str | os.PathLike[str] | None = None,
    ) -> Dataset:
        """A dataset over one Arrow IPC file, memory-mapped when local (O(1) open).

        Both IPC formats open: the file format (arrowmix's chunks and cache files) and the
        stream format (HF ``datasets``' ``.arrow`` files; opening reads every record
        batch's header). HF's arguments: ``in_memory=True`` reads the file into memory
        instead of mapping it; ``indices_filename`` (an Arrow file of one column of row
        positions, as HF writes them) views the rows through it; ``info`` gives the column
        types as in :meth:`from_dict`; ``split`` is ``ds.split``, as in from_dict.
        """
        from arrowmix._dataset.inputs import builders as build

        built = build.from_file(
            path,
            storage_options,
            in_memory=in_memory,
            schema=schema_of(None, None, info),
            indices_filename=indices_filename,
        )
        return with_split(built, split)

    @classmethod
    def from_chunks(
        cls,
        path_or_glob_or_list: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        cache_dir: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        *,
        allow_incomplete: bool = False,
        cache_limit: int | str | None = None,
        chunk_cache_dir: str | None = None,
        verify: bool = False,
    ) -> Dataset:
        """A dataset over Arrow IPC chunk files (a directory, glob, fsspec URL or list).

        Local files are memory-mapped and concatenated without copying; ``cache_dir``
        overrides where derived results go (default: beside the first chunk), a local
        directory or an fsspec URL (``s3://bucket/cache``: see ``docs/remote-storage.md``);
        ``storage_options`` go to fsspec for remote URLs (chunks and ``cache_dir``).

        A directory written by ``write_chunks`` opens only when complete: its manifest
        (written last) must exist and list exactly the chunk files present. Otherwise
        :class:`~arrowmix.exceptions.IncompleteCorpusError` names the directory and the
        missing or unexpected files, unless ``allow_incomplete=True``. Directories of chunk
        files written by other tools open as they are.

        Remote chunks are copied to the local disk when the dataset is opened, unless
        ``cache_limit`` is given (bytes, or a size such as ``"200GB"``): then opening reads
        only each chunk's footer (range requests), a chunk is downloaded when first read
        into ``chunk_cache_dir`` (default ``$ARROWMIX_CACHE/remote-chunks``), and the least
        recently used copies that no process is reading are evicted to stay within the
        limit, which the processes sharing that directory share.

        Opening while another process rewrites the corpus (``write_chunks(...,
        overwrite=True)``) returns one complete version under that version's fingerprint,
        or raises :class:`~arrowmix.exceptions.ChunkFileError` saying a rewrite is in
        progress. ``verify=True`` hashes every chunk listed in a manifest in full and raises
        :class:`~arrowmix.exceptions.ChunkFileError` naming one whose bytes no longer match
        the digest recorded when it was written (bit rot); see ``docs/caching.md``.
        """
        from arrowmix._dataset.inputs import builders as build

        return build.from_chunks(
            path_or_glob_or_list,
            cache_dir,
            storage_options,
            allow_incomplete=allow_incomplete,
            cache_limit=cache_limit,
            chunk_cache_dir=chunk_cache_dir,
            verify=verify,
        )

    @classmethod
    def from_text(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any],
        storage_options: Mapping[str, Any] | None = None,
        *,
        sample_by: str = "line",
        source_column: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        features: Any = None,
        split: str | None = None,
        keep_linebreaks: bool = False,
        num_proc: int | None = None,
        **options: Any,
    ) -> Any:
        r"""Ingest text files into cached chunks of rows ``{"text": ...}``.

        ``sample_by`` (HF's text builder's modes): ``"line"`` (default) one row per line;
        ``"paragraph"`` one row per run of non-blank lines (joined by newlines);
        ``"document"`` one row per file, unchanged. ``source_column="file"`` adds a column of
        that name holding each row's file path. ``cache_dir`` (local) holds the converted
        chunks instead of the cache root.

        ``paths``: files, globs, directories or fsspec URLs; compressed files (``.gz``, ``.xz``,
        ``.bz2``, ``.zst``) are decompressed. The conversion is cached by the files' content
        (and their paths, with ``source_column``): reopening the same files converts nothing.
        ``keep_in_memory=True`` (HF's) then reads the chunks into memory instead of mapping
        them (same rows, same fingerprint). HF's ``features`` (or a ``pyarrow.Schema``)
        gives the columns' types: the chunks are cast as :meth:`cast` does (cached, and
        never changing a value).

        ``split`` names the result's split (``ds.split``; ``"train"`` when not given, as in
        HF). ``paths`` as a dict ``{split: files}`` gives a ``DatasetDict`` of those splits
        (or only ``split``'s Dataset when ``split`` is given).

        ``keep_linebreaks=True`` (HF's, with ``sample_by="line"``) keeps each line's ``"\n"``;
        the lines are then read as HF's text builder reads them, with universal newlines
        (``"\r\n"`` and ``"\r"`` end a line and are kept as ``"\n"``).

        HF's other builder options (``options``: ``encoding="utf-8"``, ``chunksize``...) and
        ``num_proc`` are accepted and change nothing; an option HF's builder does not have,
        or another encoding, raises a ``ValueError`` naming it.
        """
        from arrowmix._dataset.inputs.ingest import text_format

        _builder_options("text", options)

        fmt: Any = text_format(sample_by)
        if keep_linebreaks:
            if sample_by != "line":
                raise ValueError("`keep_linebreaks=True` applies to `sample_by='line'` only.")
            fmt = ("text:line", {"keep_linebreaks": True})
        return read_splits(
            paths, fmt, split, storage_options, source_column, cache_dir, features, keep_in_memory
        )

    @classmethod
    def from_json(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any],
        storage_options: Mapping[str, Any] | None = None,
        *,
        source_column: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        features: Any = None,
        split: str | None = None,
        field: str | None = None,
        num_proc: int | None = None,
        **options: Any,
    ) -> Any:
        """Ingest JSON files into cached chunks; see from_text.

        JSON Lines (one object per line), or a file that is one JSON array (of objects, or of
        other values read as ``{"text": value}``), or, with ``field``, one JSON object whose
        member ``field`` holds the rows (an array, or ``{column: [values...]}``).
        """
        _builder_options("json", options)
        return read_splits(
            paths,
            ("json", {"field": field}),
            split,
            storage_options,
            source_column,
            cache_dir,
            features,
            keep_in_memory,
        )

    @classmethod
    def from_csv(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any],
        storage_options: Mapping[str, Any] | None = None,
        *,
        source_column: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        features: Any = None,
        split: str | None = None,
        sep: str | None = None,
        delimiter: str | None = None,
        num_proc: int | None = None,
        **options: Any,
    ) -> Any:
        r"""Ingest CSV files (with a header row) into cached chunks; see from_text.

        ``sep`` (or its alias ``delimiter``, as in HF and pandas): the one-character field
        separator, ``","`` by default (``"\t"`` for TSV). pandas' (HF's) ``column_names``
        (or ``names``), ``header`` (``"infer"``, ``0`` or ``None``) and ``usecols`` (names
        or positions; the columns stay in the file's order) as ``pandas.read_csv`` reads
        them: with ``column_names`` or ``header=None`` the first row is data.
        """
        from arrowmix._dataset.inputs.reader_options import reader_format

        given = {"sep": sep, "delimiter": delimiter, **options}
        given = {k: v for k, v in given.items() if v is not None or k == "header"}
        _builder_options("csv", given)
        return read_splits(
            paths,
            reader_format("csv", given),
            split,
            storage_options,
            source_column,
            cache_dir,
            features,
            keep_in_memory,
        )

    @classmethod
    def from_parquet(
        cls,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Mapping[str, Any],
        storage_options: Mapping[str, Any] | None = None,
        *,
        source_column: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        keep_in_memory: bool = False,
        features: Any = None,
        split: str | None = None,
        in_place: bool = False,
        columns: Sequence[str] | None = None,
        filters: Any = None,
        cache_size: int | str | None = None,
        num_proc: int | None = None,
        **options: Any,
    ) -> Any:
        """Ingest Parquet files into cached Arrow chunks (memory-mappable); see from_text.

        With ``in_place=True`` nothing is converted: the files are read where they are, row
        group by row group, decoded on demand into a bounded cache of ``cache_size`` bytes
        (``"256MB"`` by default); ``columns=`` selects columns (the others are never
        decoded) and ``filters=`` (DNF lists as in ``pyarrow.parquet``, or a
        ``pyarrow.compute`` expression) skips row groups by their statistics and keeps the
        matching rows. See ``docs/formats.md`` for its costs and what is cached.

        Example:
            >>> import arrowmix as am, pyarrow as pa, pyarrow.parquet as pq, tempfile
            >>> path = tempfile.mkdtemp() + "/part.parquet"
            >>> pq.write_table(pa.table({"x": [1, 2, 3], "y": ["a", "b", "c"]}), path)
            >>> ds = am.Dataset.from_parquet(path, in_place=True, filters=[("x", ">", 1)])
            >>> ds["y"]
            ['b', 'c']

        HF's other options (``batch_size``...) and ``num_proc`` are accepted and change
        nothing.
        """
        _builder_options("parquet", options)
        if in_place:
            if source_column is not None or features is not None or keep_in_memory:
                raise ValueError(
                    "`from_parquet(..., in_place=True)` reads the files as they are: "
                    "`source_column`, `features` and `keep_in_memory` need in_place=False."
                )
            if storage_options:
                raise ValueError("`from_parquet(..., in_place=True)` reads local files only.")
            from arrowmix._dataset.tables.parquet import from_parquet_in_place

            def opener(files: Any) -> Dataset:
                ds: Dataset = from_parquet_in_place(files, columns, filters, cache_size, cache_dir)
                return ds

            return read_splits(paths, "parquet", split, None, None, None, None, False, opener)
        if filters is not None or cache_size is not None:
            raise ValueError(
                "`filters` and `cache_size` apply to Parquet read in place: pass in_place=True."
            )
        ds = read_splits(
            paths,
            "parquet",
            split,
            storage_options,
            source_column,
            cache_dir,
            features,
            keep_in_memory,
        )
        if columns is None:
            return ds
        cols = [columns] if isinstance(columns, str) else list(columns)
        if isinstance(paths, Mapping) and split is None:  # a DatasetDict
            return type(ds)({k: v.select_columns(cols) for k, v in ds.items()})
        return ds.select_columns(cols)

    @classmethod
    def from_megatron(
        cls,
        prefix_or_prefixes: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        by: str = "sequence",
        column: str = "input_ids",
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> Dataset:
        """Megatron ``.bin``/``.idx`` pairs, read in place; see :func:`arrowmix.from_megatron`."""
        from arrowmix._dataset.inputs.token_corpus import from_megatron

        return from_megatron(prefix_or_prefixes, by=by, column=column, cache_dir=cache_dir)

    @classmethod
    def from_lance(
        cls,
        uri: str | os.PathLike[str],
        *,
        version: int | None = None,
        columns: Sequence[str] | None = None,
        cache_size: int | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        block_rows: int | None = None,
    ) -> Dataset:
        """A Lance dataset read in place, its version pinned at open (needs ``arrowmix[lance]``).

        ``version=`` reads an older version (default: the latest). Rows are read through
        Lance's random access (``take``): ``ds[i]`` alone, larger reads by blocks of rows
        of ``block_rows`` (8192 by default; a stream's ``"chunks"`` shuffle reads blocks whole)
        into a bounded cache of ``cache_size`` bytes (``"256MB"`` by default); a later write
        to the dataset does not change what this Dataset reads, and the fingerprint names the
        version. See ``docs/formats.md``.

        Example:
            >>> import arrowmix as am, lance, pyarrow as pa, tempfile
            >>> uri = tempfile.mkdtemp() + "/docs.lance"
            >>> _ = lance.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
            >>> ds = am.Dataset.from_lance(uri)
            >>> ds[1], len(ds)
            ({'x': 2}, 3)
        """
        from arrowmix._dataset.tables.lance import from_lance

        ds: Dataset = from_lance(
            uri,
            version=version,
            columns=columns,
            cache_size=cache_size,
            cache_dir=cache_dir,
            block_rows=block_rows,
        )
        return ds

    @classmethod
    def from_mds(
        cls,
        path_or_url: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        columns: Sequence[str] | None = None,
        cache_size: int | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        allow_unsafe_types: bool = False,
    ) -> Dataset:
        """Mosaic Streaming (MDS) shards read in place: a directory with ``index.json``.

        ``path_or_url``: the local directory (or its ``index.json``), or a list of them (same
        columns); a remote URL is refused (copy the shards locally first).
        Shards, compressed or not, are decoded on demand, only the columns read, into a
        bounded cache of ``cache_size`` bytes (``"256MB"`` by default); a stream's
        ``"chunks"`` shuffle reads shards whole. ``ndarray`` columns are lists of their
        dtype (token ids feed the token path); ``json`` columns keep their JSON text (HF's
        ``Json()``: read back as the values); ``pkl`` columns, typed over every shard, need
        ``allow_unsafe_types=True``. The fingerprint names the files' bytes. Needs no extra
        package. See ``docs/formats.md``.

        Example:
            >>> import arrowmix as am, json, numpy as np, os, tempfile
            >>> d = tempfile.mkdtemp()
            >>> sample = b"doc 1"  # one `str` column: [size u32] [bytes]
            >>> body = np.uint32(len(sample)).tobytes() + sample
            >>> head = 4 * 3
            >>> offsets = np.array([head, head + len(body)], np.uint32).tobytes()
            >>> with open(os.path.join(d, "shard.00000.mds"), "wb") as f:
            ...     _ = f.write(np.uint32(1).tobytes() + offsets + body)
            >>> shard = {"format": "mds", "version": 2, "column_names": ["text"],
            ...          "column_encodings": ["str"], "column_sizes": [None], "samples": 1,
            ...          "compression": None, "zip_data": None,
            ...          "raw_data": {"basename": "shard.00000.mds", "bytes": 21}}
            >>> with open(os.path.join(d, "index.json"), "w") as f:
            ...     json.dump({"version": 2, "shards": [shard]}, f)
            >>> am.Dataset.from_mds(d)[0]
            {'text': 'doc 1'}
        """
        from arrowmix._dataset.tables.mds import from_mds

        ds: Dataset = from_mds(
            path_or_url,
            columns=columns,
            cache_size=cache_size,
            cache_dir=cache_dir,
            allow_unsafe_types=allow_unsafe_types,
        )
        return ds

    @classmethod
    def from_token_file(
        cls,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        dtype: Any,
        *,
        eos_id: int | None = None,
        offsets: Any = None,
        seq_len: int | None = None,
        column: str = "input_ids",
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> Dataset:
        """Flat numpy token files, read in place; see :func:`arrowmix.from_token_file`."""
        from arrowmix._dataset.inputs.token_corpus import from_token_file

        return from_token_file(
            path,
            dtype,
            eos_id=eos_id,
            offsets=offsets,
            seq_len=seq_len,
            column=column,
            cache_dir=cache_dir,
        )

    @classmethod
    def from_ray(cls, ray_dataset: Any, *, cache_dir: str | None = None) -> Dataset:
        """Materialise a ``ray.data.Dataset`` into cached chunk files (row order kept).

        See :func:`arrowmix.integrations.ray.from_ray` and ``docs/ray.md``.
        """
        from arrowmix.integrations.ray import from_ray

        return from_ray(ray_dataset, cache_dir=cache_dir)


def _builder_options(builder: str, options: Mapping[str, Any]) -> None:
    """Refuse an option of a ``from_*`` call that HF's ``builder`` does not have."""
    from arrowmix._dataset.inputs.reader_options import check_options

    check_options(builder, options, f"from_{builder}", "the arguments of its signature")
