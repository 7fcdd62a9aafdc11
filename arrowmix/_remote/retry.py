"""The one retry layer of remote chunk reads.

fsspec backends retry on their own (s3fs up to 5 times, and botocore under it up to 5 times),
so a layer retrying on top of them multiplies the attempts: a throttled object would cost
about 125 requests. The filesystems the remote cache reads through are therefore opened with
the backends' retries set to one attempt (:func:`remote_fs`: for ``s3://``, s3fs
``retries=1`` and botocore ``total_max_attempts=1``), and
every request is retried here: :data:`RETRY` ``.attempts`` in all, with exponential backoff
and jitter, and a longer wait when the store says it is throttling (``SlowDown``, HTTP 503).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arrowmix._storage.fs import url_to_fs

__all__ = ["RETRY", "delay", "remote_fs", "throttled", "transient"]


@dataclass
class _Retry:
    """Retry policy of every remote request (module-level so that tests can shorten it)."""

    attempts: int = 5
    backoff: float = 0.2  # seconds before the 2nd attempt; doubled each time
    throttled: float = 1.0  # at least this long before retrying a throttled request
    longest: float = 20.0  # no wait longer than this


RETRY = _Retry()


def remote_fs(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """``(filesystem, path)`` of ``url`` whose backend makes one attempt per request.

    For ``s3://`` the filesystem is this process's own instance (not fsspec's shared one,
    whose retries stay as the user configured them): s3fs ``retries=1`` and botocore
    ``total_max_attempts=1`` unless ``storage_options["config_kwargs"]`` sets ``retries``.
    Its client comes from the session of the user's filesystem of ``url`` when that one has
    made one (the configuration, and so the retries, stay this filesystem's own).
    """
    protocol = url.split("://", 1)[0]
    if protocol not in ("s3", "s3a"):
        return url_to_fs(url, storage_options)
    options = dict(storage_options or {})
    config = dict(options.get("config_kwargs") or {})
    config.setdefault("retries", {"total_max_attempts": 1, "mode": "standard"})
    for name in _checksum_options():  # the manifest's digest checks every copy instead
        config.setdefault(name, "when_required")
    options["config_kwargs"] = config
    options["skip_instance_cache"] = True
    key = (os.getpid(), protocol, json.dumps(options, sort_keys=True, default=repr))
    with _FS_LOCK:
        fs = _FS.get(key)
        if fs is None:
            # The session of the user's filesystem, when it has one (it listed the corpus):
            # a new session loads the service description again, half a second or more.
            shared = getattr(url_to_fs(url, storage_options)[0], "session", None)
            fs, path = url_to_fs(url, {**options, "session": shared} if shared else options)
            fs.retries = 1  # s3fs's own retry loop (a class attribute, not an option)
            _FS[key] = fs
            return fs, path
    path = fs._strip_protocol(url)
    fs.invalidate_cache(path)
    return fs, path


@functools.cache
def _checksum_options() -> tuple[str, ...]:
    """The checksum switches of botocore, where it has them (1.36 and later).

    botocore computes a CRC of every answer by default; each chunk copy is checked against
    its corpus manifest's content digest instead, so the cache's own filesystem asks for
    checksums only where the service requires them (the user's filesystem is left alone).
    """
    try:
        from botocore.config import Config  # type: ignore[import-untyped]  # no stubs
    except ImportError:
        return ()
    names = ("request_checksum_calculation", "response_checksum_validation")
    return tuple(n for n in names if n in getattr(Config, "OPTION_DEFAULTS", {}))


_FS: dict[tuple[int, str, str], Any] = {}
_FS_LOCK = threading.Lock()


def throttled(exc: BaseException) -> bool:
    """Whether ``exc`` is the store asking to slow down (S3 ``SlowDown``, HTTP 503)."""
    text = str(exc)
    return (
        getattr(exc, "errno", None) == errno.EBUSY  # s3fs's translation of SlowDown and 503
        or "SlowDown" in text
        or "503" in text
        or "reduce your request rate" in text
    )


def transient(exc: BaseException) -> bool:
    """Whether a failed request is worth another attempt (not missing, not forbidden).

    A checksum mismatch of the answer (botocore's ``FlexibleChecksumError``) is one.
    """
    if "checksum" in type(exc).__name__.lower():
        return True
    return isinstance(exc, OSError) and not isinstance(
        exc, (FileNotFoundError, PermissionError, IsADirectoryError)
    )


def delay(attempt: int, last: BaseException | None) -> float:
    """Seconds to wait before attempt ``attempt`` (1 for the 2nd) after the error ``last``."""
    wait = RETRY.backoff * 2 ** (attempt - 1)
    if last is not None and throttled(last):
        wait = max(wait, RETRY.throttled * 2 ** (attempt - 1))
    return float(min(RETRY.longest, wait * random.uniform(0.75, 1.25)))
