"""Deterministic serialisation for hashing (never for loading back), built on dill.

``dumps(obj)`` gives the same bytes for the same value in any process, session or
machine with the same Python minor version, dill minor version and installed package
versions.

How the stock dill pickler is normalised:

- **No identity in the output.** Immutable values (str, bytes, tuples, frozensets, code)
  are never memoised, so the bytes do not depend on whether two equal strings happen to
  be the same (interned) object in this process.
- **Canonical order.** Sets are written sorted (by element when all are strings, else
  by each element's own deterministic hash), so their arbitrary iteration order never
  matters. Dicts keep their insertion order: it is the order they iterate in, so code
  that loops over a dict may depend on it.
- **Functions and classes** go through a *context* (see ``functions.py``): user code is
  hashed by value (code without file names or line numbers, closure values, globals it
  reads, ...), installed code by ``module + qualname + package version``.
- **Fast paths**: numpy arrays, Arrow data and large homogeneous containers are replaced
  by their canonical :func:`~arrowmix._fingerprint.hasher.hash_value` digest (no
  pickling of big buffers); objects with a ``__fingerprint__()`` method or a registered
  handler (e.g. ``tokenizers.Tokenizer`` via ``to_str()``) are replaced by the digest of
  what it returns.
- **Unhashable on purpose**: locks, generators, open files, sockets, threads, frames and
  similar process-bound objects raise :class:`TypeError` instead of being pickled by
  name or state.
"""

from __future__ import annotations

import collections
import functools
import io
import pickle
import socket
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import dill
import numpy as np
import pyarrow as pa

from arrowmix._fingerprint.hasher import (
    BIG_CONTAINER,
    big_container_digest,
    hash_bytes,
    hash_value,
)
from arrowmix._fingerprint.modules import (
    is_user_module,
    module_source_digest,
    module_version,
    object_module,
)

__all__ = [
    "Context",
    "UnhashableError",
    "dumps",
    "reference",
    "register_fingerprint",
    "registered_fingerprints",
    "short_repr",
]

PROTOCOL = 4

# Immutable values are never memoised: sharing them is an accident of interning.
_NO_MEMO: tuple[type, ...] = (
    str,
    bytes,
    tuple,
    frozenset,
    int,
    float,
    complex,
    types.CodeType,
)
_ATOMS = frozenset({str, bytes, int, float, bool, complex, type(None)})
_CONTAINERS = frozenset({dict, list, tuple, set, frozenset})
_ARROW_TYPES = (
    pa.Array,
    pa.ChunkedArray,
    pa.Table,
    pa.RecordBatch,
    pa.Schema,
    pa.DataType,
)

_UNHASHABLE: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((types.GeneratorType, types.AsyncGeneratorType, types.CoroutineType),
     "its position is process state, not a value"),
    ((type(threading.Lock()), type(threading.RLock()), threading.Condition,
      threading.Semaphore, threading.Event, threading.Thread),
     "a synchronisation primitive or thread is process state, not a value"),
    (io.IOBase, "an open file or stream is process state, not a value"),
    (socket.socket, "an open socket is process state, not a value"),
    ((types.FrameType, types.TracebackType), "a frame is process state, not a value"),
)  # fmt: skip

# type name ("module.qualname") -> handler returning a hashable value for an instance.
_REGISTRY: dict[str, Callable[[Any], Any]] = {
    # HF tokenizers: the JSON serialisation is the tokenizer's whole behaviour.
    "tokenizers.Tokenizer": lambda tok: tok.to_str(),
    # transformers tokenizers: their state minus the memo cache that fills up with use.
    "transformers.tokenization_utils_base.PreTrainedTokenizerBase": lambda tok: {
        k: v for k, v in vars(tok).items() if k != "cache"
    },
    # torch tensors and generators by value (dtype, shape, bytes; the generator's state),
    # numpy generators by their bit generator's state: never by address or storage identity.
    "torch.Tensor": lambda t: _tensor_value(t),
    "torch._C.Generator": lambda g: _torch_generator_value(g),
    "numpy.random._generator.Generator": lambda g: ("numpy.Generator", g.bit_generator.state),
    "numpy.random.mtrand.RandomState": lambda r: ("numpy.RandomState", r.get_state(legacy=False)),
    # a C function reached through ctypes (``libc.madvise``): its name and signature, not the
    # address it was loaded at in this process
    "_ctypes.CFuncPtr": lambda f: (
        "ctypes function",
        getattr(f, "__name__", None),
        repr(getattr(f, "argtypes", None)),
        repr(getattr(f, "restype", None)),
    ),
}


def _tensor_value(t: Any) -> tuple[Any, ...]:
    """A torch tensor's value: dtype, shape, layout and raw bytes (on the CPU)."""
    t = t.detach()
    if t.is_sparse:
        t = t.to_dense()
    flat = t.cpu().contiguous().reshape(-1)
    raw = flat.view(dtype=_uint8(flat)).numpy().tobytes() if flat.numel() else b""
    return ("torch.Tensor", str(t.dtype), tuple(t.shape), raw)


def _torch_generator_value(g: Any) -> tuple[Any, ...]:
    """A ``torch.Generator``'s value: its device and its state (what it will draw next)."""
    return ("torch.Generator", str(g.device), _tensor_value(g.get_state()))


def _uint8(t: Any) -> Any:
    import torch  # only reached for a tensor, so torch is already imported

    return torch.uint8


def register_fingerprint(cls: type | str, handler: Callable[[Any], Any]) -> None:
    """Hash instances of ``cls`` (or subclasses) as ``hash_value(handler(obj))``.

    ``cls`` may be a type or its dotted name (``"package.module.Class"``), which
    registers it lazily: the package is never imported by arrowmix. A handler should
    return a small, deterministic summary of the object's behaviour (a config string,
    bytes, a tuple of numbers).

    Example:
        >>> class Vocab:
        ...     def __init__(self, words):
        ...         self.words = words
        >>> register_fingerprint(Vocab, lambda v: sorted(v.words))
        >>> dumps(Vocab({"b", "a"})) == dumps(Vocab({"a", "b"}))
        True
    """
    name = cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"
    _REGISTRY[name] = handler
    _HANDLER_CACHE.clear()


def registered_fingerprints() -> Mapping[str, Callable[[Any], Any]]:
    """Read-only view of the special-type handlers, keyed by dotted type name."""
    return types.MappingProxyType(_REGISTRY)


_HANDLER_CACHE: dict[type, Callable[[Any], Any] | None] = {}


def _registered_handler(cls: type) -> Callable[[Any], Any] | None:
    try:
        return _HANDLER_CACHE[cls]
    except KeyError:
        pass
    found = None
    for klass in cls.__mro__:
        found = _REGISTRY.get(f"{klass.__module__}.{klass.__qualname__}")
        if found is not None:
            break
    if len(_HANDLER_CACHE) > 4096:  # bounded: classes may be created dynamically
        _HANDLER_CACHE.clear()
    _HANDLER_CACHE[cls] = found
    return found


def _unhashable_reason(obj: object) -> str | None:
    for cls, reason in _UNHASHABLE:
        if isinstance(obj, cls):
            return reason
    return None


class Context(Protocol):
    """What the pickler needs from a fingerprinting run (see ``functions.py``)."""

    def function_digest(self, fn: types.FunctionType, path: str) -> str:
        """Digest of a function (by value for user code, by reference otherwise)."""

    def class_digest(self, cls: type, path: str) -> str:
        """Digest of a class (by value for user code, by reference otherwise)."""

    def code_digest(self, code: types.CodeType, path: str) -> str:
        """Digest of a code object without file names or line numbers."""


def _tag(*args: Any) -> None:
    """Marker callable of every rewritten reduction; never called (no unpickling)."""


def reference(obj: Any) -> tuple[str, str, str, str]:
    """``("ref", module, qualname, version)`` of installed code or modules."""
    module = object_module(obj) or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
    return (
        "ref",
        module,
        str(qualname),
        module_version(module) if module else "unknown",
    )


def _sort_key_digest(ctx: Context, path: str) -> Callable[[Any], str]:
    def key(item: Any) -> str:
        return hash_bytes(dumps(item, ctx=ctx, path=path))

    return key


class _FingerprintPickler(dill.Pickler):  # type: ignore[misc]  # dill is untyped
    """dill pickler whose output depends only on values (see the module docstring)."""

    def __init__(self, file: io.BytesIO, ctx: Context, path: str) -> None:
        super().__init__(file, protocol=PROTOCOL, byref=False, recurse=True)
        self.ctx = ctx
        self.path = path
        self.culprit: object | None = None
        self._active: set[int] = set()

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        guarded = id(obj) in self._active
        try:
            super().save(obj, save_persistent_id)
        except UnhashableError as exc:
            if self.culprit is None:
                self.culprit = exc.culprit
            raise
        except (
            pickle.PicklingError,
            TypeError,
            AttributeError,
            ValueError,
            RecursionError,
            RuntimeError,
        ):
            if self.culprit is None:  # the innermost object fails first
                self.culprit = obj
            raise
        finally:
            if not guarded:
                # The body of a rewritten collection has been written: disarm its cycle
                # guard.
                self._active.discard(id(obj))

    def memoize(self, obj: Any) -> None:
        if isinstance(obj, _NO_MEMO):
            return
        super().memoize(obj)

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if cls in _ATOMS or obj is _tag:
            return NotImplemented
        reason = _unhashable_reason(obj)
        if reason is not None:
            raise TypeError(f"cannot fingerprint {cls.__module__}.{cls.__qualname__}: {reason}")
        if isinstance(obj, type):
            return _tag, ("class", self._class_digest(obj))
        handler = _registered_handler(cls)
        if handler is not None:
            return _tag, ("registered", reference(cls), hash_value(handler(obj)))
        hook = getattr(cls, "__fingerprint__", None)
        if callable(hook):
            return _tag, ("hook", reference(cls), hash_value(hook(obj)))
        if isinstance(obj, (memoryview, np.ndarray, np.generic, *_ARROW_TYPES)):
            return _tag, ("value", hash_value(obj))
        if cls in _CONTAINERS and len(obj) >= BIG_CONTAINER:
            digest = big_container_digest(obj)
            if digest is not None:
                return _tag, ("value", digest)
        if (
            cls is set
            or cls is frozenset
            or (isinstance(obj, dict) and not isinstance(obj, collections.OrderedDict))
        ):
            return self._canonical_collection(obj)
        if isinstance(obj, types.FunctionType):
            return _tag, ("function", self._function_digest(obj))
        if isinstance(obj, types.CodeType):
            return _tag, ("code", self._code_digest(obj))
        if isinstance(obj, types.MethodType):
            return _tag, ("method", obj.__func__, obj.__self__)
        if isinstance(obj, types.ModuleType):
            if is_user_module(obj):
                return _tag, ("user-module", obj.__name__, module_source_digest(obj))
            return _tag, reference(obj)
        if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(obj, "__self__", None)
            if owner is None or isinstance(owner, types.ModuleType):
                return _tag, reference(obj)
            return _tag, ("bound-builtin", obj.__name__, owner)
        if "__wrapped__" in getattr(obj, "__dict__", ()) and not is_user_module(cls.__module__):
            # functools.lru_cache / cache and similar installed wrappers: dill would
            # pickle them by name, hiding the wrapped function's code. Hash what they
            # wrap. (Wrapper classes of the user's own are pickled with their state.)
            return _tag, ("wrapper", reference(cls), obj.__wrapped__)
        if isinstance(obj, functools.partial):
            return _tag, ("partial", obj.func, obj.args, obj.keywords, vars(obj))
        return NotImplemented

    def _canonical_collection(self, obj: Any) -> Any:
        if id(obj) in self._active:
            # A container that contains itself: deterministic marker instead of
            # recursing.
            return _tag, ("cycle", type(obj).__name__)
        self._active.add(id(obj))  # disarmed by save() once the body below is written
        if isinstance(obj, dict):
            # Insertion order: a dict iterates in that order, so it is part of its value.
            body: tuple[Any, ...] = tuple(obj.items())
        elif all(type(x) is str for x in obj):
            body = tuple(sorted(obj))
        else:
            body = tuple(sorted(obj, key=_sort_key_digest(self.ctx, self.path)))
        cls = type(obj)
        if cls in (dict, set, frozenset):
            return _tag, (cls.__name__, body)
        extra = (getattr(obj, "default_factory", None), getattr(obj, "__dict__", None))
        return _tag, ("dict-subclass", cls, body, extra)

    def _function_digest(self, fn: types.FunctionType) -> str:
        return self.ctx.function_digest(fn, f"{self.path} -> {fn.__qualname__}")

    def _class_digest(self, cls: type) -> str:
        return self.ctx.class_digest(cls, f"{self.path} -> {cls.__qualname__}")

    def _code_digest(self, code: types.CodeType) -> str:
        return self.ctx.code_digest(code, f"{self.path} -> code {code.co_name}")


def dumps(obj: Any, *, ctx: Context | None = None, path: str = "value") -> bytes:
    """Serialise ``obj`` deterministically for hashing (not for loading back).

    Args:
        obj: Any picklable value, function or class.
        ctx: The fingerprinting run that hashes functions and classes found inside
        ``obj``
            (None: a fresh strict one, which raises on unhashable functions).
        path: Where ``obj`` was found, for error messages.

    Raises:
        TypeError: ``obj`` (or something inside it) cannot be fingerprinted;
        ``__notes__``
            names the innermost culprit.

    Example:
        >>> dumps({"b": 1, "a": {3, 2}}) == dumps({"b": 1, "a": {2, 3}})
        True
        >>> dumps({"b": 1, "a": 2}) == dumps({"a": 2, "b": 1})
        False
    """
    if ctx is None:
        from arrowmix._fingerprint.functions import FunctionHasher

        ctx = FunctionHasher(strict=True)
    buf = io.BytesIO()
    pickler = _FingerprintPickler(buf, ctx, path)
    try:
        pickler.dump(obj)
    except UnhashableError:
        raise
    except (
        pickle.PicklingError,
        TypeError,
        AttributeError,
        ValueError,
        RecursionError,
        RuntimeError,  # e.g. multiprocessing locks refuse pickling outside a spawn
    ) as exc:
        raise UnhashableError(path, pickler.culprit, exc) from exc
    return buf.getvalue()


class UnhashableError(TypeError):
    """``obj`` cannot be fingerprinted; carries the path, the culprit and the cause."""

    def __init__(self, path: str, culprit: object, cause: BaseException) -> None:
        self.path = path
        self.culprit = culprit
        self.cause = cause
        cls = type(culprit)
        self.culprit_name = f"{cls.__module__}.{cls.__qualname__}"
        cause_msg = cause.cause if isinstance(cause, UnhashableError) else cause
        super().__init__(
            f"cannot fingerprint {short_repr(culprit)} (a {self.culprit_name}) "
            "found at "
            f"{path}: {type(cause_msg).__name__}: {cause_msg}"
        )


def short_repr(obj: object, limit: int = 80) -> str:
    """``repr(obj)`` cut to ``limit`` characters (never raises)."""
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real problem
        text = f"<{type(obj).__qualname__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
