"""The JSON Lines reader's Arrow fast path gives exactly the line-by-line reader's values."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from arrowmix._storage import json_fast, readers
from arrowmix.exceptions import InputFormatError


def read(path, slow, monkeypatch):
    if slow:
        monkeypatch.setattr(json_fast, "parse_block", lambda block, schema: None)
    table = pa.Table.from_batches(list(readers.read_batches(str(path), "json")))
    monkeypatch.undo()
    return table


ROWS = [
    {
        "id": i,
        "big": 2**62 + i,
        "x": i / 7,
        "mixed": i if i % 2 else i + 0.5,
        "text": f'é{i}\u2028 "quoted" \\ {"z" * (i % 50)}',
        "tags": [f"t{j}" for j in range(i % 4)],
        "nested": {"a": i, "b": [float(i), None], "c": {"d": str(i)}},
        "maybe": None if i % 3 else i,
        "empty": [],
        "flag": bool(i % 2),
    }
    for i in range(3000)
]


@pytest.mark.parametrize("blank_lines", [False, True])
def test_fast_path_equals_line_reader(tmp_path, monkeypatch, blank_lines):
    path = tmp_path / "rows.jsonl"
    sep = "\n\n" if blank_lines else "\n"
    path.write_text(sep.join(json.dumps(r, ensure_ascii=False) for r in ROWS) + "\n")
    monkeypatch.setattr(readers, "_BLOCK", 64 * 1024)  # many blocks
    fast, slow = read(path, False, monkeypatch), read(path, True, monkeypatch)
    assert fast.schema == slow.schema
    assert fast.to_pylist() == slow.to_pylist()
    assert fast.num_rows == len(ROWS)


def test_date_like_strings_stay_strings(tmp_path, monkeypatch):
    path = tmp_path / "dates.jsonl"
    path.write_text("".join(json.dumps({"day": f"2024-01-{d:02d}"}) + "\n" for d in range(1, 9)))
    table = read(path, False, monkeypatch)
    assert table.schema.field("day").type == pa.string()
    assert table["day"][0].as_py() == "2024-01-01"


def test_a_key_first_seen_after_the_first_rows_still_names_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(json_fast, "_ROWS", 10)
    monkeypatch.setattr(readers, "_ROWS", 10)
    path = tmp_path / "late.jsonl"
    rows = [{"a": i} for i in range(15)] + [{"a": 15, "late": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputFormatError, match=r"late.*known keys: \['a'\]"):
        list(readers.read_batches(str(path), "json"))


def test_bad_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": 2\n{"a": 3}\n')
    with pytest.raises(InputFormatError, match=r"bad\.jsonl:2: invalid JSON"):
        list(readers.read_batches(str(path), "json"))
