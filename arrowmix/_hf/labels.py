"""HF's ``align_labels_with_mapping``: class label ids renumbered to a model's ``label2id``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["align_labels"]


def align_labels(ds: Dataset, label2id: Mapping[str, int], label_column: str) -> Dataset:
    """``ds`` with ``label_column`` renumbered by ``label2id`` (HF's rules, see the method)."""
    import datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]

    if label_column not in ds.column_names:
        raise ValueError(f"Column ({label_column}) not in table columns ({ds.column_names}).")
    feature = ds.features[label_column]
    inner = getattr(feature, "feature", None)
    listed = isinstance(feature, (datasets.List, datasets.Sequence))
    if not isinstance(feature, datasets.ClassLabel) and not (
        listed and isinstance(inner, datasets.ClassLabel)
    ):
        raise ValueError(
            "Aligning labels with a mapping is only supported for ClassLabel column, and column "
            f"{feature} is {type(feature).__name__}."
        )
    ordered = sorted(label2id.items(), key=lambda item: item[1])
    names = [name for name, _ in ordered]
    lowered = {name.lower(): i for name, i in ordered}  # HF matches names case-insensitively
    old: Any = feature if isinstance(feature, datasets.ClassLabel) else inner
    label = datasets.ClassLabel(names=names)
    features = ds.features.copy()
    features[label_column] = label if old is feature else datasets.List(label)

    def renumber(ids: Any) -> Any:
        if ids is None:
            return None
        if isinstance(ids, list):
            return [renumber(i) for i in ids]
        return lowered[old.int2str(ids).lower()]

    def align(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        batch[label_column] = [renumber(v) for v in batch[label_column]]
        return batch

    return ds.map(align, batched=True, features=features, desc="Aligning the labels")
