"""Collation of token-id batches into padded arrays or tensors, in one copy.

:class:`Collator` turns a batch of documents into ``input_ids`` ``[B, L]``,
``attention_mask`` ``[B, L]`` and, optionally, causal-LM ``labels``: right or left
padding, ``L`` the longest document (capped by ``max_length``, rounded up to
``pad_to_multiple_of``), numpy arrays or torch tensors (torch imported only then).

:class:`CollateIterator` (``Stream.collate``) applies it to the batches of a stream. Behind
``bucket(columnar=True)``, ``budget_bucket`` or ``batch(n)`` (columnar or not) over an index
stream, those stages hand over row positions instead of rows, and the token ids are copied
once: from the memory-mapped values buffer straight into ``input_ids``
(:mod:`arrowmix._stream.tokens.column`). Any other stream may yield lists of token-id lists, lists
of row dicts, ``pyarrow`` tables or record batches.

Checkpointing: collation keeps no state: the stage returns its source's state unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.base import Stream
from arrowmix._stream.counters import SourceTokens, Tally, wait_clock
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.provenance import SOURCE_KEY, SOURCES, sources_reader
from arrowmix._stream.tokens.column import (
    TokenColumn,
    TokenSpans,
    check_id_range,
    column_values,
    is_token_type,
    take_values,
    token_column,
)
from arrowmix._validate import check_int

__all__ = ["IGNORE_INDEX", "LABELS", "TENSORS", "CollateIterator", "Collator", "check_dtype"]

#: Label of positions that do not count in the loss (PyTorch's cross-entropy default).
IGNORE_INDEX = -100
OUTPUTS = ("input_ids", "attention_mask", "labels")
LABELS = (None, "copy", "shift")
TENSORS = ("np", "pt")
SIDES = ("right", "left")


def check_dtype(
    dtype: Any, *, pad_id: int, labels: str | None, seq_len: int | None = None
) -> np.dtype[Any]:
    """``dtype`` as a numpy integer dtype that holds every value a token stage writes.

    Checked when the stage is built, not at its first batch: ``pad_id``; ``-100``
    when there are ``labels``; and, for ``pack`` (``seq_len``), the segment ids
    (up to ``seq_len``) and position ids (up to ``seq_len - 1``).
    """
    dt: np.dtype[Any] = np.dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"`dtype` must be an integer dtype, got {dt}.")
    if labels is not None and dt.kind != "i":
        raise TypeError(
            f"`labels={labels!r}` needs a signed `dtype` to hold {IGNORE_INDEX}, got {dt}."
        )
    info = np.iinfo(dt)
    values = [("`pad_id`", pad_id)]
    if seq_len is not None:
        values.append(("`seq_len` (the largest segment id)", seq_len))
    for what, v in values:
        if not info.min <= v <= info.max:
            raise ValueError(
                f"`dtype={dt}` cannot hold {what} {v} (range [{info.min}, {info.max}]): "
                "the value would wrap. Use a wider `dtype`."
            )
    return dt


def _opt_positive(name: str, v: object) -> int | None:
    n: int | None = check_int(name, v, minimum=1, none_ok=True)
    return n


class Collator:
    """Pad batches of token-id documents into ``input_ids`` / ``attention_mask`` / ``labels``.

    Args:
        column: the token column (``list<int*>``) of the rows.
        pad_id: token id written at padding positions.
        padding_side: ``"right"`` or ``"left"``.
        pad_to_multiple_of: round the width up to a multiple of this (tensor cores).
        max_length: documents longer than this keep their first ``max_length`` tokens.
        labels: ``None``; ``"copy"`` (the ids, ``-100`` at padding: models that shift
            internally, as Hugging Face causal LMs do); ``"shift"`` (``labels[:, t]`` is the
            token at ``t + 1``, ``-100`` where ``t`` or ``t + 1`` is padding or past the end).
        return_tensors: ``"np"`` (numpy) or ``"pt"`` (torch, zero-copy from numpy).
        dtype: integer dtype of ``input_ids``, ``attention_mask`` and ``labels``.
        keep: other columns of the rows passed through, one numpy array each in the
            batch's row order (a source name, a document id); never tensors.

    After each call, ``last_batch`` is ``(kept lengths, full lengths, width)`` of the
    batch: what ``collate``'s ``stats()`` counts.

    Example:
        >>> c = Collator("ids", pad_id=0, labels="shift")
        >>> out = c([[5, 6, 7], [8]])
        >>> out["input_ids"].tolist(), out["attention_mask"].tolist()
        ([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]])
        >>> out["labels"].tolist()
        [[6, 7, -100], [-100, -100, -100]]
    """

    def __init__(
        self,
        column: str = "input_ids",
        *,
        pad_id: int = 0,
        padding_side: str = "right",
        pad_to_multiple_of: int | None = None,
        max_length: int | None = None,
        labels: str | None = None,
        return_tensors: str = "np",
        dtype: Any = np.int64,
        keep: Sequence[str] = (),
    ) -> None:
        if not isinstance(column, str):
            raise TypeError(f"`column` must be a column name, got {column!r}.")
        if padding_side not in SIDES:
            raise ValueError(f"`padding_side` must be one of {list(SIDES)}, got {padding_side!r}.")
        if labels not in LABELS:
            raise ValueError(f"`labels` must be one of {list(LABELS)}, got {labels!r}.")
        if return_tensors not in TENSORS:
            raise ValueError(
                f"`return_tensors` must be one of {list(TENSORS)}, got {return_tensors!r}."
            )
        check_int("pad_id", pad_id)
        self.last_batch: tuple[np.ndarray, np.ndarray, int] | None = None
        self.dtype = check_dtype(dtype, pad_id=int(pad_id), labels=labels)
        self.column, self.pad_id = column, int(pad_id)
        self.padding_side = padding_side
        self.pad_to_multiple_of = _opt_positive("pad_to_multiple_of", pad_to_multiple_of)
        self.max_length = _opt_positive("max_length", max_length)
        self.labels, self.return_tensors = labels, return_tensors
        if isinstance(keep, str) or not all(isinstance(k, str) for k in keep):
            raise TypeError(f"`keep` must be a list of column names, got {keep!r}.")
        clash = sorted(set(keep) & {column, *OUTPUTS})
        if clash:
            raise ValueError(f"`keep` names {clash}: the token column or an output of collate.")
        self.keep = tuple(keep)

    def describe(self) -> dict[str, Any]:
        """The configuration (enters the pipeline fingerprint)."""
        out: dict[str, Any] = {
            "column": self.column,
            "pad_id": self.pad_id,
            "padding_side": self.padding_side,
            "pad_to_multiple_of": self.pad_to_multiple_of,
            "max_length": self.max_length,
            "labels": self.labels,
            "return_tensors": self.return_tensors,
            "dtype": str(self.dtype),
        }
        if self.keep:  # only then: fingerprints without it stay as they were
            out["keep"] = list(self.keep)
        return out

    def width(self, longest: int) -> int:
        """The padded width for a batch whose longest document has ``longest`` tokens."""
        w = longest if self.max_length is None else min(longest, self.max_length)
        m = self.pad_to_multiple_of
        return w if m is None else -(-w // m) * m

    # ------------------------------------------------------------------ entry points
    def from_positions(self, tokens: TokenColumn, positions: np.ndarray) -> dict[str, Any]:
        """Collate the documents at ``positions`` of ``tokens`` (one gather, no row objects)."""
        return self.from_spans(TokenSpans(positions, tokens, *tokens.spans(positions)))

    def __getstate__(self) -> dict[str, Any]:
        # ``last_batch`` is a report of the latest call, not configuration: a collator
        # pickled or fingerprinted after some batches equals a fresh one (a checkpoint
        # taken mid-epoch must load into the pipeline a fresh process builds).
        return {k: v for k, v in self.__dict__.items() if k != "last_batch"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.last_batch = None

    def __fingerprint__(self) -> list[tuple[str, str]]:
        """The configuration: a collator is identified as the ``collate`` stage is.

        By value, its code would be hashed with every module it imports (torch, for
        ``return_tensors="pt"``): seconds in a fresh process, before a resumed pipeline's
        first batch. The class enters by name and arrowmix's version.
        """
        config = sorted((k, repr(v)) for k, v in self.__getstate__().items())
        if type(self) is Collator:
            return config
        # A subclass of the user's own: its code is hashed by value, as any user class.
        from arrowmix._fingerprint.functions import FunctionHasher

        return [*config, ("class", FunctionHasher().class_digest(type(self), "collator"))]

    def from_spans(self, batch: TokenSpans) -> dict[str, Any]:
        """Collate documents already looked up in their token column."""
        tokens, owner, starts, lengths = batch.column, batch.owner, batch.starts, batch.lengths
        tokens.check_fits(self.dtype)
        longest = int(lengths.max()) if len(lengths) else 0
        full = lengths
        if self.max_length is not None:  # truncate first: rounding the width never undoes it
            lengths = np.minimum(lengths, self.max_length)
        width = self.width(longest)
        self.last_batch = (lengths, full, width)
        ids, mask = tokens.pad_spans(
            owner,
            starts,
            lengths,
            width,
            pad_id=self.pad_id,
            left=self.padding_side == "left",
            dtype=self.dtype,
        )
        return self._finish(ids, mask)

    def __call__(self, batch: Any) -> dict[str, Any]:
        """Collate one batch: token-id lists, row dicts, or an Arrow table / record batch."""
        if isinstance(batch, (pa.Table, pa.RecordBatch)):
            if self.column not in batch.schema.names:
                raise KeyError(
                    f"no column {self.column!r} to collate; the batch has {batch.schema.names}."
                )
            col = TokenColumn(batch.column(self.column), self.column)
            out = self.from_positions(col, np.arange(batch.num_rows, dtype=np.int64))
            for name in self.keep:
                if name not in batch.schema.names:
                    names = batch.schema.names
                    raise KeyError(f"no column {name!r} to keep; the batch has {names}.")
                out[name] = batch.column(name).to_numpy(zero_copy_only=False)
            if SOURCE_KEY in batch.schema.names:  # provenance
                out[SOURCES] = batch.column(SOURCE_KEY).to_pylist()
            return out
        if not isinstance(batch, Sequence) or isinstance(batch, (str, bytes)):
            raise TypeError(
                "collate expects a batch: a list of token-id lists or of row dicts, or an "
                f"Arrow table; got {type(batch).__name__}."
            )
        docs = [self._doc(x, i) for i, x in enumerate(batch)]
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        width = self.width(int(lengths.max()) if len(docs) else 0)
        keep = np.minimum(lengths, width)
        if self.max_length is not None:
            keep = np.minimum(keep, self.max_length)
        self.last_batch = (keep, lengths, width)
        ids = np.full((len(docs), width), self.pad_id, dtype=np.int64)  # checked, then cast
        left = self.padding_side == "left"
        for i, (doc, n) in enumerate(zip(docs, keep.tolist(), strict=True)):
            if n:
                if left:
                    ids[i, width - n :] = doc[:n]
                else:
                    ids[i, :n] = doc[:n]
        cols = np.arange(width)
        mask = (cols >= (width - keep)[:, None]) if left else (cols < keep[:, None])
        if self.dtype != ids.dtype:
            real = ids[mask]
            if real.size:
                check_id_range(self.column, int(real.min()), int(real.max()), self.dtype)
            ids = ids.astype(self.dtype)
        out = self._finish(ids, mask)
        for name in self.keep:
            out[name] = np.array([self._kept(x, i, name) for i, x in enumerate(batch)])
        if batch and isinstance(batch[0], Mapping) and SOURCE_KEY in batch[0]:  # provenance
            out[SOURCES] = [x[SOURCE_KEY] for x in batch]
        return out

    def _kept(self, item: Any, i: int, name: str) -> Any:
        if not isinstance(item, Mapping):
            raise TypeError(
                f"`keep` needs rows with columns; row {i} of the batch is a {type(item).__name__}."
            )
        if name not in item:
            raise KeyError(f"row {i} of the batch has no column {name!r} to keep.")
        return item[name]

    def with_kept(
        self,
        out: dict[str, Any],
        rows: Any,
        positions: np.ndarray,
        *,
        row_dicts: bool = False,
        window: KeptWindow | None = None,
        within: tuple[TokenSpans, np.ndarray] | None = None,
    ) -> dict[str, Any]:
        """Add the ``keep`` columns of the rows at ``positions`` of ``rows`` to ``out``.

        ``row_dicts``: as collating the row dicts would (arrays of their Python values).
        ``within``: the batch is rows ``idx`` of a window's spans (``TokenSpans.within``);
        ``window`` then reads each column once for that whole window and hands each of
        its batches an index into it.
        """
        if not self.keep:
            return out
        if window is not None and within is not None:
            values = window.values(rows, within[0].positions, self.keep, row_dicts)
            idx = within[1]
            for name in self.keep:
                v = values[name][idx]
                out[name] = np.array(v.tolist()) if row_dicts else v
            return out
        for name in self.keep:
            if row_dicts:
                out[name] = np.array(take_values(rows, positions, name).to_pylist())
            else:
                out[name] = column_values(rows, positions, name)
        return out

    def _doc(self, item: Any, i: int) -> Any:
        if isinstance(item, Mapping):
            if self.column not in item:
                raise KeyError(
                    f"row {i} of the batch has no column {self.column!r} to collate "
                    f"(it has {sorted(item)})."
                )
            item = item[self.column]
        if isinstance(item, np.ndarray):
            if item.ndim != 1 or item.dtype.kind not in "iu":
                raise TypeError(
                    f"row {i}: {self.column!r} must be a 1-D integer array, got "
                    f"{item.dtype} of shape {item.shape}."
                )
            return item
        if not isinstance(item, Sequence) or isinstance(item, (str, bytes)):
            raise TypeError(
                f"row {i}: {self.column!r} must be a list of token ids, got {type(item).__name__}."
            )
        return item

    def _finish(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": mask.astype(self.dtype)}
        if self.labels == "copy":
            out["labels"] = np.where(mask, ids, IGNORE_INDEX).astype(self.dtype)
        elif self.labels == "shift":
            labels = np.full(ids.shape, IGNORE_INDEX, dtype=self.dtype)
            if ids.shape[1] > 1:
                nxt = mask[:, 1:] & mask[:, :-1]  # both the input and its target are tokens
                labels[:, :-1][nxt] = ids[:, 1:][nxt]
            out["labels"] = labels
        if self.return_tensors == "pt":
            import torch

            return {k: torch.from_numpy(v) for k, v in out.items()}
        return out


class KeptWindow:
    """The ``keep`` columns of the latest window of positions, read once for the window.

    ``row_dicts``: each column as an object array of the rows' Python values (a batch
    then builds its array from them as collating row dicts would); otherwise as
    :func:`column_values` gives them.
    """

    def __init__(self) -> None:
        self._positions: np.ndarray | None = None
        self._values: dict[str, np.ndarray] = {}

    def values(
        self, rows: Any, positions: np.ndarray, names: Sequence[str], row_dicts: bool
    ) -> dict[str, np.ndarray]:
        if positions is not self._positions:
            self._positions, self._values = positions, {}
            for name in names:
                if row_dicts:
                    objs = np.empty(len(positions), dtype=object)
                    objs[:] = take_values(rows, positions, name).to_pylist()
                    self._values[name] = objs
                else:
                    self._values[name] = column_values(rows, positions, name)
        return self._values


class CollateIterator(PassThrough[dict[str, Any]]):
    """The batches of ``source`` collated by a :class:`Collator`.

    State:
        The source's state, unchanged. Replay cost: none.
    """

    TRANSIENT = ("_tokens", "_window")

    def __init__(self, source: Stream[Any], collator: Collator) -> None:
        super().__init__(source)
        if not isinstance(collator, Collator):
            raise TypeError(f"`collator` must be a Collator, got {type(collator).__name__}.")
        self.collator = collator
        self._batches = source.as_position_batches(collator.column)
        self._rows = None if self._batches is None else self._batches.rows
        self._tally = Tally(tokens=True)
        self._sources = SourceTokens(source, self._rows)
        self._row_dicts = self._batches is not None and self._batches.row_dicts
        self._refs = sources_reader(self._rows)
        if self._rows is not None:
            field = (
                self._rows.schema.field(collator.column)
                if (collator.column in self._rows.schema.names)
                else None
            )
            if field is None:
                raise KeyError(
                    f"no column {collator.column!r} to collate; the rows have "
                    f"{self._rows.schema.names}."
                )
            if not is_token_type(field.type):
                raise TypeError(
                    f"column {collator.column!r} must hold token ids as list<int*>, "
                    f"got {field.type}."
                )
            missing = [k for k in collator.keep if k not in self._rows.schema.names]
            if missing:
                raise KeyError(
                    f"no column {missing[0]!r} to keep; the rows have {self._rows.schema.names}."
                )

    def describe(self) -> dict[str, Any]:
        return self.collator.describe()

    def stats(self) -> dict[str, Any]:
        """Rows, real and padded tokens yielded, tokens cut by ``max_length``, wait time.

        Process-local, not checkpointed (see ``docs/observability.md``).
        """
        return self._tally.as_dict()

    def _count(self) -> np.ndarray:
        kept, full, width = self.collator.last_batch  # type: ignore[misc]
        self._tally.add_lengths(kept, full, width)
        return kept

    def next(self) -> dict[str, Any]:
        t0 = wait_clock()
        if self._batches is None:
            item = self.source.next()
            self._tally.wait += wait_clock() - t0
            out = self.collator(item)
            self._count()
            return out
        batch = self._batches.next()
        self._tally.wait += wait_clock() - t0
        within = None
        if isinstance(batch, TokenSpans):
            out = self.collator.from_spans(batch)
            positions, within = batch.positions, batch.within
        else:
            tokens = self.__dict__.get("_tokens")
            if tokens is None:
                tokens = self._tokens = token_column(self._rows, self.collator.column)
            out = self.collator.from_positions(tokens, batch)
            positions = batch
        self._sources.add(positions, self._count())
        if self._refs is not None:  # provenance
            out[SOURCES] = self._refs(positions)
        if not self.collator.keep:
            return out
        window = self.__dict__.get("_window")
        if window is None:
            window = self._window = KeptWindow()
        return self.collator.with_kept(
            out, self._rows, positions, row_dicts=self._row_dicts, window=window, within=within
        )
