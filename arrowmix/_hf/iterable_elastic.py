"""Elastic resume of an :class:`~arrowmix.IterableDataset`: checkpoints of N readers on M.

A *reader* (an instance) is one process that iterates the dataset: a node of
``split_dataset_by_node(ds, rank, world_size)``, or a DataLoader worker of a node. Its
``state_dict()`` says where its own pipeline stands. :func:`merge_state_dicts` gathers the
states of every old reader, in rank order, into *tasks*: one per old reader, with its layout
(``rank``, ``world_size``, ``num_workers``, ``worker``) and its stream state. Loading the
merged state on a dataset split for another ``world_size`` (or read by another number of
workers) deals the tasks round-robin: new reader ``j`` of ``T`` (``T = world_size *
max(num_workers, 1)``, ``j = rank * max(num_workers, 1) + worker``) takes tasks ``j, j + T,
...``. For each task it rebuilds the old reader's pipeline (the same recipe, split as the old
reader's was), restores its state and yields every row that reader had left in the epoch,
its shuffle buffer and batched ``map`` windows included. Then its epoch ends; the next epoch
(``set_epoch(e + 1)``) is read with the new layout, as HF splits it.

So every row of the interrupted epoch comes out exactly once over the old readers (before the
checkpoint) and the new ones (after it), with every stage (``map``, ``filter``, shuffle
buffer, ``take``/``skip`` with their per-reader counts, ``batch``, interleaves). The cost: the
rest of the epoch is shared by old reader, so the new readers' row counts differ when ``T``
does not divide the number of old readers (a new reader beyond them reads nothing until the
epoch ends).

A checkpoint taken during those tasks holds the tasks left (the current one at its live
state): it resumes on the same reader, and merged again it resizes again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "ELASTIC_KEY",
    "MERGED_KEY",
    "ElasticTasks",
    "merge_state_dicts",
    "reader_of",
    "tasks_to_run",
]

logger = logging.getLogger(__name__)

MERGED_KEY = "merged"  # a merged state: the tasks of every old reader, to deal
ELASTIC_KEY = "elastic"  # one reader's state while it runs its tasks
LAYOUT_KEYS = ("rank", "world_size", "num_workers", "worker")


def _worker_states(entry: Mapping[str, Any]) -> list[Any] | None:
    """The dataset states of a ``StatefulDataLoader.state_dict()``, in worker order, or None."""
    snapshot = entry.get("_snapshot")
    if isinstance(snapshot, Mapping):
        workers = sorted(snapshot["_worker_snapshots"].values(), key=lambda w: int(w["worker_id"]))
        return [w.get("dataset_state") for w in workers]
    return None  # num_workers=0: the state is under "dataset_state"


def _tasks_of(state: Any, rank: int, world: int, workers: int, worker: int) -> list[dict[str, Any]]:
    where = f"states[{rank}]" + (f"[{worker}]" if workers else "")
    if not isinstance(state, Mapping) or not (
        "stream" in state or ELASTIC_KEY in state or MERGED_KEY in state
    ):
        raise ValueError(
            f"merge_state_dicts: {where} is not a state of IterableDataset.state_dict() "
            f"(or of a StatefulDataLoader): {state!r:.80}."
        )
    if MERGED_KEY in state:
        raise ValueError(f"merge_state_dicts: {where} is already merged; load it first.")
    if ELASTIC_KEY in state:  # a reader of an earlier resize, still on its tasks
        return [copy.deepcopy(t) for t in state[ELASTIC_KEY]]
    layout = dict(zip(LAYOUT_KEYS, (rank, world, workers, worker), strict=True))
    stream = copy.deepcopy(state["stream"])
    return [{**layout, "epoch": int(state.get("epoch", 0)), "stream": stream}]


def merge_state_dicts(states: Sequence[Any]) -> dict[str, Any]:
    """One state that any number of nodes and DataLoader workers can load (elastic resume).

    Args:
        states: one entry per node, in rank order: the node's ``IterableDataset.state_dict()``,
            or its ``StatefulDataLoader.state_dict()``, or the list of its DataLoader
            workers' ``state_dict()`` in worker order. Without ``split_dataset_by_node``,
            one entry.

    Returns:
        ``{"epoch": e, "merged": [task, ...]}``, JSON-serialisable: load it with
        ``load_state_dict`` on every new reader (see :mod:`arrowmix._hf.iterable_elastic`).
    """
    if isinstance(states, Mapping) or not isinstance(states, Sequence) or not states:
        raise ValueError("merge_state_dicts expects a non-empty list: one state per node.")
    world = len(states)
    tasks: list[dict[str, Any]] = []
    for rank, entry in enumerate(states):
        per_worker: list[Any] | None
        if isinstance(entry, Mapping):
            per_worker = _worker_states(entry)
            if per_worker is None and "dataset_state" in entry:
                entry = entry["dataset_state"]
        else:
            per_worker = list(entry)
        if per_worker is None:
            tasks += _tasks_of(entry, rank, world, 0, 0)
            continue
        for worker, state in enumerate(per_worker):
            tasks += _tasks_of(state, rank, world, len(per_worker), worker)
    epochs = sorted({t["epoch"] for t in tasks})
    if len(epochs) > 1:
        raise ValueError(
            f"merge_state_dicts: the states are of different epochs {epochs}; checkpoint every "
            "node at the same step."
        )
    return {"epoch": epochs[0], MERGED_KEY: tasks}


def reader_of(
    distributed: tuple[int, int, str] | None, worker: tuple[int, int] | None
) -> tuple[int, int]:
    """``(j, T)``: this reader's index among all readers, rank-major."""
    rank, world = (0, 1) if distributed is None else distributed[:2]
    workers, index = (1, 0) if worker is None else worker
    return rank * workers + index, world * workers


class ElasticTasks:
    """The rows a reader has left of its tasks, one old reader's pipeline after the other.

    ``build(task)`` gives the old reader's stream, its state loaded (or None when that reader
    had no rows). ``state_dict()`` is ``{"epoch": e, "stream": None, "elastic": tasks}``, the
    current task at its live state.
    """

    def __init__(
        self, tasks: list[dict[str, Any]], epoch: int, build: Callable[[dict[str, Any]], Any]
    ) -> None:
        self.tasks, self.epoch, self.build = [dict(t) for t in tasks], epoch, build
        self.current: Any = None

    def __iter__(self) -> ElasticTasks:
        return self

    def __next__(self) -> Any:
        while self.tasks:
            if self.current is None:
                self.current = self.build(self.tasks[0])
                if self.current is None:
                    self.tasks.pop(0)
                    continue
            try:
                return next(self.current)
            except StopIteration:
                self.current = None
                self.tasks.pop(0)
        raise StopIteration

    def state_dict(self) -> dict[str, Any]:
        tasks = copy.deepcopy(self.tasks)
        if tasks and self.current is not None:
            tasks[0]["stream"] = self.current.state_dict()
        return {"epoch": self.epoch, "stream": None, ELASTIC_KEY: tasks}


def tasks_to_run(
    state: Mapping[str, Any],
    distributed: tuple[int, int, str] | None,
    worker: tuple[int, int] | None,
) -> list[dict[str, Any]] | None:
    """The tasks this reader runs for a loaded ``state``, or None for a plain state."""
    if ELASTIC_KEY in state:
        return list(state[ELASTIC_KEY])
    if MERGED_KEY not in state:
        return None
    j, total = reader_of(distributed, worker)
    mine = list(state[MERGED_KEY])[j::total]
    if not mine:
        logger.warning(
            "reader %d of %d gets no rows of the resumed epoch: the checkpoint holds %d "
            "readers; it reads again from the next epoch (set_epoch).",
            j,
            total,
            len(state[MERGED_KEY]),
        )
    return mine
