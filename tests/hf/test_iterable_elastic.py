"""Elastic resume of ``IterableDataset``: checkpoints of N nodes (and workers) loaded on M.

Old readers run a while and checkpoint; the list of their states (through JSON, as a saved
checkpoint travels) loads on a dataset split for another ``world_size``. Over the rows the old
readers yielded and the rows the new ones yield, every row of the epoch comes out exactly
once, through shuffle buffers, ``map``, ``filter`` and batched stages; the next epoch is HF's
split for the new ``world_size``.
"""

from __future__ import annotations

import itertools
import json

import pytest

import arrowmix as am
import arrowmix._hf.iterable as iterable_module

N_ROWS = 47


def base(n_shards):
    return am.Dataset.from_dict({"a": list(range(N_ROWS))}).to_iterable_dataset(n_shards)


def twice(row):
    return {"b": 2 * row["a"]}


def not_third(row):
    return row["a"] % 3 != 1


def plus_one(batch):
    return {"a": [a + 1000 for a in batch["a"]]}


PIPELINES = {
    "shuffle_map_filter": lambda n: (
        base(n).shuffle(seed=3, buffer_size=6).map(twice).filter(not_third)
    ),
    "batched_map_shuffle": lambda n: (
        base(n).map(plus_one, batched=True, batch_size=4).shuffle(seed=1, buffer_size=5)
    ),
    "filter_batched": lambda n: base(n).filter(
        lambda b: [a % 3 != 1 for a in b["a"]], batched=True, batch_size=5
    ),
}
WANT = {
    "shuffle_map_filter": [a for a in range(N_ROWS) if a % 3 != 1],
    "batched_map_shuffle": [a + 1000 for a in range(N_ROWS)],
    "filter_batched": [a for a in range(N_ROWS) if a % 3 != 1],
}


def node(name, n_shards, world, rank):
    return am.split_dataset_by_node(PIPELINES[name](n_shards), rank=rank, world_size=world)


def through_json(x):
    return json.loads(json.dumps(x))


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("n_shards", [6, 5])  # whole shards per node / every n-th row
@pytest.mark.parametrize(("old_world", "new_world"), [(2, 3), (3, 2)])
def test_resume_on_another_world_size_yields_every_row_once(name, n_shards, old_world, new_world):
    for steps in (0, 4):
        old = [node(name, n_shards, old_world, r) for r in range(old_world)]
        its = [iter(d) for d in old]
        seen = [row["a"] for it in its for row in itertools.islice(it, steps)]
        states = through_json([d.state_dict() for d in old])
        new = [node(name, n_shards, new_world, r) for r in range(new_world)]
        for d in new:
            d.load_state_dict(states)
        rest = [row["a"] for d in new for row in d]
        assert sorted(seen + rest) == WANT[name], (steps, len(seen), len(rest))


def test_next_epoch_is_the_new_world_sizes_split():
    old = [node("shuffle_map_filter", 6, 2, r) for r in range(2)]
    for d in old:
        next(iter(d))
    states = [d.state_dict() for d in old]
    new = [node("shuffle_map_filter", 6, 3, r) for r in range(3)]
    for d in new:
        d.load_state_dict(states)
        list(d)
        d.set_epoch(1)
    fresh = [node("shuffle_map_filter", 6, 3, r) for r in range(3)]
    for d in fresh:
        d.set_epoch(1)
    assert [list(d) for d in new] == [list(d) for d in fresh]


def test_merged_state_equals_the_list():
    old = [node("shuffle_map_filter", 6, 3, r) for r in range(3)]
    for d in old:
        list(itertools.islice(iter(d), 2))
    merged = am.IterableDataset.merge_state_dicts([d.state_dict() for d in old])
    assert merged == through_json(merged)
    a, b = node("shuffle_map_filter", 6, 2, 0), node("shuffle_map_filter", 6, 2, 0)
    a.load_state_dict(merged)
    b.load_state_dict([d.state_dict() for d in old])
    assert list(a) == list(b)


def test_the_rest_of_the_epoch_is_shared_evenly():
    """Whole shards per node: every new reader gets a share of each old reader's rows."""
    for old_world, new_world in ((2, 3), (3, 2), (2, 4)):
        old = [node("shuffle_map_filter", 12, old_world, r) for r in range(old_world)]
        for d in old:
            list(itertools.islice(iter(d), 3))
        states = [d.state_dict() for d in old]
        counts = []
        for r in range(new_world):
            d = node("shuffle_map_filter", 12, new_world, r)
            d.load_state_dict(states)
            counts.append(sum(1 for _ in d))
        assert min(counts) > 0 and max(counts) - min(counts) <= 2 * old_world + 6, counts


def test_checkpoint_during_the_resumed_epoch_resumes_on_the_same_reader():
    old = [node("shuffle_map_filter", 6, 2, r) for r in range(2)]
    for d in old:
        list(itertools.islice(iter(d), 3))
    states = [d.state_dict() for d in old]
    mid = [node("shuffle_map_filter", 6, 3, r) for r in range(3)]
    for d in mid:
        d.load_state_dict(states)
    its = [iter(d) for d in mid]
    for it in its:
        list(itertools.islice(it, 4))
    mid_states = through_json([d.state_dict() for d in mid])
    for r in range(3):
        again = node("shuffle_map_filter", 6, 3, r)
        again.load_state_dict(mid_states[r])
        assert [row["a"] for row in again] == [row["a"] for row in its[r]]
    with pytest.raises(ValueError, match="same layout until the epoch ends"):
        node("shuffle_map_filter", 6, 2, 0).load_state_dict(mid_states)


def test_a_pipeline_resumed_whole_resizes_again_mid_epoch():
    """``skip`` counts one reader's rows: old readers are finished whole, and can be resized."""

    def skipping(world, rank):
        ds = PIPELINES["shuffle_map_filter"](6).skip(1)
        return am.split_dataset_by_node(ds, rank=rank, world_size=world)

    want = sorted(r["a"] for k in range(2) for r in skipping(2, k))
    old = [skipping(2, r) for r in range(2)]
    its = [iter(d) for d in old]
    seen = [row["a"] for it in its for row in itertools.islice(it, 3)]
    states = [d.state_dict() for d in old]
    mid = [skipping(3, r) for r in range(3)]
    for d in mid:
        d.load_state_dict(states)
    its = [iter(d) for d in mid]
    seen += [row["a"] for it in its for row in itertools.islice(it, 2)]
    mid_states = through_json([d.state_dict() for d in mid])
    final = [skipping(2, r) for r in range(2)]
    for d in final:
        d.load_state_dict(mid_states)
    rest = [row["a"] for d in final for row in d]
    assert sorted(seen + rest) == want


def test_dataloader_workers_resume_on_other_counts(monkeypatch):
    """2 nodes x 2 workers resume on 3 nodes x 1 worker and on 1 node x 3 workers."""
    current = {"w": None}
    monkeypatch.setattr(iterable_module, "worker", lambda: current["w"])

    def read(d, w, n=None):
        current["w"] = w
        return [row["a"] for row in itertools.islice(iter(d), n)]

    old = {(r, w): node("shuffle_map_filter", 8, 2, r) for r in range(2) for w in range(2)}
    seen, states = [], []
    for r in range(2):
        per_worker = []
        for w in range(2):
            seen += read(old[r, w], (2, w), 3)
            per_worker.append(old[r, w].state_dict())
        states.append(per_worker)
    states = through_json(states)
    for world, workers in ((3, 1), (1, 3)):
        rest = []
        for r in range(world):
            for w in range(workers):
                d = node("shuffle_map_filter", 8, world, r)
                d.load_state_dict(states)
                rest += read(d, (workers, w) if workers > 1 else None)
        assert sorted(seen + rest) == WANT["shuffle_map_filter"], (world, workers)


def test_states_of_different_epochs_are_refused():
    a, b = node("shuffle_map_filter", 6, 2, 0), node("shuffle_map_filter", 6, 2, 1)
    b.set_epoch(1)
    with pytest.raises(ValueError, match="different epochs"):
        am.IterableDataset.merge_state_dicts([a.state_dict(), b.state_dict()])
    with pytest.raises(ValueError, match=r"states\[1\] is not a state"):
        am.IterableDataset.merge_state_dicts([a.state_dict(), {"x": 1}])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")  # torchdata 0.11
def test_stateful_dataloader_states_resume_on_another_world_size():
    torch = pytest.importorskip("torch")
    stateful = pytest.importorskip("torchdata.stateful_dataloader")
    del torch
    old_states, seen = [], []
    for r in range(2):
        loader = stateful.StatefulDataLoader(
            node("shuffle_map_filter", 8, 2, r), batch_size=3, num_workers=2
        )
        it = iter(loader)
        seen += [a for _ in range(2) for a in next(it)["a"].tolist()]
        old_states.append(loader.state_dict())
        del it
    rest = []
    for r in range(3):
        d = node("shuffle_map_filter", 8, 3, r)
        d.load_state_dict(through_json(old_states))
        rest += [a for b in stateful.StatefulDataLoader(d, batch_size=3, num_workers=2)
                 for a in b["a"].tolist()]  # fmt: skip
    assert sorted(seen + rest) == WANT["shuffle_map_filter"]


@pytest.mark.parametrize(("old_world", "new_world"), [(2, 3), (3, 2)])
def test_take_keeps_each_old_readers_rows(old_world, new_world):
    def taking(world, rank):
        ds = base(6).shuffle(seed=2, buffer_size=4).map(twice).take(31)
        return am.split_dataset_by_node(ds, rank=rank, world_size=world)

    want = sorted(r["a"] for k in range(old_world) for r in taking(old_world, k))
    old = [taking(old_world, r) for r in range(old_world)]
    its = [iter(d) for d in old]
    seen = [row["a"] for it in its for row in itertools.islice(it, 4)]
    states = through_json([d.state_dict() for d in old])
    new = [taking(new_world, r) for r in range(new_world)]
    for d in new:
        d.load_state_dict(states)
    rest = [row["a"] for d in new for row in d]
    assert sorted(seen + rest) == want
