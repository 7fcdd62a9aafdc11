"""Opening a bounded remote corpus: the requests it makes, old manifests, and races.

The corpus is written straight to the moto server and opened through :class:`FaultProxy`,
which logs every request (and can hold one until the test opens its gate).
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import ObjectChangedError, SchemaMismatchError
from tests.remote.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration

ROWS = 200


def via(proxy: FaultProxy, so: dict[str, Any]) -> dict[str, Any]:
    return {**so, "client_kwargs": {"endpoint_url": proxy.endpoint}}


def write(
    url: str,
    so: dict[str, Any],
    n_chunks: int = 3,
    start: int = 0,
    width: int = 500,
    **kwargs: Any,
) -> None:
    """``n_chunks`` chunks of ROWS rows; every ``start`` gives chunks of the same sizes."""
    am.write_chunks(
        ({"id": start + i, "text": f"{start + i:08d} " + "p" * width}
         for i in range(n_chunks * ROWS)),
        url, rows_per_chunk=ROWS, storage_options=so, **kwargs,
    )  # fmt: skip


def open_bounded(url: str, so: dict[str, Any], cache: Any) -> am.Dataset:
    return am.Dataset.from_chunks(
        url, storage_options=so, cache_limit="20MB", chunk_cache_dir=str(cache)
    )


def edit_manifest(fs: Any, url: str, change: Any) -> None:
    """Rewrite the corpus manifest at ``url`` with ``change(body)`` applied.

    Without its checksum (as written before one was recorded): a stale one reads as damaged.
    """
    body = json.loads(fs.cat_file(f"{url}/_manifest.json"))
    body.pop("checksum")
    change(body)
    fs.pipe_file(f"{url}/_manifest.json", json.dumps(body).encode())


def requests(proxy: FaultProxy) -> list[tuple[str, str]]:
    """(method, what) of each request: "listing", "manifest" or the chunk file name."""
    out = []
    for method, path, _ in proxy.log:
        name = path.split("?")[0].rsplit("/", 1)[-1]
        what = (
            "listing" if "list-type" in path else "manifest" if name == "_manifest.json" else name
        )
        out.append((method, what))
    return sorted(out)


def test_opening_costs_one_listing_and_one_manifest_read(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options)
    ds = open_bounded(s3_url, via(proxy, s3_storage_options), tmp_path / "c")
    # No existence checks, no second listing, no chunk read: the manifest records the schema.
    assert requests(proxy) == [("GET", "listing"), ("GET", "manifest")]
    assert ds.column_names == ["id", "text"] and len(ds) == 3 * ROWS
    assert ds[2 * ROWS + 5]["id"] == 2 * ROWS + 5


def test_write_chunks_records_the_chunks_schema_in_the_manifest(tmp_path):
    am.write_chunks([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}], str(tmp_path / "d"))
    body = json.loads((tmp_path / "d" / "_manifest.json").read_text())
    recorded = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(body["schema"])))
    with pa.memory_map(str(tmp_path / "d" / "chunk-00000.arrow")) as f:
        assert recorded.equals(pa.ipc.open_file(f).schema, check_metadata=True)


def test_a_manifest_written_before_schemas_were_recorded_opens_from_its_first_chunk(
    s3_url, s3_storage_options, s3_other_client, proxy, tmp_path
):
    so = s3_storage_options
    write(s3_url, so)
    recorded = open_bounded(s3_url, so, tmp_path / "a")
    edit_manifest(s3_other_client, s3_url, lambda body: body.pop("schema", None))
    ds = open_bounded(s3_url, via(proxy, so), tmp_path / "b")
    # Its first chunk's footer instead (two ranged GETs), still no HEAD and one listing.
    assert requests(proxy) == [
        ("GET", "chunk-00000.arrow"), ("GET", "chunk-00000.arrow"), ("GET", "listing"),
        ("GET", "manifest"),
    ]  # fmt: skip
    assert ds.fingerprint == recorded.fingerprint and ds.features == recorded.features
    assert ds["id"] == list(range(3 * ROWS))


def test_an_old_manifest_whose_first_chunk_is_gone_opens_from_the_first_one_listed(
    s3_url, s3_storage_options, s3_other_client, tmp_path
):
    so = s3_storage_options
    write(s3_url, so)
    edit_manifest(s3_other_client, s3_url, lambda body: body.pop("schema", None))
    s3_other_client.rm_file(f"{s3_url}/chunk-00000.arrow")
    with pytest.raises(am.exceptions.IncompleteCorpusError, match=r"missing chunk-00000\.arrow"):
        open_bounded(s3_url, so, tmp_path)
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit="20MB", chunk_cache_dir=str(tmp_path),
        allow_incomplete=True,
    )  # fmt: skip
    assert len(ds) == 2 * ROWS and ds[0]["id"] == ROWS  # the files listed open


def test_a_schema_the_manifest_misstates_is_refused_when_the_copy_is_read(
    s3_url, s3_storage_options, s3_other_client, tmp_path
):
    so = s3_storage_options
    write(s3_url, so)
    wrong = pa.schema([("id", pa.string()), ("text", pa.string())])
    encoded = base64.b64encode(wrong.serialize().to_pybytes()).decode()
    edit_manifest(s3_other_client, s3_url, lambda body: body.update(schema=encoded))
    ds = open_bounded(s3_url, so, tmp_path)
    with pytest.raises(SchemaMismatchError, match=r"chunk-00000\.arrow"):
        ds[0]


def test_a_corpus_rewritten_while_opened_never_serves_one_version_as_the_other(
    s3_url, s3_storage_options, s3_other_client, proxy, tmp_path
):
    so = s3_storage_options
    write(s3_url, so, start=0)
    cache = tmp_path / "shared"
    before = open_bounded(s3_url, so, cache)  # version A: its listing and its manifest
    proxy.rule = lambda method, path: "hold" if path.endswith("/_manifest.json") else None
    opened: list[Any] = []
    opening = threading.Thread(
        target=lambda: opened.append(open_bounded(s3_url, via(proxy, so), cache))
    )
    opening.start()
    deadline = time.monotonic() + 30
    while not (proxy.held and any(p.endswith("arrowmix-test") for p in proxy.answered)):
        assert time.monotonic() < deadline, "the open never listed the corpus"
        time.sleep(0.01)
    # Listed as version A; the manifest it reads is version B's (same sizes, other rows).
    write(s3_url, so, start=10**6, overwrite=True)
    proxy.gate.set()
    opening.join(30)
    (during,) = opened
    assert during.fingerprint != before.fingerprint
    assert during[0]["id"] == 10**6  # version B's bytes, under version B's digests
    # Version A's dataset never gets version B's copy from the shared cache.
    with pytest.raises(ObjectChangedError, match=r"chunk-00000\.arrow"):
        before[0]


def open_racing(
    url: str, so: dict[str, Any], proxy: FaultProxy, cache: Any, rewrite: Any
) -> am.Dataset:
    """Open ``url`` through ``proxy`` with ``rewrite()`` landing after its manifest was read
    and before its listing answers (the listing is held until then)."""
    proxy.rule = lambda method, path: "hold" if "list-type" in path else None
    opened: list[Any] = []

    def opening() -> None:
        try:
            opened.append(open_bounded(url, via(proxy, so), cache))
        except Exception as exc:  # noqa: BLE001  # raised in the test's thread below
            opened.append(exc)

    thread = threading.Thread(target=opening)
    thread.start()
    deadline = time.monotonic() + 30
    while not (proxy.held and any(p.endswith("/_manifest.json") for p in proxy.answered)):
        assert time.monotonic() < deadline, "the open never read the manifest"
        time.sleep(0.01)
    rewrite()
    proxy.rule = lambda method, path: None
    proxy.gate.set()
    thread.join(30)
    (got,) = opened
    if isinstance(got, Exception):
        raise got
    assert isinstance(got, am.Dataset)
    return got


def rewritten(url: str) -> str:
    """What the error of a corpus rewritten while it was opened or read says."""
    return rf"corpus {re.escape(repr(url))} was rewritten.*Reopen it with `from_chunks`"


def test_a_rewrite_between_the_manifest_and_the_listing_is_a_rewrite_not_damage(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries
):
    so, cache = s3_storage_options, tmp_path / "c"
    write(s3_url, so, start=0)
    # Version A's manifest (digests), version B's listing (ETags): same sizes, other bytes.
    ds = open_racing(
        s3_url, so, proxy, cache, lambda: write(s3_url, so, start=10**6, overwrite=True)
    )
    proxy.log.clear()
    with pytest.raises(ObjectChangedError, match=rewritten(s3_url)) as e:
        ds[0]
    assert "damaged" not in str(e.value) and "chunk-00000.arrow" in str(e.value)
    # One download and one read of the manifest: no download wasted on retries.
    assert proxy.requests("GET", "chunk-00000.arrow") == 1
    assert proxy.requests("GET", "_manifest.json") == 1
    assert not [n for n in os.listdir(cache) if n.endswith((".arrow", ".partial"))]
    assert open_bounded(s3_url, so, cache)[0]["id"] == 10**6  # reopened: version B


def test_a_rewrite_with_other_sizes_while_opening_is_a_rewrite(
    s3_url, s3_storage_options, proxy, tmp_path
):
    so = s3_storage_options
    write(s3_url, so, start=0)
    with pytest.raises(ObjectChangedError, match=rewritten(s3_url)) as e:
        open_racing(
            s3_url, so, proxy, tmp_path,
            lambda: write(s3_url, so, start=10**6, width=600, overwrite=True),
        )  # fmt: skip
    assert "while it was being opened" in str(e.value)
    assert open_bounded(s3_url, so, tmp_path)[0]["id"] == 10**6


def test_a_listing_taken_during_a_rewrite_never_opens_part_of_the_corpus(
    s3_url, s3_storage_options, s3_other_client, proxy, tmp_path
):
    so = s3_storage_options
    write(s3_url, so, start=0)

    def rewriting() -> None:  # the same data written again, caught half-way
        s3_other_client.rm_file(f"{s3_url}/_manifest.json")
        s3_other_client.rm([f"{s3_url}/chunk-00001.arrow", f"{s3_url}/chunk-00002.arrow"])

    # The first chunk's bytes are unchanged: only the open can tell that 2 of 3 are missing.
    with pytest.raises(ObjectChangedError, match=rewritten(s3_url)) as e:
        open_racing(s3_url, so, proxy, tmp_path, rewriting)
    assert "under way" in str(e.value)


@pytest.mark.parametrize("width", [500, 400])  # the same sizes; smaller (short answers)
def test_a_rewrite_after_open_is_reported_as_a_rewrite_of_the_corpus(
    s3_url, s3_storage_options, proxy, tmp_path, fast_retries, width
):
    so = s3_storage_options
    write(s3_url, so, start=0)
    ds = open_bounded(s3_url, via(proxy, so), tmp_path)
    assert ds[0]["id"] == 0
    write(s3_url, so, start=10**6, width=width, overwrite=True)  # other bytes and ETags
    proxy.log.clear()
    with pytest.raises(ObjectChangedError, match=rewritten(s3_url)) as e:
        ds[ROWS]
    assert "chunk-00001.arrow" in str(e.value)
    assert proxy.requests("GET", "chunk-00001.arrow") == 1
    assert ds[1]["id"] == 1  # the copy taken before the rewrite: one consistent version


@pytest.mark.parametrize("manifest", ["removed", "kept"])
def test_a_chunk_replaced_after_open_is_named_by_what_its_manifest_says(
    s3_url, s3_storage_options, s3_other_client, proxy, tmp_path, fast_retries, manifest
):
    so = s3_storage_options
    write(s3_url, so, start=0)
    other = f"{s3_url}-other"
    write(other, so, start=10**6)  # the same sizes
    ds = open_bounded(s3_url, via(proxy, so), tmp_path)
    if manifest == "removed":  # as `write_chunks(..., overwrite=True)` does first
        s3_other_client.rm_file(f"{s3_url}/_manifest.json")
    s3_other_client.copy(f"{other}/chunk-00001.arrow", f"{s3_url}/chunk-00001.arrow")
    with pytest.raises(ObjectChangedError, match=r"chunk-00001\.arrow") as e:
        ds[ROWS]
    if manifest == "removed":  # a rewrite under way
        assert re.search(rewritten(s3_url), str(e.value)) and "under way" in str(e.value)
    else:  # the manifest still describes the corpus: one object was replaced by hand
        assert "changed since the dataset was opened" in str(e.value)
        assert "rewritten" not in str(e.value)
    assert proxy.requests("GET", "chunk-00001.arrow") == 1


def test_chunk_files_named_one_by_one_cost_one_listing_of_their_directory(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options)
    files = [f"{s3_url}/chunk-{i:05d}.arrow" for i in (2, 0)]
    ds = open_bounded(files, via(proxy, s3_storage_options), tmp_path)
    assert requests(proxy) == [("GET", "listing"), ("GET", "manifest")]
    assert ds[0]["id"] == 2 * ROWS and ds[ROWS]["id"] == 0  # in the order given
    with pytest.raises(am.exceptions.ChunkFileError, match=r"chunk-00009\.arrow"):
        open_bounded([*files, f"{s3_url}/chunk-00009.arrow"], s3_storage_options, tmp_path)


class _NoIndex(http.server.SimpleHTTPRequestHandler):
    """A static file server that lists no directory (as a CDN or a hub serves files)."""

    def list_directory(self, path: Any) -> None:
        self.send_error(404, "no index")
        return None

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_corpus(tmp_path: Path) -> Iterator[str]:
    ids = pa.array([[i] * (1 + i % 3) for i in range(100)], pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), str(tmp_path / "corpus"), rows_per_chunk=50)
    handler = functools.partial(_NoIndex, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/corpus"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("cache_limit", [None, "10MB"])
def test_files_of_a_store_that_lists_no_directory_open_by_name(
    http_corpus: str, cache_limit: str | None, tmp_path: Path
) -> None:
    """HTTP(S) without directory indexes: chunk files named one by one are asked for
    directly when no listing shows them."""
    files = [f"{http_corpus}/chunk-00000.arrow", f"{http_corpus}/chunk-00001.arrow"]
    kw: dict[str, Any] = {} if cache_limit is None else {
        "cache_limit": cache_limit, "chunk_cache_dir": str(tmp_path / "cc")
    }  # fmt: skip
    one = am.Dataset.from_chunks(files[0], **kw)
    both = am.Dataset.from_chunks(files, **kw)
    assert one.num_rows == 50 and both.num_rows == 100
    assert both[99]["input_ids"] == [99] * (1 + 99 % 3)


def test_a_refused_listing_names_the_url_and_leaves_no_thread(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options)
    proxy.rule = lambda method, path: "deny" if "list-type" in path else None
    with pytest.raises(PermissionError, match=f"Listing '{s3_url}' was refused"):
        open_bounded(s3_url, via(proxy, s3_storage_options), tmp_path / "c")
    assert not [t for t in threading.enumerate() if t.name.startswith("arrowmix-open")]


def test_the_open_does_not_need_what_later_reads_import(
    s3_url, s3_storage_options, tmp_path, monkeypatch
):
    write(s3_url, s3_storage_options)
    monkeypatch.setitem(sys.modules, "numpy.random", None)  # a module that cannot be imported
    ds = open_bounded(s3_url, s3_storage_options, tmp_path / "c")
    assert ds[ROWS + 1]["id"] == ROWS + 1


def test_reading_an_unchanged_corpus_reads_its_manifest_once_and_asks_no_version(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options)
    ds = open_bounded(s3_url, via(proxy, s3_storage_options), tmp_path / "c")
    assert ds["id"] == list(range(3 * ROWS))
    assert proxy.requests("GET", "_manifest.json") == 1  # no re-read: every digest matched
    assert not [path for method, path, _ in proxy.log if method == "HEAD"]
