"""Pickling a Dataset by reference: file paths, offsets and mappings instead of the rows.

A dataset's table is usually memory-mapped from local Arrow IPC files (chunk files, map
results, a flattened view). Pickling the table would copy every byte of those mappings into
the pickle, and every spawned worker (a torch ``DataLoader`` with the ``spawn`` or
``forkserver`` start method, the map engine on spawn-only platforms, a user's
``multiprocessing`` pool) would get its own private copy. Instead, :func:`reduce_dataset`
describes the table with :func:`~arrowmix._storage.mapped.table_ref` (file, record batch,
column, slice of every column chunk: a few bytes each) and :func:`rebuild` reopens the files,
memory-mapped, on the other side: the pickle is a few KB whatever the data size, and the
unpickled dataset shares the page cache with every other process reading the same files.

The indices mapping travels the same way: a mapping backed by an ``indices-<fp>.arrow`` file
is reopened from it (checked against the fingerprint in its name and its length), a range is
two integers, and only a small in-RAM array (below ``INDICES_FILE_MIN_ROWS`` positions) is
pickled as such. The unpickled dataset takes its own reader registration
(:func:`~arrowmix._cache.inuse.hold`) on the cache and indices files the original held, so a
cache cleanup in any process keeps them.

Fallback: a table that is not entirely memory-mapped from files of this process (built in
memory, or mixing in-memory and file data; or a platform without ``/proc/self/maps``) is
pickled with its data, as pyarrow pickles tables.

The pickle is valid where the same files exist under the same paths (this machine, or shared
storage mounted at the same place), and while they are not deleted or rewritten: a missing or
changed file raises :class:`~arrowmix.exceptions.ChunkFileError` on unpickling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._cache.inuse import Hold, hold
from arrowmix._cache.paths import INDICES_FILE_RE
from arrowmix._dataset.indices import IndexMap, open_indices
from arrowmix._dataset.state import state_of
from arrowmix._dataset.tables import Table
from arrowmix._storage.mapped import TableRef
from arrowmix.exceptions import ChunkFileError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["DatasetRef", "rebuild", "reduce_dataset"]


@dataclass(frozen=True)
class DatasetRef:
    """What a pickled Dataset carries: references to its files, or its data as a fallback."""

    #: The table by reference into its files, or the table itself (not file-backed).
    table: TableRef | pa.Table | Table
    #: Rows of the table: neither form keeps the row count of a table without columns.
    num_rows: int
    fingerprint: str
    files: tuple[str, ...]
    file_offsets: tuple[int, ...] | None
    #: A range or in-RAM array mapping; None when there is none or ``indices_fp`` is set.
    indices: IndexMap | None
    indices_file: str | None
    #: The fingerprint of ``indices_file`` when the mapping is reopened from that file.
    indices_fp: str | None
    indices_rows: int
    fmt: str | None
    fmt_columns: tuple[str, ...] | None
    cache_dir: str | None
    #: Cache and indices files the original held (reader registrations to take again).
    held: tuple[str, ...]
    fmt_all: bool = False
    fmt_kwargs: tuple[tuple[str, Any], ...] = ()
    split: str | None = None
    hf_info: Any = None


def _indices_fp(path: str | None, ix: IndexMap | None) -> str | None:
    """The fingerprint of the indices file behind ``ix``, when the mapping can be reopened.

    ``load_or_store`` backs a mapping by a file only as a whole, read-only (memory-mapped)
    array; anything else (a range, an array computed in RAM) travels by value.
    """
    if path is None or ix is None or ix.array is None or ix.array.flags.writeable:
        return None
    if "://" in path:
        return None
    m = INDICES_FILE_RE.match(os.path.basename(path))
    return m.group(1) if m else None


def describe(ds: Dataset) -> DatasetRef:
    """``ds`` as references (see the module docstring); data only where it has no file."""
    s = state_of(ds)
    ix_fp = _indices_fp(s.indices_file, s.indices)
    return DatasetRef(
        table=s.reader.pickled(),
        num_rows=s.table.num_rows,
        fingerprint=s.fingerprint,
        files=s.files,
        file_offsets=s.file_offsets,
        indices=None if ix_fp is not None else s.indices,
        indices_file=s.indices_file,
        indices_fp=ix_fp,
        indices_rows=len(s.indices) if s.indices is not None else 0,
        fmt=s.fmt,
        fmt_columns=s.fmt_columns,
        cache_dir=s.cache_dir,
        held=tuple(dict.fromkeys(h.path for h in s.holds)),
        fmt_all=s.fmt_all,
        fmt_kwargs=s.fmt_kwargs,
        split=s.split,
        hf_info=s.hf_info,
    )


def reduce_dataset(ds: Dataset) -> tuple[Any, ...]:
    """The ``__reduce__`` value of ``ds``: :func:`rebuild` applied to its description."""
    return (rebuild, (type(ds), describe(ds)))


def _take_holds(ref: DatasetRef) -> tuple[Hold, ...]:
    """Register as a reader of the files the original held, before reopening them.

    A file the rebuilt dataset reads must exist; one it does not read (the table travelled
    by value) may have gone meanwhile.
    """
    needed = set(ref.table.files) if isinstance(ref.table, TableRef) else set()
    if ref.indices_fp is not None and ref.indices_file is not None:
        needed.add(ref.indices_file)
    holds = []
    for path in ref.held:
        try:
            holds.append(hold(path))
        except FileNotFoundError as exc:
            if path in needed:
                raise _gone(ref, path, exc) from exc
    return tuple(holds)


def _gone(ref: DatasetRef, path: str, exc: BaseException) -> ChunkFileError:
    return ChunkFileError(
        f"Cannot unpickle dataset {ref.fingerprint}: it reads {path!r}, which cannot be "
        f"opened ({exc}). A pickled dataset refers to its files; unpickle it where they "
        "exist under the same path and before a cache cleanup removes them."
    )


def rebuild(cls: type[Dataset], ref: DatasetRef) -> Dataset:
    """Unpickle: reopen the files memory-mapped and take the reader registrations again."""
    from arrowmix._dataset.dataset import DatasetState

    holds = _take_holds(ref)
    table: pa.Table | Table
    if isinstance(ref.table, TableRef):
        try:
            table = ref.table.open()
        except ChunkFileError as exc:
            raise ChunkFileError(f"Cannot unpickle dataset {ref.fingerprint}: {exc}") from exc
        except (OSError, pa.ArrowInvalid) as exc:
            raise _gone(ref, ", ".join(ref.table.files), exc) from exc
    else:
        table = ref.table
    if table.num_columns == 0 and table.num_rows != ref.num_rows:
        table = pa.table({"_": pa.nulls(ref.num_rows)}).drop_columns(["_"])
    indices = ref.indices
    if ref.indices_fp is not None:
        assert ref.indices_file is not None  # set together by describe()
        try:
            array = open_indices(ref.indices_file, ref.indices_fp, ref.indices_rows)
        except (OSError, pa.ArrowInvalid) as exc:
            if isinstance(exc, ChunkFileError):
                raise
            raise _gone(ref, ref.indices_file, exc) from exc
        indices = IndexMap(array=array)
    state = DatasetState(
        table=table,
        fingerprint=ref.fingerprint,
        files=ref.files,
        file_offsets=ref.file_offsets,
        indices=indices,
        indices_file=ref.indices_file,
        fmt=ref.fmt,
        fmt_columns=ref.fmt_columns,
        fmt_all=ref.fmt_all,
        fmt_kwargs=ref.fmt_kwargs,
        split=ref.split,
        hf_info=ref.hf_info,
        cache_dir=ref.cache_dir,
        holds=holds,
    )
    return cls(state)
