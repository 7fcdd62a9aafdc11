"""A PyTorch ``IterableDataset`` over an arrowmix stream (``Stream.to_torch()``).

Each DataLoader worker (and each distributed rank, when ``torch.distributed`` is
initialised and the pipeline's sources are not sharded already) reads its own share:
the row and chunk sources of the pipeline are re-sharded in the worker, before any data
is read, so the workers of a rank see disjoint items whose union is the rank's share.

Checkpointing: ``iter(dataset)`` returns the worker's stream itself, whose
``state_dict``/``load_state_dict`` torchdata's ``StatefulDataLoader`` saves and restores
per worker; the dataset's own ``state_dict`` carries the same state. Resuming through
``StatefulDataLoader.load_state_dict`` needs the same ``num_workers`` (the shards differ
otherwise: :func:`load_dataloader_state` refuses another count with a message naming
both and the fix, and a worker given a state of another shard raises ``StateError``
naming ``num_instances``). To resume on another number of ranks or workers, collect
every worker's stream state (``worker_stream_states``) on every rank, ``merge_states``
them in instance order (rank-major) and give the result to
``dataset.load_state_dict({"stream": merged})`` of a fresh dataset and DataLoader.

The dataset class lives in :mod:`arrowmix.integrations.torch_dataset` (module level, so
it pickles for ``spawn`` and ``forkserver`` workers); ``dataset.set_epoch(e)`` makes
the next ``iter`` read epoch ``e`` (see ``Stream.set_epoch``).

With a ``budget_bucket`` stage, the stage is sharded instead of the row sources: every
worker reads the same rows and takes its own batches (equal counts).
"""

from __future__ import annotations

from typing import Any

from arrowmix._stream.base import State, Stream
from arrowmix.exceptions import StateError

__all__ = [
    "check_dataloader_workers",
    "load_dataloader_state",
    "to_torch",
    "worker_stream_states",
]

_INSTALL = "Stream.to_torch() needs PyTorch: pip install 'arrowmix[torch]'"


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


def _saved_workers(state: dict[str, Any]) -> int:
    """``num_workers`` of the DataLoader whose ``state_dict()`` this is."""
    snapshot = state.get("_snapshot")
    if snapshot is None:
        return 0
    return len(snapshot.get("_worker_snapshots", {}))


def check_dataloader_workers(dataloader: Any, state: dict[str, Any]) -> None:
    """Raise ``StateError`` when ``state`` was saved with another ``num_workers``."""
    saved, mine = _saved_workers(state), int(getattr(dataloader, "num_workers", 0))
    if saved != mine:
        raise StateError(
            f"this DataLoader state was saved with num_workers={saved}, the DataLoader has "
            f"num_workers={mine}: torchdata restores each worker's state on the worker of "
            "the same id, so it cannot load it. Use num_workers="
            f"{saved}, or resume on the new count with an elastic resume: "
            "dataset.load_state_dict({'stream': arrowmix.stream.merge_states(states)}) on a "
            "fresh dataset and DataLoader, where states are worker_stream_states(state) of "
            "every rank, concatenated in rank order."
        )


def load_dataloader_state(dataloader: Any, state: dict[str, Any]) -> None:
    """``dataloader.load_state_dict(state)``, refusing another worker count clearly.

    torchdata's ``StatefulDataLoader`` restores each worker's state on the worker of
    the same id, so the worker count must match; otherwise it fails at the next
    ``iter`` with ``AssertionError: State doesn't contain key '_num_yielded'`` (or
    ``'_snapshot'``), or each worker refuses a state of another shard.
    Use it in place of ``dataloader.load_state_dict(state)`` when resuming.

    Raises:
        StateError: the state was saved with another ``num_workers``; the message
            names both counts and how to resume anyway (``merge_states``).
    """
    check_dataloader_workers(dataloader, state)
    dataloader.load_state_dict(state)


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
        from arrowmix.integrations.torch_dataset import TorchStream
    except ImportError as exc:
        if exc.name != "torch":
            raise
        raise ImportError(_INSTALL) from exc
    return TorchStream(stream)
