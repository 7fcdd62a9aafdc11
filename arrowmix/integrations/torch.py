"""A PyTorch ``IterableDataset`` over an arrowmix stream (``Stream.to_torch()``).

Each DataLoader worker (and each distributed rank, when ``torch.distributed`` is
initialised and the pipeline's sources are not sharded already) reads its own share:
the row and chunk sources of the pipeline are re-sharded in the worker, before any data
is read, so the workers of a rank see disjoint items whose union is the rank's share.

Checkpointing: ``iter(dataset)`` returns the worker's stream itself, whose
``state_dict``/``load_state_dict`` torchdata's ``StatefulDataLoader`` saves and restores
per worker; the dataset's own ``state_dict`` carries the same state. Resuming through
``StatefulDataLoader.load_state_dict`` needs the same ``num_workers`` (the shards differ
otherwise, and loading raises ``StateError``). To resume on another number of ranks or
workers, collect every worker's stream state (``worker_stream_states``) on every rank,
``merge_states`` them in instance order (rank-major) and give the result to
``dataset.load_state_dict({"stream": merged})`` of a fresh dataset and DataLoader.

With a ``budget_bucket`` stage, the stage is sharded instead of the row sources: every
worker reads the same rows and takes its own batches (equal counts).
"""

from __future__ import annotations

from typing import Any

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import shard_points, split

__all__ = ["shardable_sources", "split_for_worker", "to_torch", "worker_stream_states"]

_INSTALL = "Stream.to_torch() needs PyTorch: pip install 'arrowmix[torch]'"


def shardable_sources(stream: Stream[Any]) -> tuple[list[Any], list[Stream[Any]]]:
    """The nodes that deal rows to workers, and the sources that cannot be sharded.

    A ``budget_bucket`` stage counts as a source: it deals the batches, so the sources
    below it stay unsharded (see :func:`arrowmix._stream.topology.shard_points`).
    """
    return shard_points(stream)


def split_for_worker(
    stream: Stream[Any], base: list[tuple[int, int]], parts: int, index: int
) -> None:
    """Re-shard ``stream``'s sources into ``parts`` and keep part ``index``.

    A source that was rank ``r`` of ``n`` becomes rank ``r + n * index`` of
    ``n * parts``: the parts are disjoint and their union is the original share.
    """
    split(stream, base, parts, index)


def _worker_split(base: list[tuple[int, int]]) -> tuple[int, int]:
    """``(parts, index)`` for this DataLoader worker and distributed rank."""
    import torch

    info = torch.utils.data.get_worker_info()
    workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
    world, rank = 1, 0
    dist = torch.distributed
    unsharded = all(n == 1 for n, _ in base)
    if unsharded and dist.is_available() and dist.is_initialized():
        world, rank = dist.get_world_size(), dist.get_rank()
    return world * workers, rank * workers + worker


def worker_stream_states(dataloader_state: dict[str, Any]) -> list[State]:
    """The stream state of every worker in a ``StatefulDataLoader.state_dict()``.

    Returns one state per DataLoader worker, ordered by worker id (a single state for
    ``num_workers=0``). Concatenate the lists of all ranks in rank order and pass them
    to :func:`arrowmix.stream.merge_states` for an elastic resume.

    Example:
        >>> snap = {"worker_1": {"worker_id": 1, "fetcher_state": {"dataset_iter_state": "b"}},
        ...         "worker_0": {"worker_id": 0, "fetcher_state": {"dataset_iter_state": "a"}}}
        >>> worker_stream_states({"_snapshot": {"_worker_snapshots": snap}})
        ['a', 'b']
    """
    snapshot = dataloader_state.get("_snapshot")
    if snapshot is None:
        entries = [dataloader_state]
    else:
        workers = snapshot["_worker_snapshots"].values()
        entries = sorted(workers, key=lambda w: int(w["worker_id"]))
    out: list[State] = []
    for entry in entries:
        state = (entry.get("fetcher_state") or {}).get("dataset_iter_state")
        if state is None:
            state = (entry.get("dataset_state") or {}).get("stream")
        if state is None:
            raise ValueError(
                "this DataLoader state holds no arrowmix stream state (was the iterator started?)."
            )
        out.append(state)
    return out


def to_torch(stream: Stream[Any]) -> Any:
    """Wrap ``stream`` as a ``torch.utils.data.IterableDataset``.

    Example:
        >>> import pytest; _ = pytest.importorskip("torch")
        >>> from arrowmix.stream import from_chunks
        >>> s = from_chunks(range(4), lambda i: [i], shuffle=False, infinite=False)
        >>> import torch
        >>> [int(x) for x in torch.utils.data.DataLoader(s.to_torch(), batch_size=None)]
        [0, 1, 2, 3]
    """
    try:
        import torch
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc

    # torch is optional: typed as Any here so the module checks with or without it.
    base: Any = torch.utils.data.IterableDataset

    class TorchStream(base):  # type: ignore[misc,unused-ignore]  # subclass of Any
        """An IterableDataset whose iterator is the worker's checkpointable stream."""

        def __init__(self, stream: Stream[Any]) -> None:
            super().__init__()
            self.stream = stream
            shardable, _ = shardable_sources(stream)
            self._base = [s.sharding for s in shardable]
            self._pending: dict[str, Any] | None = None
            self._split: tuple[int, int] | None = None

        def __iter__(self) -> Stream[Any]:
            split = _worker_split(self._base)
            if split != self._split:
                split_for_worker(self.stream, self._base, *split)
                self._split = split
            self.stream.load_state_dict(self._pending)
            self._pending = None
            return self.stream

        def state_dict(self) -> dict[str, Any]:
            started = self._split is not None
            return {"stream": self.stream.state_dict() if started else None}

        def load_state_dict(self, state: dict[str, Any]) -> None:
            self._pending = state.get("stream")

    return TorchStream(stream)
