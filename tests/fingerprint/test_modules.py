"""User code versus installed code, and package versions."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types

import numpy as np

from arrowmix._fingerprint.modules import (
    file_is_installed,
    is_user_module,
    module_version,
)


def test_installed_and_stdlib_modules() -> None:
    assert not is_user_module(json)
    assert not is_user_module(np)
    assert not is_user_module("numpy.linalg")
    assert not is_user_module("builtins")
    assert not is_user_module(sys)
    assert file_is_installed(np.__file__)
    assert file_is_installed(json.__file__)


def test_user_modules(load_module) -> None:
    mod = load_module("X = 1\n")
    assert is_user_module(mod)
    assert is_user_module(mod.__name__)
    assert is_user_module("__main__")
    assert is_user_module(types.ModuleType("never_registered"))
    assert is_user_module("exec_namespace_not_in_sys_modules")
    assert is_user_module(sys.modules[__name__])  # this test file
    assert not file_is_installed(__file__)


def test_versions() -> None:
    assert module_version("numpy.linalg") == f"numpy-{importlib.metadata.version('numpy')}"
    assert module_version("json") == "python-{}.{}".format(*sys.version_info[:2])
    assert module_version("no_such_module_anywhere") == "unknown"
