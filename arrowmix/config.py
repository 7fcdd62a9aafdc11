"""HF ``datasets.config``'s settings that scripts read, with arrowmix's values.

Only what holds for arrowmix is here: where the cache lives, that nothing is downloaded,
HF's batch and shard defaults that arrowmix follows. Assigning a name (as scripts do with
``datasets.config.HF_DATASETS_TRUST_REMOTE_CODE = True``) changes nothing in arrowmix.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any

from arrowmix._storage.local import root_dir

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE",
    "HF_DATASETS_CACHE",
    "HF_DATASETS_OFFLINE",
    "HF_DATASETS_TRUST_REMOTE_CODE",
    "HF_HUB_OFFLINE",
    "HF_HUB_VERSION",
    "IN_MEMORY_MAX_SIZE",
    "MAX_SHARD_SIZE",
    "POLARS_AVAILABLE",
    "TORCH_AVAILABLE",
]

#: The arrowmix cache root at import (``$ARROWMIX_CACHE`` or ``~/.cache/arrowmix``).
HF_DATASETS_CACHE = Path(root_dir())
#: arrowmix never downloads: always offline.
HF_DATASETS_OFFLINE = True
HF_HUB_OFFLINE = True
#: No dataset scripts are run.
HF_DATASETS_TRUST_REMOTE_CODE = False
#: ``map``'s default ``batch_size``, as HF's.
DEFAULT_MAX_BATCH_SIZE = 1000
#: ``save_to_disk``'s and ``to_hub_folder``'s default shard size, as HF's.
MAX_SHARD_SIZE = "500MB"
#: HF copies a dataset into memory below this size; 0 (never), as HF's default.
IN_MEMORY_MAX_SIZE = 0


def _version(dist: str) -> Any:
    """``dist``'s installed version as a ``packaging`` ``Version`` (HF's), None without it."""
    try:
        from packaging.version import Version

        return Version(importlib.metadata.version(dist))
    except (ImportError, importlib.metadata.PackageNotFoundError):
        return None


#: The installed ``huggingface_hub``'s version (None when absent); arrowmix does not use it.
HF_HUB_VERSION = _version("huggingface_hub")
#: Whether these libraries are installed (for the formats of the same names), as HF's flags.
TORCH_AVAILABLE = importlib.util.find_spec("torch") is not None
POLARS_AVAILABLE = importlib.util.find_spec("polars") is not None
