"""Output types of map: never a silent value change; errors name the column, types and row."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import SchemaMismatchError


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"n": list(range(8))})


@pytest.mark.parametrize(
    ("first", "later", "types"),
    [
        (1, 10.5, "double but int64"),
        (True, 5, "int64 but bool"),
        ("s", 10, "int64 but string"),
        (1.5, "x", "string but double"),
    ],
)
def test_later_batch_that_would_lose_values_raises(ds, first, later, types):
    def fn(batch):
        return {"v": [first if n < 4 else later for n in batch["n"]]}

    with pytest.raises(SchemaMismatchError) as e:
        ds.map(fn, batched=True, batch_size=4)
    msg = str(e.value)
    assert "Column 'v'" in msg and types in msg and f"row 4 is {later!r}" in msg


def test_later_batch_cast_when_no_value_changes(ds):
    def fn(batch):
        return {"v": [n if n < 4 else float(n) for n in batch["n"]], "w": [True] * len(batch["n"])}

    out = ds.map(fn, batched=True, batch_size=4)
    assert out.schema.field("v").type == pa.int64() and out["v"] == list(range(8))
    ints_then_bools = ds.map(
        lambda b: {"v": [1] * 4 if b["n"][0] == 0 else [True, False] * 2},
        batched=True,
        batch_size=4,
    )
    assert ints_then_bools["v"] == [1, 1, 1, 1, 1, 0, 1, 0]


def test_rows_with_mixed_types_in_one_block(ds):
    with pytest.raises(SchemaMismatchError, match="Column 'v'"):
        ds.map(lambda r: {"v": 1 if r["n"] < 3 else "s"})
    assert ds.map(lambda r: {"v": 1 if r["n"] < 3 else 2.5})["v"][:4] == [1.0, 1.0, 1.0, 2.5]


def test_later_segment_that_would_lose_values_raises(small_segments):
    ds = am.Dataset.from_dict({"n": list(range(30))})
    with pytest.raises(SchemaMismatchError) as e:
        ds.map(lambda r: {"v": r["n"] if r["n"] < 20 else r["n"] + 0.5})
    assert "Column 'v'" in str(e.value) and "double" in str(e.value)
    assert "20.5" in str(e.value)  # the first value that would change


def test_non_string_keys_name_the_key_and_row(ds):
    with pytest.raises(TypeError, match=r"returned the key 1 \(int\) for row 0"):
        ds.map(lambda r: {1: r["n"]})
    with pytest.raises(TypeError, match=r"key \('a', 1\) \(tuple\) for the batch of rows 0\.\.7"):
        ds.map(lambda b: {("a", 1): b["n"]}, batched=True)


def test_big_integers(ds):
    out = ds.map(lambda r: {"u": 2**63 + r["n"]})
    assert out.schema.field("u").type == pa.uint64() and out["u"][1] == 2**63 + 1
    with pytest.raises(SchemaMismatchError, match=r"Column 'big'.*at row 3.*64 bits"):
        ds.map(lambda r: {"big": 2**70 if r["n"] == 3 else 1})
    with pytest.raises(SchemaMismatchError, match=r"Column 'neg'.*at row 2"):
        ds.map(lambda b: {"neg": [-(2**64) if n == 2 else n for n in b["n"]]}, batched=True)


def test_lone_surrogate_names_column_and_row(ds):
    with pytest.raises(SchemaMismatchError, match=r"Column 's'.*lone surrogate at row 5"):
        ds.map(lambda r: {"s": chr(0xD800) if r["n"] == 5 else "ok"})


def test_a_column_pyarrow_splits_is_stored_as_large_string(ds):
    # pyarrow returns a ChunkedArray for over 2 GiB of strings in one batch; returning one
    # takes the same path without allocating gigabytes.
    def fn(batch):
        n = len(batch["n"])
        return {"s": pa.chunked_array([["x"] * (n // 2), ["y"] * (n - n // 2)])}

    out = ds.map(fn, batched=True)
    assert out.schema.field("s").type == pa.large_string()
    assert out["s"] == ["x"] * 4 + ["y"] * 4


def test_numbers_convert_like_pyarrow():
    from arrowmix._dataset.mapping.arrays import as_array

    for values in ([1, 2, 3], [1.5, 2, None], [True, False], [1, 2**63], [2**53 + 1, 0.5]):
        try:
            expected = pa.array(values)
        except (OverflowError, pa.ArrowInvalid):
            continue
        got = as_array("f", "c", values)
        assert got.type == expected.type and got.equals(expected), values


def test_first_map_of_numbers_does_not_import_pandas(tmp_path):
    # pyarrow imports pandas on its first pa.array of a list: 0.2 s of a first map.
    import subprocess
    import sys

    am.write_chunks(({"n": i} for i in range(50)), tmp_path / "c")
    code = (
        "import sys, arrowmix as am\n"
        f"ds = am.Dataset.from_chunks({str(tmp_path / 'c')!r})\n"
        "ds.map(lambda b: {'m': [n * 2 for n in b['n']], 'f': [n / 2 for n in b['n']]},"
        " batched=True)\n"
        "ds.filter(lambda r: r['n'] % 2 == 0)\n"
        "print('pandas' in sys.modules)\n"
    )
    env = {**__import__("os").environ, "ARROWMIX_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
