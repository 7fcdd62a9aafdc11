"""Checkpointable streams: sources, stages, mixing (public facade)."""

from arrowmix._stream.balanced import plan_batches
from arrowmix._stream.base import Stream
from arrowmix._stream.batch import pad_batch
from arrowmix._stream.chunks import from_chunks
from arrowmix._stream.collate import Collator
from arrowmix._stream.elastic import merge_states
from arrowmix._stream.iterable import from_iterable
from arrowmix._stream.mix import mix
from arrowmix._stream.mix import zip_streams as zip
from arrowmix._stream.schedule import estimate_mix_rows

__all__ = [
    "Collator",
    "Stream",
    "estimate_mix_rows",
    "from_chunks",
    "from_iterable",
    "merge_states",
    "mix",
    "pad_batch",
    "plan_batches",
    "zip",
]
