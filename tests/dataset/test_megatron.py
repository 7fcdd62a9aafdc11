"""Megatron ``.bin``/``.idx`` corpora read in place and written, against megatron-core."""

from __future__ import annotations

import os
import pickle
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage import token_arrays
from arrowmix._storage.mapped import _mappings
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError, TokenFileError
from tests.dataset.megatron_helpers import (
    build_with_megatron,
    documents,
    indexed_dataset_module,
    read_with_megatron,
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[list[int]]]:
    """A uint16 corpus of 300 documents written by megatron-core's builder."""
    prefix = str(tmp_path_factory.mktemp("megatron") / "corpus_text_document")
    docs = documents(300, seed=1)
    build_with_megatron(prefix, docs, np.uint16)
    return prefix, docs


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int64, np.uint8])
def test_rows_equal_megatron_core_indexed_dataset(tmp_path: Any, dtype: Any) -> None:
    vocab = 200 if dtype == np.uint8 else 50_000
    prefix = str(tmp_path / "c")
    build_with_megatron(prefix, documents(120, seed=3, vocab=vocab), dtype)
    ds = am.Dataset.from_megatron(prefix)
    assert ds.features["input_ids"].feature.dtype == np.dtype(dtype).name
    assert len(ds) == 120
    assert ds["input_ids"] == read_with_megatron(prefix)
    assert [ds[i]["input_ids"] for i in (0, 57, 119)] == [
        read_with_megatron(prefix)[i] for i in (0, 57, 119)
    ]


def test_documents_of_several_sequences(tmp_path: Any) -> None:
    """``by="document"``: a document's sequences together; default: the sequences."""
    prefix = str(tmp_path / "c")
    docs = documents(50, seed=4)
    build_with_megatron(prefix, docs, np.int32, split_every=7)
    ref = indexed_dataset_module().IndexedDataset(prefix)
    seqs = am.from_megatron(prefix)
    assert len(seqs) == len(ref) > 50
    assert seqs["input_ids"] == [ref[i].tolist() for i in range(len(ref))]
    by_doc = am.from_megatron(prefix, by="document")
    assert by_doc["input_ids"] == docs
    assert by_doc._fingerprint != seqs._fingerprint


def test_values_are_the_bin_memory_map_not_a_copy(corpus: tuple[str, list[list[int]]]) -> None:
    prefix, _docs = corpus
    ds = am.from_megatron(prefix)
    table = ds.with_format("arrow")[:]
    chunk = table.column("input_ids").chunk(0)
    address = chunk.values.buffers()[1].address
    _starts, spans = _mappings()
    owner = [p for lo, hi, _base, p in spans if lo <= address < hi]
    assert owner == [os.path.abspath(prefix + ".bin")]


def test_several_prefixes_one_after_the_other(tmp_path: Any) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    docs_a, docs_b = documents(30, seed=5), documents(20, seed=6)
    build_with_megatron(a, docs_a, np.uint16)
    build_with_megatron(b, docs_b, np.uint16)
    ds = am.Dataset.from_megatron([a, b])
    assert ds["input_ids"] == docs_a + docs_b
    named_by_file = am.from_megatron([a + ".bin", b + ".idx"])
    assert named_by_file._fingerprint == ds._fingerprint
    build_with_megatron(str(tmp_path / "wide"), docs_b, np.int32)
    with pytest.raises(SchemaMismatchError, match="different types"):
        am.from_megatron([a, str(tmp_path / "wide")])


def test_big_corpus_is_cut_into_arrays_of_int32_offsets(
    corpus: tuple[str, list[list[int]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 2**31 - 1 tokens a list array's offsets overflow: the column gets more chunks."""
    prefix, docs = corpus
    monkeypatch.setattr(token_arrays, "MAX_CHUNK_TOKENS", 500)
    ds = am.from_megatron(prefix)
    column = ds.with_format("arrow")[:].column("input_ids")
    assert column.num_chunks > 10
    assert max(len(c.values) for c in column.chunks) <= 500
    assert ds["input_ids"] == docs
    assert ds.select([299, 0, 150])["input_ids"] == [docs[299], docs[0], docs[150]]


def test_writer_is_read_by_megatron_core(tmp_path: Any) -> None:
    docs = documents(80, seed=7)
    ds = am.Dataset.from_dict({"input_ids": docs, "n": list(range(80))})
    prefix = str(tmp_path / "out" / "corpus")
    view = ds.select(range(79, -1, -2))
    written = view.to_megatron(prefix, dtype=np.uint16)
    assert written == os.path.getsize(prefix + ".bin") + os.path.getsize(prefix + ".idx")
    assert read_with_megatron(prefix) == view["input_ids"]
    assert am.from_megatron(prefix)["input_ids"] == view["input_ids"]
    ref = indexed_dataset_module().IndexedDataset(prefix)
    assert ref.index.dtype == np.uint16
    assert ref.document_indices.tolist() == list(range(41))
    assert not [f for f in os.listdir(tmp_path / "out") if f.endswith(".partial")]


def test_writer_dtype_default_and_range(tmp_path: Any) -> None:
    ids = pa.array([[1, 2], [70_000]], pa.list_(pa.uint32()))
    ds = am.Dataset.from_dict({"input_ids": ids})
    ds.to_megatron(str(tmp_path / "a"))  # uint32 has no Megatron code: int32
    assert indexed_dataset_module().IndexedDataset(str(tmp_path / "a")).index.dtype == np.int32
    with pytest.raises(ValueError, match=r"70000.*uint16"):
        ds.to_megatron(str(tmp_path / "b"), dtype=np.uint16)
    assert not os.path.exists(tmp_path / "b.bin") and not os.path.exists(tmp_path / "b.idx")
    with pytest.raises(ValueError, match="no dtype code"):
        ds.to_megatron(str(tmp_path / "c"), dtype=np.uint32)
    with pytest.raises(am.exceptions.ColumnNotFoundError, match="tokens"):
        ds.to_megatron(str(tmp_path / "c"), column="tokens")


def test_failed_write_leaves_the_previous_pair(tmp_path: Any) -> None:
    prefix = str(tmp_path / "c")
    am.Dataset.from_dict({"input_ids": [[1, 2, 3]]}).to_megatron(prefix)
    bad = am.Dataset.from_dict({"input_ids": [[4]] * 70_000 + [None]})
    with pytest.raises(ValueError, match="null at row 70000"):
        bad.to_megatron(prefix)
    assert am.from_megatron(prefix)["input_ids"] == [[1, 2, 3]]
    assert sorted(os.listdir(tmp_path)) == ["c.bin", "c.idx"]


def _header(
    seqs: int, docs: int, code: int = 8, version: int = 1, magic: bytes = b"MMIDIDX\x00\x00"
) -> bytes:
    return magic + struct.pack("<QBQQ", version, code, seqs, docs)


def _damaged(tmp_path: Any, corpus: tuple[str, list[list[int]]], name: str) -> str:
    prefix = str(tmp_path / name)
    shutil.copy(corpus[0] + ".bin", prefix + ".bin")
    shutil.copy(corpus[0] + ".idx", prefix + ".idx")
    return prefix


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncate_idx", r"c\.idx' is truncated: .* declares 300 sequences"),
        ("truncate_header", r"c\.idx' is truncated: 20 bytes, shorter than its 34-byte header"),
        ("truncate_bin", r"c\.bin' is shorter than its index .* The file is truncated"),
        ("dtype_code", r"c\.idx' has dtype code 9, out of range"),
        ("magic", r"c\.idx' is not a Megatron index"),
        ("version", r"c\.idx' has version 2"),
        ("other_bin", r"c\.bin' .* and index .*c\.idx' .* are not one pair"),
        ("no_idx", r"has no index file .*c\.idx"),
        ("pointers", r"sequence 5 starts at byte"),
    ],
)
def test_damaged_pairs_name_the_file_and_problem(
    tmp_path: Any, corpus: tuple[str, list[list[int]]], damage: str, message: str
) -> None:
    prefix = _damaged(tmp_path, corpus, "c")
    idx, data = prefix + ".idx", prefix + ".bin"
    raw = bytearray(Path(idx).read_bytes())
    if damage == "truncate_idx":
        raw = raw[:-9]
    elif damage == "truncate_header":
        raw = raw[:20]
    elif damage == "dtype_code":
        raw[17] = 9
    elif damage == "magic":
        raw[:4] = b"ABCD"
    elif damage == "version":
        raw[9:17] = struct.pack("<Q", 2)
    elif damage == "pointers":
        pointers = 34 + 4 * 300
        raw[pointers + 8 * 5 : pointers + 8 * 6] = struct.pack("<q", 2)
    with open(idx, "wb") as f:
        f.write(raw)
    if damage == "truncate_bin":
        os.truncate(data, os.path.getsize(data) - 2)
    elif damage == "other_bin":
        with open(data, "ab") as f:
            f.write(b"\x00" * 64)
    elif damage == "no_idx":
        os.remove(idx)
    with pytest.raises(TokenFileError, match=message):
        am.from_megatron(prefix)


def test_empty_corpus_and_empty_documents(tmp_path: Any) -> None:
    prefix = str(tmp_path / "e")
    build_with_megatron(prefix, [], np.uint16)
    ds = am.from_megatron(prefix)
    assert len(ds) == 0 and str(ds.features["input_ids"].feature.dtype) == "uint16"
    build_with_megatron(prefix, [[], [5], []], np.uint16)
    assert am.from_megatron(prefix)["input_ids"] == [[], [5], []]


def test_fingerprint_follows_content_not_path(
    tmp_path: Any, corpus: tuple[str, list[list[int]]]
) -> None:
    first = am.from_megatron(corpus[0])._fingerprint
    moved = _damaged(tmp_path, corpus, "moved")
    assert am.from_megatron(moved)._fingerprint == first
    raw = bytearray(Path(moved + ".bin").read_bytes())
    raw[10] ^= 0xFF
    with open(moved + ".bin", "wb") as f:
        f.write(raw)
    assert am.from_megatron(moved)._fingerprint != first
    assert am.from_megatron(corpus[0], column="tokens")._fingerprint != first


def test_pickle_reopens_the_files_and_refuses_a_changed_one(
    tmp_path: Any, corpus: tuple[str, list[list[int]]]
) -> None:
    prefix = _damaged(tmp_path, corpus, "p")
    ds = am.from_megatron(prefix).map(lambda r: {"n": len(r["input_ids"])})
    view = ds.select(range(10, 200, 3))
    blob = pickle.dumps(view)
    assert len(blob) < 20_000  # references to the files, not the tokens
    back = pickle.loads(blob)
    assert back["input_ids"] == view["input_ids"] and back["n"] == view["n"]
    assert back._fingerprint == view._fingerprint
    raw = Path(prefix + ".bin").read_bytes()
    with open(prefix + ".bin", "wb") as f:  # rewritten in place: same size, new times
        f.write(raw[::-1])
    with pytest.raises(ChunkFileError, match=r"p\.bin' changed since it was opened"):
        pickle.loads(blob)


def test_pickles_carry_the_files_not_the_tokens(
    tmp_path: Any, corpus: tuple[str, list[list[int]]]
) -> None:
    """The opened corpus, a renamed view, and a concatenation with an arrowmix corpus."""
    from arrowmix._dataset.state import state_of
    from arrowmix._dataset.tables.tokens import TokenTable

    prefix, docs = corpus
    ds = am.from_megatron(prefix)
    assert isinstance(state_of(ds).reader, TokenTable)
    renamed = ds.rename_column("input_ids", "tokens")
    table = pa.table({"input_ids": pa.array([[9, 9]], pa.list_(pa.uint16()))})
    other = am.Dataset.from_chunks(am.write_chunks(table, str(tmp_path / "chunks")))
    both = am.concatenate_datasets([ds, other])
    for view, column, rows in ((ds, "input_ids", docs), (renamed, "tokens", docs)):
        blob = pickle.dumps(view)
        assert len(blob) < 10_000
        back = pickle.loads(blob)
        assert back[column] == rows and back._fingerprint == view._fingerprint
    blob = pickle.dumps(both)
    assert len(blob) < 10_000
    assert pickle.loads(blob)["input_ids"] == [*docs, [9, 9]]


def test_map_results_are_cache_files_away_from_the_corpus(
    tmp_path: Any, corpus: tuple[str, list[list[int]]]
) -> None:
    prefix = _damaged(tmp_path, corpus, "m")
    ds = am.from_megatron(prefix)
    lengths = ds.map(lambda r: {"n": len(r["input_ids"])})
    assert lengths["n"] == [len(d) for d in corpus[1]]
    assert sorted(os.listdir(tmp_path)) == ["m.bin", "m.idx"]
    again = am.from_megatron(prefix).map(lambda r: {"n": len(r["input_ids"])})
    assert again.cache_files == lengths.cache_files  # the rerun reuses the cached result
