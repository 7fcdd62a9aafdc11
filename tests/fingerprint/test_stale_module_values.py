"""A user module's values edited under a running process (a notebook) never poison the cache.

A kernel maps with ``helpers.K == 2``; the file is then edited to ``K = 3`` without a
reload, and the kernel maps again: K=2 still runs, so its result must not be stored under
the fingerprint a fresh process computes for the edited file. Every way a mapped function
can reach the module is covered: by a global, a closure, an import inside it, ``fn_kwargs``,
a dict constant, a class attribute, a helper function, a ``functools.partial``.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import arrowmix as am
from arrowmix.exceptions import FingerprintWarning

SOURCE = """\
import functools
import operator

K = {k}
TABLE = {{"a": {k}}}


class Cfg:
    K = {k}


def scale(x):
    return x * K


scaled = functools.partial(operator.mul, {k})
"""

# Each variant: (function source using the module ``helpers`` (a closure) and the module's
# name ``NAME``, fn_kwargs). Sources are exec'd so that the same text runs in a fresh process.
VARIANTS = {
    "global": "def fn(row):\n    return {'y': G.K * row['x']}",
    "closure": "def fn(row):\n    return {'y': helpers.K * row['x']}",
    "import": "def fn(row):\n    import NAME\n    return {'y': NAME.K * row['x']}",
    "fn_kwargs": "def fn(row, mod):\n    return {'y': mod.K * row['x']}",
    "dict": "def fn(row):\n    return {'y': helpers.TABLE['a'] * row['x']}",
    "class": "def fn(row):\n    return {'y': helpers.Cfg.K * row['x']}",
    "helper": "def fn(row):\n    return {'y': helpers.scale(row['x'])}",
    "partial": "def fn(row):\n    return {'y': helpers.scaled(row['x'])}",
    "partial_in_kwargs": "def fn(row, f):\n    return {'y': f(row['x'])}",
}


def _make(variant: str, helpers: ModuleType) -> tuple[Any, dict[str, Any]]:
    """The mapped function of ``variant`` and its fn_kwargs."""
    # A closure over ``helpers``: a function defined inside a function.
    body = textwrap.indent(VARIANTS[variant].replace("NAME", helpers.__name__), "    ")
    src = f"def outer(helpers):\n{body}\n    return fn\n"
    space: dict[str, Any] = {"G": helpers}
    exec(compile(src, f"<{variant}>", "exec"), space)
    fn = space["outer"](helpers)
    kwargs = {"fn_kwargs": {"mod": helpers}} if variant == "fn_kwargs" else {}
    if variant == "partial_in_kwargs":
        kwargs = {"fn_kwargs": {"f": helpers.scaled}}
    return fn, kwargs


def _edit(path: str, k: int) -> None:
    before = os.stat(path).st_mtime_ns
    Path(path).write_text(SOURCE.format(k=k))
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a later edit, whatever the clock


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_value_edited_in_the_file_is_not_hashed_from_the_file(load_module, variant: str) -> None:  # type: ignore[no-untyped-def]
    helpers = load_module(SOURCE.format(k=2))
    ds = am.Dataset.from_dict({"x": [1, 2]})
    fn, kwargs = _make(variant, helpers)
    first = ds.map(fn, **kwargs)
    assert first["y"] == [2, 4]
    _edit(helpers.__file__, 3)
    if variant in ("global", "partial_in_kwargs"):  # hashed by the values it reads
        stale = ds.map(fn, **kwargs)
    else:  # the module is hashed as a whole: its file is not what runs
        with pytest.warns(FingerprintWarning, match=helpers.__name__):
            stale = ds.map(fn, **kwargs)
    assert stale["y"] == [2, 4]  # what ran: the loaded values
    importlib.reload(helpers)  # what a restarted process runs
    fn, kwargs = _make(variant, helpers)
    fresh = ds.map(fn, **kwargs)
    assert fresh["y"] == [3, 6]
    assert stale.fingerprint != fresh.fingerprint, "K=2's result carries the K=3 fingerprint"


@pytest.mark.parametrize("variant", ["closure", "fn_kwargs", "dict", "class", "helper"])
def test_a_literal_edited_before_the_first_map_is_hashed_by_its_running_value(
    load_module, variant: str
) -> None:  # type: ignore[no-untyped-def]
    helpers = load_module(SOURCE.format(k=2))
    _edit(helpers.__file__, 3)  # edited before anything was hashed: K = 2 still runs
    ds = am.Dataset.from_dict({"x": [1, 2]})
    fn, kwargs = _make(variant, helpers)
    stale = ds.map(fn, **kwargs)
    assert stale["y"] == [2, 4]
    importlib.reload(helpers)
    fn, kwargs = _make(variant, helpers)
    fresh = ds.map(fn, **kwargs)
    assert fresh["y"] == [3, 6]
    assert stale.fingerprint != fresh.fingerprint


def test_a_value_rebound_in_memory_is_hashed_by_its_value(load_module) -> None:  # type: ignore[no-untyped-def]
    helpers = load_module(SOURCE.format(k=2))
    ds = am.Dataset.from_dict({"x": [1, 2]})
    fn, kwargs = _make("closure", helpers)
    pristine = ds.map(fn, **kwargs).fingerprint
    helpers.K = 5  # a notebook cell sets it; the file still says 2
    five = ds.map(fn, **kwargs)
    assert five["y"] == [5, 10]
    assert five.fingerprint != pristine
    helpers.K = 2
    assert ds.map(fn, **kwargs).fingerprint == pristine  # no warning, back to the file's


_SCRIPT = """
import json, sys, textwrap, warnings
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import arrowmix as am
import {name} as helpers
from {test_module} import _make, _edit, VARIANTS
ds = am.Dataset.from_dict({{"x": [1, 2]}})
out = {{}}
for variant in sorted(VARIANTS):
    fn, kwargs = _make(variant, helpers)
    out[variant] = [ds.map(fn, **kwargs)["y"]]
if sys.argv[2] == "edit":
    _edit(helpers.__file__, 3)
    for variant in sorted(VARIANTS):
        fn, kwargs = _make(variant, helpers)
        out[variant].append(ds.map(fn, **kwargs)["y"])
print(json.dumps(out))
"""


def test_a_fresh_process_after_the_edit_computes_with_the_edited_values(tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    mods.mkdir()
    name = "notebook_helpers"
    (mods / f"{name}.py").write_text(SOURCE.format(k=2))
    script = tmp_path / "kernel.py"
    script.write_text(_SCRIPT.format(name=name, test_module=Path(__file__).stem))
    env = {
        **os.environ,
        "ARROWMIX_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path]),
    }

    def run(mode: str) -> dict[str, list[list[int]]]:
        done = subprocess.run(
            [sys.executable, str(script), str(mods), mode],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, list[list[int]]] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    kernel = run("edit")  # maps with K = 2, edits the file, maps again (K = 2 still runs)
    assert all(runs == [[2, 4], [2, 4]] for runs in kernel.values()), kernel
    restarted = run("fresh")  # a restarted kernel loads K = 3
    wrong = {v: runs for v, runs in restarted.items() if runs != [[3, 6]]}
    assert not wrong, f"served the K=2 results after a restart: {wrong}"


CLASS_MACHINERY = """\
import enum
from dataclasses import dataclass
from typing import NamedTuple

LIMIT = 4
_CACHE = {}


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


class Point(NamedTuple):
    x: int = 3


@dataclass(slots=True)
class Slotted:
    y: int = 4


def remember(key):
    _CACHE[key] = LIMIT
    return key
"""


def test_values_made_by_class_machinery_or_filled_caches_keep_the_file_digest(load_module) -> None:  # type: ignore[no-untyped-def]
    # An Enum member, a NamedTuple field or a slots descriptor is not the literal its source
    # line names, and a module-level cache filled at run time is not a rebound constant: none
    # may make the fingerprint change between two runs of the same file.
    helpers = load_module(CLASS_MACHINERY)
    ds = am.Dataset.from_dict({"x": [1, 2]})
    first = ds.map(lambda row: {"y": helpers.remember(row["x"])}).fingerprint
    assert helpers._CACHE == {1: 4, 2: 4}
    again = ds.map(lambda row: {"y": helpers.remember(row["x"])}).fingerprint
    assert again == first  # filterwarnings=error: no warning either
