"""Damage to recorded data is never served: a plain open compares the recorded digests.

A chunk ``write_chunks`` wrote (its digest in ``_manifest.json``) or a data file of a
``save_to_disk`` (its digest in ``state.json``) whose bytes change in place (a value, a string
offset, a validity bit), keeping its size, inode and mtime, is refused by the next open with
an error naming the file and how to repair it; the files not damaged still open.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import ChunkFileError
from tests.storage.fresh import run_python
from tests.storage.in_place import write_in_place

ROWS = 400


def _table() -> pa.Table:
    xs = [None if i % 7 == 3 else i * 1000 for i in range(ROWS)]
    return pa.table({"x": pa.array(xs, pa.int64()), "s": [f"r{i:03d}" for i in range(ROWS)]})


def _buffer_at(path: Path, column: str, which: int) -> int:
    """File offset of buffer ``which`` (0 validity, 1 data/offsets, 2 string bytes) of ``column``
    in the file's first record batch."""
    buf = pa.memory_map(str(path), "r").read_buffer()
    stream = buf.to_pybytes()[:6] != b"ARROW1"
    reader = pa.ipc.open_stream(buf) if stream else pa.ipc.open_file(buf)
    batch = next(iter(reader)) if stream else reader.get_batch(0)
    target = batch.column(column).buffers()[which]
    assert target is not None
    return target.address - buf.address


def _flip(path: Path, offset: int, mask: int = 1) -> None:
    """Flip bits of one byte in place, keeping size, inode and modification time."""
    with open(path, "rb") as f:
        f.seek(offset)
        byte = f.read(1)[0]
    write_in_place(path, bytes([byte ^ mask]), offset)


# (column, buffer, byte within it, mask) in a file starting at row 200: a value, validity
# bits, a string offset, a character
DAMAGE = {
    "value": ("x", 1, 8, 0x10),
    # rows 200 and 206 (valid, null): one becomes null, the other valid; the null count holds
    "validity": ("x", 0, 0, 0x41),
    "offset": ("s", 1, 4, 0x01),  # offset 1: 4 -> 5, still monotonic and valid UTF-8
    "string byte": ("s", 2, 1, 0x02),
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    am.write_chunks(_table(), str(d), rows_per_chunk=100)
    assert am.Dataset.from_chunks(str(d)).num_rows == ROWS
    return d


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_chunk_is_refused_at_its_first_open(corpus: Path, kind: str) -> None:
    column, which, at, mask = DAMAGE[kind]
    rotten = corpus / "chunk-00002.arrow"
    _flip(rotten, _buffer_at(rotten, column, which) + at, mask)
    with pytest.raises(ChunkFileError) as info:
        am.Dataset.from_chunks(str(corpus))
    message = str(info.value)
    assert "chunk-00002.arrow" in message and "damaged" in message
    assert "write_chunks" in message  # how to repair
    with pytest.raises(ChunkFileError, match=r"chunk-00002\.arrow"):
        am.Dataset.from_chunks(str(corpus))  # every open, not only the first
    others = sorted(str(p) for p in corpus.glob("chunk-*.arrow") if p != rotten)
    intact = am.Dataset.from_chunks(others)
    assert intact.num_rows == ROWS - 100
    assert intact["s"][200] == "r300"
    assert intact["x"][:4] == [0, 1000, 2000, None]


def test_a_damaged_chunk_is_refused_in_a_fresh_process(corpus: Path) -> None:
    rotten = corpus / "chunk-00001.arrow"
    _flip(rotten, _buffer_at(rotten, "x", 1) + 16, 0x04)
    code = (
        "import arrowmix as am, sys\n"
        "try:\n    am.Dataset.from_chunks(sys.argv[1])\n"
        "except am.exceptions.ChunkFileError as e:\n    print('refused', e)\n"
    )
    out = run_python(code, str(corpus))
    assert out.startswith("refused") and "chunk-00001.arrow" in out


def test_damaged_offsets_that_break_the_structure_name_the_batch(corpus: Path) -> None:
    rotten = corpus / "chunk-00000.arrow"
    _flip(rotten, _buffer_at(rotten, "s", 1) + 4, 0x40)  # offset 1: 4 -> 68
    with pytest.raises(ChunkFileError, match=r"chunk-00000\.arrow.*record batch 0"):
        am.Dataset.from_chunks(str(corpus))


def test_a_copy_or_a_repaired_file_opens(corpus: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(corpus, copy)  # new inodes and times, same bytes
    assert am.Dataset.from_chunks(str(copy))["x"][:2] == [0, 1000]
    rotten = copy / "chunk-00003.arrow"
    spot = _buffer_at(rotten, "x", 1) + 8
    _flip(rotten, spot, 0x10)
    with pytest.raises(ChunkFileError):
        am.Dataset.from_chunks(str(copy))
    _flip(rotten, spot, 0x10)  # the same bytes again
    again = am.Dataset.from_chunks(str(copy))
    assert again.fingerprint == am.Dataset.from_chunks(str(corpus)).fingerprint
    assert again["x"][301] == 301_000


def test_a_rewritten_corpus_opens_under_its_new_digests(corpus: Path) -> None:
    am.write_chunks(_table().slice(0, 150), str(corpus), rows_per_chunk=100, overwrite=True)
    assert am.Dataset.from_chunks(str(corpus)).num_rows == 150


def _saved(tmp_path: Path) -> Path:
    d = tmp_path / "saved"
    am.Dataset.from_arrow(_table()).save_to_disk(str(d), num_shards=2)
    assert am.load_from_disk(str(d)).num_rows == ROWS
    return d


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_data_file_of_a_save_is_refused(tmp_path: Path, kind: str) -> None:
    d = _saved(tmp_path)
    column, which, at, mask = DAMAGE[kind]
    rotten = d / "data-00001-of-00002.arrow"
    _flip(rotten, _buffer_at(rotten, column, which) + at, mask)
    with pytest.raises(ChunkFileError) as info:
        am.load_from_disk(str(d))
    message = str(info.value)
    assert "data-00001-of-00002.arrow" in message and "damaged" in message
    assert "save_to_disk" in message
    first = am.Dataset.from_chunks([str(d / "data-00000-of-00002.arrow")])
    assert first["x"][:2] == [0, 1000]  # the file not damaged still reads


def test_a_damaged_split_of_a_saved_dataset_dict_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "dd"
    am.DatasetDict(
        {"train": am.Dataset.from_arrow(_table()), "test": am.Dataset.from_arrow(_table())}
    ).save_to_disk(str(d))
    rotten = d / "test" / "data-00000-of-00001.arrow"
    _flip(rotten, _buffer_at(rotten, "x", 1) + 8, 0x10)
    with pytest.raises(ChunkFileError, match=r"test.data-00000-of-00001\.arrow"):
        am.load_from_disk(str(d))


def test_an_older_save_with_one_content_fingerprint_is_refused(tmp_path: Path) -> None:
    d = _saved(tmp_path)
    state_path = d / "state.json"
    state = json.loads(state_path.read_text())
    state.pop("_arrowmix_digests")
    state_path.write_text(json.dumps(state))
    assert am.load_from_disk(str(d)).num_rows == ROWS
    rotten = d / "data-00000-of-00002.arrow"
    _flip(rotten, _buffer_at(rotten, "x", 1) + 8, 0x10)
    with pytest.raises(ChunkFileError, match="saved"):
        am.load_from_disk(str(d))


def test_a_save_with_nothing_recorded_opens_as_it_is(tmp_path: Path) -> None:
    d = _saved(tmp_path)
    state_path = d / "state.json"
    state = json.loads(state_path.read_text())
    for key in ("_arrowmix_digests", "_arrowmix_content"):
        state.pop(key)
    state_path.write_text(json.dumps(state))  # as HF writes it
    rotten = d / "data-00000-of-00002.arrow"
    _flip(rotten, _buffer_at(rotten, "x", 1) + 8, 0x10)
    assert am.load_from_disk(str(d))["x"][1] == 1000 ^ 0x10


def test_the_error_names_the_damaged_batch_and_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("arrowmix._storage.chunks._BATCH_ROWS", 100)
    d = tmp_path / "corpus"
    am.write_chunks(_table(), str(d))  # one chunk of four record batches
    rotten = d / "chunk-00000.arrow"
    buf = pa.memory_map(str(rotten)).read_buffer()
    reader = pa.ipc.open_file(buf)
    assert reader.num_record_batches == 4
    values = reader.get_batch(2).column("x").buffers()[1]
    assert values is not None
    _flip(rotten, values.address - buf.address + 8, 0x10)  # a value in rows 200-299
    with pytest.raises(ChunkFileError, match=r"record batch 2 \(rows 200 to 299 of the file\)"):
        am.Dataset.from_chunks(str(d))
    with pytest.raises(ChunkFileError, match=r"record batch 2 \(rows 200 to 299 of the file\)"):
        am.Dataset.from_chunks(str(d), verify=True)


def test_the_error_names_the_damaged_batch_of_a_save(tmp_path: Path) -> None:
    d = _saved(tmp_path)
    rotten = d / "data-00001-of-00002.arrow"
    _flip(rotten, _buffer_at(rotten, "s", 2) + 1, 0x02)
    with pytest.raises(ChunkFileError, match=r"record batch 0 \(rows 0 to 199 of the file\)"):
        am.load_from_disk(str(d))


def test_a_save_replaced_during_a_load_is_not_called_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arrowmix._dataset.inputs import builders as build

    d = _saved(tmp_path)
    real = build.from_chunks

    def resave_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(build, "from_chunks", real)
        am.Dataset.from_arrow(_table().slice(0, 10)).save_to_disk(str(d), num_shards=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(build, "from_chunks", resave_first)  # state.json read, files not yet
    back = am.load_from_disk(str(d))  # the new save, read again whole: no damage reported
    assert back.num_rows == 10 and back["s"] == _table().slice(0, 10)["s"].to_pylist()
