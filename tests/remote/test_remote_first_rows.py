"""The first rows of a bounded remote stream, and of a resumed one, come before its window.

A stream over remote chunks serves the rows of a chunk as soon as that chunk is downloaded,
while the chunks after it download in parallel. The proxy (``tests.remote.fault_proxy``)
holds every GET of the later chunks until the test opens its gate: the first row must come
while they are held, which a stream waiting for its whole window never does.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest

import arrowmix as am

pytestmark = pytest.mark.integration

ROWS = 200  # rows per chunk; a block of 1,024 rows spans six chunks


def write(s3_url: str, so: dict[str, Any], n_chunks: int) -> None:
    am.write_chunks(
        ({"id": i, "text": f"{i} " + "p" * 1000} for i in range(n_chunks * ROWS)),
        s3_url, rows_per_chunk=ROWS, storage_options=so,
    )  # fmt: skip


def open_via(proxy: Any, s3_url: str, so: dict[str, Any], cache: str) -> am.Dataset:
    return am.Dataset.from_chunks(
        s3_url, storage_options={**so, "client_kwargs": {"endpoint_url": proxy.endpoint}},
        cache_limit="20MB", chunk_cache_dir=cache,
    )  # fmt: skip


def hold_chunks_after(first: int) -> Any:
    """A rule: hold the GETs of every chunk numbered above ``first``."""

    def rule(method: str, path: str) -> str | None:
        m = re.search(r"chunk-(\d+)\.arrow$", path.split("?")[0])
        return "hold" if method == "GET" and m and int(m.group(1)) > first else None

    return rule


def first_row(it: Any) -> dict[str, Any]:
    """``next(it)`` on a thread; fails (instead of hanging) if it waits for the gate."""
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(next(it)), daemon=True)
    t.start()
    t.join(30)  # the held requests are answered only after this: a bound, not a timing
    assert got, "the first row waited for the chunks after its own"
    return got[0]


def chunk_gets(proxy: Any) -> list[int]:
    return [int(m.group(1)) for p in proxy.answered if (m := re.search(r"chunk-(\d+)", p))]


def test_the_first_row_is_served_while_the_next_chunks_download(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options, 8)
    ds = open_via(proxy, s3_url, s3_storage_options, str(tmp_path / "c"))
    proxy.answered.clear()  # opening read chunk 0's footer
    proxy.rule = hold_chunks_after(0)
    stream = ds.to_stream(shuffle=None, infinite=False)
    it = iter(stream)
    assert first_row(it)["id"] == 0
    assert set(chunk_gets(proxy)) == {0}  # served with only chunk 0 downloaded
    assert proxy.held >= 1  # the read-ahead asked for the next chunks meanwhile
    proxy.gate.set()
    assert [r["id"] for r in it] == list(range(1, 8 * ROWS))  # then every row, once
    stream.close()


def test_a_resumed_stream_serves_its_first_row_while_the_window_downloads_in_parallel(
    s3_url, s3_storage_options, proxy, tmp_path
):
    write(s3_url, s3_storage_options, 10)
    ds = open_via(proxy, s3_url, s3_storage_options, str(tmp_path / "a"))
    stream = ds.to_stream(shuffle=None, infinite=False)
    before = [r["id"] for _, r in zip(range(3 * ROWS + 50), stream, strict=False)]
    state = stream.state_dict()
    stream.close()
    # A fresh node: another cache directory, and the chunks after the resumed one held.
    fresh = open_via(proxy, s3_url, s3_storage_options, str(tmp_path / "b"))
    proxy.answered.clear()
    proxy.rule = hold_chunks_after(3)
    resumed = fresh.to_stream(shuffle=None, infinite=False)
    resumed.load_state_dict(state)
    it = iter(resumed)
    assert first_row(it)["id"] == 3 * ROWS + 50  # exact
    assert set(chunk_gets(proxy)) == {3}  # nothing before the resumed chunk, nothing after
    deadline = time.monotonic() + 120  # the read-ahead's window, requested at once
    while proxy.held < 3 and time.monotonic() < deadline:  # (one by one: never three)
        time.sleep(0.02)
    assert proxy.held >= 3
    proxy.gate.set()
    rest = [r["id"] for r in it]
    assert [*before, 3 * ROWS + 50, *rest] == list(range(10 * ROWS))
    resumed.close()
