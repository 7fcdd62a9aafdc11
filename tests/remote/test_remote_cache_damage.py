"""A bounded remote cache serves only copies that hold the manifest's bytes (moto S3).

Every kind of damage a local copy can suffer between two processes (a flipped byte, a
truncation, an empty file, two same-size copies swapped, a deleted copy) makes the next reader
download the chunk again, never serve wrong rows or raise a bare pyarrow error.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._remote import cache as cache_mod
from arrowmix._storage import trust
from arrowmix.exceptions import CacheWarning
from tests import damage

pytestmark = pytest.mark.integration

ROWS = 100  # per chunk; every row has the same length, so every chunk has the same size


def write(url, so):
    rows = ({"id": i, "text": f"{i:06d} " + "x" * 300} for i in range(2 * ROWS))
    am.write_chunks(rows, url, rows_per_chunk=ROWS, storage_options=so)


def open_cached(url, so, cache_dir):
    return am.Dataset.from_chunks(
        url, storage_options=so, cache_limit="64MB", chunk_cache_dir=str(cache_dir)
    )


def new_process():
    """Forget what this process checked and holds open, as a new process starts."""
    for c in list(cache_mod._CACHES.values()):
        c.close_idle()
    cache_mod._CACHES.clear()
    damage.forget_checks()


def copies(ds, cache_dir):
    return [cache_dir / f"{c.key}.arrow" for c in state_of(ds).table.chunks]


def read_all(ds):
    return ds["text"]


def expected():
    return [f"{i:06d} " + "x" * 300 for i in range(2 * ROWS)]


@pytest.fixture
def corpus(s3_url, s3_storage_options, tmp_path):
    write(s3_url, s3_storage_options)
    cache_dir = tmp_path / "chunks"
    ds = open_cached(s3_url, s3_storage_options, cache_dir)
    assert read_all(ds) == expected()  # both copies downloaded and checked
    paths = copies(ds, cache_dir)
    assert paths[0].stat().st_size == paths[1].stat().st_size
    del ds
    new_process()
    return s3_url, s3_storage_options, cache_dir, paths


def flip(path):
    damage.flip(path, b"000042 ")


@pytest.mark.parametrize("harm", [flip, damage.truncate, damage.empty, damage.swap])
def test_a_damaged_copy_is_downloaded_again_never_served(corpus, harm):
    url, so, cache_dir, paths = corpus
    if harm is damage.swap:
        damage.swap(paths[0], paths[1])
    else:
        harm(paths[0])
    ds = open_cached(url, so, cache_dir)
    with pytest.warns(CacheWarning, match="downloaded again"):
        assert read_all(ds) == expected()
    stats = cache_mod.chunk_cache(str(cache_dir), 1).stats
    assert stats.refetched == (2 if harm is damage.swap else 1)
    assert stats.chunks_downloaded == stats.refetched


def test_a_deleted_copy_is_downloaded_again(corpus):
    url, so, cache_dir, paths = corpus
    paths[1].unlink()
    ds = open_cached(url, so, cache_dir)
    assert read_all(ds) == expected()
    assert cache_mod.chunk_cache(str(cache_dir), 1).stats.chunks_downloaded == 1


def test_an_intact_copy_is_trusted_by_its_identity_not_hashed(corpus, monkeypatch):
    url, so, cache_dir, _ = corpus
    hashed = []
    real = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or real(p))
    ds = open_cached(url, so, cache_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert read_all(ds) == expected()
    assert hashed == []  # the downloader's record vouches for both copies
    assert cache_mod.chunk_cache(str(cache_dir), 1).stats.chunks_downloaded == 0


def test_a_copy_no_record_vouches_for_is_hashed_once_then_trusted(corpus, monkeypatch):
    url, so, cache_dir, paths = corpus
    for p in paths:  # e.g. copied from another node: same bytes, no record
        data = p.read_bytes()
        p.unlink()
        p.write_bytes(data)
    hashed = []
    real = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or real(p))
    assert read_all(open_cached(url, so, cache_dir)) == expected()
    assert len(hashed) == 2
    new_process()
    assert read_all(open_cached(url, so, cache_dir)) == expected()
    assert len(hashed) == 2  # recorded: the next process trusts them
    assert cache_mod.chunk_cache(str(cache_dir), 1).stats.chunks_downloaded == 0


def test_a_flipped_byte_is_not_served_to_a_new_interpreter(corpus):
    url, so, cache_dir, paths = corpus
    flip(paths[0])
    code = (
        "import json, sys, warnings, arrowmix as am\n"
        "url, so, d = json.loads(sys.argv[1])\n"
        "warnings.simplefilter('ignore')\n"
        "ds = am.Dataset.from_chunks(url, storage_options=so, cache_limit='64MB',"
        " chunk_cache_dir=d)\n"
        "print(json.dumps(ds['text'][42]))\n"
    )
    arg = json.dumps([url, so, str(cache_dir)])
    out = subprocess.run(
        [sys.executable, "-c", code, arg], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == expected()[42]


def test_a_copy_another_process_downloaded_meanwhile_is_trusted_unhashed(
    s3_url, s3_storage_options, tmp_path, monkeypatch
):
    write(s3_url, s3_storage_options)
    cache_dir = tmp_path / "chunks"
    ds = open_cached(s3_url, s3_storage_options, cache_dir)
    assert ds[0]["text"] == expected()[0]  # chunk 0 here: this process has read the record
    code = (
        "import json, sys, arrowmix as am\n"
        "url, so, d = json.loads(sys.argv[1])\n"
        "ds = am.Dataset.from_chunks(url, storage_options=so, cache_limit='64MB',"
        " chunk_cache_dir=d)\n"
        f"assert ds[{ROWS}]['id'] == {ROWS}\n"
    )
    arg = json.dumps([s3_url, s3_storage_options, str(cache_dir)])
    subprocess.run([sys.executable, "-c", code, arg], check=True)  # a rank downloads chunk 1
    hashed = []
    real = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or real(p))
    assert read_all(ds) == expected()
    assert hashed == []  # its record was read again: the other rank's check is trusted
    assert cache_mod.chunk_cache(str(cache_dir), 1).stats.chunks_downloaded == 1
