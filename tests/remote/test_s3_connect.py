"""``url_to_fs`` makes an S3 client at once, but never where that could block or deadlock.

The client is made under a lock (one per filesystem, not one per request) by a request run on
fsspec's event loop thread. Code running on that thread (an async callback calling back into
arrowmix) must not wait for that lock: the thread holding it waits for the loop.
"""

from __future__ import annotations

from typing import Any

import pytest

from arrowmix._storage import fs as fs_module

pytestmark = pytest.mark.integration


def test_url_to_fs_on_fsspecs_loop_thread_never_waits_for_another_connect(
    s3_url: str, s3_storage_options: dict[str, Any]
) -> None:
    from fsspec.asyn import get_loop, sync

    options = {**s3_storage_options, "skip_instance_cache": True}  # a client not made yet

    async def on_the_loop() -> Any:
        return fs_module.url_to_fs(s3_url, options)[0]

    # Another thread is making a client: it holds the lock and waits for the loop.
    with fs_module._CONNECT_LOCK:
        fs = sync(get_loop(), on_the_loop, timeout=10)  # deadlocked: FSTimeoutError
    assert fs.ls(s3_url.split("://", 1)[1].split("/", 1)[0]) is not None  # usable
