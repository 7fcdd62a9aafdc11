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

import contextlib
import functools
import importlib.metadata
import importlib.util
import os
import sys
import sysconfig
from types import FunctionType, ModuleType

import xxhash

from arrowmix._fingerprint.running import loaded_module_part

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
    named = _same_named_distribution(root)
    if named is not None:
        return named
    for dist in sorted(_packages_distributions().get(root, [])):
        try:
            return f"{dist}-{importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def _same_named_distribution(root: str) -> str | None:
    """``"<dist>-<version>"`` when the distribution named ``root`` provides module ``root``.

    The common case (``tokenizers``, ``numpy``), found in milliseconds: scanning every
    installed distribution (``packages_distributions``) takes seconds on a large environment.
    Only a distribution that provides nothing else under another top-level name is taken, so
    the tag is the one the scan gives.
    """
    try:
        dist = importlib.metadata.distribution(root)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    tops = {
        (f.parts[0] if len(f.parts) > 1 else f.name.partition(".")[0])
        for f in dist.files or ()
        if not f.parts[0].endswith((".dist-info", ".egg-info", ".data")) and f.parts[0] != ".."
    }
    tops.discard("__pycache__")
    if tops != {root}:
        return None
    name = dist.metadata["Name"]
    return f"{name}-{dist.version}" if name else None


@functools.lru_cache(maxsize=1024)
def _file_facts(
    path: str, mtime_ns: int, size: int
) -> tuple[str, tuple[tuple[int, str, tuple[str, ...]], ...]]:
    """Content digest of a source file and the imports its code makes (at any depth)."""
    from arrowmix._fingerprint.bytecode import imports_of

    with open(path, "rb") as f:
        data = f.read()
    imports: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    if path.endswith(".py"):
        # Unparsable source: the content digest alone then identifies it.
        with contextlib.suppress(SyntaxError, ValueError):
            imports = imports_of(compile(data, path, "exec", dont_inherit=True))
    return xxhash.xxh3_64_hexdigest(data), imports


def _source_facts(path: str) -> tuple[str, tuple[tuple[int, str, tuple[str, ...]], ...]]:
    try:
        st = os.stat(path)
        return _file_facts(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return "unreadable", ()


def _module_file(name: str) -> str | None:
    """The source file of module ``name``: loaded, or found without importing it."""
    module = sys.modules.get(name)
    if module is not None:
        path = getattr(module, "__file__", None)
        return path if isinstance(path, str) else None
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        return None  # finding it would import (run) its parent package: not while hashing
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    origin = getattr(spec, "origin", None)
    return origin if isinstance(origin, str) and os.path.isfile(origin) else None


def _package_of(name: str, path: str) -> str:
    """The package relative imports in module ``name`` resolve against."""
    if os.path.basename(path).startswith("__init__."):
        return name
    return name.rpartition(".")[0]


def _dependencies(
    name: str, path: str, imports: tuple[tuple[int, str, tuple[str, ...]], ...]
) -> set[str]:
    """Modules that module ``name`` imports (statically) or holds in its namespace."""
    found: set[str] = set()
    package = _package_of(name, path)
    for level, target, names in imports:
        try:
            full = importlib.util.resolve_name("." * level + target, package or None)
        except (ImportError, ValueError):
            continue
        if full:
            pieces = full.split(".")
            found.update(".".join(pieces[:i]) for i in range(1, len(pieces) + 1))
        for attr in names:  # `from pkg import submodule`
            sub = f"{full}.{attr}" if full else attr
            if attr != "*" and (sub in sys.modules or (full and _module_file(sub))):
                found.add(sub)
    module = sys.modules.get(name)
    for key, value in list(vars(module).items()) if module is not None else ():
        if isinstance(value, ModuleType):
            # A package's submodule bound by the import machinery when some code imported
            # it (lazily, perhaps in another thread) is not the package's own dependency: the
            # digest must not depend on when that import happened. Its own imports of it
            # were found statically above.
            if value.__name__ != f"{name}.{key}" or value.__name__ in found:
                found.add(value.__name__)
        elif isinstance(value, (type, FunctionType)):
            owner = object_module(value)
            if owner is not None and owner != name and owner in sys.modules:
                found.add(owner)
    found.discard(name)
    return found


def module_source_digest(module: ModuleType) -> str:
    """Digest of a user module's source and of every user module it depends on.

    Used where a module of the user's own is hashed as a whole (passed around, kept in a
    closure, imported inside a function): any edit of its file changes it, and so does an
    edit of a user module it reaches, directly or not: those it imports (``from .impl
    import clean`` in a package's ``__init__``, ``from config import MAX`` in a helper, at
    module level or inside its functions) and those whose functions, classes or submodules
    its namespace holds. Installed modules reached this way enter by name and version.
    Only file contents enter, never paths. File facts are cached per modification time
    and size. A loaded module enters by what runs when its file no longer describes it
    (edited after it was hashed, or constants rebound in memory: ``running.py``).

    Example:
        >>> import types
        >>> module_source_digest(types.ModuleType("no_file"))
        'no-file'
    """
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return "no-file"
    parts: list[tuple[str, str]] = []
    seen = {module.__name__}
    todo = [(module.__name__, path)]
    while todo:
        name, file = todo.pop()
        digest, imports = _source_facts(file)
        loaded = sys.modules.get(name)
        # Edited since import, or values changed in memory: hash what runs, not the file.
        parts.append((name, digest if loaded is None else loaded_module_part(loaded, file, digest)))
        for dep in sorted(_dependencies(name, file, imports) - seen):
            seen.add(dep)
            dep_file = _module_file(dep)
            dep_module = sys.modules.get(dep)
            user = (
                is_user_module(dep)
                if dep_module is not None
                else (dep_file is not None and not file_is_installed(dep_file))
            )
            if not user:
                parts.append((dep, module_version(dep)))
            elif dep_file is not None:
                todo.append((dep, dep_file))
            else:
                parts.append((dep, "no-file"))
    own = parts[0][1]
    return xxhash.xxh3_64_hexdigest(repr((own, sorted(parts[1:]))).encode())
