"""``from_generator``'s corpus is a cache: checked before it is served, generated again when
damaged or missing, and hashed only once per file version."""

from __future__ import annotations

import os
import time
import warnings

import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._storage import trust
from arrowmix.exceptions import CacheWarning
from tests import damage


def gen(n, tag, log):
    with open(log, "a") as f:  # the calls, outside what the fingerprint hashes
        f.write(tag)
    for i in range(n):
        yield {"i": i, "t": f"{tag}{i:05d}"}


def make(tmp_path, tag="a", n=2000):
    kwargs = {"n": n, "tag": tag, "log": str(tmp_path / "calls")}
    return am.Dataset.from_generator(gen, gen_kwargs=kwargs, cache_dir=tmp_path / "cache")


def calls(tmp_path):
    """The tags of the generator calls so far, then forget them."""
    log = tmp_path / "calls"
    done = log.read_text() if log.exists() else ""
    log.write_text("")
    return done


def expected(tag="a", n=2000):
    return [f"{tag}{i:05d}" for i in range(n)]


def chunk_of(ds):
    (path,) = [f for f in state_of(ds).files if f.endswith(".arrow")]
    return path


def flip(path):
    damage.flip(path, b"a00042")


def delete(path):
    os.unlink(path)


def damage_manifest(path):
    manifest = os.path.join(os.path.dirname(path), "_manifest.json")
    with open(manifest) as f:
        text = f.read()
    with open(manifest, "w") as f:
        f.write(text.replace('"rows"', '"rowz"', 1))


@pytest.mark.parametrize("harm", [flip, damage.truncate, damage.empty, delete, damage_manifest])
def test_a_damaged_or_missing_chunk_is_generated_again(tmp_path, harm):
    ds = make(tmp_path)
    path = chunk_of(ds)
    del ds
    calls(tmp_path)
    harm(path)
    damage.forget_checks()
    with pytest.warns(CacheWarning, match="Generating it again"):
        again = make(tmp_path)
    assert again["t"] == expected()
    assert calls(tmp_path) == "a"
    damage.forget_checks()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert make(tmp_path)["t"] == expected()  # the new corpus is served as it is
    assert calls(tmp_path) == ""


def test_two_same_size_chunks_swapped_are_both_generated_again(tmp_path):
    a, b = make(tmp_path, "a"), make(tmp_path, "b")
    pa_, pb = chunk_of(a), chunk_of(b)
    assert os.path.getsize(pa_) == os.path.getsize(pb)
    del a, b
    damage.swap(pa_, pb)
    damage.forget_checks()
    calls(tmp_path)
    for tag in "ab":
        with pytest.warns(CacheWarning, match="Generating it again"):
            again = make(tmp_path, tag)
        assert again["t"] == expected(tag)
    assert calls(tmp_path) == "ab"


def test_an_intact_corpus_is_hashed_once_per_version_not_per_run(tmp_path, monkeypatch):
    hashed = []
    real = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or real(p))
    make(tmp_path)
    for _ in range(2):
        damage.forget_checks()
        assert make(tmp_path)["t"] == expected()
    assert hashed == [] and calls(tmp_path) == "a"  # the writer's record vouches for the chunk
    path = chunk_of(make(tmp_path))
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)  # the same bytes, a new file: hashed once, then trusted
    for _ in range(2):
        damage.forget_checks()
        assert make(tmp_path)["t"] == expected()
    assert hashed == [path] and calls(tmp_path) == ""


def test_a_chunk_stamped_in_the_future_is_served_checked_each_time(tmp_path, monkeypatch):
    path = chunk_of(make(tmp_path))
    day = time.time() + 86400
    os.utime(path, (day, day))  # a clock set wrong: its identity is never recorded
    hashed = []
    real = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or real(p))
    for _ in range(2):
        damage.forget_checks()
        started = time.monotonic()
        assert make(tmp_path)["t"] == expected()
        assert time.monotonic() - started < 30
    assert hashed == [path, path] and calls(tmp_path) == "a"
