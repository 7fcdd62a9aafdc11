"""``keep_in_memory``: a dataset's rows copied from their files into Arrow's memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from arrowmix._dataset.state import num_rows, state_of, view_range
from arrowmix._storage.metadata import kept_or_none

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["in_memory_copy"]


def in_memory_copy(ds: Dataset) -> Dataset:
    """``ds`` with its rows copied into memory (HF's ``keep_in_memory``/``in_memory``).

    Same rows, format and fingerprint; the copy is the view's rows only (a shuffled or
    filtered view is flattened on the way), and results derived from it still go to ``ds``'s
    cache directory.
    """
    from arrowmix._dataset.dataset import Dataset, DatasetState

    s = state_of(ds)
    table = view_range(s, 0, num_rows(s))
    table = table.replace_schema_metadata(kept_or_none(table.schema))  # HF's features, kept
    sink = pa.BufferOutputStream()  # one copy, in Arrow's memory pool
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    copied = pa.ipc.open_stream(sink.getvalue()).read_all()
    return Dataset(
        DatasetState(
            table=copied,
            fingerprint=s.fingerprint,
            fmt=s.fmt,
            fmt_columns=s.fmt_columns,
            fmt_all=s.fmt_all,
            fmt_kwargs=s.fmt_kwargs,
            cache_dir=ds.cache_dir,
            storage_options=s.storage_options,
            split=s.split,
            hf_info=s.hf_info,
        )
    )
