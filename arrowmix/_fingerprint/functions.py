"""Hash functions by value: code, constants, defaults, closures, globals, helpers.

A *user* function (one defined in the user's own modules, see ``modules.py``) is hashed
from named parts, each hashed on its own so that :class:`~arrowmix._fingerprint.record.
FingerprintRecord` can tell which one changed:

- ``code``: the code object without ``co_filename``, ``co_firstlineno``, the line table
  or ``co_qualname`` (moving a function or its file never changes the hash); nested code
  objects (lambdas, comprehensions, inner functions) are included recursively, constants
  by value;
- ``defaults`` / ``kwdefaults``: default argument values;
- ``closure['x']``: each closure cell value;
- ``globals['X']``: each global the bytecode loads (``LOAD_GLOBAL`` / ``LOAD_NAME``,
  also in nested code), with its current value; for a *user* module used as ``mod.attr``
  the parts are ``globals['mod'].attr`` instead, so editing a helper in an imported
  module invalidates;
- ``imports['mod']``: a module imported inside the function (``import mod``; a user
  module by the content of its source file), or ``imports['mod'].name`` for each name of
  ``from mod import name``, by value;
- ``__dict__``: attributes set on the function (``functools.wraps``'
  ``__wrapped__``...).

What a function reads when it runs is not hashed: the environment and the global generators
of ``random`` and ``numpy.random``. A user function (or helper) that names them through its
globals (``os.environ``, ``os.getenv``, ``from os import environ``, ``random.random()``,
``from random import choice``, ``np.random.rand()``) is listed in
``FunctionHasher.hidden_inputs``, for one :class:`~arrowmix.exceptions.FingerprintWarning`
(arrowmix's own functions are not).

Helpers (user functions and classes reached through any part) are hashed the same way,
recursively; a function that is already being hashed (recursion, mutual recursion, a
class whose methods name the class) contributes a marker instead of looping. Installed
functions and classes are hashed by ``module + qualname + package version``.

Each part lands in ``FunctionHasher.components`` under a path such as
``tokenize -> globals['helper'] -> code``. A part that cannot be hashed gets a random
digest and a :class:`Problem` (path, object, reason); in ``strict`` mode it raises
instead.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib
import importlib.util
import sys
import types
from dataclasses import dataclass
from typing import Any

from arrowmix._fingerprint.bytecode import code_digest_of, global_uses, imports_of
from arrowmix._fingerprint.canonical import random_fingerprint
from arrowmix._fingerprint.hasher import hash_bytes, hash_value
from arrowmix._fingerprint.modules import file_is_installed, is_user_module
from arrowmix._fingerprint.pickler import UnhashableError, dumps, reference, short_repr
from arrowmix._warn import warn
from arrowmix.exceptions import FingerprintWarning

__all__ = [
    "FunctionHasher",
    "Problem",
    "callable_label",
    "fingerprint_function",
    "hidden_reads",
    "warn_hidden_inputs",
    "warn_unhashable",
]

_ATOMS = frozenset({str, bytes, int, float, bool, type(None)})
# Class attributes that are bookkeeping, not behaviour: some are added lazily (e.g.
# __slotnames__ by copyreg), and a dataclass's generated __doc__ names its module.
_CLASS_NOISE = frozenset(
    {
        "__module__", "__qualname__", "__dict__", "__weakref__", "__firstlineno__",
        "__static_attributes__", "__slotnames__", "_abc_impl", "__abstractmethods__",
        "__dataclass_fields__", "__dataclass_params__", "__annotations__",
        "__orig_bases__", "__parameters__", "__doc__",
    }
)  # fmt: skip
_MISSING = ("missing",)


@dataclass(frozen=True)
class Problem:
    """Something that could not be hashed: where it was found, what it is, and why."""

    path: str
    obj: str
    reason: str

    def message(self) -> str:
        """One line for a warning: ``path: obj: reason``."""
        return f"{self.path}: {self.obj}: {self.reason}"


def callable_label(fn: Any) -> str:
    """A readable name for a callable: qualname, ``partial(f)`` or class name."""
    if isinstance(fn, functools.partial):
        return f"partial({callable_label(fn.func)})"
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else type(fn).__qualname__


def _is_installed_function(fn: types.FunctionType) -> bool:
    # Both the module and the code's file must be installed: by value when unsure.
    if is_user_module(fn.__module__):
        return False
    filename = fn.__code__.co_filename
    return filename.startswith("<frozen") or file_is_installed(filename)


def _user_module(value: object) -> bool:
    return isinstance(value, types.ModuleType) and is_user_module(value)


_OS_READS = frozenset({"environ", "environb", "getenv", "getenvb"})
_RANDOM_OWN_STATE = frozenset({"Random", "SystemRandom"})  # classes with their own state


def _is_os(obj: object, names: tuple[str, ...]) -> bool:
    """Whether ``obj`` is the ``os`` module's object named one of ``names``.

    By name, so that a ``from os import environ`` binding stays recognised after
    ``os.environ`` was replaced.
    """
    return getattr(obj, "__module__", None) == "os" and getattr(obj, "__name__", None) in names


def hidden_reads(
    fn_globals: dict[str, Any],
    uses: tuple[tuple[str, frozenset[tuple[str, ...]], bool], ...],
) -> list[str]:
    """What of the environment or the global ``random`` state a function's globals read."""
    import os
    import random

    out: list[str] = []
    for name, chains, _ in uses:
        value = fn_globals.get(name, _MISSING)
        if value is os:
            out += [f"os.{c[0]}" for c in sorted(chains) if c[0] in _OS_READS]
        elif value is random:
            out += [f"random.{c[0]}()" for c in sorted(chains) if c[0] not in _RANDOM_OWN_STATE]
        elif _is_os(type(value), ("_Environ",)):  # (also an os.environ replaced since)
            out.append(f"{name} (os.environ)")
        elif value is os.getenv or _is_os(value, ("getenv", "getenvb")):
            out.append(f"{name} (os.getenv)")
        elif getattr(value, "__self__", None) is getattr(random, "_inst", None):
            out.append(f"{name} (random.{getattr(value, '__name__', name)}, the global generator)")
        else:
            out += _numpy_global_draws(value, chains)
    return out


# numpy.random names that are not its global generator: seeded generators, their parts.
_NUMPY_OWN_STATE = frozenset(
    {
        "default_rng", "Generator", "RandomState", "SeedSequence", "BitGenerator",
        "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "bit_generator", "mtrand",
    }
)  # fmt: skip


def _numpy_global_draws(value: object, chains: frozenset[tuple[str, ...]]) -> list[str]:
    """Uses of numpy's legacy global generator (``np.random.rand()``) through ``value``."""
    np_random = sys.modules.get("numpy.random")
    if np_random is None:  # numpy not imported: nothing can name its generator
        return []
    if value is sys.modules.get("numpy"):
        chains = frozenset(c[1:] for c in chains if len(c) > 1 and c[0] == "random")
        value = np_random
    if value is np_random:
        return [f"numpy.random.{c[0]}()" for c in sorted(chains) if c[0] not in _NUMPY_OWN_STATE]
    # ``from numpy.random import rand`` binds a method of the global RandomState: a global
    # value the function names, hashed with that generator's state, so it is seen.
    return []


class FunctionHasher:
    """One fingerprinting run: hashes functions, classes, values; collects components.

    Args:
        strict: Raise :class:`~arrowmix._fingerprint.pickler.UnhashableError` on
            the first unhashable object instead of recording a :class:`Problem`.
    """

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.components: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.hidden_inputs: list[str] = []
        self._memo: dict[int, tuple[object, str]] = {}
        self._in_progress: set[int] = set()

    # -- values --

    def value_digest(self, value: Any, path: str) -> str:
        """Digest of any value; functions and classes inside are hashed by this run."""
        if type(value) in _ATOMS:
            return hash_value(value)
        if isinstance(value, types.FunctionType):
            return self.function_digest(value, path)
        try:
            return hash_bytes(dumps(value, ctx=self, path=path))
        except UnhashableError as exc:
            return self._unhashable(path, exc)

    def _unhashable(self, path: str, exc: UnhashableError) -> str:
        if self.strict:
            raise exc
        cause = exc.cause.cause if isinstance(exc.cause, UnhashableError) else exc.cause
        obj = f"{exc.culprit_name} {short_repr(exc.culprit, 60)}"
        self.problems.append(Problem(path=path, obj=obj, reason=f"{cause}"))
        return random_fingerprint()

    # -- callables --

    def callable_digest(self, fn: Any, path: str) -> str:
        """Digest of a callable: function, method, partial, callable object, builtin.

        A ``torch.compile``d function or module hashes as the function or module it wraps
        (as in HF ``datasets``): compiling changes how it runs, not what it returns, so its
        maps are reused.
        """
        wrapped = _torch_compiled(fn)
        if wrapped is not None:
            return self.callable_digest(wrapped, path)
        if isinstance(fn, types.FunctionType):
            return self.function_digest(fn, path)
        if isinstance(fn, types.MethodType):
            func = self.callable_digest(fn.__func__, path)
            owner = self._part(f"{path} -> __self__", fn.__self__)
            return hash_value(("method", func, owner))
        if isinstance(fn, functools.partial):
            func = self.callable_digest(fn.func, f"{path} -> func")
            args = self._part(f"{path} -> args", fn.args)
            kws = {k: self._part(f"{path} -> keywords['{k}']", v) for k, v in fn.keywords.items()}
            return hash_value(("partial", func, args, kws))
        return self._part(path, fn)

    def _part(self, path: str, value: Any) -> str:
        digest = self.value_digest(value, path)
        self.components[path] = digest
        return digest

    def function_digest(self, fn: types.FunctionType, path: str) -> str:
        """Digest of a function (by value for user code, by reference otherwise)."""
        key = id(fn)
        if key in self._memo:
            return self._memo[key][1]
        if key in self._in_progress:
            return hash_value(("recursive", fn.__qualname__))
        if _is_installed_function(fn):
            digest = hash_value(reference(fn))
        else:
            self._in_progress.add(key)
            try:
                digest = hash_value(("function", self._function_parts(fn, path)))
            finally:
                self._in_progress.discard(key)
        # Keep fn alive so that its id is not reused during this run.
        self._memo[key] = (fn, digest)
        return digest

    def _function_parts(self, fn: types.FunctionType, path: str) -> dict[str, str]:
        parts: dict[str, str] = {"code": self.code_digest(fn.__code__, path)}
        self.components[f"{path} -> code"] = parts["code"]
        if fn.__defaults__:
            parts["defaults"] = self._part(f"{path} -> defaults", fn.__defaults__)
        if fn.__kwdefaults__:
            parts["kwdefaults"] = self._part(f"{path} -> kwdefaults", fn.__kwdefaults__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
            try:
                value: Any = cell.cell_contents
            except ValueError:  # an empty cell (variable not bound yet)
                value = _MISSING
            parts[f"closure['{name}']"] = self._part(f"{path} -> closure['{name}']", value)
        parts.update(self._global_parts(fn, path))
        parts.update(self._import_parts(fn, path))
        if fn.__dict__:
            parts["__dict__"] = self._part(f"{path} -> __dict__", fn.__dict__)
        return parts

    def _global_parts(self, fn: types.FunctionType, path: str) -> dict[str, str]:
        parts: dict[str, str] = {}
        fn_globals = fn.__globals__
        uses = global_uses(fn.__code__)
        if str(fn.__module__ or "").partition(".")[0] != "arrowmix":
            self.hidden_inputs += [f"{path}: {r}" for r in hidden_reads(fn_globals, uses)]
        for name, chains, bare in uses:
            part = f"globals['{name}']"
            if name not in fn_globals:
                if not hasattr(builtins, name):
                    parts[part] = self._part(f"{path} -> {part}", _MISSING)
                continue  # builtins are identified by their name, already in the code
            value = fn_globals[name]
            if not _user_module(value):
                parts[part] = self._part(f"{path} -> {part}", value)
                continue
            # A module of the user's own: hash what is read from it, by value, following
            # attribute chains through its submodules (``pkg.text.clean``).
            if bare:
                parts[part] = self._part(f"{path} -> {part}", value)
            for chain in sorted(chains):
                target: Any = value
                for depth, attr in enumerate(chain, start=1):
                    target = getattr(target, attr, _MISSING)
                    if not _user_module(target) or depth == len(chain):
                        break
                sub = part + "".join(f".{a}" for a in chain[:depth])
                if sub not in parts:
                    parts[sub] = self._part(f"{path} -> {sub}", target)
        return parts

    def _import_parts(self, fn: types.FunctionType, path: str) -> dict[str, str]:
        """Modules imported inside the function: what they provide, by value."""
        parts: dict[str, str] = {}
        package = fn.__globals__.get("__package__") or None
        for level, name, names in imports_of(fn.__code__):
            try:
                full = importlib.util.resolve_name("." * level + name, package)
                # Import now (the function would on its first call) so that an edited
                # module is never hashed by its name alone.
                module: Any = importlib.import_module(full)
            except (ImportError, ValueError):
                label = f"imports['{'.' * level}{name}']"
                parts[label] = self._part(f"{path} -> {label}", _MISSING)
                continue
            label = f"imports['{full}']"
            if not names or names == ("*",):
                parts[label] = self._part(f"{path} -> {label}", module)
                continue
            for attr in names:
                value = getattr(module, attr, _MISSING)
                if value is _MISSING:  # `from pkg import submodule`, not imported yet
                    with contextlib.suppress(ImportError):
                        value = importlib.import_module(f"{full}.{attr}")
                parts[f"{label}.{attr}"] = self._part(f"{path} -> {label}.{attr}", value)
        return parts

    def code_digest(self, code: types.CodeType, path: str) -> str:
        """Digest of a code object without file names or line numbers."""
        return code_digest_of(code)

    def class_digest(self, cls: type, path: str) -> str:
        """Digest of a class (by value for user code, by reference otherwise)."""
        key = id(cls)
        if key in self._memo:
            return self._memo[key][1]
        if key in self._in_progress:
            return hash_value(("recursive", cls.__qualname__))
        if cls.__module__ not in sys.modules or not is_user_module(cls.__module__):
            # Classes of unregistered modules are often C types: by reference.
            digest = hash_value(reference(cls))
        else:
            self._in_progress.add(key)
            try:
                digest = hash_value(("class", cls.__name__, self._class_parts(cls, path)))
            finally:
                self._in_progress.discard(key)
        self._memo[key] = (cls, digest)
        return digest

    def _class_parts(self, cls: type, path: str) -> dict[str, Any]:
        parts: dict[str, Any] = {
            "bases": [self.class_digest(b, f"{path} -> {b.__qualname__}") for b in cls.__bases__]
        }
        if type(cls) is not type:
            parts["metaclass"] = self.class_digest(type(cls), f"{path} -> metaclass")
        for name in sorted(vars(cls)):
            if name in _CLASS_NOISE:
                continue
            value = vars(cls)[name]
            sub = f"{path}.{name}"
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                value = (value.fget, value.fset, value.fdel)
            parts[name] = self.value_digest(value, sub)
        return parts


def _torch_compiled(fn: Any) -> Any:
    """What ``torch.compile`` wrapped in ``fn`` (a function or an ``OptimizedModule``), or None."""
    if isinstance(fn, types.FunctionType):
        orig = getattr(fn, "_torchdynamo_orig_callable", None)
        if orig is not None and "_dynamo" in fn.__code__.co_filename:
            return orig
        return None
    cls = type(fn)
    if cls.__name__ == "OptimizedModule" and cls.__module__.startswith("torch._dynamo"):
        return getattr(fn, "_orig_mod", None)
    return None


def fingerprint_function(fn: Any) -> str:
    """Fingerprint of a callable by value; 16 hex characters.

    If something cannot be hashed, the result is random and one
    :class:`~arrowmix.exceptions.FingerprintWarning` names each culprit and its path.

    Example:
        >>> def add_one(x):
        ...     return x + 1
        >>> fingerprint_function(add_one) == fingerprint_function(lambda x: x + 1)  # same code
        True
        >>> fingerprint_function(add_one) == fingerprint_function(lambda x: x + 2)
        False
        >>> len(fingerprint_function(add_one))
        16
    """
    hasher = FunctionHasher()
    label = callable_label(fn)
    digest = hasher.callable_digest(fn, label)
    if not hasher.problems:
        return digest
    fingerprint = random_fingerprint()
    warn_unhashable(f"function {label!r}", hasher.problems, fingerprint)
    return fingerprint


def warn_unhashable(
    subject: str, problems: list[Problem], fingerprint: str, *, extra: int = 0
) -> None:
    """Emit the one :class:`~arrowmix.exceptions.FingerprintWarning` of a transform."""
    details = "; ".join(p.message() for p in problems)
    warn(
        f"{subject} cannot be fingerprinted ({details}), so it gets the random "
        f"fingerprint {fingerprint} and its result will not be reused from cache by "
        "later runs. Make the object hashable (a `__fingerprint__()` method or "
        "`register_fingerprint`), stop capturing it, or pass `new_fingerprint=`.",
        FingerprintWarning,
        extra=extra,
    )


def warn_hidden_inputs(subject: str, reads: list[str], *, extra: int = 0) -> None:
    """Warn that a hashed function reads what its fingerprint cannot see (env, global RNG)."""
    warn(
        f"{subject} reads {'; '.join(reads)}, which the fingerprint does not see: its cached "
        "result is reused when only an environment variable or the global random state "
        "changed. Pass such values as arguments (`fn_kwargs=`), use a seeded generator "
        "(`random.Random(seed)`, `np.random.default_rng(seed)`), or pass `new_fingerprint=`.",
        FingerprintWarning,
        extra=extra,
    )
