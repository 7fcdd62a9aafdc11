"""Bytecode analysis for function hashing: canonical code digests, globals, imports.

All three functions are pure in the code object (which is immutable), so their results
are cached for the whole process. Line numbers, file names, the line table
(``co_positions``), ``co_name`` and ``co_qualname`` never enter a code digest, so moving or
renaming a function, or moving its file, keeps its hash (a recursive function calls itself
by a global name, which is in ``co_names``: renaming it changes its code).
"""

from __future__ import annotations

import dis
import functools
import types

from arrowmix._fingerprint.hasher import hash_value

__all__ = ["code_digest_of", "global_uses", "imports_of"]

_LOAD_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"})
_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


@functools.lru_cache(maxsize=8192)
def code_digest_of(code: types.CodeType) -> str:
    """Digest of ``code`` without file names or line numbers, nested code included.

    Example:
        >>> def f(x):
        ...     return x + 1
        >>> def g(x):
        ...
        ...     return x + 1
        >>> code_digest_of(f.__code__) == code_digest_of(g.__code__)
        True
    """
    consts = tuple(
        ("code", code_digest_of(c)) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    fields = (
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_nlocals,
        code.co_flags,
        code.co_code,
        consts,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        getattr(code, "co_exceptiontable", b""),
    )
    return hash_value(fields)


_MAX_CHAIN = 4


@functools.lru_cache(maxsize=8192)
def global_uses(
    code: types.CodeType,
) -> tuple[tuple[str, frozenset[tuple[str, ...]], bool], ...]:
    """Globals ``code`` (and nested code) uses: (name, attribute chains read, bare use).

    ``helpers.text.clean(x)`` gives ``("helpers", {("text", "clean")}, False)``.
    """
    chains: dict[str, set[tuple[str, ...]]] = {}
    bare: dict[str, bool] = {}
    stack = [code]
    while stack:
        co = stack.pop()
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
        instructions = list(dis.get_instructions(co))
        for i, ins in enumerate(instructions):
            if ins.opname not in _LOAD_GLOBAL_OPS:
                continue
            name = str(ins.argval)
            chains.setdefault(name, set())
            chain: list[str] = []
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                for nxt in instructions[i + 1 : i + 1 + _MAX_CHAIN]:
                    if nxt.opname not in _ATTR_OPS:
                        break
                    chain.append(str(nxt.argval))
            if chain:
                chains[name].add(tuple(chain))
            else:
                bare[name] = True
    return tuple((n, frozenset(chains[n]), bare.get(n, False)) for n in sorted(chains))


@functools.lru_cache(maxsize=8192)
def imports_of(code: types.CodeType) -> tuple[tuple[int, str, tuple[str, ...]], ...]:
    """Imports in ``code`` (and nested code): (level, module name, names imported)."""
    found: set[tuple[int, str, tuple[str, ...]]] = set()
    stack = [code]
    while stack:
        co = stack.pop()
        stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
        instructions = list(dis.get_instructions(co))
        for i, ins in enumerate(instructions):
            if ins.opname != "IMPORT_NAME" or i < 2:  # preceded by level and fromlist
                continue
            level, fromlist = instructions[i - 2].argval, instructions[i - 1].argval
            names = tuple(fromlist) if isinstance(fromlist, tuple) else ()
            level = level if isinstance(level, int) else 0
            found.add((level, str(ins.argval), names))
    return tuple(sorted(found))
