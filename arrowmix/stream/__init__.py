"""Checkpointable streams: sources, stages, mixing (public facade).

The stage kit for writing your own stages: :class:`Stream` (the base), the
:class:`PassThrough` and :class:`WindowReplayStage` bases, :class:`ElasticRole`, the
row-source protocol :class:`RowSource` with :class:`TableRowSource` and
:func:`from_row_source`, the positions protocol (:class:`Positions`,
:class:`PositionBatches`: a stage's items as row positions; ``Positions.filtered`` for
filter-like stages), the optional hooks a stage may override (:class:`StageHooks`), and
the seeded-RNG helpers :func:`derive_rng` and :class:`SeedHolder`. See
``docs/streams.md``, "Writing a stage".
"""

from arrowmix._stream.base import ElasticMode, Stream
from arrowmix._stream.elastic import merge_states
from arrowmix._stream.hooks import StageHooks
from arrowmix._stream.mixing.mix import mix
from arrowmix._stream.mixing.mix import zip_streams as zip
from arrowmix._stream.mixing.schedule import estimate_mix_rows
from arrowmix._stream.mixing.weight_schedule import WeightSchedule
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.positions import PositionBatches, Positions
from arrowmix._stream.replay import WindowReplayStage
from arrowmix._stream.rng import SeedHolder, derive_rng
from arrowmix._stream.row_source import RowSource, TableRowSource
from arrowmix._stream.sources.chunks import from_chunks
from arrowmix._stream.sources.iterable import from_iterable
from arrowmix._stream.sources.rows import from_row_source
from arrowmix._stream.stages.batch import pad_batch
from arrowmix._stream.stages.budget_bucket import plan_batches
from arrowmix._stream.tokens.collate import Collator
from arrowmix._stream.topology import ElasticRole

__all__ = [
    "Collator",
    "ElasticMode",
    "ElasticRole",
    "PassThrough",
    "PositionBatches",
    "Positions",
    "RowSource",
    "SeedHolder",
    "StageHooks",
    "Stream",
    "TableRowSource",
    "WeightSchedule",
    "WindowReplayStage",
    "derive_rng",
    "estimate_mix_rows",
    "from_chunks",
    "from_iterable",
    "from_row_source",
    "merge_states",
    "mix",
    "pad_batch",
    "plan_batches",
    "zip",
]
