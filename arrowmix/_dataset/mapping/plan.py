"""Plan a map/filter: its fingerprint, where its segments go, and what may be reused.

The result's fingerprint rolls the parent's: ``roll(parent, "map"|"filter" @ version,
{function fingerprint, fn_kwargs, batched, batch_size (batched only), with_indices,
input_columns, remove_columns, format})`` with default arguments dropped; ``num_proc``,
``desc``, ``load_from_cache_file`` and the executor never enter it. ``new_fingerprint``
replaces it.

The output is cut into segments by input rows (``arrowmix._cache.segments``): a :class:`Plan`
names them. :func:`run` has them materialised (``execute``), then asks the job's kind for the
result Dataset, again when a cleanup removed a file of the result under it.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._cache.paths import is_caching_enabled, shipped_cache_dir, temp_cache_dir
from arrowmix._cache.segments import Segment, plan_segments
from arrowmix._dataset.map_options import user_fingerprint
from arrowmix._dataset.mapping.call import Call
from arrowmix._dataset.mapping.execute import Executor, load_complete, materialise
from arrowmix._dataset.mapping.jobs import MAP_VERSION, Found, Job, Kind
from arrowmix._dataset.state import by_reference, cache_dir, map_joins, num_rows, state_of
from arrowmix._fingerprint.transform import validate_fingerprint
from arrowmix._storage.metadata import KEPT_KEY as HF_KEY
from arrowmix._storage.metadata import kept_metadata as hf_metadata

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["MAP_VERSION", "MapOptions", "Plan", "run"]

logger = logging.getLogger("arrowmix")


@dataclass(frozen=True)
class MapOptions:
    """How a map/filter runs and where it is stored; nothing here enters the fingerprint."""

    num_proc: int | None = None
    load_from_cache_file: bool | None = None
    cache_file_name: str | None = None
    new_fingerprint: str | None = None
    desc: str | None = None
    executor: Any = None
    #: HF's ``keep_in_memory``: this call neither reads nor leaves a reusable cache entry.
    keep_in_memory: bool = False


# Under disable_caching(), each call gets its own files (as in HF), never a shared name.
_UNCACHED = itertools.count()

#: Times a result is materialised when a cleanup keeps removing its files under it.
_ATTEMPTS = 3


@dataclass(frozen=True)
class Plan:
    """Where a map/filter's segments go, and whether stored ones may be read."""

    job: Job
    #: The result's fingerprint (the job's fingerprint names the files; they differ for a
    #: ``new_fingerprint`` that is not 16 hex digits, or under ``disable_caching()``).
    fingerprint: str
    segments: list[Segment]
    #: Input rows the segments cover, and the multiple their boundaries follow.
    rows: int
    align: int
    #: Whether valid files on disk are reused (``load_from_cache_file``).
    load: bool
    #: A read-only directory that ships a complete result (beside a corpus), or None.
    shipped: str | None
    num_proc: int | None
    desc: str | None
    executor: Executor | None


def _transform_fingerprint(
    ds: Dataset, kind: Kind, call: Call, rank_shards: int | None = None
) -> tuple[str, dict[str, Any]]:
    """``(fingerprint, explain record)`` of ``kind`` (map/filter) of ``call`` on ``ds``.

    The function is hashed by value (``arrowmix._fingerprint``), with the arguments that can
    change the output (dropped when equal to their default). ``num_proc``, ``desc``,
    ``load_from_cache_file``, ``cache_file_name`` and ``suffix_template`` never enter, except
    that a ``with_rank`` function sees ``num_proc`` ranks (``rank_shards``), as in HF.
    Something unhashable gives a random fingerprint and one ``FingerprintWarning`` pointing
    at the user's call.
    """
    from arrowmix._fingerprint.transform import transform_record  # dill loads lazily

    kwargs = {
        "fn_kwargs": dict(call.fn_kwargs) or None,
        "batched": call.batched,
        "batch_size": call.batch_size if call.batched else None,
        "with_indices": call.with_indices,
        "input_columns": list(call.input_columns) if call.input_columns else None,
        "remove_columns": list(call.remove_columns) or None,
        "format": call.fmt,
        "format_kwargs": dict(call.fmt_kwargs) or None,
        "with_rank": call.with_rank,
        "drop_last_batch": call.drop_last_batch and call.batched,
        "try_original_type": call.try_original_type,
        "features": _features_key(call.features),
        "on_mixed_types": call.on_mixed_types,
        "rank_shards": rank_shards,
        # An "arrow" view's output became the returned columns only (HF's rule): a new key,
        # so results stored under the earlier rule are not reused.
        "arrow_whole_output": call.fmt == "arrow",
        # A returned column also in remove_columns keeps its place among the inputs (HF's
        # order; it used to come last): a new key, so results in the old order are not reused.
        "removed_returned_in_place": bool(call.remove_columns) and call.fmt != "arrow",
    }
    defaults = dict.fromkeys(kwargs) | {
        "arrow_whole_output": False,
        "removed_returned_in_place": False,
        "batched": False,
        "with_indices": False,
        "with_rank": False,
        "drop_last_batch": False,
        "try_original_type": True,
    }
    record = transform_record(
        state_of(ds).fingerprint,
        f"arrowmix.{kind.name}",
        MAP_VERSION,
        call.function,
        kwargs,
        defaults,
    )
    return record.fingerprint, record.to_dict()


def _features_key(schema: pa.Schema | None) -> list[str] | None:
    """``map(features=...)`` in the fingerprint: the Arrow types and HF's feature JSON."""
    if schema is None:
        return None
    hf = hf_metadata(schema).get(HF_KEY, b"").decode()
    return [str(schema.remove_metadata()), hf]


def _align(ds: Dataset, call: Call) -> int:
    """The multiple that segment boundaries of ``call`` follow.

    For a batched function, multiples of ``batch_size``, so every batch the function sees is
    the one HF ``datasets`` would give it (``batch_size=None``: one batch, one segment).
    """
    if not call.batched:
        return 1
    return call.batch_size or max(num_rows(state_of(ds)), 1)


def _capped(num_proc: int | None, rows: int) -> int | None:
    """``num_proc``, at most one process per row, with HF ``datasets``' warning."""
    if num_proc is not None and num_proc > rows:
        logger.warning(
            "num_proc must be <= %d. Reducing num_proc to %d for dataset of size %d.",
            rows,
            rows,
            rows,
        )
        return rows
    return num_proc


def _rank_shards(ds: Dataset, kind: Kind, call: Call, opts: MapOptions) -> int | None:
    """HF's shard count for a ``with_rank`` call in ``num_proc > 1`` processes, else None.

    HF ``datasets`` cuts the rows into ``num_proc`` contiguous shards (at most one per row)
    and passes each shard's index as ``rank``; the segments follow the same cut.
    """
    if not call.with_rank or opts.num_proc is None or opts.num_proc <= 1:
        return None
    rows = kind.input_rows(num_rows(state_of(ds)), call)
    return max(1, min(opts.num_proc, rows))


def _joins_rows(s: Any) -> bool:
    """Whether a map result may join ``s``'s table at the rows of its view.

    Rows read in place, viewed in their stored order (a filtered view, or
    ``from_parquet(filters=...)``): the result reads them row group by row group.
    """
    arr = s.indices.array if s.indices is not None else None
    if arr is None or not map_joins(s):
        return False
    step = 1 << 20  # in blocks: bounded temporaries over a large (mapped) array
    for a in range(0, max(len(arr) - 1, 0), step):
        if not bool((np.diff(arr[a : a + step + 1]) > 0).all()):
            return False
    return True


def plan(kind: Kind, ds: Dataset, call: Call, opts: MapOptions) -> Plan:
    """The plan of ``kind`` of ``call`` on ``ds`` (``opts.cache_file_name`` already checked)."""
    record = None
    shards = _rank_shards(ds, kind, call, opts)
    if opts.new_fingerprint is not None:
        fp, key = user_fingerprint(opts.new_fingerprint)
    else:
        fp, record = _transform_fingerprint(ds, kind, call, shards)
        key = fp
    caching = is_caching_enabled() and not opts.keep_in_memory
    load = caching if opts.load_from_cache_file is None else bool(opts.load_from_cache_file)
    load = load and not opts.keep_in_memory
    user_path = opts.cache_file_name
    s = state_of(ds)
    if caching:
        directory = cache_dir(s)
    else:  # this call's own files, removed at exit; the fingerprint stays the same
        directory = temp_cache_dir()
        if user_path is None:
            key = validate_fingerprint(f"{next(_UNCACHED) % 16**8:08x}{key[:8]}")
    rows = kind.input_rows(num_rows(s), call)
    num_proc = _capped(opts.num_proc, num_rows(s))
    align = _align(ds, call)
    segments = plan_segments(rows, key, directory, user_path, align=align, shards=shards)
    # Kept columns are referenced in the parent, not stored, when the parent is a plain or
    # contiguous view of local data, or of rows read in place viewed in their stored order
    # (the result then joins them: tables.joined); remote chunks read through a bounded
    # cache cannot be referenced (the result would pin the whole corpus), so their kept
    # columns are stored.
    ix = s.indices
    zero_copy_ok = (ix is None or ix.is_range or _joins_rows(s)) and by_reference(s)
    # A file the user names holds every column (``Dataset.from_file(path)`` opens it, as in
    # HF), and so does an output cast to ``features`` (kept columns are cast too).
    zero_copy_ok = zero_copy_ok and user_path is None and call.features is None
    shipped = shipped_cache_dir(s.files) if load and user_path is None else None
    return Plan(
        job=Job(
            kind,
            ds,
            call,
            key,
            zero_copy_ok=zero_copy_ok,
            record=record,
            rank_by_segment=shards is not None,
            named_file=user_path is not None,
        ),
        fingerprint=fp,
        segments=segments,
        rows=rows,
        align=align,
        load=load,
        shipped=shipped if shipped != directory else None,
        num_proc=num_proc,
        desc=opts.desc,
        executor=opts.executor,
    )


def _shipped(p: Plan, holds: list[Any]) -> tuple[list[Found], list[Segment]] | None:
    """A complete result shipped read-only beside the corpus, read in place; else None."""
    if p.shipped is None:
        return None
    beside = plan_segments(p.rows, p.job.fingerprint, p.shipped, align=p.align)
    tables = load_complete(p.job, beside, holds)
    return None if tables is None else (tables, beside)


def run(kind: Kind, ds: Dataset, call: Call, opts: MapOptions) -> Dataset:
    """The result of ``kind`` of ``call`` on ``ds``: read from the cache or computed."""
    p = plan(kind, ds, call, opts)
    for attempt in range(_ATTEMPTS):
        holds: list[Any] = []  # the segments stay registered as in use until the result is
        found = _shipped(p, holds)
        if found is not None:
            tables, segments = found
        else:
            segments = p.segments
            tables = materialise(
                p.job,
                segments,
                load=p.load,
                num_proc=p.num_proc,
                desc=p.desc,
                executor=p.executor,
                holds=holds,
                align=p.align,
            )
        try:
            result: Dataset = kind.result(p.job, p.fingerprint, tables, segments, holds)
            return result
        except FileNotFoundError:
            # A file of the result (e.g. its indices file) was removed before it was held:
            # the next attempt finds it missing and computes it again.
            if attempt == _ATTEMPTS - 1:
                raise
        finally:
            del holds
    raise AssertionError("unreachable")  # pragma: no cover
