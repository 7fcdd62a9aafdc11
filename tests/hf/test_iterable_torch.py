"""``IterableDataset`` in a torch DataLoader and in torchdata's ``StatefulDataLoader``.

Each DataLoader worker reads its own shards, as in HF: the batches come in HF's order (the
workers take turns), no row twice and none lost. ``StatefulDataLoader`` saves each worker's
``state_dict`` and restores it in the worker; resuming gives exactly the rest of the run, a
shuffle buffer included.
"""

from __future__ import annotations

import logging
import pickle
import warnings

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
stateful = pytest.importorskip("torchdata.stateful_dataloader")

DATA = {"a": list(range(37)), "t": [f"s{i}" for i in range(37)]}


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("datasets").setLevel(logging.ERROR)
    logging.getLogger("arrowmix").setLevel(logging.ERROR)
    with warnings.catch_warnings():  # torchdata 0.11 calls torch.set_vital (deprecated)
        warnings.filterwarnings("ignore", "'set_vital' is deprecated", UserWarning)
        yield


def times_two(row):
    return {"b": row["a"] * 2}


def not_fifth(row):
    return row["a"] % 5 != 0


def pipeline(lib, n_shards):
    ds = lib.Dataset.from_dict(DATA).to_iterable_dataset(num_shards=n_shards)
    return ds.map(times_two).filter(not_fifth)


def batches(loader):
    return [b["a"].tolist() for b in loader]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("n_shards", [1, 3, 4])
def test_dataloader_batches_as_hf(n_shards, workers):
    ours = batches(torch.utils.data.DataLoader(pipeline(am, n_shards), 4, num_workers=workers))
    theirs = batches(torch.utils.data.DataLoader(pipeline(hf, n_shards), 4, num_workers=workers))
    assert ours == theirs
    rows = sorted(x for b in ours for x in b)
    assert rows == [a for a in DATA["a"] if a % 5 != 0]  # no row twice, none lost


def test_dataloader_random_interleave_as_hf():
    """HF re-seeds a random interleave in each worker; the workers' rows match HF's."""

    def mixed(lib):
        parts = [
            lib.Dataset.from_dict({"a": list(range(100 * i, 100 * i + 30))}).to_iterable_dataset(2)
            for i in range(3)
        ]
        return lib.interleave_datasets(parts, probabilities=[0.5, 0.3, 0.2], seed=9)

    loaders = [torch.utils.data.DataLoader(mixed(lib), 3, num_workers=2) for lib in (am, hf)]
    assert batches(loaders[0]) == batches(loaders[1])


def run(make, workers, stop):
    """The batches after ``stop`` of an uninterrupted loader, and of one resumed there."""
    loader = stateful.StatefulDataLoader(make(), batch_size=3, num_workers=workers)
    it = iter(loader)
    head = [next(it)["a"].tolist() for _ in range(stop)]
    state = loader.state_dict()
    rest = [b["a"].tolist() for b in it]
    again = stateful.StatefulDataLoader(make(), batch_size=3, num_workers=workers)
    again.load_state_dict(state)
    return head, rest, batches(again)


MAKERS = {
    "map_filter": lambda: pipeline(am, 4),
    "shuffled": lambda: (
        am.Dataset.from_dict(DATA)
        .to_iterable_dataset(num_shards=4)
        .shuffle(seed=5, buffer_size=6)
        .map(times_two)
    ),
    "interleaved": lambda: am.interleave_datasets(
        [
            pipeline(am, 2).select_columns(["a"]),
            am.Dataset.from_dict({"a": list(range(500, 520))}).to_iterable_dataset(2),
        ],
        probabilities=[0.6, 0.4],
        seed=1,
        stopping_strategy="all_exhausted",
    ),
}


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_stateful_dataloader_resumes_exactly(name, workers):
    whole = batches(stateful.StatefulDataLoader(MAKERS[name](), batch_size=3, num_workers=workers))
    for stop in (1, 4):
        head, rest, resumed = run(MAKERS[name], workers, stop)
        assert head + rest == whole
        assert resumed == rest, f"resumed after {stop} batches"


def test_set_epoch_reaches_the_workers():
    ds = am.Dataset.from_dict(DATA).to_iterable_dataset(4).shuffle(seed=0, buffer_size=5)
    seen = []
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        got = batches(torch.utils.data.DataLoader(ds, 5, num_workers=2))
        seen.append(got)
        assert sorted(x for b in got for x in b) == DATA["a"]
    assert seen[0] != seen[1]


def test_set_epoch_reaches_persistent_workers():
    """The epoch lives in shared memory (as HF keeps it): persistent workers see it."""
    ds = am.Dataset.from_dict(DATA).to_iterable_dataset(4).shuffle(seed=0, buffer_size=5)
    loader = torch.utils.data.DataLoader(ds, 5, num_workers=2, persistent_workers=True)
    for epoch in (0, 1, 2):
        ds.set_epoch(epoch)
        fresh = am.Dataset.from_dict(DATA).to_iterable_dataset(4).shuffle(seed=0, buffer_size=5)
        fresh.set_epoch(epoch)
        want = batches(torch.utils.data.DataLoader(fresh, 5, num_workers=2))
        assert batches(loader) == want


def test_a_pickled_copys_epoch_is_shared_again():
    """As HF: the copy's epoch is in shared memory, for the copy's persistent workers."""
    ds = am.Dataset.from_dict(DATA).to_iterable_dataset(4)
    ds.set_epoch(3)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy._epoch.is_shared() and copy.epoch == 3
    copy.set_epoch(5)
    assert (ds.epoch, copy.epoch) == (3, 5)


@pytest.mark.slow
def test_set_epoch_reaches_a_pickled_copys_persistent_workers():
    ds = am.Dataset.from_dict(DATA).to_iterable_dataset(4).shuffle(seed=0, buffer_size=5)
    copy = pickle.loads(pickle.dumps(ds))
    loader = torch.utils.data.DataLoader(copy, 5, num_workers=1, persistent_workers=True)
    first = batches(loader)
    ds.set_epoch(2)  # not the copy's
    assert batches(loader) == first
    copy.set_epoch(2)
    assert batches(loader) != first


def shard_rows(shard: list[int]):
    for i in range(30):
        yield {"value": i, "shard": shard[0]}


def test_each_worker_shuffles_with_its_own_seed():
    """As HF (its issue 7567): workers reading alike shards do not shuffle them alike."""
    ds = am.IterableDataset.from_generator(shard_rows, gen_kwargs={"shard": [0, 1, 2, 3]})
    ds = ds.shuffle(seed=1234, buffer_size=10)
    orders = [[r["value"] for r in ds._stream(ds._plan((4, i)), True)] for i in range(4)]
    assert all(sorted(o) == list(range(30)) for o in orders)
    assert len({tuple(o) for o in orders}) == 4
    main = [r["value"] for r in ds if r["shard"] == 0]
    assert orders[0] == main  # worker 0 of the first shard: the main process's order
