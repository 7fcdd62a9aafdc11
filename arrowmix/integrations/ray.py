"""Ray integration: ``map``/``filter`` on a Ray cluster, and Ray Data conversions.

- :class:`RayExecutor` (``ds.map(fn, executor="ray")``) runs the missing cache segments of a
  map or filter as Ray tasks. Each task writes its segment to the dataset's cache directory
  exactly as a local worker process would (same file names, metadata and atomic rename), so
  fingerprints, cache hits and resuming after a crash do not depend on where segments were
  computed. Tasks do not receive the data: the input table is described by reference (file,
  record batch, column, slice; ``arrowmix._storage.mapped``) and each task reopens the files,
  memory-mapped. Only a dataset built in memory (``from_dict``...) is put in the object store.
  Across machines the files and the cache directory must be on shared storage, under the same
  path on every node.
- :func:`to_ray` / :func:`from_ray` convert to and from ``ray.data.Dataset``.

Ray is imported on first use; ``pip install 'ray[data]'``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._cache.segments import Segment
from arrowmix._dataset.state import state_of, view_range
from arrowmix._storage.mapped import TableRef, table_ref

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._dataset.indices import IndexMap

__all__ = ["RayExecutor", "from_ray", "to_ray"]

logger = logging.getLogger("arrowmix")

_INSTALL = "arrowmix's Ray integration needs Ray: pip install 'ray[data]'"
_BLOCK_BYTES = 128 * 2**20
_SETTLE_TIMEOUT = 60.0
_REMOTE: Any = None
#: The input last opened by this (worker) process: later segments of the same map reuse it.
_OPENED: dict[Any, Dataset] = {}


def _ray() -> Any:
    if importlib.util.find_spec("ray") is None:
        raise ImportError(_INSTALL)
    import ray

    return ray


@dataclass(frozen=True)
class _Source:
    """What a task needs to rebuild the input dataset: references, not data."""

    fingerprint: str
    table: Any  # TableRef, or an ObjectRef of the table when it lives in memory
    indices: IndexMap | None  # a range mapping (small), or None
    indices_array: Any  # ObjectRef of the int64 positions of an array mapping, or None
    files: tuple[str, ...]
    indices_file: str | None
    #: fsspec options: tasks write segments to a remote cache directory with them.
    storage_options: Any = None

    def key(self) -> Any:
        table = self.table if isinstance(self.table, TableRef) else self.table.hex()
        ix = self.indices_array.hex() if self.indices_array is not None else self.indices
        return (self.fingerprint, table, ix, self.files, self.indices_file)

    def open(self, ray: Any) -> Dataset:
        """The input dataset, reopened (or reused from this process's last task)."""
        key = self.key()
        if key in _OPENED:
            return _OPENED[key]
        from arrowmix._dataset.dataset import Dataset, DatasetState
        from arrowmix._dataset.indices import IndexMap

        table = self.table.open() if isinstance(self.table, TableRef) else ray.get(self.table)
        indices = self.indices
        if self.indices_array is not None:
            indices = IndexMap(array=ray.get(self.indices_array))
        state = DatasetState(
            table=table,
            fingerprint=self.fingerprint,
            files=self.files,
            indices=indices,
            indices_file=self.indices_file,
            storage_options=self.storage_options,
        )
        _OPENED.clear()
        _OPENED[key] = Dataset(state)
        return _OPENED[key]


def _source(ray: Any, ds: Dataset) -> _Source:
    s = state_of(ds)
    table: Any = table_ref(s.table) if isinstance(s.table, pa.Table) else None
    if table is None:
        logger.info(
            "Dataset %s is not backed by memory-mapped files only: its table (%d bytes) goes "
            "through the Ray object store.",
            s.fingerprint,
            s.table.nbytes,
        )
        table = ray.put(s.table)
    ix = s.indices
    array = ray.put(ix.array) if ix is not None and ix.array is not None else None
    return _Source(
        fingerprint=s.fingerprint,
        table=table,
        indices=ix if array is None else None,
        indices_array=array,
        files=s.files,
        indices_file=s.indices_file,
        storage_options=s.storage_options,
    )


def _segment_task(payload: tuple[Any, ...], seg: Segment) -> int:
    """Run in a Ray worker: rebuild the job around the reopened input, compute one segment."""
    from arrowmix._dataset.mapping.jobs import Job
    from arrowmix._dataset.mapping.worker import prepare_worker

    prepare_worker()
    fn, kind, call, fingerprint, zero_copy_ok, record, source = payload
    ds = source.open(_ray())
    fn(Job(kind, ds, call, fingerprint, zero_copy_ok, record), seg, lambda n: None)
    return seg.num_input_rows


def _remote(ray: Any) -> Any:
    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(_segment_task)
    return _REMOTE


class RayExecutor:
    """Run map/filter segments as Ray tasks (``executor="ray"`` is ``RayExecutor()``).

    One of the two implementations of the map engine's ``Executor`` protocol
    (``arrowmix._dataset.mapping.execute``); the local process pool is the other.

    Uses the Ray cluster this process is connected to (``ray.init()`` first; Ray starts a
    local one otherwise). ``num_proc`` of the map caps the tasks in flight (default: every
    missing segment at once; Ray queues them by their CPU request).

    Args:
        num_cpus: CPUs each task requests.
        **options: more ``ray.remote`` options for the tasks (``memory``, ``resources``,
            ``scheduling_strategy``, ``max_retries``...).
    """

    def __init__(self, num_cpus: float = 1, **options: Any) -> None:
        _ray()  # fail now, with the install hint, rather than at the first map
        self.options = {"num_cpus": num_cpus, **options}

    def __repr__(self) -> str:
        return f"RayExecutor({self.options})"

    def run_segments(
        self,
        fn: Callable[..., None],
        job: Any,
        segments: Sequence[Segment],
        num_proc: int | None,
        *,
        on_segment: Callable[[int], None],
    ) -> None:
        """Compute every segment in a Ray task; re-raise the first failure of the function."""
        ray = _ray()
        source = _source(ray, job.ds)
        payload = ray.put(
            (fn, job.kind, job.call, job.fingerprint, job.zero_copy_ok, job.record, source)
        )
        task = _remote(ray).options(**self.options)
        limit = num_proc or len(segments)
        todo = list(segments)
        running: dict[Any, Segment] = {}
        try:
            while todo or running:
                while todo and len(running) < limit:
                    seg = todo.pop(0)
                    running[task.remote(payload, seg)] = seg
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    seg = running.pop(ref)
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayTaskError as err:
                        raise _user_error(err, seg) from None
                    on_segment(seg.num_input_rows)
        except BaseException:
            _settle(ray, list(running))
            raise


def _user_error(err: Any, seg: Segment) -> BaseException:
    """The user function's own exception (type, message, notes) out of a ``RayTaskError``."""
    cause = getattr(err, "cause", None)
    if not isinstance(cause, Exception):
        return err  # type: ignore[no-any-return]  # a Ray failure, not the function's
    trace = getattr(err, "traceback_str", "") or ""
    note = f"arrowmix: raised in a Ray task computing segment {seg.index} of {seg.count}"
    text = f"{note}; remote traceback:\n{trace}" if trace else note
    notes = [*getattr(cause, "__notes__", []), text]
    cause.__notes__ = notes  # type: ignore[attr-defined]  # add_note, also on Python 3.10
    return cause


def _settle(ray: Any, refs: list[Any]) -> None:
    """Cancel the other tasks and wait until they stopped (no writer left behind)."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref)
    if refs:
        with contextlib.suppress(Exception):
            ray.wait(refs, num_returns=len(refs), timeout=_SETTLE_TIMEOUT)


def to_ray(ds: Dataset, *, rows_per_block: int | None = None) -> Any:
    """``ds`` as a ``ray.data.Dataset`` of Arrow blocks, in the same row order.

    Contiguous views are sliced out of the memory-mapped table without copying; other views
    are gathered block by block. Ray copies each block into its object store once.

    Args:
        ds: the dataset (its format is ignored: Ray Data blocks are Arrow tables).
        rows_per_block: rows per Ray block; default about 128 MiB of data per block.
    """
    ray = _ray()
    n = len(ds)
    if rows_per_block is None:
        nbytes = state_of(ds).table.nbytes
        per_row = nbytes / max(state_of(ds).table.num_rows, 1)
        rows_per_block = max(1, int(_BLOCK_BYTES // max(per_row, 1.0)))
    if rows_per_block <= 0:
        raise ValueError(f"`rows_per_block` must be a positive int, got {rows_per_block!r}.")
    tables = [
        view_range(state_of(ds), lo, min(n, lo + rows_per_block)).replace_schema_metadata(None)
        for lo in range(0, n, rows_per_block)
    ] or [view_range(state_of(ds), 0, 0).replace_schema_metadata(None)]
    return ray.data.from_arrow(tables)


@contextlib.contextmanager
def _ordered(ray_ds: Any) -> Iterator[None]:
    """Make Ray keep the dataset's block order while it executes (restored afterwards)."""
    options = getattr(getattr(ray_ds, "context", None), "execution_options", None)
    if options is None:
        yield
        return
    before = options.preserve_order
    options.preserve_order = True
    try:
        yield
    finally:
        options.preserve_order = before


def from_ray(ray_ds: Any, *, cache_dir: str | None = None) -> Dataset:
    """Materialise a ``ray.data.Dataset`` into arrowmix chunk files and open them.

    The blocks are streamed in order (Ray's ``preserve_order`` is set while the dataset
    executes; memory holds a few blocks at a time) into chunk files (``write_chunks``) in
    ``<cache_dir>/from_ray-<fingerprint>/``, named by their content: converting the same data
    again reuses the directory. The result is memory-mapped.

    Args:
        ray_ds: the Ray dataset.
        cache_dir: where the chunk directory goes; default ``<cache root>/from_ray``.

    Raises:
        ValueError: the Ray dataset is empty and its schema is not an Arrow schema.
    """
    from arrowmix._cache.paths import cache_root
    from arrowmix._dataset.inputs.builders import from_arrow, from_chunks, write_chunks

    _ray()
    root = os.path.abspath(cache_dir or os.path.join(cache_root(), "from_ray"))
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="tmp-from_ray-", dir=root)
    try:
        with _ordered(ray_ds):
            blocks = ray_ds.iter_batches(batch_size=None, batch_format="pyarrow")
            files = write_chunks((b for t in blocks for b in t.to_batches() if b.num_rows), tmp)
        if not files:
            schema = getattr(ray_ds.schema(), "base_schema", None)
            if not isinstance(schema, pa.Schema):
                raise ValueError(
                    f"`from_ray` got an empty Ray dataset whose schema {schema!r} is not Arrow."
                )
            return from_arrow(schema.empty_table())
        final = os.path.join(root, f"from_ray-{from_chunks(tmp).fingerprint}")
        if not os.path.isdir(final):
            with contextlib.suppress(OSError):  # a concurrent conversion won: use its files
                os.rename(tmp, final)
        return from_chunks(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
