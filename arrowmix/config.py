"""HF ``datasets.config``'s settings that scripts read, with arrowmix's values.

Only what holds for arrowmix is here: where the cache lives, that nothing is downloaded,
HF's batch and shard defaults that arrowmix follows. Assigning a name (as scripts do with
``datasets.config.HF_DATASETS_TRUST_REMOTE_CODE = True``) changes nothing in arrowmix.
"""

from __future__ import annotations

from pathlib import Path

from arrowmix._storage.local import root_dir

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE",
    "HF_DATASETS_CACHE",
    "HF_DATASETS_OFFLINE",
    "HF_DATASETS_TRUST_REMOTE_CODE",
    "HF_HUB_OFFLINE",
    "IN_MEMORY_MAX_SIZE",
    "MAX_SHARD_SIZE",
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
