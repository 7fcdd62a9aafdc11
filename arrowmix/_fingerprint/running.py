"""What a loaded user module runs, when its file no longer says it (notebooks).

A module edited on disk after it was imported keeps running its old code and values; a
module's values can also be rebound in memory (``helpers.K = 3`` in a notebook cell). A
user module hashed as a whole (``module_source_digest``) is hashed from its file only
when that file describes what runs. :func:`loaded_module_part` gives the part to hash
instead:

- the first time a loaded module is hashed in this process, its file's digest, marked
  with the running code when functions differ from what the file compiles to now;
- later, while the module's own functions and classes are still the objects seen then (it
  was not reloaded), the part of that first time, whatever the file says now (the file
  was edited under the running process: one :class:`~arrowmix.exceptions.FingerprintWarning`
  per file version);
- in both cases, marked with the values in memory of the module-level and class-level
  constants that its source assigns a literal to (``K = 2``, ``TABLE = {"a": 1}``,
  ``class Cfg: K = 2``) when they no longer equal that literal.

A result is thus fingerprinted by what computed it, never by a file it did not run. A value
computed at import (``K = int(os.environ["K"])``, a ``functools.partial``) is seen through
an edit of its file after the module was first hashed, not before.
"""

from __future__ import annotations

import ast
import functools
import os
import weakref
from dataclasses import dataclass
from types import CodeType, FunctionType, ModuleType
from typing import Any

import xxhash

from arrowmix._warn import warn
from arrowmix.exceptions import FingerprintWarning

__all__ = ["loaded_module_part", "running_code_digest"]


def _qualname(code: CodeType) -> str:
    # ``co_qualname`` is Python 3.11+; older code objects only know their short name.
    return str(getattr(code, "co_qualname", code.co_name))


_MISSING = ("missing",)


@functools.lru_cache(maxsize=256)
def _literals(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, Any], ...]:
    """Names the source binds once, to a literal: module level, or ``Class.attr``.

    A name bound more than once, in a compound statement (``if``, ``try``...), or also
    named by a ``global`` statement is left out, and so is an empty container (often a
    cache filled at run time).
    """
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return ()
    counts: dict[str, int] = {}
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            counts.update(dict.fromkeys(node.names, 2))

    def scan(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                if isinstance(node, ast.ClassDef) and not prefix:
                    scan(node.body, f"{node.name}.")
                counts[prefix + node.name] = 2  # a def binds its name; its body is its own
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        key = prefix + target.id
                        counts[key] = counts.get(key, 0) + 1
                        found[key] = node.value
                continue
            for sub in ast.walk(node):  # any other binding: the name is not a constant
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    counts[prefix + sub.id] = 2
                elif isinstance(sub, ast.alias):
                    counts[prefix + (sub.asname or sub.name).partition(".")[0]] = 2

    scan(tree.body, "")
    out: list[tuple[str, Any]] = []
    for key, expr in found.items():
        if counts.get(key) != 1:
            continue
        try:
            value = ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, (dict, list, set, tuple)) and not value:
            continue
        out.append((key, value))
    return tuple(out)


def _value_in(module: ModuleType, key: str) -> Any:
    owner, _, attr = key.rpartition(".")
    space: Any = vars(module)
    if owner:
        cls = space.get(owner)
        if not isinstance(cls, type):
            return _MISSING
        space = vars(cls)
    return space.get(attr, _MISSING)


_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set)


def _equal(running: Any, literal: Any) -> bool:
    """Whether ``running`` is what the source's ``literal`` made (or not a literal's value)."""
    if type(running) not in _LITERAL_TYPES:
        # Made from the literal by a class machinery (an Enum member, a NamedTuple field, a
        # slots descriptor): not a value the literal describes, nor a rebinding of it.
        return True
    if type(running) is not type(literal):
        return False
    try:
        return bool(running == literal)
    except Exception:  # noqa: BLE001 (a value rebound to anything): not the literal
        return False


def _changed_values(module: ModuleType, literals: tuple[tuple[str, Any], ...]) -> str | None:
    """Digest of the constants whose value in memory is not the source's literal, or None."""
    from arrowmix._fingerprint.canonical import random_fingerprint
    from arrowmix._fingerprint.hasher import hash_value

    changed = []
    for key, literal in literals:
        running = _value_in(module, key)
        if not _equal(running, literal):
            try:
                changed.append((key, hash_value(running)))
            except Exception:  # noqa: BLE001 (unhashable: never reused)
                changed.append((key, random_fingerprint()))
    return xxhash.xxh3_64_hexdigest(repr(changed).encode()) if changed else None


@dataclass(frozen=True)
class _Loaded:
    """A loaded module as first hashed: the file version, its part, its own objects."""

    digest: str
    part: str
    literals: tuple[tuple[str, Any], ...]
    objects: tuple[object, ...]


_SEEN: weakref.WeakKeyDictionary[ModuleType, _Loaded] = weakref.WeakKeyDictionary()
_WARNED: set[tuple[str, str]] = set()


def _own_objects(module: ModuleType, path: str) -> tuple[object, ...]:
    """The objects a (re)load of the module creates anew: its functions and classes.

    A module that defines none gives its values (a reload or a rebinding replaces them).
    """
    classes = [
        v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
    ]
    own = (*_own_functions(module, path), *classes)
    if own:
        return own
    return tuple(v for k, v in vars(module).items() if not k.startswith("__"))


def loaded_module_part(module: ModuleType, path: str, digest: str) -> str:
    """The part of a loaded user module in ``module_source_digest``: what runs, not the file.

    ``digest`` is the content digest of the file ``path`` now; the result equals it when the
    module runs that file's code and constants.
    """
    objects = _own_objects(module, path)
    seen = _SEEN.get(module)
    same = seen is not None and len(seen.objects) == len(objects)
    if (
        seen is not None
        and same
        and all(a is b for a, b in zip(seen.objects, objects, strict=True))
    ):
        if digest != seen.digest and (path, digest) not in _WARNED:
            _WARNED.add((path, digest))
            warn(
                f"User module {module.__name__!r} was edited after it was imported "
                f"({path}): it still runs the code and values it was loaded with. "
                "Results are fingerprinted by what runs, so they are not reused for the "
                "edited file; reload the module (importlib.reload) or restart to run it.",
                FingerprintWarning,
            )
        values = _changed_values(module, seen.literals)
        return seen.part if values is None else f"{seen.part}+values-{values}"
    running = running_code_digest(module, path)
    part = digest if running is None else f"{digest}+running-{running}"
    try:
        st = os.stat(path)
        literals = _literals(path, st.st_mtime_ns, st.st_size) if path.endswith(".py") else ()
    except OSError:
        literals = ()
    _SEEN[module] = _Loaded(digest, part, literals, objects)
    values = _changed_values(module, literals)
    return part if values is None else f"{part}+values-{values}"


@functools.lru_cache(maxsize=256)
def _compiled_code(path: str, mtime_ns: int, size: int) -> dict[str, list[CodeType]]:
    """Every code object compiled from the source file, by qualified name."""
    out: dict[str, list[CodeType]] = {}
    try:
        with open(path, "rb") as f:
            todo = [compile(f.read(), path, "exec", dont_inherit=True)]
    except (OSError, SyntaxError, ValueError):
        return out
    while todo:
        code = todo.pop()
        out.setdefault(_qualname(code), []).append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    return out


def _own_functions(module: ModuleType, path: str) -> list[FunctionType]:
    """The functions and methods the module's namespace holds that were compiled from ``path``."""
    name = module.__name__
    found: list[FunctionType] = []

    def take(obj: Any) -> None:
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            for part in (obj.fget, obj.fset, obj.fdel):
                take(part)
            return
        if isinstance(obj, FunctionType) and obj.__code__.co_filename == path:
            found.append(obj)

    for value in list(vars(module).values()):
        if isinstance(value, FunctionType) and value.__module__ == name:
            take(value)
        elif isinstance(value, type) and value.__module__ == name:
            for member in list(vars(value).values()):
                take(member)
    return found


_RUNNING: dict[tuple[Any, ...], str | None] = {}


def running_code_digest(module: ModuleType, path: str) -> str | None:
    """Digest of the code running from ``module`` when it is not what ``path`` now holds.

    A module edited on disk after it was imported (a notebook whose helper file changed)
    keeps running its old code. Its functions and methods are compared with the code the
    file compiles to now; when one differs or is gone, a
    :class:`~arrowmix.exceptions.FingerprintWarning` names them (once per file version) and
    the digest of the running code is returned, so that results are fingerprinted by the
    code that computed them, never by the file's new code. None when the running code is the
    file's (or the module holds no function of that file). Module-level values (constants)
    are not compared.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not path.endswith(".py"):
        return None
    running = tuple(fn.__code__ for fn in _own_functions(module, path))
    # Keyed by the running code objects themselves (compared by value): a reload is seen.
    key = (path, st.st_mtime_ns, st.st_size, st.st_ctime_ns, running)
    if key in _RUNNING:
        return _RUNNING[key]
    result = None
    compiled = _compiled_code(path, st.st_mtime_ns, st.st_size)
    stale = sorted(
        {_qualname(code) for code in running if code not in compiled.get(_qualname(code), ())}
    )
    if stale:
        from arrowmix._fingerprint.bytecode import code_digest_of

        codes = sorted((_qualname(code), code_digest_of(code)) for code in running)
        result = xxhash.xxh3_64_hexdigest(repr(codes).encode())
        warn(
            f"User module {module.__name__!r} was edited after it was imported ({path}): "
            f"the code running ({', '.join(stale)}) is not the file's. Results are "
            "fingerprinted by the running code, so they are not reused for the new code; "
            "reload the module (importlib.reload) or restart to run the edited file.",
            FingerprintWarning,
        )
    if len(_RUNNING) > 4096:
        _RUNNING.clear()
    _RUNNING[key] = result
    return result
