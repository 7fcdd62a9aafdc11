"""CSV cells typed as HF ``datasets`` types them (its CSV builder reads with ``pandas.read_csv``).

pyarrow parses the file (streamed, multithreaded) with every column as text; the rules of
pandas' default ``read_csv`` then give the values, without pandas:

- the missing cells are the empty ones and pandas' NA strings (``NA``, ``null``, ``None``,
  ``NaN``, ``n/a``, ``#N/A``, ``<NA>``..., :data:`NA_VALUES`), quoted or not, in every column;
- a column is typed from the file's first :data:`INFER_ROWS` rows (pandas reads in chunks of
  that many rows and HF's writer casts later chunks to the first one's types): integers
  (``int64``, surrounding spaces and a ``+`` allowed) become ``float64`` when a cell is missing,
  decimals ``float64``, ``True``/``False`` cells ``bool``, an all-missing column ``float64``,
  anything else (dates included) stays text, as ``large_string``;
- duplicate header names get pandas' ``.1``, ``.2`` suffixes, an empty one ``Unnamed: i``.

Later rows, and later files of a corpus, are parsed as the types already fixed (an integer
type, fixed or given by ``features``, also takes whole numbers written ``1.0`` or ``1e3``). The one
departure from HF: a text column stays text in later rows (``007`` stays ``"007"``; HF parses
a later chunk of digits as integers and casts them back to ``"7"``). A later cell that its
column's type cannot hold raises :class:`~arrowmix.exceptions.InputFormatError` naming the file,
the column, the row and the value (HF raises too).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from arrowmix.exceptions import InputFormatError

__all__ = [
    "INFER_ROWS",
    "NA_VALUES",
    "csv_convert_options",
    "csv_kept",
    "csv_names",
    "header_names",
    "typed_batches",
]

#: pandas' default NA strings (``pandas._libs.parsers.STR_NA_VALUES``), which HF keeps.
# fmt: off
NA_VALUES = (
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
)
# fmt: on
#: Rows a column's type is inferred from (HF's CSV ``chunksize``).
INFER_ROWS = 10_000
# Regular expressions, not value arrays: building an array (``pa.array``) imports pandas.
_TRUE = r"^(True|TRUE|true)$"
_BOOL = r"^(True|TRUE|true|False|FALSE|false)$"
_INT = r"^\s*[+-]?[0-9]+\s*$"


def header_names(raw: list[str]) -> list[str]:
    """The column names pandas gives a header: ``Unnamed: i`` for an empty one, dupes numbered."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, name in enumerate(raw):
        name = name or f"Unnamed: {i}"
        base = name
        while name in seen:
            seen[base] += 1
            name = f"{base}.{seen[base]}"
        seen.setdefault(base, 0)
        seen.setdefault(name, 0)
        out.append(name)
    return out


def csv_names(
    raw: Sequence[str], path: str, names: Sequence[str] | None, header: bool
) -> list[str]:
    """The column names of a CSV file whose first row is ``raw`` (pandas' ``names``/``header``).

    Raises:
        InputFormatError: ``names`` has another length than the first row.
    """
    if names is None:
        return header_names(list(raw)) if header else [str(i) for i in range(len(raw))]
    if len(names) != len(raw):
        raise InputFormatError(
            f"{path}: `column_names` names {len(names)} column(s) ({list(names)}) but the "
            f"rows have {len(raw)} field(s)."
        )
    return [str(n) for n in names]


def csv_kept(names: list[str], path: str, usecols: Sequence[str | int] | None) -> list[str] | None:
    """The columns of ``names`` that ``usecols`` keeps, in the file's order (pandas' rule).

    Raises:
        InputFormatError: ``usecols`` names a column, or a position, the file does not have.
    """
    if usecols is None:
        return None
    wanted = [names[u] if isinstance(u, int) and 0 <= u < len(names) else u for u in usecols]
    missing = [u for u in wanted if not isinstance(u, str) or u not in names]
    if missing:
        raise InputFormatError(
            f"{path}: `usecols` names {missing}, not columns of the file ({names})."
        )
    return [n for n in names if n in wanted]


def csv_convert_options(names: list[str]) -> Any:
    """The ``pyarrow.csv.ConvertOptions`` reading every column as text, NA cells as null."""
    import pyarrow.csv as pacsv

    return pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.large_string()),
        null_values=list(NA_VALUES),
        strings_can_be_null=True,
        quoted_strings_can_be_null=True,
    )


def _numbers(arr: pa.Array[Any], to: pa.DataType) -> pa.Array[Any]:
    """Integer-looking text as ``to`` (spaces and a leading ``+`` dropped first)."""
    text = pc.replace_substring_regex(pc.utf8_trim_whitespace(arr), r"^\+", "")
    return pc.cast(text, to)


def _ints(arr: pa.Array[Any], to: pa.DataType) -> pa.Array[Any]:
    """Integer cells (or whole numbers: ``1.0``, ``1e3``) as ``to``; ``ArrowInvalid`` otherwise.

    pyarrow's own cast first (plain digits: the common case, one pass); it also reads hex
    (``0x10``), which pandas does not, so a cell with an ``x`` or ``X`` takes the checked path
    (looked for as two plain substrings: ``ignore_case`` takes the regular expression engine,
    several times slower).
    """
    try:
        out: pa.Array[Any] = pc.cast(arr, to)
        if not any(pc.any(pc.match_substring(arr, x)).as_py() for x in "xX"):
            return out
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if _is_int(arr.drop_null()):
        return _numbers(arr, to)
    try:  # pandas reads a column as integers when its numbers are whole: "1.0", "1e3"
        whole: pa.Array[Any] = pc.cast(pc.cast(pc.utf8_trim_whitespace(arr), pa.float64()), to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise pa.ArrowInvalid("not an integer") from None
    return whole


def _is_int(arr: pa.Array[Any]) -> bool:
    return bool(pc.all(pc.match_substring_regex(arr, _INT)).as_py() is not False)


def _infer(arr: pa.Array[Any]) -> pa.DataType:
    """The type pandas' ``read_csv`` gives a column of text cells (nulls: missing cells)."""
    values = arr.drop_null()
    if len(values) == 0:
        return pa.float64()
    if _is_int(values):
        for t in (pa.int64(), pa.uint64()):
            try:
                _numbers(values, t)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
            return pa.float64() if arr.null_count else t
        return pa.large_string()  # beyond 64 bits: pandas keeps them as text
    try:
        pc.cast(pc.utf8_trim_whitespace(values), pa.float64())
        return pa.float64()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if pc.all(pc.match_substring_regex(values, _BOOL)).as_py():
        return pa.bool_()
    return pa.large_string()


def _convert(arr: pa.Array[Any], to: pa.DataType) -> pa.Array[Any]:
    """Text cells as ``to``; raises ``ArrowInvalid`` when one cannot be."""
    if to == pa.large_string():
        return arr
    if pa.types.is_boolean(to):
        if pc.all(pc.match_substring_regex(arr, _BOOL)).as_py() is False:
            raise pa.ArrowInvalid("not True or False")
        truth: pa.Array[Any] = pc.match_substring_regex(arr, _TRUE)  # null where arr is
        return truth
    if pa.types.is_integer(to):
        return _ints(arr, to)
    if pa.types.is_floating(to):
        try:
            return pc.cast(arr, to)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return pc.cast(pc.utf8_trim_whitespace(arr), to)  # pandas allows spaces around
    return pc.cast(arr, to)


def _first_bad(arr: pa.Array[Any], to: pa.DataType) -> int:
    for i in range(len(arr)):
        try:
            _convert(arr.slice(i, 1), to)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return i
    return 0


def _typed(
    batch: pa.RecordBatch, types: Mapping[str, pa.DataType], path: str, row: int
) -> pa.RecordBatch:
    cols = []
    for name, arr in zip(batch.schema.names, batch.columns, strict=True):
        to = types[name]
        try:
            cols.append(_convert(arr, to))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            i = _first_bad(arr, to)
            raise InputFormatError(
                f"{path}: column {name!r} is {to} (as the first rows read fixed it) but its row "
                f"{row + i + 1} (1-based, header not counted) holds {arr[i].as_py()!r}: {exc}. "
                "Pass `features=` to read the column as another type."
            ) from exc
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def typed_batches(
    batches: Iterator[pa.RecordBatch],
    path: str,
    column_types: Mapping[str, pa.DataType] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The text batches of one CSV file with HF's values and types.

    ``column_types``: the types fixed by an earlier file (its columns are read as them);
    other columns are typed from this file's first :data:`INFER_ROWS` rows.
    """
    known = dict(column_types or {})
    head: list[pa.RecordBatch] = []
    rows = 0
    types: dict[str, pa.DataType] | None = None
    for batch in batches:
        if types is None:
            head.append(batch)
            if sum(b.num_rows for b in head) < INFER_ROWS:
                continue
            batch, types = _head(head, known)
        out = _typed(batch, types, path, rows)
        rows += batch.num_rows
        yield out
    if types is None and head:
        batch, types = _head(head, known)
        if batch.num_rows:
            yield _typed(batch, types, path, 0)


def _head(
    head: list[pa.RecordBatch], known: Mapping[str, pa.DataType]
) -> tuple[pa.RecordBatch, dict[str, pa.DataType]]:
    """The first batches as one, and the types of its columns (``known`` ones kept)."""
    table = pa.Table.from_batches(head)
    batch = pa.RecordBatch.from_arrays(
        [c.combine_chunks() for c in table.columns], names=table.column_names
    )
    types = {
        name: known[name] if name in known else _infer(col.slice(0, INFER_ROWS))
        for name, col in zip(batch.schema.names, batch.columns, strict=True)
    }
    return batch, types
