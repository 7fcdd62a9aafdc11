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
from arrowmix._dataset.views.concatenate import concatenate_datasets
from arrowmix._fingerprint.pickler import register_fingerprint
from arrowmix._fingerprint.record import FingerprintRecord
from arrowmix._fingerprint.record import explain as explain_fingerprint
from arrowmix._hf.dataset_dict import DatasetDict
from arrowmix._hf.interleave import interleave_datasets
from arrowmix._hf.iterable import IterableDataset
from arrowmix._hf.iterable_dict import IterableDatasetDict
from arrowmix._hf.load import load_dataset
from arrowmix._hf.saved import load_from_disk
from arrowmix._hf.split_by_node import split_dataset_by_node
from arrowmix._version import __version__

__all__ = [
    "Column",
    "Dataset",
    "DatasetDict",
    "FingerprintRecord",
    "IterableDataset",
    "IterableDatasetDict",
    "__version__",
    "concatenate_datasets",
    "disable_caching",
    "enable_caching",
    "explain_fingerprint",
    "from_megatron",
    "from_token_file",
    "interleave_datasets",
    "is_caching_enabled",
    "load_dataset",
    "load_from_disk",
    "register_fingerprint",
    "split_dataset_by_node",
    "write_chunks",
]
