"""arrowmix: cached Arrow preprocessing and checkpointable training streams.

Example:
    >>> import arrowmix as am
    >>> ds = am.Dataset.from_dict({"text": ["a", "bb", "ccc"]})
    >>> ds.shuffle(seed=0).select([0, 1]).num_rows
    2
"""

from arrowmix._cache.paths import disable_caching, enable_caching, is_caching_enabled
from arrowmix._dataset.column import Column
from arrowmix._dataset.dataset import Dataset
from arrowmix._dataset.inputs.builders import write_chunks
from arrowmix._dataset.inputs.token_corpus import from_megatron, from_token_file
from arrowmix._fingerprint.pickler import register_fingerprint
from arrowmix._fingerprint.record import FingerprintRecord
from arrowmix._fingerprint.record import explain as explain_fingerprint
from arrowmix._hf.dataset_dict import DatasetDict
from arrowmix._hf.interleave import interleave_datasets
from arrowmix._hf.iterable import IterableDataset
from arrowmix._hf.iterable_concat import concatenate_datasets
from arrowmix._hf.iterable_dict import IterableDatasetDict
from arrowmix._hf.load import load_dataset
from arrowmix._hf.load_inspect import (
    get_dataset_config_names,
    get_dataset_default_config_name,
    get_dataset_split_names,
)
from arrowmix._hf.saved import load_from_disk
from arrowmix._hf.split_by_node import split_dataset_by_node
from arrowmix._version import __version__
from arrowmix.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

# HF's older names and its ``datasets.logging``: attributes, left out of ``__all__``.
from arrowmix.utils import disable_progress_bar as disable_progress_bar
from arrowmix.utils import enable_progress_bar as enable_progress_bar
from arrowmix.utils import is_progress_bar_enabled as is_progress_bar_enabled
from arrowmix.utils import logging as logging

__all__ = [
    "Column",
    "Dataset",
    "DatasetDict",
    "FingerprintRecord",
    "IterableDataset",
    "IterableDatasetDict",
    "__version__",
    "are_progress_bars_disabled",
    "concatenate_datasets",
    "disable_caching",
    "disable_progress_bars",
    "enable_caching",
    "enable_progress_bars",
    "explain_fingerprint",
    "from_megatron",
    "from_token_file",
    "get_dataset_config_names",
    "get_dataset_default_config_name",
    "get_dataset_split_names",
    "interleave_datasets",
    "is_caching_enabled",
    "load_dataset",
    "load_from_disk",
    "register_fingerprint",
    "split_dataset_by_node",
    "write_chunks",
]


def __getattr__(name: str) -> object:
    """HF ``datasets``' feature classes (``am.Features``, ``am.Value``...) and ``am.config``.

    The feature classes are HF's own (arrowmix describes columns with them), imported on
    first use; see :mod:`arrowmix._hf.names`.
    """
    from arrowmix._hf.names import HF_NAMES, hf_name

    if name in HF_NAMES:
        value = hf_name(name)
        globals()[name] = value
        return value
    if name == "config":
        import importlib

        return importlib.import_module("arrowmix.config")
    raise AttributeError(f"module 'arrowmix' has no attribute {name!r}")
