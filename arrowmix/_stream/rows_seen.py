"""Which rows did step N see: a checkpoint replayed into a fresh pipeline with provenance.

:func:`rows_seen` builds the pipeline again (with its sources' ``provenance`` on),
restores the checkpoint into it and reads the next steps' source references;
:func:`fetch_rows` reads those rows back from the datasets. Re-exported by
:mod:`arrowmix.testing`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from arrowmix._stream.base import Stream
from arrowmix._stream.provenance import carries_sources, item_sources
from arrowmix._validate import check_callable, check_int
from arrowmix.exceptions import DroppedDataWarning

__all__ = ["fetch_rows", "rows_seen"]


def rows_seen(
    make_stream: Callable[[], Stream[Any]],
    state: dict[str, Any] | None = None,
    steps: int = 1,
    *,
    skip: int = 0,
) -> list[list[dict[str, Any]]]:
    """The source references of the rows each of the next ``steps`` items holds.

    ``make_stream()`` builds the pipeline whose checkpoint ``state`` is (a
    ``state_dict()``; ``None``: from the start), with provenance on at its sources
    (``Dataset.to_stream(..., provenance=True)``). Provenance changes neither the
    pipeline's fingerprint nor its state, so a checkpoint of the training run, taken
    without it, loads. The pipeline built here is read, then closed; nothing else is
    touched. ``skip`` items are read first (step ``K + skip + 1`` on, for a checkpoint
    taken after step ``K``).

    Returns one list per item read (fewer at the end of a finite stream): its rows'
    references ``{"source", "index", "chunk", "row"}`` in the item's order (a packed
    batch's segments row by row, each with ``"start"``, its first token in the document).

    Example:
        >>> import arrowmix as am
        >>> from arrowmix.testing import fetch_rows, rows_seen
        >>> ds = am.Dataset.from_dict({"x": list(range(10))})
        >>> def make():
        ...     return ds.to_stream(seed=0, provenance="ds").shuffle(4, seed=1).batch(2)
        >>> run = make()
        >>> _ = [next(run) for _ in range(3)]
        >>> state = run.state_dict()
        >>> step4 = next(run)
        >>> refs = rows_seen(make, state, steps=1)[0]
        >>> fetch_rows(refs, {"ds": ds}) == [{"x": r["x"]} for r in step4]
        True
    """
    check_callable("make_stream", make_stream)
    check_int("steps", steps, minimum=0)
    check_int("skip", skip, minimum=0)
    stream = make_stream()
    if not isinstance(stream, Stream):
        raise TypeError(f"`make_stream()` must return a Stream, got {type(stream).__name__}.")
    if not carries_sources(stream):
        raise ValueError(
            "the pipeline `make_stream()` builds has no source with provenance: build its "
            "sources with Dataset.to_stream(..., provenance=True)."
        )
    out: list[list[dict[str, Any]]] = []
    with stream, warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)  # a tail the run reports itself
        stream.load_state_dict(state)
        for i in range(skip + steps):
            try:
                item = next(stream)
            except StopIteration:
                break
            if i >= skip:
                out.append(item_sources(item))
    return out


def fetch_rows(refs: list[dict[str, Any]], datasets: Any) -> list[Any]:
    """The rows ``refs`` name, read back: ``datasets[ref["source"]][ref["index"]]``.

    ``datasets``: one dataset (anything indexable by row, for a single source) or a
    mapping from source name to dataset.
    """
    out = []
    for ref in refs:
        ds = datasets
        if isinstance(datasets, Mapping):
            name = ref["source"]
            if name not in datasets:
                raise KeyError(
                    f"no dataset for source {name!r}; `datasets` names {sorted(datasets)}."
                )
            ds = datasets[name]
        out.append(ds[ref["index"]])
    return out
