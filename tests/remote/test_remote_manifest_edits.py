"""A corpus manifest edited after ``write_chunks`` is refused, never trusted for rows.

A remote corpus opened with ``cache_limit`` places rows by the row counts its manifest
records (no chunk is read to open it): an edited count used to shift every later row
silently (``ds[60]`` answered row 110). The manifest carries a checksum of what it records,
so an edit reads as a damaged manifest on every path; older manifests without one must
still have whole row counts adding up to their total. A directory of chunks whose manifest
lists none is no empty corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import IncompleteCorpusError

pytestmark = pytest.mark.integration

ROWS = 100
Edit = Callable[[dict[str, Any]], None]


def _rows(chunk: int, value: Any) -> Edit:
    return lambda body: body["chunks"][chunk].update(rows=value)


EDITS: dict[str, Edit] = {
    "fewer rows": _rows(0, 50),
    "more rows": _rows(1, 150),
    "negative rows": _rows(0, -5),
    "digest": lambda body: body["chunks"][1].update(digest="0123456789abcdef"),
    "total": lambda body: body.update(rows=999),
}


def _write(url: str, so: dict[str, Any] | None = None) -> None:
    table = pa.table({"id": list(range(4 * ROWS))})
    am.write_chunks(table, url, rows_per_chunk=ROWS, storage_options=so)


def _edit(fs: Any, url: str, change: Edit, *, keep_checksum: bool = True) -> None:
    body = json.loads(fs.cat_file(f"{url}/_manifest.json"))
    if not keep_checksum:
        body.pop("checksum")
    change(body)
    fs.pipe_file(f"{url}/_manifest.json", json.dumps(body, indent=1).encode())


def _bounded(url: Any, so: dict[str, Any], cache: Path) -> am.Dataset:
    return am.Dataset.from_chunks(
        url, storage_options=so, cache_limit="8MB", chunk_cache_dir=str(cache)
    )


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_manifest_is_refused_with_and_without_cache_limit(
    s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any, tmp_path: Path,
    edit: str,
) -> None:  # fmt: skip
    so = s3_storage_options
    _write(s3_url, so)
    _edit(s3_other_client, s3_url, EDITS[edit])
    damaged = r"damaged manifest .*was edited"
    with pytest.raises(IncompleteCorpusError, match=damaged):
        _bounded(s3_url, so, tmp_path)
    with pytest.raises(IncompleteCorpusError, match=damaged):
        am.Dataset.from_chunks(s3_url, storage_options=so)


def test_an_edited_local_manifest_is_refused_as_a_remote_one(tmp_path: Path) -> None:
    _write(str(tmp_path / "c"))
    manifest = tmp_path / "c" / "_manifest.json"
    body = json.loads(manifest.read_text())
    EDITS["fewer rows"](body)
    manifest.write_text(json.dumps(body))
    with pytest.raises(IncompleteCorpusError, match=r"damaged manifest .*was edited"):
        am.Dataset.from_chunks(str(tmp_path / "c"))


@pytest.mark.parametrize("edit", ["fewer rows", "negative rows", "total"])
def test_a_manifest_without_a_checksum_must_add_up(
    s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any, tmp_path: Path,
    edit: str,
) -> None:  # fmt: skip
    _write(s3_url, s3_storage_options)
    _edit(s3_other_client, s3_url, EDITS[edit], keep_checksum=False)
    with pytest.raises(IncompleteCorpusError, match="damaged manifest"):
        _bounded(s3_url, s3_storage_options, tmp_path)


def test_an_unedited_manifest_without_a_checksum_still_opens(
    s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any, tmp_path: Path
) -> None:
    _write(s3_url, s3_storage_options)
    fp = _bounded(s3_url, s3_storage_options, tmp_path / "a").fingerprint
    _edit(s3_other_client, s3_url, lambda body: None, keep_checksum=False)
    ds = _bounded(s3_url, s3_storage_options, tmp_path / "b")
    assert ds.fingerprint == fp and len(ds) == 4 * ROWS and ds[260]["id"] == 260


@pytest.mark.parametrize("damage", ["truncated", "another format"])
def test_a_damaged_manifest_is_called_damaged_with_cache_limit_too(
    s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any, tmp_path: Path,
    damage: str,
) -> None:  # fmt: skip
    _write(s3_url, s3_storage_options)
    path = f"{s3_url}/_manifest.json"
    raw = s3_other_client.cat_file(path)
    s3_other_client.pipe_file(path, raw[: len(raw) // 2] if damage == "truncated" else b"{}")
    with pytest.raises(IncompleteCorpusError, match=r"damaged manifest") as got:
        _bounded(s3_url, s3_storage_options, tmp_path)
    assert "has no manifest" not in str(got.value)


def test_chunks_whose_manifest_lists_none_are_not_an_empty_corpus(tmp_path: Path) -> None:
    _write(str(tmp_path / "c"))
    manifest = tmp_path / "c" / "_manifest.json"
    body = json.loads(manifest.read_text())
    body.update(chunks=[], rows=0)
    body.pop("checksum")  # as an older arrowmix wrote it
    manifest.write_text(json.dumps(body))
    with pytest.raises(IncompleteCorpusError, match=r"not listed chunk-00000\.arrow"):
        am.Dataset.from_chunks(str(tmp_path / "c"))  # never an empty dataset


def test_an_empty_list_is_refused_with_cache_limit_as_without(
    s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(am.exceptions.ChunkFileError, match="is an empty list"):
        _bounded([], s3_storage_options, tmp_path)
