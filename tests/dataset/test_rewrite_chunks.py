"""Rewriting a corpus with ``write_chunks(..., overwrite=True)``, as a rerun script does."""

from __future__ import annotations

import os
from pathlib import Path

import arrowmix as am


def _rows(n: int, suffix: str = "") -> list[dict[str, str]]:
    return [{"text": f"row {i}{suffix}"} for i in range(n)]


def _tokenize(batch: dict[str, list[str]]) -> dict[str, list[int]]:
    return {"n": [len(t) for t in batch["text"]]}


def test_same_rows_keep_fingerprints_and_caches(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    am.write_chunks(_rows(50), out, rows_per_chunk=20)
    first = am.Dataset.from_chunks(str(out)).map(_tokenize, batched=True)
    made = {f: os.stat(f).st_ino for f in first.cache_files if "cache-" in f}
    assert made

    am.write_chunks(_rows(50), out, rows_per_chunk=20, overwrite=True)  # the script's rerun
    again = am.Dataset.from_chunks(str(out)).map(_tokenize, batched=True)
    assert again.fingerprint == first.fingerprint and again.cache_files == first.cache_files
    assert {f: os.stat(f).st_ino for f in made} == made  # reused: a recompute renames a new file in
    assert again["n"] == first["n"]


def test_changed_rows_get_new_fingerprints(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    am.write_chunks(_rows(50), out, rows_per_chunk=20)
    first = am.Dataset.from_chunks(str(out)).map(_tokenize, batched=True)
    am.write_chunks(_rows(50, suffix="!"), out, rows_per_chunk=20, overwrite=True)
    again = am.Dataset.from_chunks(str(out)).map(_tokenize, batched=True)
    assert again.fingerprint != first.fingerprint
    assert again["n"] == [n + 1 for n in first["n"]]
