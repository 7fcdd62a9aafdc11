"""A bounded remote corpus missing a chunk its manifest lists is refused, as a local one is.

Deleting a chunk object after ``write_chunks`` (by hand, a lifecycle rule, a failed copy)
must never leave its rows out of the dataset silently: ``from_chunks`` raises
``IncompleteCorpusError`` naming the missing files, with or without ``cache_limit``, unless
``allow_incomplete=True`` asks for the files present. A glob or a list of files names the
chunks wanted, so only a directory is checked against its manifest.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import IncompleteCorpusError

pytestmark = pytest.mark.integration

ROWS = 100


@pytest.fixture
def corpus(s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any) -> str:
    """Four chunks of ROWS rows, chunk 2 then deleted by another client."""
    table = pa.table({"id": list(range(4 * ROWS))})
    am.write_chunks(table, s3_url, rows_per_chunk=ROWS, storage_options=s3_storage_options)
    s3_other_client.rm_file(f"{s3_url}/chunk-00002.arrow")
    return s3_url


def bounded(spec: Any, so: dict[str, Any], tmp_path: Any, **kwargs: Any) -> am.Dataset:
    return am.Dataset.from_chunks(
        spec, storage_options=so, cache_limit="8MB", chunk_cache_dir=str(tmp_path), **kwargs
    )


@pytest.mark.parametrize("trailing_slash", [False, True])
def test_a_directory_missing_a_listed_chunk_is_refused_as_without_cache_limit(
    corpus: str, s3_storage_options: dict[str, Any], tmp_path: Any, trailing_slash: bool
) -> None:
    spec = corpus + "/" if trailing_slash else corpus
    with pytest.raises(IncompleteCorpusError) as plain:
        am.Dataset.from_chunks(spec, storage_options=s3_storage_options)
    with pytest.raises(IncompleteCorpusError, match=r"missing chunk-00002\.arrow") as got:
        bounded(spec, s3_storage_options, tmp_path)
    assert "allow_incomplete=True" in str(got.value)
    tail = "does not match its manifest"  # the same words as without cache_limit
    assert str(got.value).split(tail)[1] == str(plain.value).split(tail)[1]


def test_verify_with_cache_limit_refuses_it_too(
    corpus: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    with pytest.raises(IncompleteCorpusError, match=r"missing chunk-00002\.arrow"):
        bounded(corpus, s3_storage_options, tmp_path, verify=True)


def test_allow_incomplete_opens_the_chunks_present(
    corpus: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    ds = bounded(corpus, s3_storage_options, tmp_path, allow_incomplete=True)
    assert ds["id"] == [*range(2 * ROWS), *range(3 * ROWS, 4 * ROWS)]
    plain = am.Dataset.from_chunks(corpus, storage_options=s3_storage_options,
                                   allow_incomplete=True)  # fmt: skip
    assert ds.fingerprint == plain.fingerprint


def test_a_glob_or_a_list_of_files_opens_the_chunks_it_names(
    corpus: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    ds = bounded(f"{corpus}/chunk-0000[01].arrow", s3_storage_options, tmp_path / "a")
    assert ds["id"] == list(range(2 * ROWS))
    files = [f"{corpus}/chunk-00003.arrow", f"{corpus}/chunk-00000.arrow"]
    ds = bounded(files, s3_storage_options, tmp_path / "b")
    assert ds["id"] == [*range(3 * ROWS, 4 * ROWS), *range(ROWS)]


def test_a_directory_whose_chunks_are_all_gone_is_refused(
    s3_url: str, s3_storage_options: dict[str, Any], s3_other_client: Any, tmp_path: Any
) -> None:
    am.write_chunks(pa.table({"id": list(range(2 * ROWS))}), s3_url, rows_per_chunk=ROWS,
                    storage_options=s3_storage_options)  # fmt: skip
    for i in range(2):
        s3_other_client.rm_file(f"{s3_url}/chunk-{i:05d}.arrow")
    with pytest.raises(am.exceptions.ChunkFileError, match="No Arrow chunk files"):
        bounded(s3_url, s3_storage_options, tmp_path)  # never an empty dataset


def test_an_s3a_spelling_of_the_directory_is_refused_too(
    corpus: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    spec = "s3a://" + corpus.removeprefix("s3://")
    with pytest.raises(IncompleteCorpusError):
        am.Dataset.from_chunks(spec, storage_options=s3_storage_options)
    with pytest.raises(IncompleteCorpusError, match=r"missing chunk-00002\.arrow"):
        bounded(spec, s3_storage_options, tmp_path)


def test_an_empty_list_is_a_chunk_file_error_as_without_cache_limit(
    s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    with pytest.raises(am.exceptions.ChunkFileError, match="empty list"):
        am.Dataset.from_chunks([], storage_options=s3_storage_options)
    with pytest.raises(am.exceptions.ChunkFileError, match="empty list"):
        bounded([], s3_storage_options, tmp_path)
