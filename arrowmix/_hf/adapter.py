"""The HF layer's answers to the core's questions (:class:`arrowmix._hooks.Adapter`).

Each method hands the question to the module of this layer that knows the answer: features
and class labels to :mod:`~arrowmix._hf.features`, descriptive texts to
:mod:`~arrowmix._hf.info`, HF's ``Dataset(table, ...)`` to :mod:`~arrowmix._hf.table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._hf import features, info, table
from arrowmix._hooks import Adapter

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset, DatasetState

__all__ = ["HFAdapter"]


class HFAdapter(Adapter):
    """HF ``datasets``' ``Features``, ``ClassLabel``, ``DatasetInfo`` and tables."""

    def features_schema(self, features_: Any) -> pa.Schema | None:
        """:func:`arrowmix._hf.features.features_schema`."""
        return features.features_schema(features_)

    def output_metadata(self, parent: pa.Schema, out: pa.Schema) -> dict[bytes, bytes]:
        """:func:`arrowmix._hf.features.output_metadata`."""
        return features.output_metadata(parent, out)

    def label_features(self, parent: pa.Schema, names: list[str]) -> dict[str, Any]:
        """:func:`arrowmix._hf.features.label_features`."""
        return features.label_features(parent, names)

    def check_labels(
        self, batch: pa.RecordBatch, parent: pa.Schema, labels: dict[str, Any], where: str
    ) -> None:
        """:func:`arrowmix._hf.features.check_labels`."""
        features.check_labels(batch, parent, labels, where)

    def cast_to_features(
        self, batch: pa.RecordBatch, target: pa.Schema, where: str
    ) -> pa.RecordBatch:
        """:func:`arrowmix._hf.features.cast_to_features`."""
        return features.cast_to_features(batch, target, where)

    def renamed_entry(self, schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
        """:func:`arrowmix._hf.info.renamed_entry`."""
        return info.renamed_entry(schema, renamed)

    def export_metadata(self, schema: pa.Schema) -> dict[bytes, bytes] | None:
        """:func:`arrowmix._hf.features.export_metadata`."""
        return features.export_metadata(schema)

    def merged_metadata(
        self, schemas: Sequence[pa.Schema], out: pa.Schema
    ) -> dict[bytes, bytes] | None:
        """:func:`arrowmix._hf.info.merged_metadata`."""
        return info.merged_metadata(schemas, out)

    def dataset_with_info(self, ds: Dataset, info_: Any) -> Dataset:
        """:func:`arrowmix._hf.info.dataset_with_info`."""
        return info.dataset_with_info(ds, info_)

    def dataset_dict(self, splits: dict[str, Dataset], *, pair: bool = False) -> Any:
        """:class:`arrowmix._hf.dataset_dict.DatasetDict` (``SplitPair`` for a pair)."""
        from arrowmix._hf.dataset_dict import DatasetDict, SplitPair

        return SplitPair(splits) if pair else DatasetDict(splits)

    def state_from_table(
        self, arrow_table: Any, info_: Any, indices_table: Any, fingerprint: str | None
    ) -> DatasetState:
        """:func:`arrowmix._hf.table.state_from_table`."""
        return table.state_from_table(arrow_table, info_, indices_table, fingerprint)
