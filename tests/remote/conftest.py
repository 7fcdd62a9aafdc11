"""A real S3-compatible server (moto) for the remote-storage tests, one per test session.

The server listens on 127.0.0.1 on a free port; s3fs talks to it with dummy credentials. The
AWS environment is pinned to dummy values for the whole session so that neither botocore nor
s3fs looks up real credentials, config files or the EC2 metadata service. Tests that use these
fixtures skip cleanly when ``moto[server]`` or ``s3fs`` is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BUCKET = "arrowmix-test"

_DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
_UNSET_AWS_ENV = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION")


@pytest.fixture(scope="session")
def s3_storage_options() -> Iterator[dict[str, Any]]:
    """``storage_options`` for s3fs pointing at a moto server started for this session.

    The bucket ``arrowmix-test`` exists; use :func:`s3_url` for a fresh prefix per test.
    """
    moto_server = pytest.importorskip("moto.server", reason="needs moto[server]")
    s3fs = pytest.importorskip("s3fs", reason="needs s3fs")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in _DUMMY_AWS_ENV.items():
            mp.setenv(name, value)
        for name in _UNSET_AWS_ENV:
            mp.delenv(name, raising=False)
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            assert host == "127.0.0.1"
            options: dict[str, Any] = {
                "key": "testing",
                "secret": "testing",
                "client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
            }
            # No region_name: with one, moto's CreateBucket rejects the location constraint.
            fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
            fs.mkdir(BUCKET)
            yield options
        finally:
            server.stop()


@pytest.fixture
def s3_url(s3_storage_options: dict[str, Any]) -> str:
    """A fresh, empty ``s3://`` prefix in the test bucket (one per test)."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_other_client(s3_storage_options: dict[str, Any]) -> Any:
    """A second s3fs client with its own listing cache: stands for another process or host."""
    import s3fs

    return s3fs.S3FileSystem(
        skip_instance_cache=True, use_listings_cache=False, **s3_storage_options
    )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a real tmpfs of a given size (``small_disk("256k")``) to fill a disk for real.

    Skips when not root on Linux (mounting needs it); every mount is undone at teardown.
    """
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if not sys.platform.startswith("linux") or os.geteuid() != 0:
            pytest.skip("needs root to mount a small tmpfs")
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"could not mount a tmpfs: {done.stderr.decode().strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", str(path)], check=False)


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remote retries that wait a millisecond or two instead of their documented backoff."""
    from arrowmix._remote import retry

    monkeypatch.setattr(retry.RETRY, "backoff", 0.001)
    monkeypatch.setattr(retry.RETRY, "throttled", 0.002)


@pytest.fixture
def proxy(s3_storage_options: dict[str, Any]) -> Iterator[Any]:
    from tests.remote.fault_proxy import FaultProxy

    p = FaultProxy(s3_storage_options["client_kwargs"]["endpoint_url"])
    try:
        yield p
    finally:
        p.gate.set()
        p.close()
