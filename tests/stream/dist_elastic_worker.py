"""One rank of the torch.distributed elastic test (run as a script by test_elastic_torch).

Usage: ``python dist_elastic_worker.py RANK WORLD STEPS OUT_JSON`` with MASTER_ADDR and
MASTER_PORT set. Each rank reads ``STEPS`` batches through a StatefulDataLoader with two
workers, then rank 0 writes the merged checkpoint of all ranks' workers and the ids
every rank yielded.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

ROWS = 400


def build() -> Any:
    """The pipeline every rank builds (unsharded: to_torch shards it)."""
    import numpy as np
    import pyarrow as pa

    from arrowmix._stream.row_source import TableRowSource
    from arrowmix._stream.sources.rows import ArrowSource

    lengths = np.random.default_rng(0).zipf(1.5, ROWS).clip(1, 50).astype(np.int64)
    rows = TableRowSource(pa.table({"id": np.arange(ROWS), "n": lengths}), chunk_rows=32)
    s = ArrowSource(rows, seed=3, infinite=False, block_rows=16).shuffle(20, seed=4)
    return s.bucket("n", 4, 24, seed=5).map(batch_ids)


def batch_ids(batch: list[dict[str, Any]]) -> list[int]:
    return [int(r["id"]) for r in batch]


def main(rank: int, world: int, steps: int, out: str) -> None:
    warnings.filterwarnings("ignore")
    import torch.distributed as dist
    from torchdata.stateful_dataloader import StatefulDataLoader

    from arrowmix.integrations.torch import worker_stream_states
    from arrowmix.stream import merge_states

    dist.init_process_group("gloo", rank=rank, world_size=world)
    dl = StatefulDataLoader(
        build().to_torch(), batch_size=None, num_workers=2, collate_fn=lambda x: x
    )
    it = iter(dl)
    seen = [i for _ in range(steps) for i in next(it)]
    states = worker_stream_states(dl.state_dict())
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, {"seen": seen, "states": states})
    if rank == 0:
        merged = merge_states([s for g in gathered for s in g["states"]])
        seen_all = [i for g in gathered for i in g["seen"]]
        Path(out).write_text(json.dumps({"merged": merged, "seen": seen_all}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
