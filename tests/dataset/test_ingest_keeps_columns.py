"""Ingestion never drops a column or changes a value: it keeps them, or refuses by name."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import arrowmix as am
from arrowmix.exceptions import ArrowmixError

BLOCK = 65536  # rows per block of the JSON Lines reader


def _outcome(open_it: Callable[[], am.Dataset]) -> tuple[am.Dataset | None, str]:
    """The dataset, or None and the message of the arrowmix error that refused it."""
    try:
        return open_it(), ""
    except ArrowmixError as exc:
        return None, str(exc)


def _jsonl(path: Any, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_json_files_with_another_column_keep_it_or_refuse_naming_file_and_column(
    tmp_path: Any,
) -> None:
    a = _jsonl(tmp_path / "a.jsonl", [{"a": 1}])
    b = _jsonl(tmp_path / "b.jsonl", [{"a": 2, "b": "x"}])
    ds, msg = _outcome(lambda: am.Dataset.from_json([a, b], cache_dir=str(tmp_path / "c")))
    if ds is None:
        assert "b.jsonl" in msg
        assert "'b'" in msg
    else:
        assert ds.to_list() == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]


def test_csv_files_with_another_column_keep_it_or_refuse_naming_file_and_column(
    tmp_path: Any,
) -> None:
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.csv").write_text("x,y\n2,z\n")
    files = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    ds, msg = _outcome(lambda: am.Dataset.from_csv(files, cache_dir=str(tmp_path / "c")))
    if ds is None:
        assert "b.csv" in msg
        assert "'y'" in msg
    else:
        assert ds.to_list() == [{"x": 1, "y": None}, {"x": 2, "y": "z"}]


def test_a_later_file_missing_a_column_gets_nulls(tmp_path: Any) -> None:
    a = _jsonl(tmp_path / "a.jsonl", [{"a": 1, "b": "x"}])
    b = _jsonl(tmp_path / "b.jsonl", [{"a": 2}])
    ds = am.Dataset.from_json([a, b], cache_dir=str(tmp_path / "c"))
    assert ds.to_list() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]


def test_a_json_key_first_seen_after_the_first_line_is_kept(tmp_path: Any) -> None:
    rows: list[dict[str, Any]] = [{"a": i} for i in range(30000)]
    rows += [{"a": i, "late": "x"} for i in range(30000, 30010)]
    ds = am.Dataset.from_json(_jsonl(tmp_path / "f.jsonl", rows), cache_dir=str(tmp_path / "c"))
    assert "late" in ds.column_names
    assert ds[-1] == {"a": 30009, "late": "x"}
    assert ds[0] == {"a": 0, "late": None}


def test_a_json_key_first_seen_in_a_later_block_is_kept_or_refused_by_line(
    tmp_path: Any,
) -> None:
    rows: list[dict[str, Any]] = [{"a": i} for i in range(BLOCK)]
    rows.append({"a": 0, "late": "x"})
    path = _jsonl(tmp_path / "f.jsonl", rows)
    ds, msg = _outcome(lambda: am.Dataset.from_json(path, cache_dir=str(tmp_path / "c")))
    if ds is None:
        assert "f.jsonl" in msg
        assert "'late'" in msg
        assert str(BLOCK + 1) in msg
    else:
        assert ds[-1] == {"a": 0, "late": "x"}


def test_a_fraction_in_a_later_json_block_is_not_truncated(tmp_path: Any) -> None:
    rows: list[dict[str, Any]] = [{"x": 1}] * BLOCK + [{"x": 2.5}]
    path = _jsonl(tmp_path / "f.jsonl", rows)
    ds, msg = _outcome(lambda: am.Dataset.from_json(path, cache_dir=str(tmp_path / "c")))
    if ds is None:
        assert "'x'" in msg
        assert str(BLOCK + 1) in msg
    else:
        assert ds[-1] == {"x": 2.5}


def test_later_csv_files_are_read_with_the_first_files_types(tmp_path: Any) -> None:
    (tmp_path / "a.csv").write_text("code,n\nA12,1\n")
    (tmp_path / "b.csv").write_text("code,n\n007,2\n")
    files = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    ds = am.Dataset.from_csv(files, cache_dir=str(tmp_path / "c"))
    assert ds.to_list() == [{"code": "A12", "n": 1}, {"code": "007", "n": 2}]
