"""What a map worker process knows about itself: its environment and its rank.

Shared by the executors (the local process pool and Ray), which set them up, and by the
segments, which read the rank for ``with_rank``. It imports nothing of the map engine.
"""

from __future__ import annotations

import os

__all__ = ["WORKER_ENV", "prepare_worker", "set_worker_rank", "worker_rank"]

#: Environment set in worker processes (unless already set, except the tokenizer switch).
WORKER_ENV = {
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
}

_WORKER_RANK: int | None = None


def prepare_worker() -> None:
    """Set this worker process's environment: one thread per pool, no progress bars."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    for key, value in WORKER_ENV.items():
        os.environ.setdefault(key, value)
    os.environ["ARROWMIX_PROGRESS"] = "0"


def set_worker_rank(rank: int | None) -> None:
    """Record this process's index in the map's process pool."""
    global _WORKER_RANK
    _WORKER_RANK = rank


def worker_rank() -> int | None:
    """This process's index in the map's process pool (None outside a pool), for ``with_rank``."""
    return _WORKER_RANK
