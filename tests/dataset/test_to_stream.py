"""Dataset.to_stream: streams over memory-mapped chunk files and views, resumable."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._stream.mixing.mix import WeightedMixIterator
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.stages.bucket import LengthBucketIterator
from arrowmix.stream import Stream, mix
from arrowmix.testing import CheckpointRoundTripTests


def corpus(tmp_path_factory: Any, n: int = 120, name: str = "c") -> am.Dataset:
    out = tmp_path_factory.mktemp(name)
    rng = np.random.default_rng(0)
    rows = ({"id": i, "n_tokens": int(rng.integers(1, 50))} for i in range(n))
    am.write_chunks(rows, out, rows_per_chunk=25)
    return am.Dataset.from_chunks(str(out))


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return corpus(tmp_path_factory)


@pytest.mark.parametrize("mode", ["global", "chunks", "blocks", None])
def test_one_pass_covers_every_row_once(ds, mode):
    ids = [r["id"] for r in ds.to_stream(shuffle=mode, seed=1, infinite=False)]
    assert sorted(ids) == list(range(120))
    if mode is not None:
        assert ids != list(range(120))


def test_views_stream_their_own_rows(ds):
    view = ds.select(range(30, 90)).shuffle(seed=2).select(range(20))
    got = sorted(r["id"] for r in view.to_stream(shuffle="chunks", seed=0, infinite=False))
    assert got == sorted(view["id"])


def test_chunk_offsets_follow_files_and_ranges(ds):
    from arrowmix._dataset.to_stream import DatasetRows

    assert DatasetRows(ds).chunk_offsets().tolist() == [0, 25, 50, 75, 100, 120]
    assert DatasetRows(ds.select(range(30, 90))).chunk_offsets().tolist() == [0, 20, 45, 60]
    assert DatasetRows(ds.shuffle(seed=0)).chunk_offsets().tolist() == [0, 120]


def test_ranks_are_disjoint_and_complete(ds):
    for world in (1, 2, 3, 7):
        parts = [
            [
                r["id"]
                for r in ds.to_stream(
                    seed=5, infinite=False, num_instances=world, instance_rank=rank
                )
            ]
            for rank in range(world)
        ]
        flat = [i for p in parts for i in p]
        assert sorted(flat) == list(range(120)), world


def test_infinite_stream_reshuffles_each_epoch(ds):
    s = ds.to_stream(seed=3)
    first = [next(s)["id"] for _ in range(120)]
    second = [next(s)["id"] for _ in range(120)]
    assert sorted(first) == sorted(second) == list(range(120)) and first != second


def test_format_columns_select_stream_columns(ds):
    row = next(ds.with_format(None, columns=["id"]).to_stream(seed=0))
    assert list(row) == ["id"]


def test_state_is_small_json_and_resumes(ds):
    s = (
        ds.to_stream(seed=4)
        .shuffle(32, seed=1)
        .bucket("n_tokens", lambda r: 200 // r["n_tokens"], 64, seed=2)
    )
    for _ in range(7):
        next(s)
    state = json.loads(json.dumps(s.state_dict()))
    want = [next(s) for _ in range(10)]
    fresh = (
        ds.to_stream(seed=4)
        .shuffle(32, seed=1)
        .bucket("n_tokens", lambda r: 200 // r["n_tokens"], 64, seed=2)
    )
    fresh.load_state_dict(state)
    assert [next(fresh) for _ in range(10)] == want
    assert len(json.dumps(state)) < 4096


def test_restoring_into_another_dataset_is_refused(ds, tmp_path_factory):
    from arrowmix.exceptions import StateError

    s = ds.to_stream(seed=0)
    next(s)
    other = corpus(tmp_path_factory, n=60, name="other").to_stream(seed=0)
    with pytest.raises(StateError):
        other.load_state_dict(s.state_dict())


class TestDatasetSourceRoundTrip(CheckpointRoundTripTests):
    iterator_cls = ArrowSource

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return _DS.shuffle(seed=9).to_stream(shuffle="chunks", seed=seed, infinite=False)


class TestDatasetBucketRoundTrip(CheckpointRoundTripTests):
    iterator_cls = LengthBucketIterator

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = _DS.to_stream(shuffle="global", seed=seed, infinite=False)
        return s.bucket("n_tokens", lambda r: max(1, 150 // r["n_tokens"]), 40, seed=seed)


class TestDatasetMixRoundTrip(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        a = _DS.select(range(60)).to_stream(seed=seed, infinite=False)
        b = _DS.select(range(60, 120)).to_stream(shuffle="chunks", seed=seed + 1, infinite=False)
        return mix([a, b], [0.75, 0.25]).batch(4)


def _make_ds() -> am.Dataset:
    import atexit
    import shutil
    import tempfile

    out = tempfile.mkdtemp(prefix="arrowmix-rt-")
    atexit.register(shutil.rmtree, out, True)
    rng = np.random.default_rng(1)
    rows = ({"id": i, "n_tokens": int(rng.integers(1, 50))} for i in range(120))
    am.write_chunks(rows, out, rows_per_chunk=25)
    return am.Dataset.from_chunks(out)


_DS = _make_ds()
