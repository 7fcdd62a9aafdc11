"""What :class:`~arrowmix.IterableDataset` needs from torch, imported only when torch is.

- :func:`register_with_torch`: torch's ``IterableDataset`` is an ABC; registering our class
  makes a DataLoader treat it as iterable-style (each worker iterates its own copy) without
  arrowmix importing torch.
- :func:`epoch_cell`: the epoch in shared memory, as HF keeps it, so that ``set_epoch`` in the
  main process reaches persistent DataLoader workers.
- :func:`worker`: ``(num_workers, id)`` inside a DataLoader worker.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["epoch_cell", "register_with_torch", "worker"]

_REGISTERED: set[type] = set()


def register_with_torch(cls: type) -> None:
    """Register ``cls`` as a ``torch.utils.data.IterableDataset`` once torch is imported."""
    if cls in _REGISTERED or "torch" not in sys.modules:
        return
    import torch.utils.data

    torch.utils.data.IterableDataset.register(cls)
    _REGISTERED.add(cls)


def epoch_cell(epoch: Any) -> Any:
    """The epoch, as a tensor in shared memory once torch is imported (else the int).

    A tensor (an unpickled copy's: pickling copies it out of shared memory) is shared again.
    """
    if "torch" not in sys.modules:
        return epoch
    import torch

    if isinstance(epoch, torch.Tensor):
        return epoch.share_memory_()  # type: ignore[no-untyped-call]
    if not isinstance(epoch, int):
        return epoch
    return torch.tensor(epoch, dtype=torch.int64).share_memory_()  # type: ignore[no-untyped-call]


def worker() -> tuple[int, int] | None:
    """``(num_workers, id)`` inside a DataLoader worker, else None."""
    if "torch" not in sys.modules:
        return None
    import torch.utils.data

    info = torch.utils.data.get_worker_info()
    return None if info is None else (info.num_workers, info.id)
