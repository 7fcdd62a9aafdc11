"""The map-style Dataset with the standard torch DataLoader and samplers."""

from __future__ import annotations

import pytest

import arrowmix as am

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, RandomSampler  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


@pytest.fixture
def ds(tmp_path):
    am.write_chunks(({"x": i, "y": [i, -i]} for i in range(20)), tmp_path, rows_per_chunk=7)
    return am.Dataset.from_chunks(str(tmp_path)).shuffle(seed=0).with_format("torch")


def test_default_collate_stacks_tensors(ds):
    batch = next(iter(DataLoader(ds, batch_size=4)))
    assert batch["x"].tolist() == ds["x"][:4].tolist()
    assert batch["y"].shape == (4, 2) and batch["y"].dtype == torch.int64


@pytest.mark.parametrize("workers", [0, 2])
def test_random_sampler_and_workers_see_every_row_once(ds, workers):
    loader = DataLoader(ds, batch_size=3, sampler=RandomSampler(ds), num_workers=workers)
    assert sorted(int(v) for b in loader for v in b["x"]) == list(range(20))


def test_distributed_sampler_splits_ranks(ds):
    parts = [
        [
            int(v)
            for b in DataLoader(
                ds,
                batch_size=3,
                sampler=DistributedSampler(ds, num_replicas=2, rank=r, shuffle=True, seed=1),
            )
            for v in b["x"]
        ]
        for r in range(2)
    ]
    assert not set(parts[0]) & set(parts[1])
    assert sorted(parts[0] + parts[1]) == list(range(20))
