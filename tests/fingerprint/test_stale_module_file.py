"""A user module edited under a running process (a notebook) is not hashed from its new file.

The old code keeps running in memory; hashing the edited file would store the old code's
results under the new code's fingerprint, served after a restart. The running code must be
what is hashed, and a ``FingerprintWarning`` says that the file changed since import.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

import arrowmix as am
from arrowmix.exceptions import FingerprintWarning

HELPER = (
    "def clean(x):\n    return x + {n}\n\n\n"
    "class Scale:\n    def apply(self, x):\n        return x * {m}\n"
)


def _edit(module: ModuleType, n: int, m: int) -> None:
    path = module.__file__
    assert path is not None
    before = os.stat(path).st_mtime_ns
    with open(path, "w") as f:
        f.write(HELPER.format(n=n, m=m))
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a later edit, whatever the clock


def _map_fp(ds: am.Dataset, fn) -> str:  # type: ignore[no-untyped-def]
    return ds.map(fn).fingerprint


def test_function_edited_under_a_running_process(load_module) -> None:  # type: ignore[no-untyped-def]
    helper = load_module(HELPER.format(n=1, m=2))
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})

    def fn(row):  # type: ignore[no-untyped-def]
        return {"y": helper.clean(row["x"])}

    old = _map_fp(ds, fn)
    _edit(helper, 5, 2)  # the file now says x + 5; x + 1 still runs
    with pytest.warns(FingerprintWarning, match=helper.__name__):
        stale = ds.map(fn)
    assert stale["y"] == [2, 3, 4]  # what ran: the old code
    importlib.reload(helper)  # what a restarted process runs
    new = _map_fp(ds, fn)
    assert ds.map(fn)["y"] == [6, 7, 8]
    assert stale.fingerprint != new, "the old code's results carry the new code's fingerprint"
    assert old != new


def test_method_edited_under_a_running_process(load_module) -> None:  # type: ignore[no-untyped-def]
    helper = load_module(HELPER.format(n=1, m=2))
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})

    def fn(row):  # type: ignore[no-untyped-def]
        return {"y": helper.Scale().apply(row["x"])}

    _edit(helper, 1, 3)
    with pytest.warns(FingerprintWarning, match="Scale"):
        stale = _map_fp(ds, fn)
    importlib.reload(helper)
    assert _map_fp(ds, fn) != stale


def test_unedited_module_hashes_as_before_without_warning(load_module) -> None:  # type: ignore[no-untyped-def]
    helper = load_module(HELPER.format(n=1, m=2))
    ds = am.Dataset.from_dict({"x": [1, 2, 3]})

    def fn(row):  # type: ignore[no-untyped-def]
        return {"y": helper.clean(row["x"])}

    first = _map_fp(ds, fn)
    path = helper.__file__
    assert path is not None
    later = os.stat(path).st_mtime_ns + 2 * 10**9
    os.utime(path, ns=(later, later))  # touched (a newer time, whatever the clock), not edited
    assert _map_fp(ds, fn) == first  # filterwarnings=error: no warning either
