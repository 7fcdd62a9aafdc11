"""Elastic resume of an :class:`~arrowmix.IterableDataset`: checkpoints of N readers on M.

A *reader* is one process that iterates the dataset: a node of ``split_dataset_by_node(ds,
rank, world_size)``, or a DataLoader worker of a node (reader ``rank * num_workers +
worker``). Its ``state_dict()`` says where its own pipeline stands. :func:`merge_state_dicts`
gathers the states of every old reader, in rank order, into *tasks*: one per old reader, with
its layout (``rank``, ``world_size``, ``num_workers``, ``worker``) and its stream state.

New reader ``j`` of ``T`` (``T = world_size * max(num_workers, 1)``) rebuilds, task after
task, the old reader's pipeline (the same recipe, split as the old reader's was) and resumes
it with the stream layer's elastic resume (:mod:`arrowmix._stream.elastic`) as instance
``(j - k) mod T`` of ``T``: the rows old reader ``k`` had read but not yielded (its shuffle
buffer, its batched ``map`` window) come out on one new reader, and the rows it had not read
yet are dealt round-robin to all ``T``. So the rest of the epoch is shared evenly. A pipeline
the stream layer cannot re-deal, or whose rows would change if re-dealt (``take``, ``skip``,
``repeat``, ``with_indices``, ``drop_last_batch``, interleaves, generators,
``split_dataset_by_node`` by examples) is resumed whole instead:
new reader ``j`` finishes old readers ``j, j + T, ...``. Either way every row of the epoch
comes out exactly once over the old readers (before the checkpoint) and the new ones (after
it); then the epoch ends, and the next (``set_epoch(e + 1)``) is read with the new layout.

A checkpoint taken during those tasks resumes on the same reader. A list of them resizes
again, unless a task is still being dealt across readers (finish the epoch first).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arrowmix.exceptions import ElasticResumeError

__all__ = [
    "ELASTIC_KEY",
    "check_state",
    "dealt_plan",
    "MERGED_KEY",
    "ElasticTasks",
    "merge_state_dicts",
    "reader_of",
    "tasks_to_run",
]

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
        return [copy.deepcopy(t) for t in state[ELASTIC_KEY]]  # regathered by merge
    layout = dict(zip(LAYOUT_KEYS, (rank, world, workers, worker), strict=True))
    stream = copy.deepcopy(state["stream"])
    return [{**layout, "epoch": int(state.get("epoch", 0)), "stream": stream}]


def check_state(state_dict: Any) -> Mapping[str, Any]:
    """``state_dict`` if it is an ``IterableDataset`` state (merged or not); else a ValueError."""
    if not isinstance(state_dict, Mapping) or not (
        "stream" in state_dict or MERGED_KEY in state_dict
    ):
        raise ValueError(
            "load_state_dict expects a state of IterableDataset.state_dict() "
            "({'epoch': ..., 'stream': ...}), or the list of every node's state."
        )
    epoch = state_dict.get("epoch", 0)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise ValueError(
            f"load_state_dict: the state's `epoch` must be an int >= 0, got {epoch!r} "
            "(a state of IterableDataset.state_dict() was changed or damaged)."
        )
    return state_dict


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
    epochs: set[int] = set()
    for rank, entry in enumerate(states):
        per_worker: list[Any] | None
        if isinstance(entry, Mapping):
            per_worker = _worker_states(entry)
            if per_worker is None and "dataset_state" in entry:
                entry = entry["dataset_state"]
        else:
            per_worker = list(entry)
        if per_worker is None:
            per_worker, workers = [entry], 0
        else:
            workers = len(per_worker)
        for worker, state in enumerate(per_worker):
            tasks += _tasks_of(state, rank, world, workers, worker)
            epochs.add(int(state.get("epoch", 0)))
    plain = [t for t in tasks if "share" not in t]
    tasks = plain + _regathered([t for t in tasks if "share" in t])
    for k, task in enumerate(tasks):
        task["id"] = k
    if len(epochs) > 1:
        raise ValueError(
            f"merge_state_dicts: the states are of different epochs {sorted(epochs)}; "
            "checkpoint every node at the same step."
        )
    return {"epoch": epochs.pop(), MERGED_KEY: tasks}


#: Recipe stages whose rows depend on one reader's count: re-dealt, they would yield other rows.
_WHOLE_KINDS = ("skip", "take", "repeat", "step")


def dealt_plan(node: Any, total: int, rank: int) -> Any:
    """Recipe ``node`` with its rows dealt as instance ``rank`` of ``total``.

    Raises:
        ElasticResumeError: a stage of the recipe cannot be re-dealt (see the module).
    """
    from dataclasses import replace

    from arrowmix._hf.iterable_plan import Op, Source

    if isinstance(node, Source):
        return replace(node, instances=(total, rank))
    if isinstance(node, Op):
        p = node.params
        if node.kind in _WHOLE_KINDS or p.get("with_indices") or p.get("drop_last_batch"):
            raise ElasticResumeError(f"an IterableDataset {node.kind} is resumed whole")
        return replace(node, parent=dealt_plan(node.parent, total, rank))
    raise ElasticResumeError(f"{type(node).__name__} is resumed whole")


def reader_of(
    distributed: tuple[int, int, str] | None, worker: tuple[int, int] | None
) -> tuple[int, int]:
    """``(j, T)``: this reader's index among all readers, rank-major."""
    rank, world = (0, 1) if distributed is None else distributed[:2]
    workers, index = (1, 0) if worker is None else worker
    return rank * workers + index, world * workers


class ElasticTasks:
    """The rows a reader has left of its tasks, one old reader's pipeline after the other.

    ``open(task, dealt)`` gives the old reader's stream resumed for this reader (``dealt``:
    its share of the old reader's rows; else the whole), or None when there is nothing to
    read. ``state_dict()`` is ``{"epoch": e, "stream": None, "elastic": tasks}``.
    """

    def __init__(
        self, tasks: list[dict[str, Any]], epoch: int, open_task: Callable[..., Any]
    ) -> None:
        self.tasks, self.epoch, self.open = [dict(t) for t in tasks], epoch, open_task
        self.at = 0
        self.current: Any = None

    def __iter__(self) -> ElasticTasks:
        return self

    def _start(self, task: dict[str, Any]) -> Any:
        rank = task["share"][1]
        if task["mode"] is None:
            try:
                stream = self.open(task, dealt=True)
                task["mode"] = "dealt"
                return stream
            except ElasticResumeError:
                task["mode"] = "whole" if rank == 0 else "skip"
        if task["mode"] == "skip":
            return None
        return self.open(task, dealt=task["mode"] == "dealt")

    def __next__(self) -> Any:
        while self.at < len(self.tasks):
            task = self.tasks[self.at]
            if self.current is None and not task["done"]:
                self.current = self._start(task)
                task["started"] = True
            if self.current is not None:
                try:
                    return next(self.current)
                except StopIteration:
                    task["stream"] = self.current.state_dict()
            task["done"], self.current = True, None
            self.at += 1
        raise StopIteration

    def state_dict(self) -> dict[str, Any]:
        tasks = copy.deepcopy(self.tasks)
        if self.current is not None:
            tasks[self.at]["stream"] = self.current.state_dict()
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
    return [
        {**task, "share": [total, (j - k) % total], "mode": None, "started": False, "done": False}
        for k, task in enumerate(state[MERGED_KEY])
    ]


def _regathered(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks of readers of an earlier resize, as fresh tasks for another one.

    Raises:
        ValueError: a task is being dealt across readers and is not over.
    """
    groups: dict[int, list[dict[str, Any]]] = {}
    for t in tasks:
        groups.setdefault(int(t["id"]), []).append(t)
    fresh = []
    for _, group in sorted(groups.items()):
        dealt = [t for t in group if t["mode"] == "dealt"]
        if dealt:
            if not all(t["done"] for t in group):
                raise ValueError(
                    "merge_state_dicts: the readers are still sharing an earlier reader's rows "
                    "(an elastic resume in progress); resume on the same layout until the "
                    "epoch ends, then resize."
                )
            continue
        whole = [t for t in group if t["mode"] == "whole"]
        if whole and whole[0]["done"]:
            continue
        base = whole[0] if whole else group[0]
        fresh.append({k: base[k] for k in (*LAYOUT_KEYS, "epoch", "stream")})
    return fresh
