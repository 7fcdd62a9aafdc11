"""The storage tests' fixture shared with the remote tests (tests/remote/conftest.py)."""

from tests.remote.conftest import small_disk

__all__ = ["small_disk"]
