"""Bad functions and arguments raise clear errors naming the culprit; nothing is left behind."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import arrowmix as am
from arrowmix._storage import atomic
from arrowmix.exceptions import FingerprintError, SchemaMismatchError


@pytest.fixture
def ds():
    return am.Dataset.from_dict({"text": ["a", "bb", "ccc", "dddd", "eeeee"], "n": [1, 2, 3, 4, 5]})


def _files(ds):
    return sorted(n for n in os.listdir(ds.cache_dir) if not n.endswith(".lock"))


def unequal(batch):
    return {"a": batch["n"], "b": batch["n"][:1]}


def test_unequal_column_lengths(ds):
    with pytest.raises(ValueError, match=r"unequal lengths \{'a': 2, 'b': 1\}.*rows 0\.\.1") as e:
        ds.map(unequal, batched=True, batch_size=2)
    assert "unequal" in str(e.value)
    assert _files(ds) == []


def test_length_change_with_kept_columns_names_them_and_the_fix(ds):
    def dup(batch):
        return {"x": batch["n"] * 2}

    with pytest.raises(ValueError, match=r"dup returned 4 rows for the 2 input rows 0\.\.1") as e:
        ds.map(dup, batched=True, batch_size=2)
    assert "remove_columns=['text', 'n']" in str(e.value)


def test_non_dict_return_names_function_and_type(ds):
    def bad(row):
        return [row["n"]]

    with pytest.raises(TypeError, match=r"bad returned a list for row 0"):
        ds.map(bad)
    with pytest.raises(TypeError, match=r"returned a int for the batch of rows 0\.\.4"):
        ds.map(lambda b: 3, batched=True)


def test_batched_scalar_column_value(ds):
    with pytest.raises(TypeError, match=r"Column 'x'.*is a int"):
        ds.map(lambda b: {"x": 1}, batched=True)


def test_rows_with_different_columns_fill_nulls_batches_raise(ds):
    out = ds.map(lambda r: {"a": 1} if r["n"] == 1 else {"a": 1, "b": 2})
    assert out["b"] == [None, 2, 2, 2, 2] and out["a"] == [1] * 5
    out = ds.map(lambda r: {} if r["n"] % 2 else {"n": -r["n"], "b": r["text"]})
    assert out["n"] == [1, -2, 3, -4, 5]  # an input column not returned keeps its value
    assert out["b"] == [None, "bb", None, "dddd", None]
    with pytest.raises(SchemaMismatchError, match=r"returned columns \['b'\] for rows 2\.\.3"):
        ds.map(lambda b: {"a" if b["n"][0] == 1 else "b": b["n"]}, batched=True, batch_size=2)


def test_uncastable_later_batch_names_column_and_both_types(ds):
    def fn(batch):
        return {"x": batch["n"] if batch["n"][0] < 3 else ["s"] * len(batch["n"])}

    with pytest.raises(
        SchemaMismatchError,
        match=r"Column 'x' returned by .*fn for rows 2\.\.3 \(row 2 is 's'\) is string but int64",
    ):
        ds.map(fn, batched=True, batch_size=2)
    with pytest.raises(SchemaMismatchError, match=r"Column 'x'.*cannot be converted to Arrow"):
        ds.map(lambda r: {"x": r["n"] if r["n"] < 3 else "s"})


@pytest.mark.parametrize("arg", ["input_columns", "remove_columns"])
def test_unknown_columns_list_available(ds, arg):
    with pytest.raises(KeyError, match=r"\['nope'\].*available columns: \['text', 'n'\]"):
        ds.map(lambda r: None, **{arg: ["nope"]})
    if arg == "input_columns":
        with pytest.raises(KeyError, match="nope"):
            ds.filter(lambda r: True, input_columns="nope")


def test_function_exception_keeps_type_and_gets_row_note(ds):
    def boom(row):
        if row["n"] == 3:
            raise ZeroDivisionError("inner")
        return {}

    with pytest.raises(ZeroDivisionError, match="inner") as e:
        ds.map(boom)
    assert any("boom" in n and "row 2" in n for n in e.value.__notes__)
    with pytest.raises(ZeroDivisionError) as e:
        ds.map(lambda b: 1 / 0, batched=True, batch_size=2)
    assert any("batch of rows 0..1" in n for n in e.value.__notes__)
    with pytest.raises(KeyError) as e:
        ds.filter(lambda r: r["missing"])
    assert any("row 0" in n for n in e.value.__notes__)
    assert _files(ds) == []


def test_bad_arguments(ds):
    with pytest.raises(TypeError, match="callable"):
        ds.map(3)
    with pytest.raises(ValueError, match="num_proc"):
        ds.map(lambda r: None, num_proc=0)
    with pytest.raises(TypeError, match="batch_size"):
        ds.map(lambda r: None, batched=True, batch_size="10")
    with pytest.raises(FingerprintError, match="a/b"):
        ds.map(lambda r: None, new_fingerprint="a/b")
    with pytest.raises(FingerprintError, match="at most 64"):
        ds.filter(lambda r: True, new_fingerprint="x" * 65)


def test_filter_errors(ds):
    with pytest.raises(ValueError, match=r"returned 1 values for the 2 input rows"):
        ds.filter(lambda b: [True], batched=True, batch_size=2)
    with pytest.raises(TypeError, match=r"returned a dict for the batch"):
        ds.filter(lambda b: {"keep": True}, batched=True)
    with pytest.raises(TypeError, match=r"returned a ndarray for row 0, which is not a boolean"):
        ds.filter(lambda r: np.array([1, 2]))


class _FullDisk:
    """A file whose writes fail with ENOSPC after a few bytes, like a full disk."""

    def __init__(self, path, mode):
        self._f = open(path, mode)  # noqa: SIM115 - closed by close()
        self.closed = False

    def write(self, data):
        if self._f.tell() + len(data) > 100:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._f.write(data)

    def tell(self):
        return self._f.tell()

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()
        self.closed = True

    def writable(self):
        return True

    def seekable(self):
        return False


def test_full_disk_leaves_no_partial_file(ds, monkeypatch):
    class _Pa:
        def __getattr__(self, name):
            import pyarrow

            return _FullDisk if name == "OSFile" else getattr(pyarrow, name)

    monkeypatch.setattr(atomic, "pa", _Pa())
    with pytest.raises(OSError, match="No space left") as e:
        ds.map(lambda r: {"big": "x" * 100})
    assert e.value.errno == errno.ENOSPC
    assert _files(ds) == []
    monkeypatch.undo()
    assert ds.map(lambda r: {"big": "x" * 100})["big"][0] == "x" * 100


def test_keyboard_interrupt_mid_segment_leaves_nothing(ds, monkeypatch):
    from arrowmix._dataset.mapping import compute as runner

    monkeypatch.setattr(runner, "_OUT_ROWS", 1)  # the segment file is open when we interrupt
    seen = []

    def interrupted(batch):
        seen.append(batch["n"][0])
        if len(seen) == 2:
            assert any(n.endswith(".partial") for n in os.listdir(ds.cache_dir))
            raise KeyboardInterrupt
        return {"x": batch["n"]}

    with pytest.raises(KeyboardInterrupt):
        ds.map(interrupted, batched=True, batch_size=2)
    assert _files(ds) == []
