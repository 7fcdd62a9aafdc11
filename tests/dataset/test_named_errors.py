"""Wrong arguments at the public surface raise arrowmix errors that name what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import arrowmix as am
from arrowmix.exceptions import ArrowmixError


def _ds() -> am.Dataset:
    return am.Dataset.from_dict({"a": [1, 2, 3], "l": [[1], [2, 3], []]})


CASES: list[tuple[str, Callable[[], Any], tuple[str, ...]]] = [
    ("from_dict(None)", lambda: am.Dataset.from_dict(None), ("`mapping`", "NoneType")),  # type: ignore[arg-type]
    ("from_dict(list)", lambda: am.Dataset.from_dict([1, 2]), ("`mapping`", "list")),  # type: ignore[arg-type]
    ("from_dict(int key)", lambda: am.Dataset.from_dict({1: [1, 2]}), ("1", "column name")),  # type: ignore[dict-item]
    ("from_dict(scalar column)", lambda: am.Dataset.from_dict({"a": 1}), ("'a'", "int")),  # type: ignore[dict-item]
    (
        "from_dict(mixed)",
        lambda: am.Dataset.from_dict({"a": [1, 2], "b": [1, "x"]}),
        ("'b'", "row 1"),
    ),
    ("from_dict(2**64)", lambda: am.Dataset.from_dict({"a": [1, 2**64]}), ("'a'", "row 1")),
    ("from_pylist(ints)", lambda: am.Dataset.from_pylist([1, 2]), ("row 0", "int")),  # type: ignore[list-item]
    (
        "from_pylist(None row)",
        lambda: am.Dataset.from_pylist([{"a": 1}, None]),
        ("row 1", "NoneType"),
    ),  # type: ignore[list-item]
    ("from_pylist(None)", lambda: am.Dataset.from_pylist(None), ("`rows`", "NoneType")),  # type: ignore[arg-type]
    ("from_chunks(123)", lambda: am.Dataset.from_chunks(123), ("`path_or_glob_or_list`", "int")),  # type: ignore[arg-type]
    (
        "from_chunks(dict)",
        lambda: am.Dataset.from_chunks({"a": 1}),
        ("`path_or_glob_or_list`", "dict"),
    ),  # type: ignore[arg-type]
    ("write_chunks(123)", lambda: am.write_chunks(123, "unused-dir"), ("`data`", "int")),
    (
        "map(remove_columns=5)",
        lambda: _ds().map(lambda x: x, remove_columns=5),
        ("`remove_columns`", "int"),
    ),  # type: ignore[arg-type]
    ("map(fn_kwargs=[1])", lambda: _ds().map(lambda x: x, fn_kwargs=[1]), ("`fn_kwargs`", "list")),  # type: ignore[arg-type]
    (
        "filter returning ints",
        lambda: _ds().filter(lambda b: [1, 0, 2], batched=True),
        ("int", "rows 0..2"),
    ),
    ("select(None)", lambda: _ds().select(None), ("`indices`", "NoneType")),  # type: ignore[arg-type]
    ("sort(list column)", lambda: _ds().sort("l"), ("'l'", "list<item: int64>")),
]


@pytest.mark.parametrize(("call", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_error_is_arrowmix_and_names_the_culprit(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any], named: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArrowmixError) as info:
        call()
    assert isinstance(info.value, (TypeError, ValueError))
    for part in named:
        assert part in str(info.value)
    assert not (tmp_path / "unused-dir").exists()
