"""What a Dataset is made of, and the functions that read and derive it.

:class:`DatasetState` is immutable: a transform builds a new state (``dataclasses.replace``
or :func:`derive`) and wraps it in a new ``Dataset``; nothing mutates one in place. This
module owns the state. Other modules reach a dataset's state through :func:`state_of` and
read it through the functions here (rows, columns, ranges, gathers, cache files), never by
reaching into the ``Dataset`` object itself. It imports nothing from the ``Dataset`` class,
so the map engine and the ops can use it without calling back into ``dataset.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.inuse import Hold, hold
from arrowmix._cache.paths import CACHE_FILE_RE, INDICES_FILE_RE, dataset_cache_dir
from arrowmix._dataset import formats
from arrowmix._dataset.indices import IndexMap
from arrowmix._dataset.tables import Table, as_table
from arrowmix._storage import fs

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "DatasetState",
    "DeferredTable",
    "cache_dir",
    "cache_files",
    "column_names",
    "derive",
    "estimate_nbytes",
    "format_dict",
    "gather",
    "hold_cache_files",
    "layout_tag",
    "map_joins",
    "num_rows",
    "remove_unused_cache_files",
    "set_state",
    "by_reference",
    "state_of",
    "stored_table",
    "view_range",
]


class DeferredTable:
    """A table known by its rows and schema, built by ``load`` when it is first used.

    A cached map result whose segment files have not been opened yet (see
    ``arrowmix._dataset.mapping.deferred``).
    """

    def __init__(self, num_rows: int, schema: pa.Schema, load: Callable[[], pa.Table]) -> None:
        self.num_rows = num_rows
        self.schema = schema
        self._load = load

    @property
    def column_names(self) -> list[str]:
        """Column names, in order."""
        return list(self.schema.names)

    def load(self) -> pa.Table:
        """The table (built once: later calls return the same one)."""
        table = self._load()
        self._load = lambda: table
        return table


class _TableSlot:
    """``DatasetState.table``: a :class:`DeferredTable` is built on the first read of it.

    :func:`stored_table` reads the slot without building it.
    """

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            raise AttributeError("table")  # no default value for the dataclass field
        value = obj.__dict__["_table"]
        if isinstance(value, DeferredTable):
            value = obj.__dict__["_table"] = value.load()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["_table"] = value


@dataclass(frozen=True)
class DatasetState:
    """Everything a Dataset is made of; transforms build new states, never mutate one."""

    #: A ``pyarrow.Table`` or another kind of :class:`~arrowmix._dataset.tables.Table`.
    table: pa.Table | Table
    fingerprint: str
    files: tuple[str, ...] = ()
    file_offsets: tuple[int, ...] | None = None
    indices: IndexMap | None = None
    indices_file: str | None = None
    fmt: str | None = None
    fmt_columns: tuple[str, ...] | None = None
    #: HF's ``output_all_columns``: columns outside ``fmt_columns`` come as Python objects.
    fmt_all: bool = False
    #: HF's ``format_kwargs`` (``dtype``/``device`` for numeric tensors and arrays).
    fmt_kwargs: tuple[tuple[str, Any], ...] = ()
    cache_dir: str | None = None
    #: fsspec options for the dataset's URLs (remote chunks, a remote ``cache_dir``).
    storage_options: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    #: Reader registrations on the cache/indices files in use, so cleanup never removes them.
    holds: tuple[Hold, ...] = field(default=(), compare=False, repr=False)
    #: HF's ``split`` name (``ds.split``): kept by views and maps, never in the fingerprint.
    split: str | None = field(default=None, compare=False)
    #: What ``load_dataset`` knew of the data (``arrowmix._hf.load_info.LoadInfo``: HF's
    #: ``builder_name``, ``splits``, sizes...): kept with ``split``, never in the fingerprint.
    hf_info: Any = field(default=None, compare=False)

    @cached_property
    def format(self) -> formats.Format:
        """The output format (built on first use)."""
        from arrowmix._storage.mixed_json import has_json

        json = any(has_json(t) for t in stored_table(self).schema.types)
        return formats.Format(self.fmt, self.fmt_columns, self.fmt_all, self.fmt_kwargs, json)

    @cached_property
    def reader(self) -> Table:
        """``table`` as a :class:`~arrowmix._dataset.tables.Table` (built on first use).

        A ``pyarrow.Table`` is adapted (a batch-aware gatherer over it); any other kind
        is its own reader.
        """
        return as_table(self.table)


# Set after the class is made: the dataclass field keeps no default, and its __init__
# stores the table through the slot.
setattr(DatasetState, "table", _TableSlot())  # noqa: B010


def state_of(ds: Dataset) -> DatasetState:
    """The state of ``ds``: the one place outside ``Dataset`` that reaches into it."""
    return ds._s


def set_state(ds: Dataset, state: DatasetState) -> None:
    """Give ``ds`` the state ``state``.

    Only for HF's in-place setters (``ds._fingerprint = ...``, ``formatted_as``); every
    transform builds a new Dataset instead.
    """
    ds._s = state


def derive(s: DatasetState, **changes: Any) -> DatasetState:
    """A new state: ``s`` with ``changes`` (the state is immutable; ``s`` is unchanged).

    A table not built yet (:class:`DeferredTable`) is passed on unbuilt.
    """
    changes.setdefault("table", stored_table(s))
    return replace(s, **changes)


def stored_table(s: DatasetState) -> pa.Table | Table | DeferredTable:
    """The state's table as stored: a :class:`DeferredTable` is not built."""
    found: pa.Table | Table | DeferredTable = s.__dict__["_table"]
    return found


def layout_tag(s: DatasetState) -> str | None:
    """The stored table's :attr:`~arrowmix._dataset.tables.protocol.Table.layout_tag`.

    None for an Arrow table (built or deferred): its fingerprint fixes its chunks.
    """
    found: str | None = getattr(stored_table(s), "layout_tag", None)
    return found


def by_reference(s: DatasetState) -> bool:
    """Whether a map result may reference the columns it keeps from ``s``'s table.

    Read from the stored table without adapting it: an Arrow table (built or not yet, a
    :class:`DeferredTable` of cache files) may; another kind says.
    """
    found: bool = getattr(stored_table(s), "by_reference", True)
    return found


def map_joins(s: DatasetState) -> bool:
    """Whether a map result joins ``s``'s table (rows read in place) with what it derives.

    Read from the stored table without adapting it: an Arrow table does not.
    """
    found: bool = getattr(stored_table(s), "map_joins", False)
    return found


def num_rows(s: DatasetState) -> int:
    """Rows in the view (the indices mapping's length, or the table's)."""
    return len(s.indices) if s.indices is not None else stored_table(s).num_rows


def column_names(s: DatasetState) -> list[str]:
    """Column names, in order."""
    return list(stored_table(s).column_names)


def gather(
    s: DatasetState, positions: np.ndarray, columns: Sequence[str] | None = None
) -> pa.Table:
    """Rows at view ``positions`` as an Arrow table (validated by the caller)."""
    base = s.indices.lookup(positions) if s.indices is not None else positions
    reader = s.reader
    if columns is not None and reader.map_joins:  # rows read in place: decode these only
        projected: pa.Table = reader.select(list(columns)).take(base)
        return projected
    table = reader.take(base)
    return table.select(list(columns)) if columns is not None else table


def view_range(
    s: DatasetState,
    start: int,
    stop: int,
    columns: Sequence[str] | None = None,
    *,
    reads: Sequence[str] | None = None,
    ahead: bool = True,
) -> pa.Table:
    """View rows ``[start, stop)`` as an Arrow table; zero-copy without an array mapping.

    ``reads``: the only columns the caller reads (the pages asked for ahead are theirs).
    ``ahead=False``: a zero-copy view asks for no pages (the caller keeps references to
    the rows, and does not read them now).
    """
    ix = s.indices
    if ix is None or ix.is_range:
        off = ix.start if ix is not None else 0
        local = s.table if not ahead else None
        if isinstance(local, pa.Table):  # referenced, not read now: no page asked for
            table = local.slice(off + start, max(0, stop - start))
        else:
            table = s.reader.slice(off + start, off + stop, reads or columns)
    else:
        table = s.reader.take(ix.array[start:stop])  # type: ignore[index]
    return table.select(list(columns)) if columns is not None else table


def estimate_nbytes(s: DatasetState) -> int:
    """The Arrow bytes of the view's rows (HF's ``_estimate_nbytes``, used for shard sizes).

    Exact for a contiguous view (a zero-copy slice); for a shuffled or filtered view, the
    table's bytes per row times the rows (nothing is gathered).
    """
    n, ix, table = num_rows(s), s.indices, s.reader.arrow
    if not n:
        return 0
    if ix is None or ix.is_range:
        return int(view_range(s, 0, n, ahead=False).nbytes)
    if table is not None:
        return int(table.nbytes * n // max(table.num_rows, 1))
    sample = min(n, 1000)  # rows read on demand: the bytes of the first rows, scaled
    return int(view_range(s, 0, sample).nbytes * n // sample)


def cache_dir(s: DatasetState) -> str:
    """Where results derived from the state are written (a local directory or a URL)."""
    if s.cache_dir is not None:
        fs.makedirs(s.cache_dir)
        return s.cache_dir
    return dataset_cache_dir(s.files[0] if s.files else None)


def cache_files(s: DatasetState) -> list[str]:
    """Every file the state uses: chunks, cache files (map/filter results) and indices."""
    extra = [s.indices_file] if s.indices_file else []
    paths = [*s.files, *extra, *(h.path for h in s.holds)]
    return list(dict.fromkeys(paths))


def hold_cache_files(paths: Sequence[str], held: Sequence[Hold] = ()) -> tuple[Hold, ...]:
    """Register this process as a reader of the local cache and indices files among ``paths``.

    Chunk files are never removed by a cleanup, so they need no registration. A registration
    among ``held`` that is still active is reused.
    """
    reuse = {h.path: h for h in held if h.active}
    out = []
    for p in paths:
        name = os.path.basename(p)
        if "://" not in p and (CACHE_FILE_RE.match(name) or INDICES_FILE_RE.match(name)):
            found = reuse.get(p)
            out.append(found if found is not None else hold(p))
    return tuple(out)


def remove_unused_cache_files(s: DatasetState) -> int:
    """Remove the cache files of the state's directory that it does not use; how many.

    Files in use by any open dataset, or being written, stay. A state none of whose files
    lives in its cache directory (in-memory or remote data) removes nothing, nor does a
    remote ``cache_dir``.
    """
    from arrowmix._cache.cleanup import remove_unused

    directory = cache_dir(s)
    if not fs.is_local(directory):
        return 0
    directory = os.path.abspath(directory)
    mine = {os.path.abspath(f) for f in cache_files(s) if "://" not in f}
    if not any(os.path.dirname(f) == directory for f in mine):
        return 0
    return remove_unused(directory, keep=mine)


def format_dict(s: DatasetState) -> dict[str, Any]:
    """The output format as HF ``datasets`` describes it (``Dataset.format``)."""
    return {
        "type": s.fmt,
        "format_kwargs": dict(s.fmt_kwargs),
        "columns": list(s.fmt_columns) if s.fmt_columns is not None else column_names(s),
        "output_all_columns": s.fmt_all,
    }
