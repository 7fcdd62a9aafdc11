"""A function whose result depends on what its fingerprint cannot see is flagged."""

from __future__ import annotations

import os
import random
import warnings
from os import environ, getenv
from random import choice
from typing import Any

import numpy as np
import numpy.random as npr
import pytest
from numpy.random import rand as np_rand

import arrowmix as am
from arrowmix.exceptions import FingerprintWarning


def _ds() -> am.Dataset:
    return am.Dataset.from_dict({"x": [1, 2, 3]})


def reads_environ(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": os.environ.get("TRUST_SCALE", "1")}


def reads_getenv(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": os.getenv("TRUST_SCALE", "1")}


def reads_imported_environ(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": environ.get("TRUST_SCALE", "1")}


def reads_imported_getenv(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": getenv("TRUST_SCALE", "1")}


def draws_global_random(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": random.random()}


def draws_imported_choice(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": choice([1, 2])}


def _helper() -> str:
    return os.environ.get("TRUST_SCALE", "1")


def reads_environ_through_a_helper(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": _helper()}


@pytest.mark.parametrize(
    ("fn", "named"),
    [
        (reads_environ, "os.environ"),
        (reads_getenv, "os.getenv"),
        (reads_imported_environ, "os.environ"),
        (reads_imported_getenv, "os.getenv"),
        (draws_global_random, "random.random"),
        (draws_imported_choice, "random.choice"),
        (reads_environ_through_a_helper, "os.environ"),
    ],
)
def test_a_function_reading_the_environment_or_global_random_warns(fn: Any, named: str) -> None:
    with pytest.warns(FingerprintWarning, match=named) as record:
        _ds().map(fn)
    assert fn.__name__ in str(record[0].message)


def seeded_generator(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": random.Random(row["x"]).random()}


def uses_os_path(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": os.path.join("a", str(row["x"]))}


@pytest.mark.parametrize("fn", [seeded_generator, uses_os_path])
def test_functions_that_only_use_seeded_state_or_other_os_parts_do_not_warn(fn: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _ds().map(fn)
    assert len(out) == 3


def test_arrowmix_own_functions_reading_the_environment_do_not_warn() -> None:
    from arrowmix._cache.paths import cache_root  # reads ARROWMIX_CACHE

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _ds().map(lambda row: {"y": len(cache_root()) > 0})
    assert out["y"] == [True, True, True]


def test_an_imported_environ_is_still_seen_after_os_environ_was_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # HF `datasets`' map(num_proc=...) rebinds `os.environ` to a copy; a module that did
    # `from os import environ` before still reads the environment through the old object.
    import copy

    monkeypatch.setattr(os, "environ", copy.deepcopy(os.environ))
    with pytest.warns(FingerprintWarning, match="os.environ"):
        _ds().map(reads_imported_environ)


def draws_numpy_global(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": float(np.random.rand())}


def draws_imported_numpy_rand(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": float(np_rand())}


def draws_numpy_random_module(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": int(npr.randint(10))}


@pytest.mark.parametrize(
    ("fn", "named"),
    [
        (draws_numpy_global, "numpy.random.rand"),
        (draws_numpy_random_module, "numpy.random.randint"),
    ],
)
def test_a_function_drawing_from_numpys_global_generator_warns(fn: Any, named: str) -> None:
    np.random.seed(0)
    with pytest.warns(FingerprintWarning, match=named) as record:
        first = _ds().map(fn)["y"]
    assert len(record) == 1
    np.random.seed(1)  # another seed: the cached values of seed 0 are served, as warned
    with pytest.warns(FingerprintWarning, match=named):
        assert _ds().map(fn)["y"] == first


def numpy_seeded_generator(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": float(np.random.default_rng(row["x"]).random())}


def numpy_not_random(row: dict[str, Any]) -> dict[str, Any]:
    return {"y": float(np.sqrt(row["x"]))}


@pytest.mark.parametrize("fn", [numpy_seeded_generator, numpy_not_random])
def test_numpy_functions_without_global_state_do_not_warn(fn: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(_ds().map(fn)) == 3


def test_an_imported_global_numpy_draw_is_hashed_with_the_generators_state() -> None:
    # `from numpy.random import rand` names a method of the global RandomState, a value
    # hashed with its state: another seed recomputes, so there is nothing to warn about.
    np.random.seed(0)
    first = _ds().map(draws_imported_numpy_rand)["y"]
    np.random.seed(1)
    assert _ds().map(draws_imported_numpy_rand)["y"] != first
