"""CSV rows with another number of fields than the header, as HF ``datasets`` reads them.

HF's CSV builder reads with ``pandas.read_csv``, whose defaults give:

- a row with fewer fields than the header: the missing fields are missing values (``None``);
- a row with more fields: an error naming the line;
- a first data row with exactly one field more than the header: the first field of every
  row is the (implicit) index, which HF drops; the other fields are the columns.

pyarrow's CSV reader refuses any row of another width, so such a file is re-read here with
Python's ``csv`` module and written again, padded, as well-formed CSV text in memory, which
pyarrow then parses as it parses any file (values and types unchanged: an absent field is
an empty cell, a missing value for pandas and so for HF). Only files with such rows take
this path (their text is held in memory once).
"""

from __future__ import annotations

import csv
import io
import warnings
from typing import Any

from arrowmix.exceptions import DroppedDataWarning, InputFormatError

__all__ = ["is_width_error", "padded_csv"]


def is_width_error(exc: Exception) -> bool:
    """Whether pyarrow's CSV error ``exc`` is about a row's number of fields."""
    text = str(exc)
    return "Expected" in text and "columns, got" in text


def padded_csv(f: Any, path: str, delimiter: str, on_bad_lines: str = "error") -> bytes:
    """The CSV text of ``f`` (open as text, ``newline=""``) with every row the header's width.

    ``on_bad_lines`` (pandas'): a row with more fields raises (``"error"``), or is dropped
    (``"skip"``; ``"warn"`` also warns with a ``DroppedDataWarning`` naming its line).

    Raises:
        InputFormatError: a row has more fields than the header (or than the header and an
            implicit index), naming the file and the line.
    """
    rows = csv.reader(f, delimiter=delimiter)
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    try:
        header = next(rows, None)
        if header is None:
            return b""
        writer.writerow(header)
        width = len(header)
        indexed: bool | None = None
        for row in rows:
            if not row:  # a blank line: skipped, as pandas and pyarrow skip it
                continue
            if indexed is None:
                indexed = len(row) == width + 1
            if indexed:
                row = row[1:]
            if len(row) > width:
                expected = width + 1 if indexed else width
                if on_bad_lines == "warn":
                    warnings.warn(
                        f"{path}:{rows.line_num}: a row of {len(row) + bool(indexed)} fields "
                        f"(expected {expected}) is dropped, as `on_bad_lines='warn'` asks",
                        DroppedDataWarning,
                        stacklevel=2,
                    )
                if on_bad_lines != "error":
                    continue
                raise InputFormatError(
                    f"{path}:{rows.line_num}: expected {expected} fields as in the "
                    f"{'first row' if indexed else 'header'}, got {len(row) + bool(indexed)} "
                    f"(a row may have fewer fields, whose values are then missing, but not "
                    f"more; HF raises too): {row!r:.120}"
                )
            writer.writerow(row + [""] * (width - len(row)))
    except (csv.Error, UnicodeDecodeError) as err:
        raise InputFormatError(f"{path}:{rows.line_num}: {err}") from err
    return out.getvalue().encode("utf-8")
