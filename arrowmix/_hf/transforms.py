"""HF ``datasets``' ``batch``: the map it runs, whose module is part of its fingerprint.

The method is :meth:`~arrowmix._hf.compat.HFCompat.batch`; HF's access-time transforms
(``with_transform``) are formats of the core and live in the mixin only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arrowmix._validate import check_int

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["batch"]


def batch(
    ds: Dataset,
    batch_size: int,
    drop_last_batch: bool,
    num_proc: int | None,
    new_fingerprint: str | None = None,
) -> Dataset:
    """One row per ``batch_size`` rows of ``ds``, each column a list (a cached ``map``)."""
    check_int("batch_size", batch_size, minimum=1)
    return ds.map(
        _batch_rows,
        batched=True,
        batch_size=batch_size,
        drop_last_batch=drop_last_batch,
        num_proc=num_proc,
        desc="Batching examples",
        new_fingerprint=new_fingerprint,
    )


def _batch_rows(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {k: [v] for k, v in batch.items()}
