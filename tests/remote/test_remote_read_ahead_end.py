"""A stream's read-ahead stops with the stream: nothing runs on, and nothing stays pinned.

When a stream over a bounded remote corpus ends (exhausted, ``close()``, leaving its ``with``
block) its read-ahead's downloads not started are cancelled and those under way are awaited,
so a user may remove the cache directory right after ``list(stream)``. The corpus lives on fsspec's
in-process ``memory://`` filesystem; read-ahead downloads are slowed down a little so that
some are under way when the stream ends.
"""

from __future__ import annotations

import gc
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._remote import cache as cache_module
from arrowmix.stream import from_iterable, mix

CHUNKS, PER_CHUNK = 8, 20


class Downloads:
    """Counts the downloads into ``directory`` under way; read-ahead ones take a little longer.

    Also notes the read-ahead threads alive before the test (another test's, ending).
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, directory: str) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.by_read_ahead = 0
        self.threads_before = set(read_ahead_threads())
        real = cache_module.download

        def download(*args: Any, **kwargs: Any) -> None:
            if args[3] != directory:  # another test's download, finishing
                return real(*args, **kwargs)
            ahead = threading.current_thread().name.startswith("arrowmix-fetch")
            with self.lock:
                self.running += 1
                self.by_read_ahead += ahead
            try:
                if ahead:
                    time.sleep(0.02)
                real(*args, **kwargs)
            finally:
                with self.lock:
                    self.running -= 1

        monkeypatch.setattr(cache_module, "download", download)


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Downloads:
    return Downloads(monkeypatch, str(tmp_path / "c"))


@pytest.fixture
def corpus(tmp_path: Any) -> Iterator[am.Dataset]:
    url = f"memory://read-ahead-end-{uuid.uuid4().hex[:8]}"
    rows = ({"id": i, "t": "x" * 100} for i in range(CHUNKS * PER_CHUNK))
    am.write_chunks(rows, url, rows_per_chunk=PER_CHUNK)
    yield am.Dataset.from_chunks(url, cache_limit="1MB", chunk_cache_dir=str(tmp_path / "c"))
    fsspec.filesystem("memory").rm(url[len("memory://") :], recursive=True)


def read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("arrowmix-fetch")]


def assert_quiet(ds: am.Dataset, downloads: Downloads) -> None:
    """No read-ahead thread, no download under way, no lock file, no read-ahead pin."""
    cache = state_of(ds).table.cache
    assert set(read_ahead_threads()) <= downloads.threads_before
    assert downloads.running == 0
    assert [n for n in os.listdir(cache.directory) if n.endswith((".dl", ".partial"))] == []
    assert not cache._holds
    assert all(p.users == 0 for p in cache._open.values())  # only idle copies stay open


def test_a_stream_cut_short_by_its_mix_leaves_nothing_running(corpus, downloads):
    remote = corpus.to_stream(shuffle=None, infinite=False, read_ahead=4)
    short = from_iterable([{"id": -1}] * 3)
    got = list(mix([remote, short], [0.5, 0.5], seed=0, stopping="shortest"))
    assert 0 < len([r for r in got if r["id"] >= 0]) < PER_CHUNK  # the remote read was cut
    assert downloads.by_read_ahead >= 1  # the read-ahead had started on the next chunks
    assert_quiet(corpus, downloads)
    shutil.rmtree(state_of(corpus).table.cache.directory)  # nothing races with it


def test_an_exhausted_stream_leaves_nothing_running_and_reads_again(corpus, downloads):
    s = corpus.to_stream(shuffle="chunks", seed=1, infinite=False, read_ahead=3)
    first = [r["id"] for r in s]
    assert sorted(first) == list(range(CHUNKS * PER_CHUNK))
    assert downloads.by_read_ahead >= 1
    assert_quiet(corpus, downloads)
    s.set_epoch(1)  # the next pass reads ahead again
    before = downloads.by_read_ahead
    shutil.rmtree(state_of(corpus).table.cache.directory)
    os.makedirs(state_of(corpus).table.cache.directory)
    state_of(corpus).table.cache._open.clear()  # their files are gone with the directory
    assert sorted(r["id"] for r in s) == sorted(first)
    assert downloads.by_read_ahead > before
    assert_quiet(corpus, downloads)


@pytest.mark.parametrize("how", ["close", "with"])
def test_closing_a_stream_mid_way_leaves_nothing_running(corpus, downloads, how):
    s = corpus.to_stream(shuffle=None, infinite=False, read_ahead=4)
    if how == "with":
        with s:
            head = [next(s)["id"] for _ in range(5)]
    else:
        head = [next(s)["id"] for _ in range(5)]
        s.close()
    assert head == list(range(5))
    assert_quiet(corpus, downloads)
    assert [r["id"] for r in s][:3] == [5, 6, 7]  # a closed stream reads on


def test_a_dataloader_epoch_leaves_nothing_running(corpus, downloads):
    torch = pytest.importorskip("torch")
    s = corpus.to_stream(shuffle="chunks", seed=2, infinite=False, read_ahead=4)
    loader = torch.utils.data.DataLoader(s.to_torch(), batch_size=None)
    assert sorted(int(r["id"]) for r in loader) == list(range(CHUNKS * PER_CHUNK))
    assert downloads.by_read_ahead >= 1
    assert_quiet(corpus, downloads)


@pytest.mark.parametrize("top", ["prefetch", "map"])
def test_a_dropped_pipeline_releases_its_read_ahead_at_once(corpus, downloads, top):
    # The pipeline's top is dropped without close() while its source lives on (held here,
    # or by a prefetch worker thread): its read-ahead pins and threads are released then.
    src = corpus.to_stream(shuffle=None, infinite=False, read_ahead=4)
    s = src.prefetch(8) if top == "prefetch" else src.map(lambda r: r)
    assert [next(s)["id"] for _ in range(5)] == list(range(5))
    ahead = src.rows._held._ahead  # the stream's ReadAhead: one block, planned once
    for fut in [f for _, f in ahead._ahead.values()] + list(ahead._reading.values()):
        if fut is not None:
            fut.result()  # the downloads planned have finished: pinned, nothing in flight
    cache = state_of(corpus).table.cache
    assert cache._holds  # pinned ahead of the reader
    threads = [t for t in read_ahead_threads() if t not in downloads.threads_before]
    assert threads
    del s
    gc.collect()
    assert not cache._holds  # released by the drop, not when the process ends
    assert ahead._pool is None and not ahead._ahead and not ahead._reading
    for t in threads:
        t.join(timeout=60)  # the pool was shut down: they end (the timeout only guards a hang)
    assert_quiet(corpus, downloads)
