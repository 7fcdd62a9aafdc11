"""A read-only corpus that ships its cache beside its chunks: the cache is read in place."""

from __future__ import annotations

import os
import shutil

import pytest

import arrowmix as am
from arrowmix._cache import paths
from arrowmix._dataset import indices

NO_COMPUTE = "ARROWMIX_TEST_NO_COMPUTE"
# The functions below read the environment only to fail if they are called at all (a
# recompute); the FingerprintWarning about reading os.environ is right and expected here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*reads .*os.environ:arrowmix.exceptions.FingerprintWarning"
)


def lengths(row):
    if os.environ.get(NO_COMPUTE):
        raise AssertionError("recomputed although the shipped cache has the result")
    return {"n": len(row["text"])}


def is_long(row):
    if os.environ.get(NO_COMPUTE):
        raise AssertionError("recomputed although the shipped cache has the result")
    return len(row["text"]) > 3


def pipeline(ds):
    mapped = ds.map(lengths)
    kept = mapped.filter(is_long)
    flat = ds.shuffle(seed=3).flatten_indices()
    return mapped, kept, flat


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A corpus with its complete cache, copied elsewhere and made read-only."""
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 1)  # spill every mapping to a file
    source = tmp_path / "made"
    am.write_chunks(({"text": "x" * (i % 7)} for i in range(40)), source, rows_per_chunk=15)
    expected = pipeline(am.Dataset.from_chunks(str(source)))
    copy = tmp_path / "shipped"
    shutil.copytree(source, copy, copy_function=shutil.copy)  # new inodes and mtimes
    # Read-only for this test (root may write anywhere: the writability probe is patched).
    real = paths._writable
    monkeypatch.setattr(paths, "_writable", lambda d: real(d) and d != str(copy))
    root = tmp_path / "fresh-cache-root"
    monkeypatch.setenv("ARROWMIX_CACHE", str(root))
    return copy, root, expected


def test_complete_shipped_cache_is_used_in_place(shipped, monkeypatch):
    copy, root, (mapped, kept, flat) = shipped
    before = sorted(os.listdir(copy))
    monkeypatch.setenv(NO_COMPUTE, "1")
    ds = am.Dataset.from_chunks(str(copy))
    assert ds.cache_dir == str(root)
    got_mapped, got_kept, got_flat = pipeline(ds)
    assert got_mapped["n"] == mapped["n"]
    assert got_kept["text"] == kept["text"]
    assert got_flat["text"] == flat["text"]
    for result in (got_mapped, got_kept, got_flat):
        derived = [f for f in result.cache_files if "chunk-" not in f]
        assert derived and all(os.path.dirname(f) == str(copy) for f in derived)
    assert sorted(os.listdir(copy)) == before  # nothing written beside the chunks
    assert not [n for n in os.listdir(root) if n.startswith(("cache-", "indices-"))]


def test_what_is_not_shipped_is_computed_into_the_cache_root(shipped):
    copy, root, (mapped, _, _) = shipped
    ds = am.Dataset.from_chunks(str(copy))
    other = ds.map(lambda r: {"m": len(r["text"]) * 2})
    assert other["m"] == [n * 2 for n in mapped["n"]]
    assert all(os.path.dirname(f) == str(root) for f in other.cache_files if "cache-" in f)
    again = ds.map(lengths, load_from_cache_file=False)  # an explicit recompute never writes
    assert again["n"] == mapped["n"]  # beside a read-only corpus
    assert all(os.path.dirname(f) == str(root) for f in again.cache_files if "cache-" in f)
