"""HF's ``on_mixed_types="use_json"``: values Arrow cannot type, kept as JSON, decoded on read.

Arrow needs one type per column (and per struct field, per list item). With
``on_mixed_types="use_json"`` (``from_dict``, ``from_pylist``, ``map``), the places of a column
where values disagree are stored as JSON text in Arrow's ``arrow.json`` extension type (HF
``datasets``' ``Json()`` feature), the rest keeps its Arrow types. The places are found as HF
finds them, walking the values from the column down:

- dicts with different keys (or an empty dict) there: that place holds JSON (the column
  itself, a struct field or the items of a list);
- dicts with the same keys: each key is looked at on its own; lists: their items;
- containers mixed with other values, or scalars of different kinds (a str among ints, a
  bool among numbers): JSON. Ints among floats are numbers, as in Arrow.

Reading a dataset in the Python format (``ds[i]``, ``ds[:]``, iteration, the inputs of a
``map``) decodes the JSON back into the values given. Unlike HF, a string is always stored
as a JSON string, so ``"1"`` reads back as ``"1"`` (HF stores a string that happens to be
valid JSON as is, and reads ``"1"`` back as the int ``1``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

__all__ = [
    "decode",
    "decode_pydict",
    "dumps",
    "encode_as",
    "encode_at",
    "has_json",
    "mixed_array",
    "no_mixed_types",
    "retyped",
]

#: ``on_mixed_types`` values: None (raise on mixed types) or HF's ``"use_json"``.
ON_MIXED_TYPES = (None, "use_json")

_Path = tuple[Any, ...]  # str: a dict key; 0: the items of a list
_LIST = 0


def dumps(value: Any) -> str:
    """``value`` as JSON text laid out as HF's ``Json()`` writes it (no spaces: ``{"a":1}``).

    Non-ASCII characters are escaped as HF's encoder escapes them; floats keep every digit
    (HF's encoder rounds them to 10 decimal places: ``1e-12`` becomes ``0.0``) and ``/`` is
    not escaped.
    """
    return json.dumps(value, separators=(",", ":"))


def no_mixed_types(value: Any) -> str | None:
    """``value`` checked as an ``on_mixed_types`` argument.

    Raises:
        ValueError: neither None nor ``"use_json"``.
    """
    if value not in ON_MIXED_TYPES:
        raise ValueError(f"`on_mixed_types` must be None or 'use_json', got {value!r}.")
    return value  # type: ignore[no-any-return]  # one of ON_MIXED_TYPES


def is_json(t: pa.DataType) -> bool:
    """Whether ``t`` is Arrow's ``arrow.json`` extension type."""
    return getattr(t, "extension_name", None) == "arrow.json"


_LISTS = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_fixed_size_list,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)


def _children(t: pa.DataType) -> list[pa.DataType]:
    """The types inside a struct or list type (none for others: maps, extension types)."""
    if pa.types.is_struct(t):
        return [t.field(i).type for i in range(t.num_fields)]
    if any(is_list(t) for is_list in _LISTS):
        return [t.value_type]  # type: ignore[attr-defined]  # a list type
    return []


def has_json(t: pa.DataType) -> bool:
    """Whether ``t`` holds ``arrow.json`` anywhere (itself, a field, list items)."""
    return is_json(t) or any(has_json(c) for c in _children(t))


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def mixed_paths(values: Sequence[Any]) -> list[_Path]:
    """The places in ``values`` (one per row) whose values need JSON (see the module doc)."""
    found: list[_Path] = []
    todo: list[tuple[_Path, list[Any]]] = [((), [v for v in values if v is not None])]
    while todo:
        path, content = todo.pop(0)
        if not content:
            continue
        if all(isinstance(x, dict) for x in content):
            keys = set(content[0])
            if not keys or any(set(x) != keys for x in content):
                found.append(path)
                continue
            for key in content[0]:
                todo.append(((*path, key), [x[key] for x in content if x[key] is not None]))
        elif all(isinstance(x, (list, tuple)) for x in content):
            todo.append(((*path, _LIST), [y for x in content for y in x if y is not None]))
        elif any(isinstance(x, (dict, list, tuple)) for x in content):
            found.append(path)  # containers among other values
        elif len({_kind(x) for x in content}) > 1:  # scalars of different kinds
            found.append(path)
    return found


def encode_at(value: Any, path: _Path) -> Any:
    """``value`` with its place ``path`` (keys, 0 for list items) replaced by JSON text."""
    if value is None:
        return None
    if not path:
        return dumps(value)
    head, rest = path[0], path[1:]
    if head == _LIST:
        return [encode_at(v, rest) for v in value]
    return {**value, head: encode_at(value.get(head), rest)}


def retyped(t: pa.DataType, path: _Path) -> pa.DataType:
    """``t`` with the type at ``path`` replaced by ``arrow.json``."""
    if not path:
        return pa.json_()
    head, rest = path[0], path[1:]
    if head == _LIST:
        inner = retyped(t.value_type, rest)  # type: ignore[attr-defined]  # a list type
        return pa.large_list(inner) if pa.types.is_large_list(t) else pa.list_(inner)
    fields = [t.field(i) for i in range(t.num_fields)]
    return pa.struct([f.with_type(retyped(f.type, rest)) if f.name == head else f for f in fields])


def mixed_array(values: Sequence[Any]) -> pa.Array[Any] | None:
    """``values`` as an Arrow array with JSON where their types are mixed; None if nowhere."""
    paths = mixed_paths(values)
    if not paths:
        return None
    encoded = list(values)
    for path in paths:
        encoded = [encode_at(v, path) for v in encoded]
    arr = pa.array(encoded)
    target = arr.type
    for path in paths:
        target = retyped(target, path)
    out: pa.Array[Any] = arr.cast(target)
    return out


def _encode_typed(value: Any, t: pa.DataType) -> Any:
    if value is None:
        return None
    if is_json(t):
        return dumps(value)
    if pa.types.is_struct(t) and isinstance(value, dict):
        return {
            k: _encode_typed(v, t.field(k).type) if k in t.names else v for k, v in value.items()
        }
    if _children(t) and isinstance(value, (list, tuple)):
        return [_encode_typed(v, t.value_type) for v in value]  # type: ignore[attr-defined]
    return value


def encode_as(values: Sequence[Any], t: pa.DataType) -> pa.Array[Any]:
    """Python ``values`` as an array of type ``t`` that holds ``arrow.json`` somewhere."""
    encoded = [_encode_typed(v, t) for v in values]
    storage = pa.array(encoded, type=_storage(t))
    out: pa.Array[Any] = storage.cast(t)
    return out


def _storage(t: pa.DataType) -> pa.DataType:
    if is_json(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(_storage(t.field(i).type)) for i in range(t.num_fields)]
        )
    if pa.types.is_large_list(t):
        return pa.large_list(_storage(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(_storage(t.value_type))
    return t


def decode(value: Any, t: pa.DataType) -> Any:
    """A Python value of an Arrow type ``t`` with its JSON text decoded."""
    if value is None:
        return None
    if is_json(t):
        return json.loads(value)
    if pa.types.is_struct(t):
        return {k: decode(v, t.field(k).type) for k, v in value.items()}
    children = _children(t)
    if children and isinstance(value, list):
        return [decode(v, children[0]) for v in value]
    return value


def decode_pydict(table: pa.Table, data: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """``table.to_pydict()`` (``data``) with the JSON of its columns decoded, in place."""
    for f in table.schema:
        if has_json(f.type):
            data[f.name] = [decode(v, f.type) for v in data[f.name]]
    return data
