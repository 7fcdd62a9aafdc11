"""The core's extension points: what a layer above says about features, texts and tables.

The core carries one schema metadata entry through every transform
(:mod:`arrowmix._storage.metadata`) without reading it. What that entry means (column
features such as class labels, descriptive texts), how a map's output conforms to declared
features, and what ``Dataset(table, ...)`` builds from a foreign table are asked of the
:class:`Adapter` registered here. The core calls only the functions below; the HF layer
(:mod:`arrowmix._hf`) registers its adapter when it is imported, which
:class:`~arrowmix.Dataset` (its one host) does before any of them can run. The core never
imports that layer: the arrow points up through this registry only.

Without a registered layer, :class:`Adapter`'s plain defaults apply: no features beyond the
Arrow types, no texts, a lossless cast to declared Arrow types.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._storage.cast import lossless_cast
from arrowmix._storage.metadata import kept_metadata
from arrowmix.exceptions import SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset, DatasetState

__all__ = [
    "Adapter",
    "adapter",
    "cast_to_features",
    "check_labels",
    "dataset_dict",
    "dataset_with_info",
    "export_metadata",
    "features_schema",
    "label_features",
    "merged_metadata",
    "output_metadata",
    "register",
    "renamed_entry",
    "state_from_table",
]


class Adapter:
    """What the core asks of a layer above; these defaults know only Arrow types.

    A layer subclasses it and overrides what it knows, then calls :func:`register`.
    """

    def __fingerprint__(self) -> str:
        """The adapter's class: a transform that reaches the registry hashes it by name.

        Arrowmix's own functions used as transforms (``Dataset.cast``'s) reach the adapter
        through this module's globals; without this, hashing them by value would walk the
        whole layer and every class it touches.
        """
        return f"{type(self).__module__}.{type(self).__qualname__}"

    def features_schema(self, features: Any) -> pa.Schema | None:
        """The Arrow schema of ``map(features=...)``, carrying only the kept entry.

        Raises:
            TypeError: ``features`` is not a ``pyarrow.Schema``.
        """
        if features is None:
            return None
        if not isinstance(features, pa.Schema):
            raise TypeError(f"`features` must be a pyarrow.Schema; got {type(features).__name__}.")
        return features.remove_metadata().with_metadata(kept_metadata(features))

    def output_metadata(self, parent: pa.Schema, out: pa.Schema) -> dict[bytes, bytes]:
        """The kept entry of a map output of schema ``out`` from a parent of ``parent``."""
        return {}

    def label_features(self, parent: pa.Schema, names: list[str]) -> dict[str, Any]:
        """The features of ``parent``'s columns ``names`` whose values a map must check."""
        return {}

    def check_labels(
        self, batch: pa.RecordBatch, parent: pa.Schema, labels: dict[str, Any], where: str
    ) -> None:
        """Check a map's output ``batch`` against the input's ``labels`` (raise if wrong)."""

    def cast_to_features(
        self, batch: pa.RecordBatch, target: pa.Schema, where: str
    ) -> pa.RecordBatch:
        """``batch`` as ``target`` (``map(features=...)``): its columns, order and types.

        Raises:
            SchemaMismatchError: the columns differ, or a value would change.
        """
        if sorted(batch.schema.names) != sorted(target.names):
            raise SchemaMismatchError(
                f"The columns {batch.schema.names} returned for {where} do not match "
                f"`features`' columns {target.names}."
            )
        cols = []
        for f in target:
            cast, why = lossless_cast(batch.column(f.name), f.type)
            if why is not None:
                raise SchemaMismatchError(
                    f"Column {f.name!r} returned for {where} cannot become {f.type}: {why}."
                )
            cols.append(cast)
        return pa.RecordBatch.from_arrays(cols, schema=target)

    def renamed_entry(self, schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
        """``schema``'s kept entry after renaming columns ``{old: new}``."""
        return {}

    def export_metadata(self, schema: pa.Schema) -> dict[bytes, bytes] | None:
        """The schema metadata an exported file (Parquet) of ``schema`` carries."""
        return kept_metadata(schema) or None

    def merged_metadata(
        self, schemas: Sequence[pa.Schema], out: pa.Schema
    ) -> dict[bytes, bytes] | None:
        """The metadata of a concatenation of tables of ``schemas`` into ``out``."""
        return None

    def dataset_with_info(self, ds: Dataset, info: Any) -> Dataset:
        """``ds`` with the descriptive texts of ``info`` kept (same rows and fingerprint)."""
        return ds

    def dataset_dict(self, splits: dict[str, Dataset], *, pair: bool = False) -> Any:
        """The splits ``{name: dataset}`` as one object (``from_csv({...})``, a split pair).

        ``pair``: the result of ``train_test_split`` (``{"train": ..., "test": ...}``), which
        also unpacks as ``train, test``. Without a layer: the dict, or the pair as a tuple.
        """
        return tuple(splits.values()) if pair else dict(splits)

    def state_from_table(
        self, arrow_table: Any, info: Any, indices_table: Any, fingerprint: str | None
    ) -> DatasetState:
        """The state of ``Dataset(arrow_table, ...)``.

        Raises:
            TypeError: always; without a layer, datasets are built with ``Dataset.from_*``.
        """
        raise TypeError(
            f"`Dataset(...)` takes a DatasetState, got {type(arrow_table).__name__}; build "
            "datasets with `Dataset.from_*`."
        )


_ADAPTERS: list[Adapter] = [Adapter()]


def register(layer: Adapter) -> None:
    """Make ``layer`` the adapter the core asks from now on (the last registered wins)."""
    _ADAPTERS.append(layer)


def adapter() -> Adapter:
    """The adapter registered last (:class:`Adapter`'s defaults when none was)."""
    return _ADAPTERS[-1]


def features_schema(features: Any) -> pa.Schema | None:
    """:meth:`Adapter.features_schema` of the registered adapter."""
    return adapter().features_schema(features)


def output_metadata(parent: pa.Schema, out: pa.Schema) -> dict[bytes, bytes]:
    """:meth:`Adapter.output_metadata` of the registered adapter."""
    return adapter().output_metadata(parent, out)


def label_features(parent: pa.Schema, names: list[str]) -> dict[str, Any]:
    """:meth:`Adapter.label_features` of the registered adapter."""
    return adapter().label_features(parent, names)


def check_labels(
    batch: pa.RecordBatch, parent: pa.Schema, labels: dict[str, Any], where: str
) -> None:
    """:meth:`Adapter.check_labels` of the registered adapter."""
    adapter().check_labels(batch, parent, labels, where)


def cast_to_features(batch: pa.RecordBatch, target: pa.Schema, where: str) -> pa.RecordBatch:
    """:meth:`Adapter.cast_to_features` of the registered adapter."""
    return adapter().cast_to_features(batch, target, where)


def renamed_entry(schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
    """:meth:`Adapter.renamed_entry` of the registered adapter."""
    return adapter().renamed_entry(schema, renamed)


def export_metadata(schema: pa.Schema) -> dict[bytes, bytes] | None:
    """:meth:`Adapter.export_metadata` of the registered adapter."""
    return adapter().export_metadata(schema)


def merged_metadata(schemas: Sequence[pa.Schema], out: pa.Schema) -> dict[bytes, bytes] | None:
    """:meth:`Adapter.merged_metadata` of the registered adapter."""
    return adapter().merged_metadata(schemas, out)


def dataset_dict(splits: dict[str, Dataset], *, pair: bool = False) -> Any:
    """:meth:`Adapter.dataset_dict` of the registered adapter."""
    return adapter().dataset_dict(splits, pair=pair)


def dataset_with_info(ds: Dataset, info: Any) -> Dataset:
    """:meth:`Adapter.dataset_with_info` of the registered adapter."""
    return adapter().dataset_with_info(ds, info)


def state_from_table(
    arrow_table: Any,
    info: Any = None,
    indices_table: Any = None,
    fingerprint: str | None = None,
) -> DatasetState:
    """:meth:`Adapter.state_from_table` of the registered adapter."""
    return adapter().state_from_table(arrow_table, info, indices_table, fingerprint)
