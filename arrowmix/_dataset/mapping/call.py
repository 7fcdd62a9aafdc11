"""Calling a user function on the rows ``[start, stop)`` of a view: inputs and calls.

Inputs are read block by block (``batch_size`` rows when batched, 1024 rows otherwise), so
memory stays bounded whatever the range. Batched functions get a lazy dict of columns that
converts a column to Python only when the function reads it, so a function that adds a column
next to a large text column never pays for the text (an unread column goes back to Arrow
untouched). What the calls return becomes Arrow in ``arrowmix._dataset.mapping.output``.

``async def`` functions are awaited: the calls of a block (and, batched, of up to
:data:`ASYNC_BATCHES` blocks) run concurrently on one event loop per segment, at most
:data:`MAX_ASYNC_CALLS` at a time (HF ``datasets`` runs up to 1000 as well); results keep the
input order. In a thread that already runs an event loop (a notebook), the loop runs in a
helper thread.

Errors name the function and the culprit; an exception raised by the function itself keeps
its type and traceback and gains a note with the row or batch it failed on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._dataset import formats
from arrowmix._dataset.mapping.residency import release_mapped_pages
from arrowmix._dataset.state import state_of, view_range
from arrowmix._storage.mixed_json import decode, has_json

if TYPE_CHECKING:
    import asyncio

    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "ASYNC_BATCHES",
    "MAX_ASYNC_CALLS",
    "Call",
    "Invoker",
    "LazyBatch",
    "blocks",
    "call_input",
    "function_name",
    "row_args",
]

_ROW_BLOCK = 1024
#: Calls of an ``async def`` function in flight at once.
MAX_ASYNC_CALLS = 1000
#: Batches of a batched ``async def`` function read ahead and awaited together.
ASYNC_BATCHES = 16


def function_name(fn: Any) -> str:
    """``module.qualname`` of a function (its repr for other callables)."""
    qual = getattr(fn, "__qualname__", None)
    if qual is None:
        return repr(fn)
    mod = getattr(fn, "__module__", None)
    return f"{mod}.{qual}" if mod else str(qual)


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python 3.10: keep the note where 3.11 would put it
        notes = [*getattr(exc, "__notes__", []), note]
        exc.__notes__ = notes  # type: ignore[attr-defined]  # 3.10 has no add_note


@dataclass(frozen=True)
class Call:
    """The user function and how to call it."""

    function: Callable[..., Any]
    batched: bool = False
    batch_size: int | None = 1000
    with_indices: bool = False
    input_columns: tuple[str, ...] | None = None
    fn_kwargs: Mapping[str, Any] = field(default_factory=dict)
    remove_columns: tuple[str, ...] = ()
    fmt: str | None = None
    #: The format's ``format_kwargs`` (``with_format("numpy", dtype=...)``), as in HF.
    fmt_kwargs: tuple[tuple[str, Any], ...] = ()
    with_rank: bool = False
    #: The worker's rank (``with_rank``): its index in the process pool, None in-process.
    rank: int | None = None
    drop_last_batch: bool = False
    try_original_type: bool = True
    #: ``map(features=...)`` as an Arrow schema (its HF metadata kept): the output's schema.
    features: pa.Schema | None = None
    #: HF's ``on_mixed_types``: ``"use_json"`` stores columns of mixed types as JSON.
    on_mixed_types: str | None = None

    @property
    def name(self) -> str:
        return function_name(self.function)

    @property
    def is_async(self) -> bool:
        """Whether the function is an ``async def`` (or a callable whose ``__call__`` is)."""
        fn = self.function
        return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  # an async __call__, not callability
        )

    def block_size(self, rows: int) -> int:
        if not self.batched:
            return _ROW_BLOCK
        return self.batch_size if self.batch_size else max(rows, 1)

    def extra_args(self, index: Any) -> list[Any]:
        """What follows the row/batch: ``[index]`` (``with_indices``), then ``[rank]``."""
        return ([index] if self.with_indices else []) + ([self.rank] if self.with_rank else [])


class Invoker:
    """Calls the function (awaiting ``async def`` ones on one event loop); close when done."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: Any = None

    def one(self, args: list[Any], where: str) -> Any:
        """The result of one call; its exceptions gain a note naming ``where``."""
        return self.many([args], [where])[0]

    def many(self, args: Sequence[list[Any]], wheres: Sequence[str]) -> list[Any]:
        """The results of several calls, in order (concurrent for ``async def``).

        ``wheres[i]`` names call ``i``'s rows in error notes (read only on an error).
        """
        call = self.call
        if not call.is_async:
            fn, kwargs = call.function, call.fn_kwargs
            out = []
            i = 0
            try:
                for i, a in enumerate(args):  # noqa: B007  # i names the failing call
                    out.append(fn(*a, **kwargs))
            except Exception as exc:
                _add_note(exc, f"arrowmix: raised by {call.name} on {wheres[i]}")
                raise
            return out
        results: list[Any] = self._run(self._gather(args, wheres))
        return results

    async def _gather(self, args: Sequence[list[Any]], wheres: Sequence[str]) -> list[Any]:
        import asyncio

        call = self.call
        sem = asyncio.Semaphore(MAX_ASYNC_CALLS)

        async def one(a: list[Any], where: str) -> Any:
            async with sem:
                try:
                    return await call.function(*a, **call.fn_kwargs)
                except Exception as exc:
                    _add_note(exc, f"arrowmix: raised by {call.name} on {where}")
                    raise

        tasks = [asyncio.ensure_future(one(a, wheres[i])) for i, a in enumerate(args)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _run(self, coro: Any) -> Any:
        import asyncio  # here: plain maps (and cache hits) do not load it

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:  # this thread runs a loop already (a notebook): ours runs in a helper
                from concurrent.futures import ThreadPoolExecutor

                self._thread = ThreadPoolExecutor(1, thread_name_prefix="arrowmix-async")
        if self._thread is not None:
            return self._thread.submit(self._loop.run_until_complete, coro).result()
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Close the event loop (if one was started)."""
        if self._loop is not None:
            if self._thread is not None:
                self._thread.submit(self._loop.close).result()
                self._thread.shutdown()
            else:
                self._loop.close()
            self._loop = self._thread = None


class LazyBatch(MutableMapping[str, Any]):
    """A dict of columns over an Arrow table; a column becomes a Python list when first read.

    It records what the function did to it: ``assigned`` (keys set), ``read`` (columns
    converted) and the input columns it deleted (``deleted``).
    """

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._json = any(has_json(t) for t in table.schema.types)
        self._keys = list(table.column_names)
        self._data: dict[str, Any] = {}
        self.assigned: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self._data:
            return self._data[key]
        if key not in self._keys:
            raise KeyError(f"Unknown column {key!r}; available columns: {self._keys}.")
        col = self._table.column(key)
        value = col.to_pylist()
        if self._json and has_json(col.type):  # HF's Json(): the values, not their text
            value = [decode(v, col.type) for v in value]
        self._data[key] = value
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value
        self.assigned.add(key)
        if key not in self._keys:
            self._keys.append(key)

    def __delitem__(self, key: str) -> None:
        if key not in self._keys:
            raise KeyError(key)
        self._keys.remove(key)
        self._data.pop(key, None)
        self.assigned.discard(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys  # without converting the column

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def read(self) -> list[str]:
        """Input columns converted to Python (read, and maybe changed in place)."""
        return [k for k in self._data if k not in self.assigned]

    @property
    def deleted(self) -> list[str]:
        """Input columns the function deleted."""
        return [c for c in self._table.column_names if c not in self._keys]

    def untouched(self, key: str) -> pa.ChunkedArray[Any] | None:
        """The Arrow column ``key`` if the function never read nor replaced it."""
        if key in self._data or key not in self._table.column_names:
            return None
        return self._table.column(key)


def _has_json(table: pa.Table) -> bool:
    return any(has_json(t) for t in table.schema.types)


def blocks(
    ds: Dataset, start: int, stop: int, size: int, reads: Sequence[str] | None = None
) -> Iterator[tuple[int, pa.Table]]:
    """View rows ``[start, stop)`` in tables of ``size`` rows, with bounded resident memory.

    ``reads``: the only columns the function reads (``input_columns``), whose pages alone are
    read ahead; the others stay unread unless touched.
    """
    s = state_of(ds)
    for lo in range(start, stop, size):
        yield lo, view_range(s, lo, min(lo + size, stop), reads=reads)
    # the reads are counted (arrowmix._storage.resident); the pass's pages go at its end
    release_mapped_pages([*s.files, *([s.indices_file] if s.indices_file else [])])


def call_input(call: Call, lo: int, table: pa.Table) -> list[Any]:
    """The positional arguments of a batched call on ``table`` (view rows from ``lo``)."""
    if call.fmt is None:
        batch: Any = LazyBatch(table)
    else:
        batch = formats.format_batch(table, call.fmt, dict(call.fmt_kwargs))
    if call.input_columns is not None:
        args: list[Any] = [batch[c] for c in call.input_columns]
    else:
        args = [batch]
    return args + call.extra_args(list(range(lo, lo + table.num_rows)))


def row_args(call: Call, lo: int, table: pa.Table) -> list[list[Any]]:
    """The positional arguments of each unbatched call on the rows of ``table``."""
    n = table.num_rows
    if call.input_columns is not None:
        sub = table.select(list(call.input_columns))
        fmt = formats.Format(call.fmt, kwargs=call.fmt_kwargs, json=_has_json(sub))
        cols = fmt.batch(sub) if call.fmt != "arrow" else sub.to_pydict()
        per_row = [[cols[c][i] for c in call.input_columns] for i in range(n)]
    else:
        fmt = formats.Format(call.fmt, kwargs=call.fmt_kwargs, json=_has_json(table))
        per_row = [[r] for r in fmt.rows(table)]
    if call.with_indices or call.with_rank:
        for i, args in enumerate(per_row):
            args.extend(call.extra_args(lo + i))
    return per_row
