"""The public facades: sorted __all__, no private names, a docstring on every public name."""

from __future__ import annotations

import importlib
import inspect

import pytest

import arrowmix

FACADES = [
    "arrowmix",
    "arrowmix.exceptions",
    "arrowmix.iterable_dataset",
    "arrowmix.stream",
    "arrowmix.testing",
]


@pytest.mark.parametrize("module_name", FACADES)
def test_all_is_sorted_public_and_documented(module_name):
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert names == sorted(names), f"{module_name}.__all__ is not sorted"
    for name in names:
        assert not name.startswith("_") or name == "__version__", name
        obj = getattr(module, name)
        if callable(obj):
            assert inspect.getdoc(obj), f"{module_name}.{name} has no docstring"


def test_dataset_public_methods_are_documented():
    for name, member in inspect.getmembers(arrowmix.Dataset):
        if name.startswith("_"):
            continue
        assert inspect.getdoc(member), f"Dataset.{name} has no docstring"


def test_exceptions_refine_builtins():
    from arrowmix import exceptions as exc

    assert issubclass(exc.StateError, ValueError)
    assert issubclass(exc.ChunkFileError, OSError)
    assert issubclass(exc.CacheCorruptedError, exc.ChunkFileError)
    assert all(issubclass(getattr(exc, n), (exc.ArrowmixError, Warning)) for n in exc.__all__)
