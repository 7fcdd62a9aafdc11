"""Files read in place damaged between and during reads: an error naming the file, never values.

Every in-place format goes through one rule (``arrowmix/_storage/in_place.py``): the
version taken at open is checked before each read and after each decode. Each test changes
a file the way another tool or a disk error would (in place, keeping size, inode and
modification time: only the change time moves) and asserts the next read refuses it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._storage import mds as mds_storage
from arrowmix._storage import shard_hashes
from arrowmix.exceptions import ChunkFileError
from tests.damage import forget_checks
from tests.formats.mds_helpers import write_mds
from tests.storage.in_place import write_in_place

IN_PLACE = r"changed since it was opened \(written in place"


# ---------------------------------------------------------------- Parquet


def _parquet(path: Path, **kwargs: Any) -> str:
    t = pa.table({"x": np.arange(300, dtype=np.int64)})
    pq.write_table(t, path, row_group_size=100, compression="none", **kwargs)
    return str(path)


def test_parquet_written_in_place_between_reads(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "p.parquet")
    ds = am.Dataset.from_parquet(path, in_place=True)
    assert ds[0]["x"] == 0
    write_in_place(path, b"\x00", offset=200)
    with pytest.raises(ChunkFileError, match=rf"Parquet file '.*p\.parquet' {IN_PLACE}"):
        ds[150]


def test_parquet_written_while_a_row_group_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _parquet(tmp_path / "d.parquet")
    ds = am.Dataset.from_parquet(path, in_place=True)
    real = pq.ParquetFile.read_row_group

    def racing(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        write_in_place(path, b"\x00", offset=200)  # lands once the bytes were read
        return out

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", racing)
    with pytest.raises(ChunkFileError, match=rf"d\.parquet' {IN_PLACE}"):
        ds[150]
    monkeypatch.undo()
    with pytest.raises(ChunkFileError, match=r"d\.parquet"):  # and not cached meanwhile
        ds[150]


def test_parquet_page_checksums_are_verified(tmp_path: Path) -> None:
    """A value damaged before the open, in a file written with page checksums, raises."""
    path = _parquet(tmp_path / "c.parquet", write_page_checksum=True)
    data = bytearray(Path(path).read_bytes())
    data[data.index(np.int64(150).tobytes())] ^= 1
    Path(path).write_bytes(bytes(data))
    ds = am.Dataset.from_parquet(path, in_place=True)
    with pytest.raises(ChunkFileError, match=r"c\.parquet': row group 1 .*CRC"):
        ds[150]


# ---------------------------------------------------------------- MDS


def _mds(out: Path, **kwargs: Any) -> str:
    rows = ({"text": f"t{k}", "id": k} for k in range(40))
    return write_mds(str(out), {"text": "str", "id": "int"}, rows, size_limit=300, **kwargs)


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_mds_shard_written_in_place_between_reads(tmp_path: Path, compression: Any) -> None:
    out = _mds(tmp_path / "m", compression=compression)
    ds = am.Dataset.from_mds(out)
    assert ds[0]["id"] == 0
    shard = json.loads((Path(out) / "index.json").read_text())["shards"][-1]
    name = (shard.get("zip_data") or shard["raw_data"])["basename"]
    write_in_place(Path(out) / name, b"\x00", offset=4)
    with pytest.raises(ChunkFileError, match=rf"MDS shard '.*{name}' {IN_PLACE}"):
        ds[len(ds) - 1]


def test_mds_shard_written_while_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _mds(tmp_path / "m")
    ds = am.Dataset.from_mds(out)
    real = mds_storage.decode_columns

    def racing(buf: Any, shard: Any, *args: Any) -> Any:
        got = real(buf, shard, *args)
        write_in_place(shard.path, b"\x00", offset=4)
        return got

    monkeypatch.setattr("arrowmix._dataset.tables.mds.decode_columns", racing)
    with pytest.raises(ChunkFileError, match=rf"shard\.00000\.mds' {IN_PLACE}"):
        ds[0]


def _flip_in_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_mds_declared_hashes_refuse_a_flipped_bit(tmp_path: Path, compression: Any) -> None:
    """Damaged before the open (the digest then names the damaged bytes): the index's hashes."""
    out = _mds(tmp_path / "h", compression=compression, hashes=["sha1", "xxh64"])
    ds = am.Dataset.from_mds(out)
    expected = ds["id"]
    assert expected == list(range(40))
    suffix = ".zstd" if compression else ""
    _flip_in_middle(Path(out) / f"shard.00001.mds{suffix}")
    forget_checks()  # a new process
    with pytest.raises(ChunkFileError, match=r"shard\.00001\.mds.*' is damaged: its bytes hash to "
                       r"\w+ \(xxh64\) where its index.json declares"):  # fmt: skip
        am.Dataset.from_mds(out)["id"]


def test_mds_hashes_are_checked_once_per_file_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _mds(tmp_path / "o", compression="zstd", hashes=["md5"])
    shards = len(json.loads((Path(out) / "index.json").read_text())["shards"])
    calls = []
    real = shard_hashes.hash_hex
    monkeypatch.setattr(shard_hashes, "hash_hex", lambda a, d: calls.append(a) or real(a, d))
    assert am.Dataset.from_mds(out)["id"] == list(range(40))
    assert calls == ["md5"] * shards
    forget_checks()  # a new process: the records vouch for the versions
    assert am.Dataset.from_mds(out)["id"] == list(range(40))
    assert len(calls) == shards


def test_mds_index_with_malformed_hashes_is_named(tmp_path: Path) -> None:
    out = _mds(tmp_path / "b", hashes=["sha1"])
    index = Path(out) / "index.json"
    meta = json.loads(index.read_text())
    meta["shards"][0]["raw_data"]["hashes"] = ["sha1"]
    index.write_text(json.dumps(meta))
    with pytest.raises(ChunkFileError, match=r"index.json' describes shard 0 badly.*hashes"):
        am.Dataset.from_mds(out)


# ---------------------------------------------------------------- token files


def _tokens(path: Path) -> str:
    np.arange(1, 61, dtype=np.uint16).tofile(path)
    return str(path)


def test_token_file_written_in_place_between_reads(tmp_path: Path) -> None:
    path = _tokens(tmp_path / "t.bin")
    ds = am.from_token_file(path, np.uint16, seq_len=10)
    assert ds[0]["input_ids"][:2] == [1, 2]
    write_in_place(path, np.uint16(999).tobytes(), offset=0)
    for read in (lambda: ds[0], lambda: ds[2:4], lambda: ds.select([5, 1])[:]):
        with pytest.raises(ChunkFileError, match=rf"Token file '.*t\.bin' {IN_PLACE}"):
            read()


def test_token_file_truncated_under_a_stream_raises_at_the_next_batch(tmp_path: Path) -> None:
    """Each copy out of the map checks the file first: an error, not values, not a SIGBUS."""
    path = _tokens(tmp_path / "s.bin")
    ds = am.from_token_file(path, np.uint16, seq_len=10)
    batches = iter(ds.to_stream(shuffle=None, infinite=False).pack("input_ids", 10))
    assert next(batches)["input_ids"].tolist()[0][:2] == [1, 2]
    with open(path, "r+b") as f:
        f.truncate(40)
    with pytest.raises(ChunkFileError, match=r"s\.bin' changed since it was opened \(40 bytes now"):
        next(batches)


def test_a_map_result_viewing_a_token_file_checks_it(tmp_path: Path) -> None:
    """A map keeps the token column by reference: its reads check the file as the source's."""
    path = _tokens(tmp_path / "v.bin")
    lengths = am.from_token_file(path, np.uint16, seq_len=10).map(
        lambda r: {"n": len(r["input_ids"])}
    )
    assert lengths[0]["input_ids"][:2] == [1, 2] and lengths[0]["n"] == 10
    write_in_place(path, np.uint16(999).tobytes(), offset=0)
    stream = lengths.to_stream(shuffle=None, infinite=False)
    for read in (lambda: lengths[0], lambda: next(iter(stream.pack("input_ids", 10)))):
        with pytest.raises(ChunkFileError, match=rf"Token file '.*v\.bin' {IN_PLACE}"):
            read()


def test_megatron_index_rewritten_in_place_is_refused(tmp_path: Path) -> None:
    prefix = str(tmp_path / "c")
    am.Dataset.from_dict({"input_ids": [[1, 2, 3], [4, 5], [6]]}).to_megatron(prefix)
    ds = am.from_megatron(prefix)
    assert ds["input_ids"] == [[1, 2, 3], [4, 5], [6]]
    write_in_place(f"{prefix}.idx", Path(f"{prefix}.idx").read_bytes()[:4])
    with pytest.raises(ChunkFileError, match=rf"Token file '.*c\.idx' {IN_PLACE}"):
        ds[1]


def test_a_read_checks_the_token_files_it_touches(tmp_path: Path) -> None:
    a, b, c = (_tokens(tmp_path / f"{n}.bin") for n in "abc")
    ds = am.from_token_file([a, b, c], np.uint16, seq_len=10)  # 6 rows per file
    write_in_place(b, np.uint16(999).tobytes(), offset=0)
    assert ds[0]["input_ids"][:2] == [1, 2] and ds[12]["input_ids"][:2] == [1, 2]
    for read in (lambda: ds[6], lambda: ds[0:18], lambda: ds.select([13, 7])[:]):
        with pytest.raises(ChunkFileError, match=rf"Token file '.*b\.bin' {IN_PLACE}"):
            read()


# ---------------------------------------------------------------- Lance


def test_lance_data_file_written_in_place_between_reads(tmp_path: Path) -> None:
    lance = pytest.importorskip("lance")
    uri = str(tmp_path / "c.lance")
    lance.write_dataset(pa.table({"x": np.arange(90)}), uri, max_rows_per_file=30)
    ds = am.Dataset.from_lance(uri, block_rows=10)
    assert ds[0]["x"] == 0 and ds[80]["x"] == 80
    second = lance.dataset(uri).get_fragments()[1].data_files()[0].path
    write_in_place(Path(uri) / "data" / second, b"\x00", offset=0)
    assert ds[5]["x"] == 5 and ds[75]["x"] == 75  # the other fragments' files: unchanged
    with pytest.raises(ChunkFileError, match=rf"Lance data file '.*{second}' {IN_PLACE}"):
        ds[45]
