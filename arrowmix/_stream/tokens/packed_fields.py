"""What a packed batch carries beside ``input_ids``: labels and attention layouts.

``pack(labels=..., outputs=...)`` chooses them. All of them derive from the batch's
*runs*: a run is one document piece of a row, or the padding at the end of a row. The
runs tile the flattened batch (``input_ids.reshape(-1)``, ``batch_size * seq_len``
tokens) from its first token to its last, and a row boundary always starts a run.

- ``labels="shift"``: ``labels[r, t]`` is ``input_ids[r, t + 1]`` when both tokens are in
  the same piece; ``-100`` at the last position of every piece (its next token is another
  document's, or in another row) and on padding. The loss is a plain cross-entropy of
  ``logits`` against ``labels``, position by position.
- ``labels="copy"``: ``input_ids`` with ``-100`` at the first position of every piece and
  on padding, for models that shift the labels themselves (Hugging Face causal LMs, as
  ``DataCollatorWithFlattening`` does). After the model's shift these are the ``"shift"``
  labels, less the last column.
- ``"cu_seqlens"`` (``int32``, ``[runs + 1]``): the offsets of the runs in the flattened
  batch, from 0 to ``batch_size * seq_len``, as ``flash_attn_varlen_func`` takes them
  (``cu_seqlens_q`` and ``cu_seqlens_k``); ``"max_seqlen"`` (an ``int``), the longest run.
  A row's padding is a run of its own, so ``q.reshape(-1, heads, dim)`` needs no unpadding.
- ``"segment_mask"`` (``bool``, ``[batch_size, seq_len, seq_len]``): ``True`` where the
  query and the key are in the same run (block diagonal; not causal). Padding attends to
  its own run only, so no query row is empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from arrowmix._stream.tokens.collate import IGNORE_INDEX, LABELS

__all__ = [
    "DEFAULT_OUTPUTS",
    "IGNORE_INDEX",
    "LABELS",
    "OUTPUTS",
    "add_fields",
    "as_tensors",
    "check_labels",
    "check_outputs",
    "needs_runs",
]

OUTPUTS = ("segment_ids", "position_ids", "cu_seqlens", "segment_mask")
DEFAULT_OUTPUTS = ("segment_ids", "position_ids")


def check_labels(labels: object) -> str | None:
    """``labels`` checked against :data:`LABELS` (the dtype: ``collate.check_dtype``)."""
    if labels not in LABELS:
        raise ValueError(f"`labels` must be one of {list(LABELS)}, got {labels!r}.")
    return labels


def check_outputs(outputs: object) -> tuple[str, ...]:
    """``outputs`` as a tuple of names of :data:`OUTPUTS`, each at most once."""
    if isinstance(outputs, (str, bytes)) or not isinstance(outputs, Sequence):
        raise TypeError(
            f"`outputs` must be a list of names among {list(OUTPUTS)}, got {outputs!r}."
        )
    names = tuple(outputs)
    for name in names:
        if name not in OUTPUTS:
            raise ValueError(f"`outputs` holds {name!r}; allowed are {list(OUTPUTS)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"`outputs` names an output twice: {list(names)}.")
    return names


def needs_runs(labels: str | None, outputs: tuple[str, ...]) -> bool:
    """Whether a batch's runs must be found (labels, ``cu_seqlens`` or the mask)."""
    return labels is not None or "cu_seqlens" in outputs or "segment_mask" in outputs


def add_fields(
    out: dict[str, Any],
    starts: np.ndarray,
    real: np.ndarray | None,
    labels: str | None,
    outputs: tuple[str, ...],
) -> None:
    """Add the labels and attention layouts to ``out`` (which holds ``input_ids``).

    ``starts``: the sorted offsets of the runs in the flattened batch (0 first);
    ``real``: per run, False for padding (None: no padding).
    """
    ids = out["input_ids"]
    n = ids.size
    lengths = np.diff(starts, append=n)
    pad = None
    if real is not None and not bool(real.all()):
        pad = np.repeat(~real, lengths)
    if labels is not None:
        flat = ids.reshape(-1)
        if labels == "shift":
            lab = np.empty(n, dtype=ids.dtype)
            lab[:-1] = flat[1:]
            lab[starts + lengths - 1] = IGNORE_INDEX
        else:
            lab = flat.copy()
            lab[starts] = IGNORE_INDEX
        if pad is not None:
            lab[pad] = IGNORE_INDEX
        out["labels"] = lab.reshape(ids.shape)
    if "cu_seqlens" in outputs:
        cu = np.empty(len(starts) + 1, dtype=np.int32)
        cu[:-1], cu[-1] = starts, n
        out["cu_seqlens"] = cu
        out["max_seqlen"] = int(lengths.max())
    if "segment_mask" in outputs:
        run = np.repeat(np.arange(len(starts), dtype=np.int64), lengths).reshape(ids.shape)
        out["segment_mask"] = run[:, :, None] == run[:, None, :]


def as_tensors(out: dict[str, Any]) -> dict[str, Any]:
    """``out``'s arrays as torch tensors sharing their memory (ints stay ints)."""
    import torch

    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in out.items()}
