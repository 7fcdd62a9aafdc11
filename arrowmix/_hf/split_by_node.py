"""``split_dataset_by_node``: the part of a dataset one node of a distributed job reads (HF's).

A map-style Dataset gives its ``shard(world_size, rank, contiguous=True)``. An iterable dataset
gives whole shards to each node when its shard count divides by ``world_size``
(``strategy="auto"``, or always with ``"shards"``), else every ``world_size``-th row
(``"examples"``), as HF ``datasets`` does; DataLoader workers then split the node's part.
"""

from __future__ import annotations

from typing import Any

from arrowmix._validate import check_int

__all__ = ["split_dataset_by_node"]

STRATEGIES = ("auto", "shards", "examples")


def split_dataset_by_node(dataset: Any, rank: int, world_size: int, strategy: str = "auto") -> Any:
    """The part of ``dataset`` node ``rank`` of ``world_size`` reads (HF's function).

    Example:
        >>> import arrowmix as am
        >>> ds = am.Dataset.from_dict({"x": list(range(6))}).to_iterable_dataset(num_shards=3)
        >>> [r["x"] for r in am.split_dataset_by_node(ds, rank=1, world_size=2)]
        [1, 3, 5]
    """
    from arrowmix._hf.iterable import IterableDataset

    if strategy not in STRATEGIES:
        raise ValueError(
            f"Invalid strategy {strategy!r}. Expected one of 'auto', 'shards', or 'examples'."
        )
    check_int("world_size", world_size, minimum=1)
    check_int("rank", rank, minimum=0)
    if rank >= world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}.")
    if not isinstance(dataset, IterableDataset):
        if strategy != "auto":
            raise ValueError(
                f"Map-style datasets only support strategy='auto', but got strategy={strategy!r}."
            )
        return dataset.shard(num_shards=world_size, index=rank, contiguous=True)
    if dataset._distributed is not None:  # the same layer
        _, before, _ = dataset._distributed
        raise ValueError(
            f"this dataset is already split by node (world_size={before}); split it once."
        )
    if strategy == "shards" and dataset.num_shards < world_size:
        raise ValueError(
            "Cannot split with strategy='shards': the dataset has "
            f"num_shards={dataset.num_shards}, fewer than world_size={world_size}, so some "
            "nodes would get no shard."
        )
    return dataset._derive(distributed=(rank, world_size, strategy))
