# ruff: noqa: F811  (the fixture hf_load is imported)
"""CSV rows with another number of fields than the header: HF ``datasets`` 5.2's values.

HF reads CSV with pandas' defaults: a short row's missing fields are missing values, a long
row is an error, and a first row one field longer than the header makes the first field of
every row an (implicit, dropped) index. Compared with HF offline on the same files.
"""

from __future__ import annotations

import pytest

import arrowmix as am
from arrowmix.exceptions import InputFormatError

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import hf_load, same  # noqa: E402, F401

CASES = {
    "short_row": "a,b,c\n1,x,2.5\n2,y\n3,z,1.0\n",
    "all_short": "a,b,c\n1,x\n2,y\n",
    "short_quoted_newline_and_blank_line": 'a,b,c\n1,"q\nr",2.5\n2\n\n3,z,1.0\n',
    "implicit_index": "a,b\n1,x,3\n2,y,4\n",
    "implicit_index_then_short": "a,b\n1,x,3\n2,y\n",
    "one_field": "a,b,c\n7\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rows_of_another_width_give_hf_values(tmp_path, hf_load, name):
    path = tmp_path / f"{name}.csv"
    path.write_text(CASES[name])
    ours = am.load_dataset("csv", data_files=str(path), split="train")
    same(ours, hf_load("csv", data_files=str(path), split="train"))


@pytest.mark.slow
def test_short_row_after_the_first_blocks_keeps_the_rows_and_types(tmp_path, hf_load):
    """A short row far into the file (after rows already read) gives HF's rows and types."""
    # 2.6 MB: pyarrow reads it in blocks, the first ones given before the short row is seen
    rows = [f"{i},{'w' * 60}{i},{i / 4}" for i in range(40_000)]
    rows[35_000] = "35000,w35000"
    path = tmp_path / "late.csv"
    path.write_text("id,word,score\n" + "\n".join(rows) + "\n")
    ours = am.load_dataset("csv", data_files=str(path), split="train")
    theirs = hf_load("csv", data_files=str(path), split="train")
    assert ours[35_000] == theirs[35_000] == {"id": 35000, "word": "w35000", "score": None}
    same(ours, theirs)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a,b\n1,x\n2,y,3\n", r"long\.csv:3: expected 2 fields as in the header, got 3"),
        ("a,b\n1,x,3\n2,y,4,5\n", r"long\.csv:3: expected 3 fields as in the first row, got 4"),
    ],
)
def test_a_row_longer_than_the_header_raises_naming_its_line(tmp_path, hf_load, text, where):
    path = tmp_path / "long.csv"
    path.write_text(text)
    with pytest.raises(hf.exceptions.DatasetGenerationError):  # pandas' ParserError inside
        hf_load("csv", data_files=str(path), split="train")
    with pytest.raises(InputFormatError, match=where):
        am.load_dataset("csv", data_files=str(path), split="train")
    with pytest.raises(InputFormatError, match=where):
        am.Dataset.from_csv(str(path))
