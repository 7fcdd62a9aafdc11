"""Stages: one input in, items out.

Stages: one input in, items out (map, filter, window, take, shuffle, batch, bucket,
budget_bucket, prefetch). Each reads its input through ``pull``/``next`` or, over an index
stream, through the positions protocol (:mod:`arrowmix._stream.positions`).
"""

from arrowmix._stream.stages.batch import BatchIterator
from arrowmix._stream.stages.bucket import LengthBucketIterator
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator
from arrowmix._stream.stages.flat_map import FlatMapIterator
from arrowmix._stream.stages.limit import LimitIterator
from arrowmix._stream.stages.map import FilterIterator, MapIterator, ParallelMapIterator
from arrowmix._stream.stages.prefetch import PrefetchIterator
from arrowmix._stream.stages.shuffle import BufferShuffleIterator
from arrowmix._stream.stages.window import WindowIterator

__all__ = [
    "BatchIterator",
    "BudgetBucketIterator",
    "BufferShuffleIterator",
    "FilterIterator",
    "FlatMapIterator",
    "LengthBucketIterator",
    "LimitIterator",
    "MapIterator",
    "ParallelMapIterator",
    "PrefetchIterator",
    "WindowIterator",
]
