"""Pickling a Dataset: by reference to its memory-mapped files, by value when in memory."""

from __future__ import annotations

import multiprocessing
import operator
import os
import pickle
import shutil
import sys

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cache.inuse import in_use
from arrowmix._dataset.state import state_of
from arrowmix._storage.mapped import table_ref
from arrowmix.exceptions import ChunkFileError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/maps")

ROWS = 120_000  # above INDICES_FILE_MIN_ROWS: a shuffle of every row gets an indices file
SMALL = 50_000  # bytes: the bound on a pickle by reference


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """About 20 MB of chunk files (4 chunks of 30,000 rows)."""
    out = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(0)
    text = pa.array(["".join(map(chr, row)) for row in rng.integers(97, 123, (ROWS, 160))])
    table = pa.table({"id": np.arange(ROWS), "text": text, "f": rng.random(ROWS)})
    am.write_chunks(table, out / "c", rows_per_chunk=30_000)
    return am.Dataset.from_chunks(str(out / "c"))


def _disk_bytes(ds):
    return sum(os.path.getsize(f) for f in ds.cache_files)


def _round_trip(ds):
    data = pickle.dumps(ds)
    return data, pickle.loads(data)


def _assert_same(a, b):
    assert len(a) == len(b) and a.fingerprint == b.fingerprint and a.format == b.format
    assert a.column_names == b.column_names and a.cache_files == b.cache_files
    assert a.to_table().equals(b.to_table())


def test_chunks_pickle_as_references(big):
    assert _disk_bytes(big) > 19_000_000
    data, again = _round_trip(big)
    assert len(data) < SMALL
    _assert_same(big, again)
    assert state_of(again).file_offsets == state_of(big).file_offsets
    assert table_ref(state_of(again).table) is not None  # memory-mapped again, not copied


def test_shuffled_view_ships_its_small_array(big):
    view = big.select(np.arange(0, ROWS, 37)).shuffle(seed=1)
    assert state_of(view).indices_file is None and state_of(view).indices.array is not None
    data, again = _round_trip(view)
    assert len(data) < SMALL
    _assert_same(view, again)
    assert again[:5] == view[:5]


def test_large_view_reopens_its_indices_file(big):
    view = big.shuffle(seed=0)
    path = state_of(view).indices_file
    assert path is not None and os.path.basename(path).startswith("indices-")
    data, again = _round_trip(view)
    assert len(data) < SMALL  # 960 KB of positions stay in the file
    assert (
        state_of(again).indices_file == path and not state_of(again).indices.array.flags.writeable
    )
    np.testing.assert_array_equal(state_of(again).indices.array, state_of(view).indices.array)
    _assert_same(view, again)


def test_map_result_reusing_parent_columns(big):
    mapped = big.map(lambda b: {"n": [len(t) % 7 for t in b["text"]]}, batched=True)
    assert any("cache-" in f for f in state_of(mapped).files)
    assert any(f.endswith("chunk-00000.arrow") for f in state_of(mapped).files)
    data, again = _round_trip(mapped)
    assert len(data) < SMALL
    _assert_same(mapped, again)


def test_unpickled_dataset_holds_cache_files(big):
    mapped = big.map(lambda b: {"k": [i * 3 for i in b["id"]]}, batched=True).shuffle(seed=2)
    held = [h.path for h in state_of(mapped).holds]
    assert state_of(mapped).indices_file in held and any("cache-" in p for p in held)
    again = pickle.loads(pickle.dumps(mapped))
    assert [h.path for h in state_of(again).holds] == held
    for h in state_of(mapped).holds:
        h.release()
    assert all(h.active for h in state_of(again).holds)
    assert all(in_use(p) for p in held)  # the copy's own registrations
    for h in state_of(again).holds:
        h.release()
    assert not any(in_use(p) for p in held)


def test_column_views_and_format(big):
    view = big.select_columns(["text", "id"]).rename_column("text", "t")
    data, again = _round_trip(view)
    assert len(data) < SMALL and again.column_names == ["t", "id"]
    _assert_same(view, again)
    fmt = big.select(range(1000, 5000)).with_format("numpy", columns=["id", "f"])
    data, again = _round_trip(fmt)
    assert len(data) < SMALL and again.format["type"] == "numpy"
    got, want = again[10:20], fmt[10:20]
    assert list(got) == ["id", "f"] and isinstance(got["id"], np.ndarray)
    np.testing.assert_array_equal(got["id"], want["id"])
    np.testing.assert_array_equal(got["f"], want["f"])


def test_in_memory_data_pickles_with_its_rows():
    ds = am.Dataset.from_dict({"x": list(range(50_000))}).shuffle(seed=0)
    data, again = _round_trip(ds)
    assert len(data) > 400_000  # the column and the positions, by value
    _assert_same(ds, again)


def test_half_in_memory_table_falls_back_to_the_data(big):
    mem = am.Dataset.from_dict(big[:10])  # rows copied into new buffers
    both = am.concatenate_datasets([big.select_columns(["id", "text", "f"]), mem])
    data, again = _round_trip(both)
    assert len(data) > 19_000_000
    assert again[ROWS + 3] == both[ROWS + 3]


def test_views_without_columns_keep_their_length(big):
    for view in (big.remove_columns(["id", "text", "f"]), am.Dataset.from_dict({"x": [1, 2]})):
        empty = view.remove_columns(view.column_names)
        again = pickle.loads(pickle.dumps(empty))
        assert len(again) == len(view) and again.column_names == []


def test_stream_over_a_dataset_pickles_small(big):
    stream = big.to_stream(seed=5)
    it = iter(stream)
    head = [next(it)["id"] for _ in range(3)]
    data = pickle.dumps(stream)
    assert len(data) < SMALL
    clone = pickle.loads(data)
    assert [next(clone)["id"] for _ in range(3)] == [next(it)["id"] for _ in range(3)]
    assert len(set(head)) == 3


def test_copies_share_the_state(big):
    import copy

    view = big.shuffle(seed=0)
    assert state_of(copy.copy(view)) is state_of(view) and state_of(
        copy.deepcopy(view)
    ) is state_of(view)


@pytest.fixture
def small(tmp_path):
    am.write_chunks(({"n": i} for i in range(100)), tmp_path / "c", rows_per_chunk=40)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def test_missing_file_is_named(small, tmp_path):
    data = pickle.dumps(small)
    os.remove(tmp_path / "c" / "chunk-00001.arrow")
    with pytest.raises(ChunkFileError, match=r"chunk-00001\.arrow"):
        pickle.loads(data)


def test_rewritten_file_is_detected(small, tmp_path):
    data = pickle.dumps(small)
    shutil.rmtree(tmp_path / "c")
    am.write_chunks(({"n": i, "m": i} for i in range(100)), tmp_path / "c", rows_per_chunk=40)
    with pytest.raises(ChunkFileError, match="changed since"):
        pickle.loads(data)


def test_missing_indices_file_is_named(big):
    view = big.shuffle(seed=99)  # a file of its own: no other test reads it
    data = pickle.dumps(view)
    os.remove(state_of(view).indices_file)
    with pytest.raises(ChunkFileError, match=r"indices-[0-9a-f]{16}\.arrow"):
        pickle.loads(data)


def test_spawned_pool_worker_reads_rows(big):
    view = big.shuffle(seed=3).with_format("numpy", columns=["id"])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.apply(operator.getitem, (view, slice(100, 110)))
        rows = pool.apply(operator.getitem, (big, 7))
    np.testing.assert_array_equal(got["id"], view[100:110]["id"])
    assert rows == big[7]


def test_map_engine_spawn_job_is_small(big, monkeypatch):
    import dill

    from arrowmix._dataset.mapping import local as workers

    sizes = []
    dumps = dill.dumps

    def measured(*args, **kwargs):
        out = dumps(*args, **kwargs)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(workers.mp, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(dill, "dumps", measured)
    view = big.select_columns(["id"])
    out = view.map(lambda b: {"sq": [i * i for i in b["id"]]}, batched=True, num_proc=2)
    assert len(sizes) == 1 and sizes[0] < SMALL  # the job, with the dataset by reference
    assert out[ROWS - 1] == {"id": ROWS - 1, "sq": (ROWS - 1) ** 2}


# The CI tier (ARROWMIX_TEST_SLOW=1 scripts/test): spawned workers; the fast tier pickles by
# reference in-process.
@pytest.mark.slow
def test_torch_dataloader_spawn_workers(big):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    view = big.shuffle(seed=4).with_format("torch", columns=["id", "f"])
    picks = list(range(0, ROWS, 1500))
    loader = DataLoader(
        view, batch_size=16, sampler=picks, num_workers=2, multiprocessing_context="spawn"
    )
    batches = list(loader)
    ids = torch.cat([b["id"] for b in batches])
    assert ids.tolist() == view.select(picks).with_format(None)["id"]
    assert batches[0]["f"].dtype == torch.float32  # float columns as float32 tensors, as in HF
