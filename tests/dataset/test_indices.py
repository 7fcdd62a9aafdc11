from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowmix as am
from arrowmix._dataset import indices as indices_mod
from arrowmix._dataset.state import state_of


def test_shuffle_select_sort_compose():
    ds = am.Dataset.from_dict({"n": list(range(20))})
    view = ds.shuffle(seed=0).select(range(10)).sort("n")
    perm = np.random.default_rng(0).permutation(20)[:10]
    assert view["n"] == sorted(perm.tolist())
    assert view.flatten_indices()["n"] == view["n"]


def test_contiguous_selections_stay_ranges():
    ds = am.Dataset.from_dict({"n": list(range(100))})
    view = ds.select(range(10, 90)).shard(num_shards=4, index=1).select([0, 1, 2])
    assert state_of(view).indices.is_range and (
        state_of(view).indices.start,
        state_of(view).indices.stop,
    ) == (30, 33)
    assert view["n"] == [30, 31, 32]
    assert state_of(ds.select(range(100))).indices is None  # identity collapses


def test_shard_contiguous_and_strided_cover_everything():
    ds = am.Dataset.from_dict({"n": list(range(23))})
    for contiguous in (True, False):
        parts = [ds.shard(5, i, contiguous=contiguous)["n"] for i in range(5)]
        assert sorted(x for p in parts for x in p) == list(range(23))
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert ds.shard(5, 1, contiguous=False)["n"] == [1, 6, 11, 16, 21]
    with pytest.raises(IndexError, match="5"):
        ds.shard(5, 5)
    with pytest.raises(ValueError, match="num_shards"):
        ds.shard(0, 0)


def test_train_test_split():
    ds = am.Dataset.from_dict({"n": list(range(100))})
    train, test = ds.train_test_split(test_size=0.1, seed=3)
    assert len(train) == 90 and len(test) == 10
    assert sorted(train["n"] + test["n"]) == list(range(100))
    split = ds.train_test_split(test_size=10, seed=3)
    assert split["test"]["n"] == test["n"] and split.keys() == ["train", "test"]
    assert ds.train_test_split(test_size=0.1, seed=4).test["n"] != test["n"]
    with pytest.raises(ValueError, match="test_size"):
        ds.train_test_split(test_size=1.5)
    with pytest.raises(ValueError, match=r"`test_size`=100 .*\[1, 99\]"):
        ds.train_test_split(test_size=100)


def test_shuffle_rejects_bad_seeds():
    ds = am.Dataset.from_dict({"n": list(range(50))})
    with pytest.raises(ValueError, match="seed"):
        ds.shuffle(seed=-1)


def test_sort_stable_multi_and_reverse():
    ds = am.Dataset.from_dict({"k": [2, 1, 2, 1, None], "i": [0, 1, 2, 3, 4]})
    assert ds.sort("k")["i"] == [1, 3, 0, 2, 4]  # stable, nulls last
    assert ds.sort("k", reverse=True)["i"] == [0, 2, 1, 3, 4]
    assert ds.sort(["k", "i"], reverse=[False, True])["i"] == [3, 1, 2, 0, 4]


def test_select_rejects_bad_indices():
    ds = am.Dataset.from_dict({"n": [1, 2, 3]})
    with pytest.raises(IndexError, match=r"-4.*length 3"):
        ds.select([0, -4])
    with pytest.raises(IndexError, match=r"3.*length 3"):
        ds.select(range(4))
    with pytest.raises(TypeError, match="integers"):
        ds.select([0.5])


def test_large_mapping_lives_in_an_indices_file(tmp_path, monkeypatch):
    monkeypatch.setattr(indices_mod, "INDICES_FILE_MIN_ROWS", 1000)
    am.write_chunks(({"n": i} for i in range(5000)), tmp_path, rows_per_chunk=2000)
    ds = am.Dataset.from_chunks(str(tmp_path))
    view = ds.shuffle(seed=1)
    (ix_file,) = [f for f in view.cache_files if "indices-" in f]
    assert os.path.dirname(ix_file) == str(tmp_path)
    assert os.path.basename(ix_file) == f"indices-{view.fingerprint}.arrow"
    assert not state_of(view).indices.array.flags.writeable  # memory-mapped, read-only
    again = ds.shuffle(seed=1)  # reopens the same file
    assert again["n"] == view["n"] and again.cache_files == view.cache_files
    assert sorted(view["n"]) == list(range(5000))


def test_shuffle_of_large_dataset_adds_indices_only(tmp_path):
    text = ["x" * 200] * 200_000  # ~40 MB of text
    am.write_chunks(pa.table({"text": text, "i": list(range(200_000))}), tmp_path / "c")
    data_bytes = sum(os.path.getsize(tmp_path / "c" / f) for f in os.listdir(tmp_path / "c"))
    before = pa.total_allocated_bytes()
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    view = ds.shuffle(seed=0).select(range(150_000)).sort("i")
    added = sum(os.path.getsize(f) for f in view.cache_files if "indices-" in f)
    assert added < 0.05 * data_bytes
    assert pa.total_allocated_bytes() - before < 0.05 * data_bytes
    assert view[0]["i"] < view[1]["i"]


def test_flatten_indices_writes_a_reusable_cache_file(tmp_path):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path, rows_per_chunk=3)
    ds = am.Dataset.from_chunks(str(tmp_path)).shuffle(seed=5)
    flat = ds.flatten_indices()
    assert flat["n"] == ds["n"] and state_of(flat).indices is None
    (path,) = flat.cache_files
    assert os.path.basename(path) == f"cache-{flat.fingerprint}.arrow"
    inode = os.stat(path).st_ino  # a hit reuses the file (its "last used" time is refreshed)
    assert ds.flatten_indices().cache_files == [path] and os.stat(path).st_ino == inode
    assert am.Dataset.from_chunks(str(tmp_path))["n"] == list(range(10))  # cache not taken as data


def test_cleanup_cache_files_keeps_what_is_used(tmp_path):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path)
    ds = am.Dataset.from_chunks(str(tmp_path))
    a = ds.shuffle(seed=1).flatten_indices()
    ds.shuffle(seed=2).flatten_indices()
    assert a.cleanup_cache_files() == 1
    assert a["n"] == ds.shuffle(seed=1)["n"]
    assert sorted(os.listdir(tmp_path)) == [
        "_manifest.json",
        "cache-" + a.fingerprint + ".arrow",
        "chunk-00000.arrow",
    ]


# ---- model-based property test -----------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("shuffle"), st.integers(0, 2**32)),
        st.tuples(st.just("sort"), st.booleans()),
        st.tuples(st.just("select"), st.lists(st.integers(0, 10**6), max_size=30)),
        st.tuples(st.just("range"), st.integers(0, 10**6), st.integers(0, 10**6)),
        st.tuples(st.just("shard"), st.integers(1, 5), st.integers(0, 10**6), st.booleans()),
    ),
    max_size=6,
)


@given(values=st.lists(st.integers(-50, 50), max_size=40), steps=ops)
def test_views_match_a_list_model(values, steps):
    ds = am.Dataset.from_dict({"v": values, "i": list(range(len(values)))})
    model = [{"v": v, "i": i} for i, v in enumerate(values)]
    for step in steps:
        n = len(model)
        if step[0] == "shuffle":
            perm = np.random.default_rng(step[1]).permutation(n)
            ds, model = ds.shuffle(seed=step[1]), [model[p] for p in perm]
        elif step[0] == "sort":
            ds = ds.sort("v", reverse=step[1])
            model = (
                sorted(model, key=lambda r: r["v"], reverse=step[1])
                if not step[1]
                else [r for _, r in sorted(enumerate(model), key=lambda t: (-t[1]["v"], t[0]))]
            )
        elif step[0] == "select" and n:
            idx = [x % n for x in step[1]]
            ds, model = ds.select(idx), [model[j] for j in idx]
        elif step[0] == "range" and n:
            a, b = sorted((step[1] % (n + 1), step[2] % (n + 1)))
            ds, model = ds.select(range(a, b)), model[a:b]
        elif step[0] == "shard":
            k, i = step[1], step[2] % step[1]
            ds = ds.shard(k, i, contiguous=step[3])
            if step[3]:
                div, mod = divmod(n, k)
                start = div * i + min(i, mod)
                model = model[start : start + div + (1 if i < mod else 0)]
            else:
                model = model[i::k]
    assert list(ds) == model
    assert len(ds) == len(model)
    assert list(ds.flatten_indices()) == model


def test_repeated_indices_are_not_mistaken_for_a_range():
    ds = am.Dataset.from_dict({"v": [10, 11, 12]})
    assert ds.select([0, 0, 2])["v"] == [10, 10, 12]
    assert ds.select([2, 0, 0])["v"] == [12, 10, 10]


def test_derived_files_go_beside_chunks_or_to_the_cache_root(tmp_path, monkeypatch):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    assert ds.cache_dir == str(tmp_path / "c")
    chosen = am.Dataset.from_chunks(str(tmp_path / "c"), cache_dir=str(tmp_path / "elsewhere"))
    flat = chosen.shuffle(seed=0).flatten_indices()
    assert os.path.dirname(flat.cache_files[0]) == str(tmp_path / "elsewhere")
    # A read-only corpus directory falls back to $ARROWMIX_CACHE.
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m: False if str(p) == str(tmp_path / "c") else real_access(p, m)
    )
    assert ds.cache_dir == os.environ["ARROWMIX_CACHE"]
    assert am.Dataset.from_dict({"n": [1]}).cache_dir == os.environ["ARROWMIX_CACHE"]


def test_disabled_caching_writes_to_a_temporary_directory(tmp_path):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path / "c")
    ds = am.Dataset.from_chunks(str(tmp_path / "c"))
    am.disable_caching()
    try:
        flat = ds.shuffle(seed=0).flatten_indices()
    finally:
        am.enable_caching()
    assert not flat.cache_files[0].startswith(str(tmp_path))
    assert sorted(os.listdir(tmp_path / "c")) == ["_manifest.json", "chunk-00000.arrow"]


def test_files_in_use_are_held_against_cleanup(tmp_path, monkeypatch):
    from arrowmix._cache.cleanup import remove_unused
    from arrowmix._cache.inuse import in_use

    monkeypatch.setattr(indices_mod, "INDICES_FILE_MIN_ROWS", 1)
    am.write_chunks(({"n": i} for i in range(10)), tmp_path)
    ds = am.Dataset.from_chunks(str(tmp_path))
    view = ds.shuffle(seed=3)
    flat = ds.shuffle(seed=4).flatten_indices()
    (ix,) = [f for f in view.cache_files if "indices-" in f]
    assert in_use(ix) and in_use(flat.cache_files[0])
    assert remove_unused(str(tmp_path), keep={"/nothing"}) == 1  # only the unheld seed=4 indices
    assert os.path.exists(ix) and os.path.exists(flat.cache_files[0])
    del view, flat
    import gc

    gc.collect()
    assert not in_use(ix)
