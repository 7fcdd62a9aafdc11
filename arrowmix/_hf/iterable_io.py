"""HF ``IterableDataset``'s ways in and out, and the ``DatasetInfo`` fields it shows.

- Exporters (``to_dict``, ``to_list``, ``to_pandas``, ``to_polars``, ``to_csv``, ``to_json``,
  ``to_parquet``, ``to_sql``): as HF does, the rows are read in Arrow batches, gathered into
  one :class:`~arrowmix.Dataset` and written by its exporter (so the whole dataset is in memory
  once, as in HF; for a large dataset, ``batched=True`` where HF offers it).
- Constructors (``from_csv``, ``from_json``, ``from_parquet``, ``from_text``, ``from_file``,
  ``from_pandas``, ``from_polars``): ``load_dataset(..., streaming=True)`` of the files, or
  the ``Dataset``'s ``to_iterable_dataset``, with HF's arguments and split names.
- ``decode(enable)`` sets the media features' ``decode`` flag, as HF's does. arrowmix never
  decodes media (rows hold the stored ``{"bytes", "path"}``), so the rows do not change.
- ``reshard()``: as HF's, a Parquet file of ``load_dataset(..., streaming=True)`` becomes
  one shard per row group (same rows, same order); other shards cannot be cut, as in HF.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.iterable import IterableDataset

__all__ = ["IterableIO"]

_BATCH = 1000  # HF reads 1,000-row Arrow batches before gathering them


def _media_decoding(features: Any, enable: bool) -> Any:
    """A copy of ``features`` whose media features (anything with ``decode``) are ``enable``."""

    def visit(feature: Any) -> Any:
        if isinstance(feature, Mapping):
            kind: Any = type(feature)  # Features or dict
            return kind({k: visit(v) for k, v in feature.items()})
        if isinstance(feature, list):
            return [visit(v) for v in feature]
        if hasattr(feature, "decode") and isinstance(getattr(feature, "decode", None), bool):
            feature = copy.copy(feature)
            feature.decode = enable
            return feature
        inner = getattr(feature, "feature", None)
        if inner is not None:
            feature = copy.copy(feature)
            feature.feature = visit(inner)
        return feature

    return visit(features)


class IterableIO:
    """The methods of this module, mixed into :class:`~arrowmix.IterableDataset`."""

    _features: Any

    # ------------------------------------------------------------------ exporters
    def _tables(self, batch_size: int) -> Iterator[pa.Table]:
        ds: Any = self
        yield from ds.with_format("arrow").iter(batch_size=batch_size)

    def _gathered(self, batch_size: int = _BATCH) -> Dataset:
        """Every row in one in-memory Dataset (HF's ``Dataset(concat_tables(...))``).

        The batches are read with the features' Arrow types when the features are known.
        """
        import pyarrow as pa

        from arrowmix._dataset.dataset import Dataset

        tables = list(self._tables(batch_size))
        if not tables:
            raise ValueError(
                "This IterableDataset has no rows to export (HF datasets raises too: "
                "'Must pass at least one table')."
            )
        return Dataset(pa.concat_tables(tables))

    def _batches(self, batch_size: int | None) -> Iterator[Dataset]:
        from arrowmix._dataset.dataset import Dataset

        for table in self._tables(batch_size or _BATCH):
            yield Dataset(table)

    def to_dict(self, batch_size: int | None = None, batched: bool = False) -> Any:
        """All rows as one dict of columns; ``batched=True``: one dict per batch (HF's)."""
        if batched:
            return (ds.to_dict() for ds in self._batches(batch_size))
        return self._gathered().to_dict()

    def to_list(self) -> list[dict[str, Any]]:
        """All rows as a list of dicts."""
        return self._gathered().to_list()

    def to_pandas(self, batch_size: int | None = None, batched: bool = False) -> Any:
        """All rows as a ``pandas.DataFrame``; ``batched=True``: one frame per batch."""
        if batched:
            return (ds.to_pandas() for ds in self._batches(batch_size))
        return self._gathered().to_pandas()

    def to_polars(
        self,
        batch_size: int | None = None,
        batched: bool = False,
        schema_overrides: Mapping[str, Any] | None = None,
        rechunk: bool = True,
    ) -> Any:
        """All rows as a ``polars.DataFrame`` (needs polars); ``batched``: frames."""
        import polars as pl  # type: ignore[import-not-found]  # optional

        def frame(ds: Dataset) -> Any:
            return pl.from_arrow(ds.data.table, schema_overrides=schema_overrides, rechunk=rechunk)

        if batched:
            return (frame(ds) for ds in self._batches(batch_size))
        return frame(self._gathered())

    def to_csv(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_csv_kwargs: Any,
    ) -> int:
        """Write every row as CSV (``Dataset.to_csv``'s arguments); the bytes written."""
        return self._gathered().to_csv(
            path_or_buf, batch_size=batch_size, storage_options=storage_options, **to_csv_kwargs
        )

    def to_json(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **to_json_kwargs: Any,
    ) -> int:
        """Write every row as JSON Lines (``Dataset.to_json``'s arguments); the bytes written."""
        return self._gathered().to_json(
            path_or_buf, batch_size=batch_size, storage_options=storage_options, **to_json_kwargs
        )

    def to_parquet(
        self,
        path_or_buf: Any,
        batch_size: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **parquet_writer_kwargs: Any,
    ) -> int:
        """Write every row as Parquet (HF ignores ``batch_size`` here, and so do we)."""
        return self._gathered().to_parquet(
            path_or_buf, storage_options=storage_options, **parquet_writer_kwargs
        )

    def to_sql(
        self, name: str, con: Any, batch_size: int | None = None, **sql_writer_kwargs: Any
    ) -> int:
        """Write every row into SQL table ``name`` through pandas; the rows written."""
        return self._gathered().to_sql(name, con, batch_size=batch_size, **sql_writer_kwargs)

    # ------------------------------------------------------------------ features
    def decode(self, enable: bool = True, num_threads: int | None = None) -> IterableDataset:
        """Media features with ``decode=enable``, as HF's (the rows never hold decoded media).

        Raises:
            ValueError: the features are unknown (after ``map``), as in HF.
        """
        if not self._features:
            raise ValueError(
                "Features decoding is only available for datasets with known features, but "
                "features are Unknown. Please set the datasets features with "
                "`ds = ds.cast(features)`."
            )
        ds: Any = self
        out: IterableDataset = ds._derive(features=_media_decoding(self._features, enable))
        return out

    def reshard(self) -> IterableDataset:
        """Shards cut further where HF cuts them: a streamed Parquet file per row group.

        The rows and their order are unchanged (so is a ``state_dict``'s resume); other
        shards (JSON, CSV, text, Arrow files, ``to_iterable_dataset``, generators) stay whole,
        as in HF. Reshard before ``shuffle``/``shard``, as HF advises.
        """
        ds: Any = self
        out: IterableDataset = ds._derive(ds._node.reshard())
        return out

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def from_csv(
        path_or_paths: Any,
        split: Any = None,
        features: Any = None,
        keep_in_memory: bool = False,
        **kwargs: Any,
    ) -> IterableDataset:
        """CSV file(s) read lazily, one shard per file (``load_dataset("csv", streaming=True)``)."""
        return _streamed("csv", path_or_paths, split, features, keep_in_memory, kwargs)

    @staticmethod
    def from_json(
        path_or_paths: Any,
        split: Any = None,
        features: Any = None,
        keep_in_memory: bool = False,
        field: str | None = None,
        **kwargs: Any,
    ) -> IterableDataset:
        """JSON Lines or JSON file(s), ``field=`` as in HF (``load_dataset("json", ...)``)."""
        if field is not None:
            kwargs["field"] = field
        return _streamed("json", path_or_paths, split, features, keep_in_memory, kwargs)

    @staticmethod
    def from_parquet(
        path_or_paths: Any,
        split: Any = None,
        features: Any = None,
        keep_in_memory: bool = False,
        columns: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> IterableDataset:
        """Parquet file(s); ``columns=`` keeps those columns (``load_dataset("parquet", ...)``)."""
        ds = _streamed("parquet", path_or_paths, split, features, keep_in_memory, kwargs)
        return ds if columns is None else ds.select_columns(list(columns))

    @staticmethod
    def from_text(
        path_or_paths: Any,
        split: Any = None,
        features: Any = None,
        keep_in_memory: bool = False,
        keep_linebreaks: bool = False,
        sample_by: str = "line",
        **kwargs: Any,
    ) -> IterableDataset:
        """Text file(s): one row per line (``sample_by=``, ``keep_linebreaks=`` as in HF)."""
        kwargs.update(keep_linebreaks=keep_linebreaks, sample_by=sample_by)
        return _streamed("text", path_or_paths, split, features, keep_in_memory, kwargs)

    @staticmethod
    def from_file(filename: str) -> IterableDataset:
        """An Arrow file (HF's cache file) read lazily."""
        from arrowmix._dataset.dataset import Dataset
        from arrowmix._hf.iterable import to_iterable_dataset

        return to_iterable_dataset(Dataset.from_file(filename))

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        features: Any = None,
        info: Any = None,
        split: Any = None,
        preserve_index: bool | None = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """``Dataset.from_pandas(df, ...).to_iterable_dataset(num_shards)``, as HF builds it."""
        from arrowmix._dataset.dataset import Dataset

        ds = Dataset.from_pandas(
            df, features=features, info=info, split=split, preserve_index=preserve_index
        )
        out: IterableDataset = ds.to_iterable_dataset(num_shards=num_shards)
        return out

    @classmethod
    def from_polars(
        cls,
        df: Any,
        features: Any = None,
        info: Any = None,
        split: Any = None,
        num_shards: int = 1,
    ) -> IterableDataset:
        """A polars frame (or lazy frame) as an iterable dataset, as HF builds it."""
        from arrowmix._dataset.dataset import Dataset

        if hasattr(df, "collect"):
            df = df.collect()
        ds = Dataset(df.to_arrow(), info=info, split=split)
        if features is not None:
            ds = ds.cast(features)
        out: IterableDataset = ds.to_iterable_dataset(num_shards=num_shards)
        return out


def _streamed(
    builder: str,
    paths: Any,
    split: Any,
    features: Any,
    keep_in_memory: bool,
    kwargs: dict[str, Any],
) -> IterableDataset:
    from arrowmix._hf.load import load_dataset

    name = str(split) if split is not None else "train"
    ds: IterableDataset = load_dataset(
        builder,
        data_files={name: paths},
        split=name,
        features=features,
        keep_in_memory=keep_in_memory,
        streaming=True,
        **kwargs,
    )
    return ds
