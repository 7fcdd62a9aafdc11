"""The ``IterableDataset`` class of ``Stream.to_torch()`` (imports torch).

Defined at module level so that it pickles by reference: DataLoader workers started
with ``spawn`` or ``forkserver`` (the default on macOS and Windows, and on Linux from
Python 3.14) receive the dataset pickled, i.e. the stream's configuration and state.
"""

from __future__ import annotations

import sys
from multiprocessing.context import get_spawning_popen
from typing import Any

import torch

from arrowmix._stream.base import State, Stream
from arrowmix._stream.topology import check_sharding, shard_points, split, stage_name
from arrowmix.exceptions import StateError

__all__ = ["TorchStream"]

_IterableDataset: Any = torch.utils.data.IterableDataset


def _worker_split(base: list[tuple[int, int]]) -> tuple[int, int]:
    """``(parts, index)`` for this DataLoader worker and distributed rank."""
    info = torch.utils.data.get_worker_info()
    workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
    world, rank = 1, 0
    dist = torch.distributed
    unsharded = all(n == 1 for n, _ in base)
    if unsharded and dist.is_available() and dist.is_initialized():
        world, rank = dist.get_world_size(), dist.get_rank()
    check_sharding(world * workers, rank * workers + worker)
    return world * workers, rank * workers + worker


#: Stages whose items are whole batches; ``prefetch``/``take`` pass them through.
_BATCHING = frozenset({"batch", "bucket", "budget_bucket", "collate", "pack"})
_PASSING = frozenset({"prefetch", "take"})


def _yields_batches(stream: Stream[Any]) -> bool:
    node: Any = stream
    while stage_name(node) in _PASSING and len(node.children()) == 1:
        node = node.children()[0]
    return stage_name(node) in _BATCHING


def _refuse_loader_batching(stream: Stream[Any]) -> None:
    """Refuse a DataLoader that would stack this stream's batches into ``(k, B, L)``.

    Looks at the caller of ``iter(dataset)``: torch's iterable fetcher, whose
    ``auto_collation`` is true when the DataLoader has a ``batch_size``.
    """
    caller: Any = sys._getframe(2).f_locals.get("self")
    if type(caller).__name__ != "_IterableDatasetFetcher" or not caller.auto_collation:
        return
    if _yields_batches(stream):
        raise ValueError(
            f"this stream yields batches ({stage_name(stream)}), and the DataLoader has a "
            "batch_size (its default is 1), so it would stack each batch into a "
            "(batch_size, B, L) tensor. Pass batch_size=None to the DataLoader, or use "
            "stream.to_torch().loader(num_workers=...), which sets it."
        )


class TorchStream(_IterableDataset):  # type: ignore[misc]  # torch's class is untyped here
    """An IterableDataset whose iterator is the worker's checkpointable stream.

    Args:
        stream: the pipeline; every DataLoader worker (and rank) reads its own share.
    """

    def __init__(self, stream: Stream[Any]) -> None:
        super().__init__()
        self.stream = stream
        points, _ = shard_points(stream)
        self._base = [tuple(p.sharding) for p in points]
        self._pending: State | None = None
        self._split: tuple[int, int] | None = None
        self._epoch: int | None = None
        self._report: tuple[Any, float] | None = None

    def report_stats(self, queue: Any, every: float) -> None:
        """Have each worker send ``(worker id, pipeline_stats())`` to ``queue`` (``every`` s)."""
        self._report = (queue, every)

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if get_spawning_popen() is None:  # a queue travels only to a worker being started
            d["_report"] = None
        return d

    def loader(self, num_workers: int = 0, **kwargs: Any) -> Any:
        """A ``StreamLoader`` over this dataset (needs torchdata): see its docs.

        ``batch_size=None`` (the stream yields batches), ``load_state_dict`` checks the
        worker count, and ``pipeline_stats()`` adds up the workers' counters.
        """
        from arrowmix.integrations.torch_loader import StreamLoader

        return StreamLoader(self, num_workers, **kwargs)

    def set_epoch(self, epoch: int) -> None:
        """Read epoch ``epoch`` next (finite streams reshuffle per epoch; see ``Stream``)."""
        self.stream.set_epoch(epoch)  # validates
        self._epoch = epoch
        self._pending = None

    def __iter__(self) -> Any:
        _refuse_loader_batching(self.stream)
        split_ = _worker_split(self._base)
        if split_ != self._split:
            split(self.stream, self._base, *split_)
            self._split = split_
        if self._pending is None and self._epoch is not None:
            self.stream.set_epoch(self._epoch)
        else:
            try:
                self.stream.load_state_dict(self._pending)
            except StateError as exc:
                raise StateError(f"DataLoader worker {split_[1]} of {split_[0]}: {exc}") from exc
        self._pending = None
        info = torch.utils.data.get_worker_info()
        if self._report is not None and info is not None:
            from arrowmix.integrations.torch_loader import ReportingIterator

            return ReportingIterator(self.stream, self._report[0], info.id, self._report[1])
        return self.stream

    def state_dict(self) -> dict[str, Any]:
        """``{"stream": <the stream's state_dict>}`` of the stream iterated in this process.

        Raises:
            StateError: the dataset was not iterated in this process. A plain
                ``DataLoader`` with ``num_workers > 0`` iterates copies of it in its
                worker processes, whose progress this object cannot see: checkpoint
                with torchdata's ``StatefulDataLoader`` instead (its ``state_dict``
                collects every worker's), or use ``num_workers=0``.
        """
        if self._split is None:
            raise StateError(
                "this to_torch() dataset has not been iterated in this process, so it has "
                "no position to save. A plain torch DataLoader with num_workers > 0 "
                "iterates copies of it in its worker processes: checkpoint with "
                "torchdata's StatefulDataLoader(s.to_torch(), ...) and its "
                "loader.state_dict() (resume with "
                "arrowmix.integrations.torch.load_dataloader_state), or use num_workers=0. "
                "Nothing read yet? Save nothing: a fresh dataset starts at the beginning."
            )
        return {"stream": self.stream.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from ``state_dict()`` (or a ``merge_states`` bundle) at the next ``iter``."""
        self._pending = state.get("stream")
