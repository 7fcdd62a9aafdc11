"""The test suite never writes into the user's real ``~/.cache`` (not even from fixtures
created before the per-test cache is set, nor from subprocesses)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys

import pytest

import arrowmix as am

REAL_CACHE = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache")


def _outside_real_cache(path: str) -> bool:
    path = os.path.realpath(path)
    return os.path.commonpath([path, os.path.realpath(REAL_CACHE)]) != os.path.realpath(REAL_CACHE)


@pytest.fixture(scope="module")
def module_mapped() -> am.Dataset:
    """Built before any function-scoped fixture: only the session's set-up isolates it."""
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})
    return ds.map(lambda r: {"y": r["x"] * 2})


def test_module_fixture_cache_is_not_in_the_real_home(module_mapped: am.Dataset) -> None:
    derived = [f for f in module_mapped.cache_files if os.path.basename(f).startswith("cache-")]
    assert derived, module_mapped.cache_files
    assert all(_outside_real_cache(f) for f in derived), derived


def test_home_and_cache_root_point_away_from_the_real_home() -> None:
    assert _outside_real_cache(os.path.expanduser("~/.cache"))
    assert _outside_real_cache(os.environ["ARROWMIX_CACHE"])


@pytest.mark.integration
def test_subprocess_without_arrowmix_cache_stays_out_of_the_real_home() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROWMIX_CACHE"}
    code = (
        "import json, os; from arrowmix._cache.paths import cache_root; "
        "print(json.dumps([os.path.expanduser('~'), cache_root()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    ).stdout
    home, root = json.loads(out)
    assert _outside_real_cache(os.path.join(home, ".cache")) and _outside_real_cache(root)
