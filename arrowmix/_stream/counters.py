"""Counters of the batching stages, and the walk that collects every stage's ``stats()``.

A batching stage (``batch``, ``bucket``, ``budget_bucket``, ``collate``, ``pack``) keeps a
:class:`Tally`: it adds each batch it yields as a few integers computed from arrays it
already has (never per token in Python), what it drops, and the time spent inside its
input (:func:`wait_clock`). ``stats()`` of the stage returns :meth:`Tally.as_dict`.

The counters are process-local and not checkpointed: they count what this stage object
yielded, dropped and waited for since it was built in this process (across epochs and
restores; a window replayed by a restore is not counted again). The checkpoint format is
unchanged.

:func:`collect` walks a pipeline and returns ``{path: stats}`` for every node that has a
``stats()`` method; paths name the stages from the root down (``"collate/budget_bucket/mix"``),
with the input's name or index where a node reads several (``"mix/web:source"``). A node
may report its subtree itself (``stats_below()``: a prefetch in a worker process).
"""

from __future__ import annotations

import abc
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from arrowmix._stream.hooks import offers
from arrowmix._stream.topology import stage_name, walk

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream

__all__ = [
    "SourceTokens",
    "Tally",
    "TokensBySource",
    "collect",
    "flatten",
    "rewindow",
    "wait_clock",
]

#: The clock of ``wait_seconds`` (wall time).
wait_clock = time.perf_counter


class _Deferred(abc.ABC):
    """Arrays kept per batch behind a lock, summed in one pass by ``_flush``.

    ``_defer`` is a list append per batch, flushing every ``_FLUSH`` batches; ``_drain``
    hands ``_flush`` what was kept. Safe across a prefetch thread.
    """

    __slots__ = ("_lock", "_pending")
    _FLUSH = 256

    def _reset(self) -> None:
        self._pending: list[Any] = []
        self._lock = threading.Lock()

    def _defer(self, item: Any) -> None:
        with self._lock:
            self._pending.append(item)
            full = len(self._pending) >= self._FLUSH
        if full:
            self._flush()

    def _drain(self) -> list[Any]:
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    @abc.abstractmethod
    def _flush(self) -> None:
        """Fold what ``_drain`` returns into the totals (each counter's own sums)."""


class Tally(_Deferred):
    """What a batching stage yielded, dropped and waited for.

    Attributes:
        batches, rows: batches yielded and the rows (items, or packed rows) in them.
        tokens: real (non-padding) tokens yielded, or ``None`` when the stage has no
            notion of tokens (``batch``, ``bucket``).
        padded: token slots yielded (rows x width), padding included.
        dropped_rows, dropped_tokens: what the stage dropped (``drop_last``, a
            dealer's remainder, a packing tail, truncation).
        wait: seconds spent inside the input (reading and every stage below).
    """

    __slots__ = (
        "batches",
        "dropped_rows",
        "dropped_tokens",
        "padded",
        "rows",
        "tokens",
        "wait",
    )

    def __init__(self, *, tokens: bool) -> None:
        self.batches = 0
        self.rows = 0
        self.tokens: int | None = 0 if tokens else None
        self.padded = 0
        self.dropped_rows = 0
        self.dropped_tokens = 0
        self.wait = 0.0
        self._reset()

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return {k: getattr(self, k) for k in self.__slots__ if not k.startswith("_")}

    def __setstate__(self, d: dict[str, Any]) -> None:
        for k, v in d.items():
            setattr(self, k, v)
        self._reset()

    def add_lengths(self, kept: np.ndarray, full: np.ndarray, width: int) -> None:
        """Count one padded batch: rows of ``kept`` tokens (of ``full``), ``width`` wide.

        Only keeps the arrays; they are summed in one pass when read (or every
        ``_FLUSH`` batches), which keeps the per-batch cost to a list append.
        """
        self._defer((kept, full, width))

    def _flush(self) -> None:
        pending = self._drain()
        if not pending:
            return
        rows = np.fromiter((len(k) for k, _, _ in pending), dtype=np.int64, count=len(pending))
        widths = np.fromiter((w for _, _, w in pending), dtype=np.int64, count=len(pending))
        tokens = int(np.concatenate([k for k, _, _ in pending]).sum())
        cut = [f for k, f, _ in pending if f is not k]  # the batches something was cut from
        whole = sum(int(np.sum(k)) for k, f, _ in pending if f is not k)
        with self._lock:
            self.batches += len(pending)
            self.rows += int(rows.sum())
            assert self.tokens is not None
            self.tokens += tokens
            self.padded += int((rows * widths).sum())
            if cut:
                self.dropped_tokens += int(np.concatenate(cut).sum()) - whole

    def add(self, rows: int, tokens: int = 0, padded: int = 0) -> None:
        """Count one yielded batch."""
        self.batches += 1
        self.rows += rows
        if self.tokens is not None:
            self.tokens += tokens
            self.padded += padded

    def drop(self, rows: int = 0, tokens: int = 0) -> None:
        """Count dropped rows and tokens."""
        self.dropped_rows += rows
        self.dropped_tokens += tokens

    def as_dict(self) -> dict[str, Any]:
        """The counters as ``stats()`` reports them.

        ``padding_efficiency`` is ``tokens / padded_tokens`` (``None`` before the
        first batch); the token keys are left out for stages without tokens.
        """
        self._flush()
        out: dict[str, Any] = {"batches": self.batches, "rows": self.rows}
        if self.tokens is not None:
            out["tokens"] = self.tokens
            out["padded_tokens"] = self.padded
            out["padding_efficiency"] = self.tokens / self.padded if self.padded else None
            out["dropped_tokens"] = self.dropped_tokens
        out["dropped_rows"] = self.dropped_rows
        out["wait_seconds"] = self.wait
        return out


class SourceTokens:
    """Hand a token stage's batches to the mix whose row positions it reads.

    Built from the token stage's input; finds, below it, the mix (a node with
    ``count_tokens``) streaming positions of those very rows. Without one, :meth:`add`
    does nothing.
    """

    def __init__(self, source: Stream[Any], rows: Any) -> None:

        self.count: Any = None
        if rows is None:
            return
        for node in walk(source):
            if offers(node, "count_tokens") and node.row_source() is rows:
                self.count = node.count_tokens
                return

    def add(self, positions: np.ndarray, lengths: np.ndarray) -> None:
        """Count ``lengths`` tokens for the rows at ``positions``."""
        if self.count is not None:
            self.count(positions, lengths)


class TokensBySource(_Deferred):
    """Tokens per input of a mix, from row positions numbered input after input.

    ``add`` only keeps the arrays (a list append per batch); they are attributed in one
    vectorised pass when read, or every ``_FLUSH`` batches. Safe across a prefetch thread.
    """

    __slots__ = ("bases", "seen", "total")

    def __init__(self, bases: np.ndarray) -> None:
        self.bases = np.asarray(bases, dtype=np.int64)
        self.total = np.zeros(len(self.bases) - 1, dtype=np.int64)
        self.seen = self.total.copy()
        self._reset()

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return {"bases": self.bases, "total": self.total, "seen": self.seen}

    def __setstate__(self, d: dict[str, Any]) -> None:
        for k, v in d.items():
            setattr(self, k, v)
        self._reset()

    def add(self, positions: np.ndarray, lengths: np.ndarray) -> None:
        self._defer((positions, lengths))

    def _flush(self) -> None:
        pending = self._drain()
        if not pending:
            return
        pos = np.concatenate([p for p, _ in pending])
        lengths = np.concatenate([n for _, n in pending])
        src = np.searchsorted(self.bases, pos, side="right") - 1
        k = len(self.total)
        add = np.bincount(src, weights=lengths, minlength=k)[:k].astype(np.int64)
        with self._lock:
            self.total = self.total + add

    def read(self) -> tuple[list[int], list[int]]:
        """``(tokens per input, tokens per input since the previous read)``."""
        self._flush()
        total = self.total
        window, self.seen = total - self.seen, total
        return total.tolist(), window.tolist()


def collect(root: Stream[Any]) -> dict[str, dict[str, Any]]:
    """``{path: node.stats()}`` for every node of ``root``'s pipeline that has ``stats``."""
    out: dict[str, dict[str, Any]] = {}
    _visit(root, stage_name(root), out)
    return out


def _visit(node: Stream[Any], path: str, out: dict[str, dict[str, Any]]) -> None:
    stats = node.stats()
    if stats is not None:
        out[path] = stats
    reported = node.stats_below()
    if reported is not None:  # the subtree runs elsewhere (a worker process)
        out.update({f"{path}/{k}": v for k, v in reported.items()})
        return
    kids = node.children()
    names = node.child_names()
    for i, child in enumerate(kids):
        name = stage_name(child)
        if len(kids) > 1:
            key = names[i] if names is not None and len(names) == len(kids) else i
            name = f"{key}:{name}"
        _visit(child, f"{path}/{name}", out)


def flatten(stats: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested stats as ``{"a/b/c": number}`` for a logger (lists keyed by index)."""
    out: dict[str, Any] = {}
    for key, value in stats.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "/"))
        elif isinstance(value, (list, tuple)):
            out.update(flatten({str(i): v for i, v in enumerate(value)}, name + "/"))
        else:
            out[name] = value
    return out


_WINDOWED = (
    ("counts", "window_counts", "window_ratios"),
    ("tokens", "window_tokens", "window_token_ratios"),
)


def rewindow(
    snapshot: dict[str, dict[str, Any]], seen: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``snapshot`` with a mix's ``window_*`` values taken since the previous call.

    For stats taken elsewhere (a worker process) whenever it sent items: their windows
    would be the worker's; ``seen`` keeps each path's last cumulative values.
    """
    out: dict[str, dict[str, Any]] = {}
    for path, stats in snapshot.items():
        stats = dict(stats)
        last = seen.setdefault(path, {})
        for total, window, ratios in _WINDOWED:
            if total not in stats or window not in stats:
                continue
            now = stats[total]
            before = last.get(total)
            if isinstance(now, dict):
                diff: Any = {k: v - (before or {}).get(k, 0) for k, v in now.items()}
                whole = sum(diff.values())
                share: Any = {k: v / whole if whole else 0.0 for k, v in diff.items()}
            else:
                diff = [v - b for v, b in zip(now, before or [0] * len(now), strict=True)]
                whole = sum(diff)
                share = [v / whole if whole else 0.0 for v in diff]
            stats[window] = diff
            if ratios is not None:
                stats[ratios] = share
            last[total] = now
        out[path] = stats
    return out
