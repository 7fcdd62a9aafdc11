"""``from_csv`` and ``from_json`` give the values and types HF ``datasets`` gives, file by file.

Each test reads the same file with both libraries (HF's own CSV builder reads through
``pandas.read_csv``, its JSON builder through ``pyarrow.json``) and compares every value and
the Arrow type of every column.
"""

from __future__ import annotations

import csv
import datetime
import json
import random
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.inputs import ingest
from arrowmix._storage import readers

datasets = pytest.importorskip("datasets")


def _hf(kind: str, path: Any, tmp_path: Any) -> Any:
    return getattr(datasets.Dataset, f"from_{kind}")(str(path), cache_dir=str(tmp_path / "hf"))


def _ours(kind: str, path: Any, tmp_path: Any) -> am.Dataset:
    return getattr(am.Dataset, f"from_{kind}")(str(path), cache_dir=str(tmp_path / "am"))


def _same(kind: str, path: Any, tmp_path: Any) -> tuple[Any, am.Dataset]:
    hf, ours = _hf(kind, path, tmp_path), _ours(kind, path, tmp_path)
    assert ours.schema.remove_metadata() == hf.data.schema.remove_metadata()
    assert ours.to_dict() == hf.to_dict()
    return hf, ours


def test_csv_missing_and_na_cells_are_none_as_in_hf(tmp_path: Any) -> None:
    path = tmp_path / "a.csv"
    path.write_text(
        "id,text,n,day,f\n"
        "1,hello,3,2020-01-01,1.5\n"
        "2,,NA,2020-01-02,\n"
        "3,NA,5,2021-03-04,2\n"
        "4,null,,x,3\n"
        "5,None,7,,\n"
        "6,n/a,1,2020-01-01,nan\n"
        '7,"",2,2020-01-01,NaN\n'
        "8,<NA>,3,2020-01-01,-nan\n"
        "9,#N/A,3,2020-01-01,1.0\n"
        "10,NULL,3,2020-01-01,1.0\n"
        "11,True,3,2020-01-01,1.0\n"
    )
    _, ours = _same("csv", path, tmp_path)
    assert ours["text"] == ["hello"] + [None] * 9 + ["True"]
    assert ours.schema.field("n").type == pa.float64()  # an int column with a missing cell
    assert ours["n"][:3] == [3.0, None, 5.0]
    assert ours.schema.field("day").type == pa.large_string()  # dates stay text
    assert ours["day"][:2] == ["2020-01-01", "2020-01-02"]


def test_csv_cells_of_every_kind_are_typed_as_in_hf(tmp_path: Any) -> None:
    pools = {
        "int": ["5", " 5", "5 ", "+5", "-5", "007", "0", "123456789012"],
        "float": ["1.5", " 1.5", ".5", "5.", "1e3", "-2.25", "inf", "-inf", "3"],
        "na": ["", "NA", "null", "None", "NaN", "n/a", "#N/A", "<NA>", "NULL", "nan", "N/A"],
        "bool": ["True", "False", "true", "FALSE"],
        "str": ["hello", " lead", "2020-01-01", "2020-01-01 10:00:00", "10:00", "x,y", "0x10"],
    }
    mixes = [
        ("int",),
        ("int", "na"),
        ("float",),
        ("float", "na"),
        ("bool",),
        ("bool", "na"),
        ("str",),
        ("str", "na"),
        ("int", "float"),
        ("int", "str"),
        ("na",),
        ("int", "bool"),
        ("str", "int", "na", "float", "bool"),
    ]
    rng = random.Random(0)
    for seed in range(3):
        path = tmp_path / f"mix{seed}.csv"
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["_".join(m) + str(i) for i, m in enumerate(mixes)])
            for _ in range(5 + 20 * seed):
                w.writerow([rng.choice(pools[rng.choice(m)]) for m in mixes])
        _same("csv", path, tmp_path)


def test_csv_types_come_from_the_first_ten_thousand_rows_as_in_hf(tmp_path: Any) -> None:
    path = tmp_path / "big.csv"
    rows = [f"{i},{i}.5,x{i},True" for i in range(10005)] + ["7,,,", "8,3,9,False"]
    path.write_text("a,b,c,d\n" + "\n".join(rows) + "\n")
    _, ours = _same("csv", path, tmp_path)
    # `a` has no missing cell in its first 10,000 rows: int64, its later missing cell None
    assert ours.schema.field("a").type == pa.int64()
    assert ours[-2] == {"a": 7, "b": None, "c": None, "d": None}


def test_csv_duplicate_and_empty_header_names_as_in_hf(tmp_path: Any) -> None:
    path = tmp_path / "h.csv"
    path.write_text("a,a,,b\n1,2,3,4\n5,6,7,8\n")
    _, ours = _same("csv", path, tmp_path)
    assert ours.column_names == ["a", "a.1", "Unnamed: 2", "b"]


def test_filter_not_none_on_a_csv_keeps_what_hf_keeps(tmp_path: Any) -> None:
    rng = random.Random(1)
    path = tmp_path / "reviews.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "stars", "date"])
        for i in range(600):
            text = rng.choice(["great", "bad", "", "NA", "null", "so-so", "None"])
            stars = rng.choice(["1", "2", "3", "", "5"])
            w.writerow([i, text, stars, f"2023-01-{1 + i % 28:02d}"])
    hf, ours = _same("csv", path, tmp_path)
    kept_hf = hf.filter(lambda ex: ex["text"] is not None)
    kept = ours.filter(lambda ex: ex["text"] is not None)
    assert kept.num_rows == kept_hf.num_rows < 600
    assert kept["id"] == kept_hf["id"]


def test_a_later_csv_text_column_keeps_its_digits(tmp_path: Any) -> None:
    # The documented departure: HF reads a later chunk of digits as integers and casts
    # them back to text ("007" -> "7"); arrowmix reads it as the text column it is.
    path = tmp_path / "codes.csv"
    path.write_text("code\n" + "\n".join(f"A{i}" for i in range(10000)) + "\n007\n")
    assert _hf("csv", path, tmp_path)["code"][-1] == "7"
    assert _ours("csv", path, tmp_path)["code"][-1] == "007"


def test_a_cell_its_column_cannot_hold_names_column_row_and_value(tmp_path: Any) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("n\n" + "1\n" * 10000 + "2.5\n")
    with pytest.raises(am.exceptions.InputFormatError, match=r"'n'.*10001.*'2\.5'"):
        _ours("csv", path, tmp_path)


def test_a_rerun_does_not_serve_a_cached_parse_of_an_older_reader(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.csv"
    path.write_text("text\nNA\nhi\n")

    def old_reader(p: str, so: Any, types: Any = None) -> Any:  # what version 1 gave
        yield pa.record_batch({"text": pa.array(["NA", "hi"])})

    with monkeypatch.context() as m:
        m.setattr(ingest, "_FORMAT_VERSIONS", {})
        m.setitem(readers.FORMATS, "csv", old_reader)
        m.setattr(readers, "read_csv", old_reader)
        assert _ours("csv", path, tmp_path)["text"] == ["NA", "hi"]  # cached by the old key
    assert _ours("csv", path, tmp_path)["text"] == [None, "hi"]


def _jsonl(path: Any, rows: list[dict[str, Any]]) -> Any:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_json_date_strings_are_timestamps_as_in_hf(tmp_path: Any) -> None:
    rows = [
        {
            "day": "2020-01-01",
            "at": "2020-01-01T10:00:00",
            "space": "2020-01-01 10:00:00",
            "zulu": "2020-01-01T10:00:00Z",
            "offset": "2020-01-01T10:00:00+02:00",
            "millis": "2020-01-01T10:00:00.123",
            "mixed": "2020-01-01",
            "clock": "10:00:00",
            "n": 1,
            "nested": {"when": "2021-05-06", "tags": ["a"]},
        },
        {
            "day": "2021-02-03",
            "at": "2021-01-01T10:00:00",
            "space": "2020-01-01 10:00:00",
            "zulu": "2020-01-01T10:00:00Z",
            "offset": "2020-01-01T10:00:00+02:00",
            "millis": "2020-01-01T10:00:00.5",
            "mixed": "hello",
            "clock": "11:00",
            "n": 2.5,
            "nested": {"when": "2021-05-07", "tags": []},
        },
    ]
    _, ours = _same("json", _jsonl(tmp_path / "d.jsonl", rows), tmp_path)
    assert ours.schema.field("day").type == pa.timestamp("s")
    assert ours[0]["day"] == datetime.datetime(2020, 1, 1)
    assert ours[0]["offset"] == datetime.datetime(2020, 1, 1, 8, 0)  # UTC, as in HF
    assert ours["mixed"] == ["2020-01-01", "hello"]


def test_a_json_key_first_seen_after_line_65536_fills_earlier_rows(tmp_path: Any) -> None:
    rows: list[dict[str, Any]] = [{"a": i} for i in range(70000)]
    rows.append({"a": 0, "late": "x"})
    _, ours = _same("json", _jsonl(tmp_path / "late.jsonl", rows), tmp_path)
    assert ours[0] == {"a": 0, "late": None}
    assert ours[-1] == {"a": 0, "late": "x"}


def test_the_na_strings_are_pandas_defaults() -> None:
    parsers = pytest.importorskip("pandas._libs.parsers")
    from arrowmix._storage.csv_values import NA_VALUES

    assert sorted(NA_VALUES) == sorted(parsers.STR_NA_VALUES)


MIXED_JSON = {
    "scalars": [{"a": 1}, {"a": "x"}, {"a": None}],
    "dict_keys": [{"m": {"x": 1}}, {"m": {"y": "z"}}],
    "struct_field": [{"s": {"k": 1, "v": 2}}, {"s": {"k": 2, "v": "two"}}],
    "list_items": [{"l": [1, "a"]}, {"l": [2]}],
    "chat": [
        {"c": [{"role": "user", "content": "hi"}]},
        {"c": [{"role": "assistant", "content": [{"type": "text"}]}]},
    ],
    "bool_int": [{"a": True}, {"a": 1}],
    "str_list": [{"a": "x"}, {"a": ["y"]}],
    "empty_dict": [{"m": {"x": 1}}, {"m": {}}],
    "deep": [{"a": {"b": [{"c": 1}, {"c": "x"}]}}],
}


@pytest.mark.parametrize("case", sorted(MIXED_JSON))
def test_json_values_of_mixed_types_are_json_as_in_hf(tmp_path: Any, case: str) -> None:
    path = _jsonl(tmp_path / f"{case}.jsonl", MIXED_JSON[case])
    hf, ours = _same("json", path, tmp_path)
    assert ours.to_list() == MIXED_JSON[case]
    assert ours.with_format("arrow")[:].to_pydict() == hf.data.to_pydict()  # the stored text


def test_csv_features_are_the_types_the_cells_are_read_as_in_hf(tmp_path: Any) -> None:
    path = tmp_path / "codes.csv"
    path.write_text("code,n,label\n007,1,pos\n008,2,neg\n")
    features = datasets.Features(
        {
            "code": datasets.Value("string"),
            "n": datasets.Value("int32"),
            "label": datasets.ClassLabel(names=["neg", "pos"]),
        }
    )
    hf = datasets.Dataset.from_csv(str(path), features=features, cache_dir=str(tmp_path / "hf"))
    ours = am.Dataset.from_csv(str(path), features=features, cache_dir=str(tmp_path / "am"))
    assert ours.to_dict() == hf.to_dict() == {"code": ["007", "008"], "n": [1, 2], "label": [1, 0]}
    assert ours.schema.remove_metadata() == hf.data.schema.remove_metadata()
    assert ours.features == hf.features
    plain = am.Dataset.from_csv(str(path), cache_dir=str(tmp_path / "am"))
    assert plain["code"] == [7, 8]  # without features: pandas' rule, as HF


def test_json_rows_the_new_reader_leaves_unchanged_keep_their_fingerprint(tmp_path: Any) -> None:
    # The fingerprint of ingested rows is their content's: the new reader's version in the
    # cache key re-reads old caches but moves no pin where the rows are the same.
    path = _jsonl(tmp_path / "simple.jsonl", [{"a": 1, "t": "x"}, {"a": 2, "t": "y"}])
    assert _ours("json", path, tmp_path).fingerprint == "f0d0dac324c5afc9"  # as before


def test_text_modes_give_hfs_rows_or_differ_as_documented(tmp_path: Any) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("first line\nsecond\n\nnext paragraph\nmore\n\nlast")
    for mode in ("line", "paragraph", "document"):
        hf = datasets.Dataset.from_text(str(plain), sample_by=mode, cache_dir=str(tmp_path / "hf"))
        ours = am.Dataset.from_text(str(plain), sample_by=mode, cache_dir=str(tmp_path / "am"))
        assert ours["text"] == list(hf["text"]), mode
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"a\r\nb\rc\n\n\n  \nd\n")
    read = {
        mode: (
            list(
                datasets.Dataset.from_text(
                    str(odd), sample_by=mode, cache_dir=str(tmp_path / "hf")
                )["text"]
            ),
            am.Dataset.from_text(str(odd), sample_by=mode, cache_dir=str(tmp_path / "am"))["text"],
        )
        for mode in ("line", "paragraph", "document")
    }
    # docs/migrating-from-datasets.md, "What changes, and why": the three rules
    assert read["line"] == (["a", "b", "c", "", "", "  ", "d"], ["a", "b\rc", "", "", "  ", "d"])
    assert read["paragraph"] == (["a\nb\nc", "\n  \nd\n"], ["a\nb\rc", "d"])
    assert read["document"] == (["a\nb\nc\n\n\n  \nd\n"], ["a\r\nb\rc\n\n\n  \nd\n"])


def test_quoted_csv_values_may_span_lines_in_a_large_file(tmp_path: Any) -> None:
    # pyarrow cuts a file into blocks at newlines unless told values hold some: a quoted
    # value across a block boundary then failed ("got out of sync with chunker").
    path = tmp_path / "notes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        for i in range(60000):
            w.writerow([i, f"line one\nline two, {'x' * (i % 50)}" if i % 3 == 0 else f"n{i}"])
    _, ours = _same("csv", path, tmp_path)
    assert ours[0]["text"] == "line one\nline two, "


@pytest.mark.parametrize("second", ["", "z\n"])
def test_a_bad_csv_skipped_by_an_older_reader_raises_instead_of_its_cache(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    """Version 2 skipped an empty CSV (or a header-only one of other columns) and cached the
    rest; a rerun must raise as today's reader does, not serve that cache."""
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.csv").write_text(second)
    files = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    real = readers.read_csv

    def old_reader(p: str, so: Any, types: Any = None, **kw: Any) -> Any:  # what version 2 gave
        if p.endswith("a.csv"):
            yield from real(p, so, types, **kw)

    def load() -> am.Dataset:
        return am.Dataset.from_csv(files, cache_dir=str(tmp_path / "am"))

    with monkeypatch.context() as m:
        m.setattr(ingest, "_FORMAT_VERSIONS", {"csv": 2, "json": 2})
        m.setitem(readers.FORMATS, "csv", old_reader)
        m.setattr(readers, "read_csv", old_reader)
        assert load()["x"] == [1]  # cached under version 2's key
    error = am.exceptions.InputFormatError if not second else am.exceptions.SchemaMismatchError
    with pytest.raises(error, match=r"b\.csv"):
        load()
