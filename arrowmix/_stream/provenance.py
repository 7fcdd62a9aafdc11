"""Provenance per sample: which row of which source every item of a stream came from.

Off by default and free when off. A source built with ``provenance=True`` (or a name,
``provenance="web"``: ``Dataset.to_stream``, ``from_row_source``) reads its rows through
:class:`SourcedRows`, which adds one column, :data:`SOURCE_KEY`, to every row it gives:
a *source reference* ``{"source": name, "index": i, "chunk": c, "row": r}``:

- ``index``: the row's position in the source's rows, what ``ds[index]`` reads back for
  a Dataset (a view's own numbering: after ``select`` or ``shuffle`` of the Dataset, its
  index in that view);
- ``chunk``, ``row``: the storage chunk holding it (``chunk_offsets()`` of the row source:
  the chunk files of a plain Dataset) and its row inside that chunk;
- ``source``: the name given, or, for ``provenance=True``, the names of the mixes above
  the source, outermost first (``"ab/a"``; an input of an unnamed mix is named by its
  index), ``""`` outside any mix.

Row dicts carry the reference under :data:`SOURCE_KEY`, columnar batches as a column of
that name; ``collate`` adds :data:`SOURCES` (one reference per row of the batch) and
``pack`` :data:`SEGMENT_SOURCES` (one list per packed row, one reference per segment, in
the order of ``segment_ids`` 1, 2, ..., with ``"start"``: the segment's first token in
its document). Provenance never enters a pipeline's fingerprint or state: a checkpoint
of a pipeline without it loads into the same pipeline with it, which is how
:func:`arrowmix.testing.rows_seen` answers "which rows did step N see".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.stage import Stage
from arrowmix._stream.topology import walk

if TYPE_CHECKING:
    from arrowmix._stream.base import Stream
    from arrowmix._stream.row_source import RowSource

# The optional members of a row source (``row_source.OPTIONAL_MEMBERS``, which imports
# the token stages that import this module): forwarded to the wrapped rows.
_FORWARDED = frozenset(
    {"token_column", "take_column", "take_lists", "read_ahead", "prefetch", "stats", "close"}
)

__all__ = [
    "REF_TYPE",
    "RefIndex",
    "SEGMENT_SOURCES",
    "SOURCES",
    "SOURCE_KEY",
    "SourcedRows",
    "carries_sources",
    "item_sources",
    "keep_source",
    "label_sources",
    "sources_reader",
]

#: The key of a row's source reference (a row dict's key, a columnar batch's column).
SOURCE_KEY = "__source__"
#: ``collate``'s output: one source reference per row of the batch.
SOURCES = "sources"
#: ``pack``'s output: per packed row, one source reference per segment.
SEGMENT_SOURCES = "segment_sources"
#: The Arrow type of the :data:`SOURCE_KEY` column.
REF_TYPE = pa.struct(
    [("source", pa.string()), ("index", pa.int64()), ("chunk", pa.int64()), ("row", pa.int64())]
)


class SourcedRows:
    """A :class:`~arrowmix._stream.row_source.RowSource` whose rows carry their source.

    ``take`` adds the :data:`SOURCE_KEY` column; every other member is the wrapped row
    source's (its fingerprint included: provenance does not change the rows read).

    Example:
        >>> from arrowmix._stream.row_source import TableRowSource
        >>> rows = SourcedRows(TableRowSource(pa.table({"x": [5, 6, 7]}), chunk_rows=2), "t")
        >>> rows.take(np.array([2, 0])).to_pylist()[0]
        {'x': 7, '__source__': {'source': 't', 'index': 2, 'chunk': 1, 'row': 0}}
    """

    def __init__(self, rows: RowSource, name: str | None = None) -> None:
        if SOURCE_KEY in rows.schema.names:
            raise ValueError(f"the rows already have a column {SOURCE_KEY!r}.")
        self.rows = rows
        self.name = "" if name is None else name
        self.auto = name is None  # named by the mixes above it (label_sources)
        self._schema = rows.schema.append(pa.field(SOURCE_KEY, REF_TYPE))

    def __getattr__(self, name: str) -> Any:
        # the optional members of the wrapped rows (read_ahead, prefetch, stats, ...)
        rows = self.__dict__.get("rows")
        if rows is None or name not in _FORWARDED:
            raise AttributeError(name)
        return getattr(rows, name)

    @property
    def num_rows(self) -> int:
        return self.rows.num_rows

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def fingerprint(self) -> str:
        return self.rows.fingerprint

    @property
    def carries_sources(self) -> bool:
        return True

    def chunk_offsets(self) -> np.ndarray:
        return self.rows.chunk_offsets()

    def take(self, positions: np.ndarray) -> pa.Table:
        table = self.rows.take(positions)
        return table.append_column(pa.field(SOURCE_KEY, REF_TYPE), self.refs(positions))

    def take_column(self, positions: np.ndarray, name: str) -> pa.ChunkedArray[Any]:
        if name == SOURCE_KEY:
            refs: pa.ChunkedArray[Any] = pa.chunked_array([self.refs(positions)])
            return refs
        inner = getattr(self.rows, "take_column", None)
        if inner is not None:
            values: pa.ChunkedArray[Any] = inner(positions, name)
            return values
        return self.rows.take(positions).column(name)

    def _where(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = np.asarray(positions, dtype=np.int64)
        offsets = self.__dict__.get("_offsets")
        if offsets is None:
            offsets = self._offsets = np.asarray(self.rows.chunk_offsets(), dtype=np.int64)
        chunk = np.searchsorted(offsets, pos, side="right") - 1
        return pos, chunk, pos - offsets[chunk]

    def refs(self, positions: np.ndarray) -> pa.StructArray:
        """The source references of the rows at ``positions``, as an Arrow struct array."""
        pos, chunk, row = self._where(positions)
        names = pa.array([self.name] * len(pos), type=pa.string())
        arrays: list[pa.Array[Any]] = [names]
        arrays += [pa.array(a, type=pa.int64()) for a in (pos, chunk, row)]
        return pa.StructArray.from_arrays(arrays, fields=list(REF_TYPE))

    def leaves(self) -> list[tuple[int, SourcedRows]]:
        """``[(first position, rows)]``: the sourced rows behind these positions."""
        return [(0, self)]

    def sources_of(
        self, positions: np.ndarray, starts: np.ndarray | None = None
    ) -> list[dict[str, Any]]:
        """The source references of the rows at ``positions``, as dicts (see RefIndex)."""
        index = self.__dict__.get("_index")
        if index is None:
            index = self._index = RefIndex(self.leaves())
        return index(positions, starts)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_offsets", "_index")}


class RefIndex:
    """Source references of positions numbered leaf after leaf (a mix's rows), vectorised.

    ``leaves``: ``[(first position, SourcedRows)]`` in order. One lookup of the leaf and
    one of the chunk for a whole block of positions; only the dicts are built per row.
    """

    def __init__(self, leaves: list[tuple[int, SourcedRows]]) -> None:
        self.leaves = [rows for _, rows in leaves]
        self.starts = np.array([start for start, _ in leaves], dtype=np.int64)
        bounds, base = [], [0]
        for start, rows in leaves:
            offsets = np.asarray(rows.chunk_offsets(), dtype=np.int64)[:-1] + start
            bounds.append(offsets)
            base.append(base[-1] + len(offsets))
        self.bounds = np.concatenate(bounds) if bounds else np.zeros(0, dtype=np.int64)
        self.chunk_base = np.array(base[:-1], dtype=np.int64)

    def __call__(
        self, positions: np.ndarray, starts: np.ndarray | None = None
    ) -> list[dict[str, Any]]:
        """The references of ``positions``; with ``starts``, each has its ``"start"`` too."""
        pos = np.asarray(positions, dtype=np.int64)
        g = np.searchsorted(self.bounds, pos, side="right") - 1
        rows = (pos - self.bounds[g]).tolist()
        names = [leaf.name for leaf in self.leaves]  # read now: a mix built later names them
        if len(names) == 1:
            index, chunks, source = pos.tolist(), g.tolist(), [names[0]] * len(pos)
        else:
            leaf = np.searchsorted(self.starts, pos, side="right") - 1
            index = (pos - self.starts[leaf]).tolist()
            chunks = (g - self.chunk_base[leaf]).tolist()
            source = [names[k] for k in leaf.tolist()]
        if starts is None:
            return [
                {"source": n, "index": i, "chunk": c, "row": r}
                for n, i, c, r in zip(source, index, chunks, rows, strict=True)
            ]
        return [
            {"source": n, "index": i, "chunk": c, "row": r, "start": t}
            for n, i, c, r, t in zip(source, index, chunks, rows, starts.tolist(), strict=True)
        ]


def sources_reader(rows: Any) -> Callable[..., list[dict[str, Any]]] | None:
    """``rows.sources_of(positions, starts=None)`` when ``rows`` carries references, else None."""
    if rows is None or not getattr(rows, "carries_sources", False):
        return None
    reader: Callable[..., list[dict[str, Any]]] = rows.sources_of
    return reader


def carries_sources(stream: Stream[Any]) -> bool:
    """Whether a source below ``stream`` reads its rows with provenance (at build time)."""
    for node in walk(stream):
        if not node.children() and sources_reader(node.row_source()) is not None:
            return True
    return False


def label_sources(streams: Sequence[Stream[Any]], names: Sequence[str] | None) -> None:
    """Name the unnamed sources below each input of a mix after that input (outer first).

    Called when the mix is built, so nested mixes name ``"outer/inner"``. A mix whose
    inputs disagree on provenance is refused (their rows would not line up).
    """
    if not all(isinstance(s, Stage) for s in streams):
        return  # the mix refuses them, naming the input
    sourced = [carries_sources(s) for s in streams]
    if not any(sourced):
        return
    if not all(sourced):
        off = [i if names is None else names[i] for i, on in enumerate(sourced) if not on]
        raise ValueError(
            f"mix: inputs {off} carry no provenance while others do; build every input "
            "with provenance (to_stream(provenance=True)) or none."
        )
    for i, stream in enumerate(streams):
        label = str(i) if names is None else names[i]
        for node in walk(stream):
            rows = node.row_source() if not node.children() else None
            if isinstance(rows, SourcedRows) and rows.auto:
                rows.name = label if not rows.name else f"{label}/{rows.name}"


def keep_source(item: Any, out: Any) -> Any:
    """``out`` (what a map made of ``item``) with ``item``'s source reference, if it lost it.

    A row dict returned without :data:`SOURCE_KEY` gets ``item``'s (in a copy); any
    other output is returned as it is.
    """
    if isinstance(out, dict) and SOURCE_KEY not in out and isinstance(item, dict):
        ref = item.get(SOURCE_KEY)
        if ref is not None:
            return {**out, SOURCE_KEY: ref}
    return out


def item_sources(item: Any) -> list[dict[str, Any]]:
    """The source references an item of a stream carries, in order (see the module doc).

    A row dict gives its one reference, a collated batch its ``sources``, a packed batch
    its segments' references row by row, a columnar batch its column, a list or tuple
    the references of its items. Raises ``ValueError`` for an item that carries none.
    """
    if isinstance(item, dict):
        if SOURCE_KEY in item:
            return [item[SOURCE_KEY]]
        if SOURCES in item:
            return list(item[SOURCES])
        if SEGMENT_SOURCES in item:
            return [ref for row in item[SEGMENT_SOURCES] for ref in row]
    elif isinstance(item, (pa.Table, pa.RecordBatch)) and SOURCE_KEY in item.schema.names:
        column: list[Any] = item.column(SOURCE_KEY).to_pylist()
        return column
    elif isinstance(item, (list, tuple)):
        return [ref for x in item for ref in item_sources(x)]
    raise ValueError(
        f"a {type(item).__name__} item carries no source references: build the pipeline's "
        "sources with provenance (Dataset.to_stream(provenance=True))."
    )
