"""``StreamLoader``: the DataLoader made for an arrowmix stream (``to_torch().loader()``).

A torchdata ``StatefulDataLoader`` with the settings a stream needs and the checks a
plain one lacks:

- ``batch_size=None``: the stream yields ready batches (a DataLoader left at its default
  ``batch_size=1`` would stack each into a ``(1, B, L)`` tensor); a ``batch_size``,
  ``shuffle``, ``sampler`` or ``batch_sampler`` is refused, naming the stage that does it;
- ``load_state_dict`` refuses a state saved with another ``num_workers`` (torchdata
  fails later with an ``AssertionError``), naming both counts and the elastic resume;
- ``pipeline_stats()`` works with worker processes: each worker sends its pipeline's
  counters at most every ``stats_every`` seconds (and at its end), and the loader adds
  them up, so the usual 2-worker job can log its realised mix and padding.
"""

from __future__ import annotations

import queue
import time
import warnings
from typing import Any

import torch
from torchdata.stateful_dataloader import StatefulDataLoader  # type: ignore[import-untyped]

from arrowmix._stream.counters import flatten, rewindow
from arrowmix._stream.stats_merge import merge_stats

__all__ = ["StreamLoader"]

_REFUSED = {
    "batch_size": "the stream yields ready batches: batch rows in the pipeline "
    "(.batch(n), .budget_bucket(...), .pack(...)) and leave the loader's batch_size to None",
    "shuffle": "shuffle in the pipeline (to_stream(shuffle=...), .shuffle(buffer_size))",
    "sampler": "an IterableDataset takes no sampler: shuffle in the pipeline",
    "batch_sampler": "batch rows in the pipeline (.batch, .budget_bucket, .pack)",
}


class StreamLoader(StatefulDataLoader):  # type: ignore[misc]  # torchdata is untyped
    """A ``StatefulDataLoader`` over ``stream.to_torch()`` with a stream's settings.

    Args:
        dataset: ``stream.to_torch()``.
        num_workers: DataLoader worker processes; each reads its own share.
        stats_every: seconds between the workers' counter reports (``pipeline_stats``).
        **kwargs: other ``StatefulDataLoader`` arguments (``pin_memory``,
            ``prefetch_factor``, ``multiprocessing_context``, ``persistent_workers``...).

    Example:
        >>> import pytest; _ = pytest.importorskip("torchdata")
        >>> from arrowmix.stream import from_iterable
        >>> loader = from_iterable(range(6)).batch(2).to_torch().loader()
        >>> list(loader)
        [[0, 1], [2, 3], [4, 5]]
        >>> loader.pipeline_stats()["batch"]["rows"]
        6
    """

    def __init__(
        self, dataset: Any, num_workers: int = 0, *, stats_every: float = 1.0, **kwargs: Any
    ) -> None:
        for name, instead in _REFUSED.items():
            if kwargs.get(name) not in (None, False):
                raise TypeError(f"StreamLoader: {name}={kwargs[name]!r} is not taken: {instead}.")
            kwargs.pop(name, None)
        self._stats_queue: Any = None
        self._latest: dict[int, dict[str, Any]] = {}
        self._seen: dict[str, dict[str, Any]] = {}
        if num_workers > 0:
            context = kwargs.get("multiprocessing_context")
            if isinstance(context, str):
                context = torch.multiprocessing.get_context(context)
            self._stats_queue = (context or torch.multiprocessing).Queue()
            dataset.report_stats(self._stats_queue, stats_every)
        with warnings.catch_warnings():  # torchdata 0.11 calls torch.set_vital (deprecated)
            warnings.filterwarnings("ignore", "'set_vital' is deprecated", UserWarning)
            super().__init__(dataset, batch_size=None, num_workers=num_workers, **kwargs)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore ``state_dict()`` of a loader with the same ``num_workers``.

        Raises:
            StateError: the state was saved with another ``num_workers``; the message
                names both counts and the elastic resume.
        """
        from arrowmix.integrations.torch import check_dataloader_workers

        check_dataloader_workers(self, state_dict)
        super().load_state_dict(state_dict)

    def pipeline_stats(self, *, flat: bool = False) -> dict[str, Any]:
        """The pipeline's counters (``Stream.pipeline_stats``), summed over the workers.

        With workers, each worker's counters are as of its latest report (at most
        ``stats_every`` seconds old, and final when it ended). Counts and tokens are
        summed; ratios and ``padding_efficiency`` are recomputed from the sums;
        ``window_*`` values cover the time since the previous call.
        """
        if self._stats_queue is None:
            return self.dataset.stream.pipeline_stats(flat=flat)  # type: ignore[no-any-return]
        while True:
            try:
                worker, stats = self._stats_queue.get_nowait()
            except queue.Empty:  # nothing more has arrived
                break
            self._latest[worker] = stats
        merged = rewindow(merge_stats([self._latest[w] for w in sorted(self._latest)]), self._seen)
        return flatten(merged) if flat else merged


class ReportingIterator:
    """A worker's stream, sending its counters to the loader every ``every`` seconds.

    ``state_dict``/``load_state_dict`` are the stream's own, so checkpoints are unchanged.
    """

    def __init__(self, stream: Any, queue: Any, worker: int, every: float) -> None:
        self.stream, self.queue, self.worker, self.every = stream, queue, worker, every
        self._last = -float("inf")

    def __iter__(self) -> ReportingIterator:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self.stream)
        except StopIteration:
            self.report()
            raise
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self.report()
        return item

    def report(self) -> None:
        """Send the counters now."""
        self.queue.put((self.worker, self.stream.pipeline_stats()))

    def state_dict(self) -> Any:
        return self.stream.state_dict()

    def load_state_dict(self, state: Any) -> None:
        self.stream.load_state_dict(state)
