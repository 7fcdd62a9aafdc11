"""Faults of the bounded remote cache, injected by a loopback HTTP proxy in front of moto.

The corpus is written straight to the moto server; the dataset reads it through
:class:`FaultProxy`, which forwards every request and, when a test's rule says so, answers
503 ``SlowDown``, cuts a range answer short, flips a byte, or refuses with 403.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._remote import cache as remote_cache
from arrowmix._remote import retry
from arrowmix._remote.cache import chunk_cache
from arrowmix._remote.download import write_at
from arrowmix.exceptions import (
    ChunkFileError,
    ObjectChangedError,
    RemoteReadError,
    WriteError,
)
from tests.remote.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration

ROWS = 200


def via(proxy: FaultProxy, so: dict[str, Any]) -> dict[str, Any]:
    return {**so, "client_kwargs": {"endpoint_url": proxy.endpoint}}


def open_corpus(s3_url, so, proxy, tmp_path, n_chunks=2, limit="20MB", **kwargs):
    am.write_chunks(
        ({"id": i, "text": f"{i} " + "p" * 1000} for i in range(n_chunks * ROWS)),
        s3_url, rows_per_chunk=ROWS, storage_options=so,
    )  # fmt: skip
    return am.Dataset.from_chunks(
        s3_url, storage_options=via(proxy, so), cache_limit=limit,
        chunk_cache_dir=str(tmp_path / "chunks"), **kwargs,
    )  # fmt: skip


def on(method: str, name: str, action: str, times: int = 10**9) -> Callable[[str, str], Any]:
    """A rule: ``action`` for the first ``times`` ``method`` requests of ``name``."""
    left = itertools.count()

    def rule(m: str, path: str) -> str | None:
        if m == method and path.split("?")[0].endswith(name) and next(left) < times:
            return action
        return None

    return rule


def test_a_throttled_object_costs_the_documented_attempts_then_names_it(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    proxy.log.clear()  # opening read the footers
    proxy.rule = on("GET", "chunk-00001.arrow", "throttle")
    assert ds[0]["id"] == 0
    with pytest.raises(RemoteReadError, match=r"chunk-00001\.arrow.*5 times"):
        ds[ROWS]
    # One retry layer: 5 requests, not botocore's 5 x s3fs's 5 x arrowmix's 5.
    assert proxy.requests("GET", "chunk-00001.arrow") == retry.RETRY.attempts == 5
    left = os.listdir(tmp_path / "chunks")
    assert not [n for n in left if "chunk-00001" in n], left  # no copy, partial nor .pin
    proxy.rule = lambda m, p: None
    assert ds[ROWS]["id"] == ROWS  # the throttling is over: the next read succeeds


def test_throttling_waits_longer_than_other_errors():
    slow = OSError(errno.EBUSY, "SlowDown")
    reset = ConnectionResetError("reset")
    for attempt in (1, 2, 3):
        assert retry.delay(attempt, slow) >= 0.75 * retry.RETRY.throttled * 2 ** (attempt - 1)
        assert retry.delay(attempt, reset) <= 1.25 * retry.RETRY.backoff * 2 ** (attempt - 1)
    assert retry.delay(30, slow) <= retry.RETRY.longest


def test_the_backends_make_one_attempt_per_request(s3_storage_options):
    fs, _ = retry.remote_fs("s3://b/k", s3_storage_options)
    assert fs.retries == 1
    assert fs.config_kwargs["retries"]["total_max_attempts"] == 1
    assert retry.remote_fs("s3://b/other", s3_storage_options)[0] is fs  # one per process
    import fsspec

    shared = fsspec.filesystem("s3", **s3_storage_options)
    assert shared is not fs and shared.retries != 1  # the user's filesystem is left alone


def test_the_one_attempt_filesystem_reuses_the_session_that_listed_the_corpus(
    s3_url, s3_storage_options, monkeypatch
):
    from arrowmix._storage.fs import url_to_fs

    am.write_chunks(({"id": i} for i in range(10)), s3_url, storage_options=s3_storage_options)
    user, path = url_to_fs(s3_url, s3_storage_options)
    user.ls(path)  # opening lists the corpus with the user's filesystem: it has a session
    monkeypatch.setattr(retry, "_FS", {})
    fs, chunk = retry.remote_fs(f"{s3_url}/chunk-00000.arrow", s3_storage_options)
    assert fs.info(chunk)["size"] > 0
    assert fs is not user and fs.session is user.session  # no second service description
    assert fs.retries == 1  # still its own configuration: one attempt per request
    assert fs.config_kwargs["retries"]["total_max_attempts"] == 1


def test_downloads_leave_checksums_to_the_manifest_digest(
    s3_url, s3_storage_options, proxy, tmp_path
):
    # Every copy is checked against its manifest's digest: the chunk downloads do not also
    # ask the service for a checksum of each answer (botocore computes one by default).
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    start = len(proxy.log)
    assert ds[[ROWS + 1, 2]]["id"] == [ROWS + 1, 2]
    gets = [h for (m, p, _), h in zip(proxy.log[start:], proxy.headers[start:], strict=True)
            if m == "GET" and ".arrow" in p]  # fmt: skip
    assert len(gets) == 2
    assert not any("x-amz-checksum-mode" in h for h in gets)
    import fsspec

    user = fsspec.filesystem("s3", **s3_storage_options)  # the user's filesystem: untouched
    assert "response_checksum_validation" not in user.config_kwargs


def test_a_copy_matching_its_digest_costs_its_ranged_gets_only(
    s3_url, s3_storage_options, proxy, tmp_path
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    proxy.log.clear()  # opening read the footers
    assert ds[ROWS]["id"] == ROWS
    chunk = [(m, p) for m, p, _ in proxy.log if "chunk-00001.arrow" in p]
    assert chunk == [("GET", chunk[0][1])]  # no HEAD: the digest vouches for the version


def test_a_short_answer_is_retried_and_not_called_a_replacement(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    proxy.log.clear()  # opening read the footers
    proxy.rule = on("GET", "chunk-00000.arrow", "short", times=1)
    assert ds[0:3]["id"] == [0, 1, 2]  # one short answer, then the whole range
    assert proxy.requests("GET", "chunk-00000.arrow") == 2
    names = os.listdir(tmp_path / "chunks")
    assert [n for n in names if n.endswith("-chunk-00000.arrow")], names
    assert not [n for n in names if n.endswith(".arrow.arrow")], names
    proxy.rule = on("GET", "chunk-00001.arrow", "short")  # the version is unchanged
    with pytest.raises(RemoteReadError, match=r"chunk-00001\.arrow") as info:
        ds[ROWS]
    assert not isinstance(info.value, ObjectChangedError)


def test_a_short_answer_from_a_replaced_object_is_a_replacement(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries, s3_other_client
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    path = f"{s3_url}/chunk-00001.arrow"
    s3_other_client.pipe(path, s3_other_client.cat(path)[:-100])  # replaced, shorter
    with pytest.raises(ObjectChangedError, match=r"chunk-00001\.arrow"):
        ds[ROWS]


@pytest.mark.parametrize("fault", ["corrupt", "garble"])
def test_a_corrupted_answer_is_downloaded_again(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries, fault
):
    # corrupt: the answer carries a checksum header that no longer matches; garble: no
    # header. The copy's digest tells in both cases (the downloads ask for no checksum).
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    proxy.log.clear()  # opening read the footers
    proxy.rule = on("GET", "chunk-00000.arrow", fault, times=1)
    assert ds[5]["id"] == 5
    assert proxy.requests("GET", "chunk-00000.arrow") == 2
    proxy.rule = on("GET", "chunk-00001.arrow", fault)  # always: the object reads damaged
    with pytest.raises((ChunkFileError, RemoteReadError), match=r"chunk-00001\.arrow") as e:
        ds[ROWS]
    assert not isinstance(e.value, ObjectChangedError)
    assert isinstance(e.value, ChunkFileError) and "5 downloads" in str(e.value)
    assert proxy.requests("GET", "chunk-00001.arrow") == 5  # one part per download
    # Its manifest is read once per chunk (unchanged: no rewrite), not once per download.
    assert proxy.requests("GET", "_manifest.json") == 2


def test_a_full_disk_names_the_cache_directory_not_the_object(
    s3_url, s3_storage_options, proxy, tmp_path, monkeypatch
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path)
    real = os.pwrite
    calls = itertools.count()

    def full(fd, data, offset):
        if next(calls) == 0:
            return real(fd, bytes(data)[: len(data) // 2], offset)  # a short write...
        raise OSError(errno.ENOSPC, "No space left on device")  # ...then a full disk

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(WriteError, match=r"chunk cache directory .*chunks.*bytes free") as e:
        ds[0]
    assert e.value.errno == errno.ENOSPC
    assert not isinstance(e.value, (ChunkFileError, RemoteReadError))
    monkeypatch.setattr(os, "pwrite", real)
    assert os.listdir(tmp_path / "chunks") == ["budget.lock"]  # no partial, lock or pin left
    assert ds[0]["id"] == 0


def test_short_writes_are_continued(tmp_path, monkeypatch):
    real = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, d, o: real(fd, bytes(d)[:3], o))
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        write_at(fd, b"0123456789", 5, str(path), str(tmp_path))
    finally:
        os.close(fd)
    assert path.read_bytes() == b"\0" * 5 + b"0123456789"


def test_permission_errors_at_open_name_the_url(s3_url, s3_storage_options, proxy, tmp_path):
    am.write_chunks(({"id": i} for i in range(10)), s3_url, storage_options=s3_storage_options)
    proxy.rule = lambda method, path: "deny"
    with pytest.raises(PermissionError, match=s3_url.split("://")[1]):
        am.Dataset.from_chunks(
            s3_url, storage_options=via(proxy, s3_storage_options), cache_limit="10MB",
            chunk_cache_dir=str(tmp_path),
        )  # fmt: skip


def test_forked_workers_do_not_keep_the_parents_pins(s3_url, s3_storage_options, proxy, tmp_path):
    import fcntl
    import multiprocessing

    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path, n_chunks=3)
    assert [ds[i * ROWS]["id"] for i in range(3)] == [0, ROWS, 2 * ROWS]  # 3 idle copies
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=time.sleep, args=(300,))  # terminated below
    child.start()
    try:
        pins = [n for n in os.listdir(tmp_path / "chunks") if n.endswith(".pin")]
        assert len(pins) == 3
        for name in pins:  # nobody, parent or child, pins an idle copy any more
            fd = os.open(tmp_path / "chunks" / name, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
        assert child.is_alive()  # the child was there all along
    finally:
        child.terminate()
        child.join()


def max_chunk(so, url) -> int:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **so)
    return max(f["size"] for f in fs.ls(url, detail=True) if f["name"].endswith(".arrow"))


def test_idle_copies_hold_at_most_an_eighth_of_the_limit(
    s3_url, s3_storage_options, proxy, tmp_path
):
    open_corpus(s3_url, s3_storage_options, proxy, tmp_path, n_chunks=8)
    limit = 8 * max_chunk(s3_storage_options, s3_url) + 100
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=via(proxy, s3_storage_options), cache_limit=limit,
        chunk_cache_dir=str(tmp_path / "chunks"),
    )  # fmt: skip
    for i in range(8):
        assert ds[i * ROWS]["id"] == i * ROWS
    cache = chunk_cache(str(tmp_path / "chunks"), limit)
    idle = [p.chunk.size for p in cache._open.values() if p.users <= 0]
    assert len(idle) == 1  # the most recent one, not the 8 most recent copies


def test_read_ahead_pins_yield_to_a_demand_read(
    s3_url, s3_storage_options, proxy, tmp_path, monkeypatch
):
    so = s3_storage_options
    open_corpus(s3_url, so, proxy, tmp_path, n_chunks=16)
    limit = 4 * max_chunk(so, s3_url) + 100
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=via(proxy, so), cache_limit=limit,
        chunk_cache_dir=str(tmp_path / "chunks"),
    )  # fmt: skip
    # A demand read that found no room once the holds yielded would give up at once: it
    # succeeds only if the read-ahead pins yield without waiting for anyone.
    monkeypatch.setattr(remote_cache, "WAIT_FOR_SPACE", 0.0)
    from arrowmix._dataset.to_stream import to_stream

    streams = [
        to_stream(ds, 8, shuffle="chunks", seed=s, infinite=False, block_rows=50) for s in (0, 1)
    ]
    readers = [iter(s) for s in streams]
    for r in readers:
        next(r)
    for s in streams:  # the read-ahead of both streams pins what the budget allows
        ahead = s.rows._reading()._ahead
        for fut in [f for _, f in ahead._ahead.values()] + list(ahead._reading.values()):
            if fut is not None:
                fut.result(timeout=120)
    held = [n for n in os.listdir(tmp_path / "chunks") if n.endswith(".arrow")]
    assert len(held) >= 4  # two streams of read-ahead: about the whole budget
    row = next(i for i in range(16) if not any(f"chunk-{i:05d}" in n for n in held)) * ROWS
    assert ds[row]["id"] == row  # a chunk neither stream holds
    for s in streams:
        s.close()


def test_opening_reads_no_chunk_and_checks_each_on_first_read(
    s3_url, s3_storage_options, proxy, tmp_path, s3_other_client
):
    so = s3_storage_options
    ds = open_corpus(s3_url, so, proxy, tmp_path, n_chunks=6)
    assert not [p for m, p, _ in proxy.log if "chunk-" in p]  # the manifest describes them
    assert len(ds) == 6 * ROWS and ds[5 * ROWS + 7]["id"] == 5 * ROWS + 7
    # A chunk of another schema, under the name, size and digest the manifest records for
    # chunk 3, is refused when first read, naming it.
    other = f"{s3_url}-other"
    am.write_chunks(
        ({"id": str(i), "text": f"{i} " + "p" * 1000} for i in range(ROWS)), other,
        rows_per_chunk=ROWS, storage_options=so,
    )  # fmt: skip
    from arrowmix._dataset.state import state_of
    from arrowmix._remote.meta import RemoteChunk
    from arrowmix._remote.table import RemoteTable

    table = state_of(ds).table
    assert isinstance(table, RemoteTable)
    fake = RemoteTable(
        [*table.chunks[:3], RemoteChunk(
            f"{other}/chunk-00000.arrow", *_described(s3_other_client, other, so),
        )], table.stored_schema, str(tmp_path / "other"), table.limit, table.storage_options,
    )  # fmt: skip
    with pytest.raises(am.exceptions.SchemaMismatchError, match=r"other/chunk-00000\.arrow"):
        fake.take(np.array([3 * ROWS]))


def _described(fs, directory, so):
    from arrowmix._remote.meta import version_tag
    from arrowmix._storage.digests import read_manifest

    info = fs.info(f"{directory}/chunk-00000.arrow")
    entry = read_manifest(directory, so)
    return int(info["size"]), version_tag(info), (ROWS,), entry["chunk-00000.arrow"].digest


def test_a_read_spanning_missing_chunks_downloads_them_in_parallel(
    s3_url, s3_storage_options, proxy, tmp_path
):
    ds = open_corpus(s3_url, s3_storage_options, proxy, tmp_path, n_chunks=4)
    # The chunks' GETs are held at the proxy until three of them wait there at once: one
    # download after the other would never get there (the gate then opens after a minute).
    proxy.rule = lambda m, p: "hold" if m == "GET" and "chunk-" in p else None
    base, waiting = proxy.held, []

    def open_when_three_wait() -> None:
        deadline = time.monotonic() + 60
        while proxy.held - base < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting.append(proxy.held - base)
        proxy.gate.set()

    gate = threading.Thread(target=open_when_three_wait)
    gate.start()
    rows = [3 * ROWS + 1, 1 * ROWS + 2, 2 * ROWS + 3, 5]
    try:
        assert ds[rows]["id"] == rows  # in the order asked
    finally:
        gate.join()
    assert waiting[0] >= 3  # not one chunk after the other
