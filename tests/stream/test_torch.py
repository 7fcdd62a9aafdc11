"""Stream.to_torch(): DataLoader workers, sharding and StatefulDataLoader resume."""

from __future__ import annotations

from typing import Any

import pytest

from arrowmix.stream import Stream, from_chunks, from_iterable
from tests.stream.helpers import arrow, ident

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


@pytest.mark.integration
@pytest.mark.parametrize(
    "method",
    # forkserver in the CI tier: fork and spawn cover both ways a worker gets the stream
    ["fork", pytest.param("forkserver", marks=pytest.mark.slow), "spawn"],
)
def test_dataloader_workers_under_every_start_method(method: str) -> None:
    import pickle

    # Only picklable-by-reference parts, importable in a fresh interpreter.
    s = from_chunks(range(9), CHUNKS.__getitem__, seed=1, infinite=False)
    ds = s.to_torch()
    pickle.loads(pickle.dumps(ds))  # what spawn and forkserver do to the dataset
    # One worker per fresh interpreter (each imports torch: seconds), two with fork.
    workers = 2 if method == "fork" else 1
    dl = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=workers, multiprocessing_context=method
    )
    got = [int(x) for x in dl]
    assert sorted(got) == sorted(x for c in CHUNKS for x in c)


def test_set_epoch_reshuffles_a_finite_stream_and_resumes_inside_the_epoch() -> None:
    def build() -> Any:
        return arrow(60, seed=3, shuffle="global").shuffle(8, seed=4).map(ident)

    s = build()
    orders = []
    for epoch in range(3):
        s.set_epoch(epoch)
        orders.append(list(s))
    assert orders[0] == list(build())  # epoch 0 is the order without set_epoch
    assert all(sorted(o) == list(range(60)) for o in orders)
    assert len({tuple(o) for o in orders}) == 3
    s.set_epoch(2)
    head = [next(s) for _ in range(17)]
    state = s.state_dict()
    assert state["epoch"] == 2
    fresh = build()
    fresh.load_state_dict(state)  # the checkpoint carries the epoch
    assert head + list(fresh) == orders[2]
    fresh.load_state_dict(None)  # a restart stays in the epoch last chosen
    assert list(fresh) == orders[2]

    ds = build().to_torch()  # the dataset forwards it, as torch samplers do
    by_epoch = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        by_epoch.append(list(loader(ds, 0)))
    assert by_epoch == orders[:2]


@pytest.mark.parametrize(("saved", "loaded"), [(2, 0), (1, 2)])
def test_another_worker_count_names_the_difference_and_the_fix(saved: int, loaded: int) -> None:
    from arrowmix.exceptions import StateError
    from arrowmix.integrations.torch import load_dataloader_state

    def build(workers: int) -> Any:
        s = from_chunks(range(9), read_chunk, seed=1, infinite=True)
        return loader(s.to_torch(), workers, stateful=True)

    dl = build(saved)
    it = iter(dl)
    for _ in range(5):
        next(it)
    state = dl.state_dict()
    with pytest.raises(StateError, match=rf"num_workers={saved}.*num_workers={loaded}") as info:
        load_dataloader_state(build(loaded), state)
    assert "merge_states" in str(info.value)
