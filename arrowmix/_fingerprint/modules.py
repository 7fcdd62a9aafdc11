"""Where an object comes from: the user's own code, or installed packages / the stdlib.

Functions and classes of the user's own modules are hashed by value (editing them
invalidates caches); those of installed packages and of the standard library are hashed
by reference, ``module + qualname + version``, because their code is pinned by the
installed version.

A module is *installed* when it is built in or frozen, or when its file lies under one
of the interpreter's stdlib / site-packages directories (``sysconfig`` paths,
``site-packages`` or ``dist-packages`` components). Everything else, including
``__main__`` and modules without a file (notebooks), is user code (so is arrowmix
when run from a checkout rather than installed). Answers are cached per module name;
package versions (``importlib.metadata``) are cached per top-level name.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import sysconfig
from types import ModuleType

import xxhash

__all__ = [
    "file_is_installed",
    "is_user_module",
    "module_source_digest",
    "module_version",
    "object_module",
]

_INSTALLED_ROOT_NAMES = frozenset({"builtins", "__builtin__"})
_SITE_DIR_NAMES = ("site-packages", "dist-packages")


@functools.lru_cache(maxsize=1)
def _install_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    prefixes = {os.path.normcase(os.path.realpath(paths[k])) for k in keys if k in paths}
    return tuple(sorted(p.rstrip(os.sep) + os.sep for p in prefixes))


@functools.lru_cache(maxsize=4096)
def file_is_installed(path: str) -> bool:
    """True if ``path`` lies in the stdlib or a site-packages directory."""
    real = os.path.normcase(os.path.realpath(path))
    parts = real.split(os.sep)
    if any(name in parts for name in _SITE_DIR_NAMES):
        return True
    return real.startswith(_install_prefixes())


@functools.lru_cache(maxsize=4096)
def _is_user_module_name(name: str) -> bool:
    root = name.partition(".")[0]
    if root in _INSTALLED_ROOT_NAMES or name in sys.builtin_module_names:
        return False
    if name == "__main__":
        return True
    module = sys.modules[name]
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        # Built-in / frozen modules have no file and are part of the interpreter.
        return origin not in ("built-in", "frozen") and spec is not None
    return not file_is_installed(path)


def is_user_module(module: ModuleType | str | None) -> bool:
    """True if ``module`` (a module or its name) is the user's code, not installed code.

    Example:
        >>> import json
        >>> is_user_module(json), is_user_module("builtins")
        (False, False)
    """
    if module is None:
        return True
    name = module if isinstance(module, str) else module.__name__
    if name not in sys.modules:
        # Code of a module that is not registered (exec'd into a types.ModuleType, or
        # gone): treat it as user code, hashed by value, the safe side.
        return name not in sys.builtin_module_names
    return _is_user_module_name(name)


def object_module(obj: object) -> str | None:
    """The ``__module__`` of a function or class, or None when it has none."""
    name = getattr(obj, "__module__", None)
    return name if isinstance(name, str) else None


@functools.lru_cache(maxsize=1)
def _packages_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.lru_cache(maxsize=4096)
def module_version(name: str) -> str:
    """Version tag of the installed package that provides module ``name``.

    Standard-library and built-in modules give ``"python-X.Y"``; a module whose
    distribution cannot be found gives ``"unknown"``.

    Example:
        >>> module_version("json") == "python-{}.{}".format(*sys.version_info[:2])
        True
    """
    root = name.partition(".")[0]
    if root in sys.stdlib_module_names or root in sys.builtin_module_names:
        return f"python-{sys.version_info[0]}.{sys.version_info[1]}"
    if root == "arrowmix":
        from arrowmix._version import __version__

        return f"arrowmix-{__version__}"
    for dist in sorted(_packages_distributions().get(root, [])):
        try:
            return f"{dist}-{importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


@functools.lru_cache(maxsize=1024)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    with open(path, "rb") as f:
        return xxhash.xxh3_64_hexdigest(f.read())


def module_source_digest(module: ModuleType) -> str:
    """Digest of a user module's source file (content only, never its path).

    Used where a module of the user's own is hashed as a whole (passed around, or
    imported inside a function): any edit of the file changes it. Cached per file
    modification time and size.

    Example:
        >>> import types
        >>> module_source_digest(types.ModuleType("no_file"))
        'no-file'
    """
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return "no-file"
    try:
        st = os.stat(path)
        return _file_digest(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return "unreadable"
