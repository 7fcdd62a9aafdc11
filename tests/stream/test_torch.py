"""Stream.to_torch(): DataLoader workers, sharding and StatefulDataLoader resume."""

from __future__ import annotations

from typing import Any

import pytest

from arrowmix.stream import Stream, from_chunks, from_iterable

from .helpers import arrow, ident

torch = pytest.importorskip("torch")

# torchdata 0.11 calls torch.set_vital, deprecated in torch 2.13 (a UserWarning).
pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")

CHUNKS = [list(range(10 * i, 10 * i + 7)) for i in range(9)]


def read_chunk(i: int) -> list[int]:
    return CHUNKS[i]


def loader(ds: Any, workers: int, stateful: bool = False) -> Any:
    if stateful:
        from torchdata.stateful_dataloader import StatefulDataLoader

        cls = StatefulDataLoader
    else:
        cls = torch.utils.data.DataLoader
    return cls(ds, batch_size=None, num_workers=workers, collate_fn=lambda x: x)


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_workers_split_disjoint_and_complete(workers: int) -> None:
    s = from_chunks(range(9), read_chunk, seed=1, infinite=False)
    got = list(loader(s.to_torch(), workers))
    assert sorted(got) == sorted(x for c in CHUNKS for x in c)
    assert len(got) == len(set(got))


def test_single_process_order_is_the_stream_order() -> None:
    def build() -> Stream[Any]:
        return arrow(50, seed=3).map(ident)

    assert list(loader(build().to_torch(), 0)) == list(build())


def test_unshardable_source_with_workers_raises() -> None:
    with pytest.raises(ValueError, match="cannot be split"):
        list(loader(from_iterable(range(10)).to_torch(), 2))


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes_exactly(workers: int) -> None:
    def build() -> Any:
        s = arrow(200, seed=5, infinite=True).shuffle(16, seed=6).map(ident).batch(4)
        return loader(s.to_torch(), workers, stateful=True)

    dl = build()
    it = iter(dl)
    for _ in range(7):
        next(it)
    state = dl.state_dict()
    expected = [next(it) for _ in range(9)]
    fresh = build()
    fresh.load_state_dict(state)
    it2 = iter(fresh)
    assert [next(it2) for _ in range(9)] == expected
