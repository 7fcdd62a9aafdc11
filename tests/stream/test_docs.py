"""The examples of docs/streams.md and docs/provenance.md run (doctest)."""

from __future__ import annotations

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "streams.md"


def test_streams_doc_examples() -> None:
    result = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.attempted > 20
    assert result.failed == 0


def test_provenance_doc_examples() -> None:
    doc = DOC.with_name("provenance.md")
    result = doctest.testfile(
        str(doc), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.attempted > 15
    assert result.failed == 0
