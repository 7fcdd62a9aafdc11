"""Dataset.filter: an indices mapping, cached like a map, composed with existing views."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"n": list(range(20)), "t": [f"r{i}" for i in range(20)]})


def test_unbatched_and_batched_agree(ds):
    a = ds.filter(lambda r: r["n"] % 3 == 0)
    b = ds.filter(lambda b: [n % 3 == 0 for n in b["n"]], batched=True, batch_size=4)
    c = ds.filter(lambda n: n % 3 == 0, input_columns="n")
    assert a["n"] == b["n"] == c["n"] == [0, 3, 6, 9, 12, 15, 18]
    assert a["t"] == ["r0", "r3", "r6", "r9", "r12", "r15", "r18"]


@pytest.mark.parametrize(
    "mask",
    [
        lambda b: np.asarray(b["n"]) > 14,
        lambda b: pa.array([n > 14 for n in b["n"]]),
        lambda b: pa.array([n > 14 if n != 16 else None for n in b["n"]]),  # null drops
    ],
)
def test_batched_numpy_and_arrow_masks(ds, mask):
    assert ds.filter(mask, batched=True)["n"] in ([15, 16, 17, 18, 19], [15, 17, 18, 19])


def test_truthiness_like_hf(ds):
    assert ds.filter(lambda r: r["n"] % 5)["n"] == [n for n in range(20) if n % 5]


def test_with_indices_are_view_positions(ds):
    view = ds.select(range(10, 20))
    assert view.filter(lambda r, i: i < 3, with_indices=True)["n"] == [10, 11, 12]


def test_no_column_data_copied(ds, tmp_path):
    am.write_chunks(ds, tmp_path / "c", rows_per_chunk=7)
    chunked = am.Dataset.from_chunks(str(tmp_path / "c"))
    kept = chunked.filter(lambda r: r["n"] > 4)
    assert state_of(kept).table is state_of(chunked).table  # the same memory-mapped table
    assert kept["n"] == list(range(5, 20))


def test_composes_with_select_and_shuffle(ds):
    shuffled = ds.shuffle(seed=4)
    kept = shuffled.filter(lambda r: r["n"] % 2 == 0)
    assert kept["n"] == [n for n in shuffled["n"] if n % 2 == 0]
    again = kept.select([2, 0]).filter(lambda r: r["n"] > 0).shuffle(seed=1)
    model = [n for n in [kept["n"][2], kept["n"][0]] if n > 0]
    assert sorted(again["n"]) == sorted(model)
    assert state_of(again).table is state_of(ds).table  # one composed mapping over the base table


def test_keep_all_and_keep_none(ds):
    assert ds.filter(lambda r: True)[:] == ds[:]
    none = ds.filter(lambda r: False)
    assert len(none) == 0 and none.column_names == ["n", "t"]


def test_filter_is_cached(ds, tmp_path):
    log = str(tmp_path / "calls")

    def even(row):
        with open(log, "a") as f:
            f.write("x")
        return row["n"] % 2 == 0

    def calls():
        with open(log) as f:
            return len(f.read())

    a = ds.filter(even)
    b = ds.filter(even, num_proc=2, desc="again")
    assert calls() == 20 and a.fingerprint == b.fingerprint and b["n"] == a["n"]
    ds.filter(even, load_from_cache_file=False)
    assert calls() == 40


def test_large_filter_uses_an_indices_file(tmp_path):
    big = am.Dataset.from_dict({"n": np.arange(250_000)})
    kept = big.filter(lambda b: np.asarray(b["n"]) % 2 == 1, batched=True, batch_size=50_000)
    assert len(kept) == 125_000 and kept[:3]["n"] == [1, 3, 5]
    assert any("indices-" in f for f in kept.cache_files)


def test_filter_result_holds_its_cache_against_cleanup(tmp_path):
    from arrowmix._cache.inuse import in_use

    am.write_chunks(({"n": i} for i in range(50)), tmp_path)
    kept = am.Dataset.from_chunks(str(tmp_path)).filter(lambda r: r["n"] % 2 == 0)
    (segment,) = tmp_path.glob("cache-*.arrow")
    assert in_use(str(segment))
    assert kept.cleanup_cache_files() == 0 and segment.exists()
