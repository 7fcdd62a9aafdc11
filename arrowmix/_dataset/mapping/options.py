"""The entry of ``Dataset.map`` and ``Dataset.filter``: their arguments, checked once.

The top of the map engine (``arrowmix._dataset.mapping``), whose modules import only
downward, in this order (``tests/test_layers.py`` checks it):

- ``options`` (here): the arguments of a call, checked, into a ``Call`` (what the function
  sees) and a :class:`~arrowmix._dataset.mapping.plan.MapOptions` (how the call runs; never
  part of the fingerprint);
- ``plan``: the fingerprint and the segments of the result;
- ``execute``: reuse the valid segments, compute the missing ones on an ``Executor`` (the
  local process pool in ``local``, or Ray), in ``pieces``;
- ``jobs``: compute, write and check one segment; the map/filter strategies;
- ``compute``, ``output``, ``conform``: run the function over a segment's rows and conform
  what it returns to Arrow; ``result``, ``deferred``: the result Dataset and the facts
  known only after a job;
- ``call``, ``residency``, ``arrays``, ``optimized``, ``worker``: the leaves (what the
  function is called with, pages released, Arrow arrays, HF's optimized lists, a worker
  process's rank).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from arrowmix._dataset.map_options import check_cache_file_name, check_suffix_template
from arrowmix._dataset.mapping.call import Call
from arrowmix._dataset.mapping.execute import resolve_executor
from arrowmix._dataset.mapping.jobs import FILTER, MAP, MAP_VERSION
from arrowmix._dataset.mapping.plan import MapOptions, run
from arrowmix._dataset.state import column_names, num_rows, state_of
from arrowmix._hf.features import features_schema
from arrowmix._storage.mixed_json import no_mixed_types
from arrowmix._validate import check_callable, check_int
from arrowmix.exceptions import ColumnNotFoundError, InvalidTypeError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["MAP_VERSION", "MapOptions", "filter_dataset", "map_dataset", "map_options"]


#: HF ``datasets`` arguments accepted for compatibility that change nothing here.
_NO_OP_HF_ARGS = {"writer_batch_size"}
_UNSUPPORTED_HF_ARGS = {
    "disable_nullable": "Arrow columns here are always nullable",
}


def map_options(kind: str, **kwargs: Any) -> MapOptions:
    """The :class:`MapOptions` of a ``map``/``filter`` call, HF-only arguments checked.

    Raises:
        TypeError: an unknown argument, or an HF argument not supported (the message says
            what to do instead).
        ValueError: ``keep_in_memory`` with ``cache_file_name`` (HF refuses both too).
    """
    known = set(MapOptions.__dataclass_fields__)
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in known}
    for name in sorted(extra):
        if name in _NO_OP_HF_ARGS:
            continue
        if name == "disable_nullable" and extra[name] is False:
            continue  # HF's default: what arrowmix does anyway
        if name in _UNSUPPORTED_HF_ARGS:
            raise TypeError(
                f"{kind}() does not support HF datasets' `{name}=` argument: "
                f"{_UNSUPPORTED_HF_ARGS[name]}."
            )
        raise TypeError(f"{kind}() got an unexpected keyword argument {name!r}")
    if kwargs.get("keep_in_memory") and kwargs.get("cache_file_name"):
        raise ValueError("Please use either `keep_in_memory` or `cache_file_name` but not both.")
    kwargs["keep_in_memory"] = bool(kwargs.get("keep_in_memory"))
    return MapOptions(**kwargs)


def _checked(opts: MapOptions) -> MapOptions:
    """``opts`` with the executor resolved and ``cache_file_name`` made absolute (once)."""
    return replace(
        opts,
        executor=resolve_executor(opts.executor),
        cache_file_name=check_cache_file_name(opts.cache_file_name),
    )


_DEFAULT_OPTIONS = MapOptions()


def _kwargs(fn_kwargs: Any) -> dict[str, Any]:
    if fn_kwargs is None:
        return {}
    if not isinstance(fn_kwargs, Mapping) or not all(isinstance(k, str) for k in fn_kwargs):
        raise InvalidTypeError(
            "`fn_kwargs` must be a dict of keyword arguments for the function (str keys), "
            f"got {type(fn_kwargs).__name__} {fn_kwargs!r:.80}."
        )
    return dict(fn_kwargs)


def _names(ds: Dataset, value: str | Sequence[str] | None, arg: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    listed = isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping))
    names = (value,) if isinstance(value, str) else tuple(value) if listed else ()
    if not (isinstance(value, str) or listed) or not all(isinstance(c, str) for c in names):
        raise InvalidTypeError(
            f"`{arg}` must be a column name or a list of column names, got "
            f"{type(value).__name__} {value!r:.80}."
        )
    available = column_names(state_of(ds))
    missing = [c for c in names if c not in available]
    if missing:
        raise ColumnNotFoundError(
            f"`{arg}` has column(s) {missing} that are not in the dataset; available columns: "
            f"{available}."
        )
    return names


def _check_args(function: Any, batch_size: Any, num_proc: Any) -> None:
    check_callable("function", function)
    check_int("batch_size", batch_size, none_ok=True)
    check_int("num_proc", num_proc, minimum=1, none_ok=True)


def _call(
    ds: Dataset,
    function: Callable[..., Any],
    *,
    batched: bool,
    batch_size: int | None,
    input_columns: str | Sequence[str] | None,
    fn_kwargs: Mapping[str, Any] | None,
    **more: Any,
) -> Call:
    s = state_of(ds)
    return Call(
        function,
        batched=bool(batched),
        batch_size=batch_size if batch_size and batch_size > 0 else None,
        input_columns=_names(ds, input_columns, "input_columns"),
        fn_kwargs=_kwargs(fn_kwargs),
        fmt=s.fmt,
        fmt_kwargs=s.fmt_kwargs if s.fmt is not None else (),
        **more,
    )


def map_dataset(
    ds: Dataset,
    function: Callable[..., Any] | None,
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    with_rank: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    remove_columns: str | Sequence[str] | None = None,
    drop_last_batch: bool = False,
    try_original_type: bool | None = True,
    suffix_template: str | None = None,
    features: Any = None,
    on_mixed_types: str | None = None,
    opts: MapOptions = _DEFAULT_OPTIONS,
) -> Dataset:
    """``Dataset.map`` (see its docstring)."""
    if function is None:  # HF: identity, handy for remove_columns alone
        # With features, the identity returns its input so that the cast applies to it.
        function = _identity if features is None else _same
    _check_args(function, batch_size, opts.num_proc)
    target = features_schema(features)
    mixed = no_mixed_types(on_mixed_types)
    check_suffix_template(suffix_template)
    opts = _checked(opts)
    removed = _names(ds, remove_columns, "remove_columns") or ()
    rows = num_rows(state_of(ds))
    dropped_all = batched and drop_last_batch and batch_size and rows < batch_size
    if rows == 0 or dropped_all:
        from arrowmix._dataset.views import view_ops  # the empty result: a view, no compute

        ds = view_ops.select(ds, []) if dropped_all else ds
        return view_ops.remove_columns(ds, list(removed)) if removed else ds
    call = _call(
        ds,
        function,
        batched=batched,
        batch_size=batch_size,
        input_columns=input_columns,
        fn_kwargs=fn_kwargs,
        with_indices=bool(with_indices),
        with_rank=bool(with_rank),
        remove_columns=removed,
        drop_last_batch=bool(drop_last_batch),
        try_original_type=try_original_type is not False,
        features=target,
        on_mixed_types=mixed,
    )
    return run(MAP, ds, call, opts)


def _identity(*args: Any, **kwargs: Any) -> None:
    return None


def _same(example: Any, *args: Any, **kwargs: Any) -> Any:
    return example


def filter_dataset(
    ds: Dataset,
    function: Callable[..., Any] | None,
    *,
    batched: bool = False,
    batch_size: int | None = 1000,
    with_indices: bool = False,
    with_rank: bool = False,
    input_columns: str | Sequence[str] | None = None,
    fn_kwargs: Mapping[str, Any] | None = None,
    opts: MapOptions = _DEFAULT_OPTIONS,
) -> Dataset:
    """``Dataset.filter`` (see its docstring)."""
    if function is None:  # HF: keep every row
        function = _keep
    _check_args(function, batch_size, opts.num_proc)
    opts = _checked(opts)
    if num_rows(state_of(ds)) == 0:
        return ds
    call = _call(
        ds,
        function,
        batched=batched,
        batch_size=batch_size,
        input_columns=input_columns,
        fn_kwargs=fn_kwargs,
        with_indices=bool(with_indices),
        with_rank=bool(with_rank),
    )
    return run(FILTER, ds, call, opts)


def _keep(*args: Any, **kwargs: Any) -> Any:
    batch = args[0] if args else None
    if isinstance(batch, Mapping) and batch and isinstance(next(iter(batch.values())), list):
        return [True] * len(next(iter(batch.values())))
    return True


#: Arguments of ``Dataset.map``/``filter`` that make the :class:`MapOptions`.
_OPTION_ARGS = (
    "num_proc",
    "load_from_cache_file",
    "cache_file_name",
    "new_fingerprint",
    "desc",
    "executor",
)


def method_arguments(kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`map_dataset`/:func:`filter_dataset` for ``kind``.

    ``arguments`` are the parameters of ``Dataset.map``/``filter`` as passed (their
    ``locals()``): the options and HF's extra keywords go into one :class:`MapOptions`
    (checked by :func:`map_options`), the rest describe the call.
    """
    args = {k: v for k, v in arguments.items() if k != "self"}
    hf_options = dict(args.pop("hf_options"))
    if kind == "map":
        args["suffix_template"] = hf_options.pop("suffix_template", None)
    options = {k: args.pop(k) for k in _OPTION_ARGS}
    args["opts"] = map_options(kind, **options, **hf_options)
    return args
