r"""Text files read as HF ``datasets``' text builder reads them (``load_dataset("text")``).

The file is decoded as UTF-8 with universal newlines: ``"\r\n"`` and a lone ``"\r"`` become
``"\n"`` before anything is split. Then, by ``sample_by``:

- ``"line"``: one row per line, without its ``"\n"`` unless ``keep_linebreaks=True`` (blank
  lines are rows; a last line without a newline is a row as it is);
- ``"paragraph"``: the text split at every ``"\n\n"``, empty pieces dropped (a piece keeps
  the single newlines inside it, and the last keeps the file's final newline);
- ``"document"``: one row holding the whole file.

Memory stays bounded by one block (``_BLOCK`` characters plus the end of its line) for lines
and paragraphs. These are the ``"text:line"``, ``"text:paragraph"`` and ``"text:document"``
formats of :mod:`arrowmix._storage.readers`; its older ``"text"`` formats (``from_text``'s)
keep their own rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from arrowmix._storage.fs import is_local, local_path
from arrowmix.exceptions import InputFormatError

__all__ = ["read_document", "read_lines", "read_paragraphs"]

_BLOCK = 10 * 2**20
_ROWS = 65536


def _blocks(path: str, storage_options: Mapping[str, Any] | None, whole: bool) -> Iterator[str]:
    """The file's text in blocks that end at a line end (universal newlines)."""
    import fsspec  # keeps `import arrowmix` light

    url = local_path(path) if is_local(path) else path
    opened = fsspec.open(
        url, "rt", compression="infer", encoding="utf-8", newline=None, **(storage_options or {})
    )
    try:
        with opened as f:
            if whole:
                yield f.read()
                return
            while block := f.read(_BLOCK):
                yield block + f.readline()
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{path}: not valid UTF-8 ({exc.reason}).") from exc


def _batch(texts: list[str]) -> pa.RecordBatch:
    return pa.record_batch({"text": pa.array(texts, type=pa.string())})


def read_lines(
    path: str, storage_options: Mapping[str, Any] | None, keep_linebreaks: bool = False
) -> Iterator[pa.RecordBatch]:
    """One row per line (see the module's docstring)."""
    for block in _blocks(path, storage_options, whole=False):
        lines = block.split("\n")
        last = lines.pop()  # "" when the block ends with a newline
        if keep_linebreaks:
            lines = [line + "\n" for line in lines]
        if last:
            lines.append(last)
        for start in range(0, len(lines), _ROWS):
            yield _batch(lines[start : start + _ROWS])


def read_paragraphs(
    path: str, storage_options: Mapping[str, Any] | None
) -> Iterator[pa.RecordBatch]:
    r"""One row per piece between ``"\n\n"`` (see the module's docstring)."""
    carry = ""
    for block in _blocks(path, storage_options, whole=False):
        pieces = (carry + block).split("\n\n")
        carry = pieces.pop()
        kept = [p for p in pieces if p]
        for start in range(0, len(kept), _ROWS):
            yield _batch(kept[start : start + _ROWS])
    if carry:
        yield _batch([carry])


def read_document(path: str, storage_options: Mapping[str, Any] | None) -> Iterator[pa.RecordBatch]:
    """One row holding the whole file (universal newlines)."""
    for text in _blocks(path, storage_options, whole=True):
        yield _batch([text])
