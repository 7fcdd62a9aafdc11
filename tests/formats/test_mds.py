"""MDS shards read in place equal mosaicml-streaming's own reads of the files it wrote."""

from __future__ import annotations

import io
import json
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix.exceptions import ChunkFileError, SchemaMismatchError
from tests.formats.mds_helpers import read_with_streaming, streaming_mds, write_mds

Image = pytest.importorskip("PIL.Image")

N = 80
COLUMNS = {
    "text": "str", "raw": "bytes", "id": "int", "u8": "uint8", "i16": "int16",
    "u64": "uint64", "f16": "float16", "f32": "float32", "f64": "float64",
    "si": "str_int", "sf": "str_float", "tokens": "ndarray:uint16",
    "emb": "ndarray:float32:2,3", "any": "ndarray", "meta": "json", "obj": "pkl",
    "png": "png", "jpeg": "jpeg",
}  # fmt: skip


def sample(k: int) -> dict[str, Any]:
    """Sample ``k``, with every encoding users write (empty strings and bytes included)."""
    rng = np.random.default_rng(k)
    n = int(rng.integers(1, 40))
    wide = int(rng.integers(1, 3)) * (300 if k % 5 == 0 else 2)  # uint16 or uint8 shapes
    pixels = rng.integers(0, 255, (4, 5, 3), dtype=np.uint8)
    return {
        "text": f"doc {k} é 文" * (k % 4), "raw": bytes(rng.integers(0, 256, k % 9, np.uint8)),
        "id": k * 7919 - 10**12, "u8": np.uint8(k % 256), "i16": np.int16(-k),
        "u64": np.uint64(2**63 + k), "f16": np.float16(k / 8), "f32": np.float32(k / 3),
        "f64": k / 7, "si": -(k**5), "sf": k / 9 - 1e-300, "tokens": rng.integers(0, 65535, n,
        np.uint16), "emb": rng.standard_normal((2, 3)).astype(np.float32),
        "any": np.arange(wide * 2, dtype=np.int64).reshape(wide, 2) - k,
        "meta": {"k": k, "tags": ["a", "b"][: k % 3], "score": k / 2},
        "obj": {"k": k, "pair": [k, -k], "name": str(k)},
        "png": Image.fromarray(pixels), "jpeg": Image.fromarray(pixels),
    }  # fmt: skip


def plain(value: Any) -> Any:
    """A value of either reader, comparable with ``==`` (images as their pixels)."""
    if isinstance(value, bytes | bytearray) and value[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0"):
        value = Image.open(io.BytesIO(value))
    if isinstance(value, Image.Image):
        return ("image", value.mode, value.size, np.asarray(value).tolist())
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


SLOW = pytest.mark.slow  # the other codecs: the same reads, after another decompression
CODECS = [None, "zstd", *(pytest.param(c, marks=SLOW) for c in ("gz", "br", "snappy", "bz2"))]


@pytest.fixture(scope="module", params=CODECS)
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """N samples written by streaming's MDSWriter in shards of ~40 KB, compressed or not."""
    out = str(tmp_path_factory.mktemp("mds") / "corpus")
    return write_mds(out, COLUMNS, (sample(k) for k in range(N)),
                     compression=request.param, size_limit=40_000)  # fmt: skip


def test_every_value_equals_streaming_reader(written: str, tmp_path: Path) -> None:
    ref = [plain(s) for s in read_with_streaming(written, str(tmp_path / "ref"))]
    assert len([n for n in os.listdir(written) if n.startswith("shard.")]) > 3
    ds = am.Dataset.from_mds(written, allow_unsafe_types=True)
    assert len(ds) == N and sorted(ds.column_names) == sorted(COLUMNS)
    rows = [plain(r) for r in ds]
    assert rows == ref
    pos = np.random.default_rng(0).integers(0, N, 50)
    assert [plain(r) for r in ds.select(pos.tolist())] == [ref[i] for i in pos]
    assert plain(ds[77]) == ref[77] and plain(ds[0]) == ref[0]
    types = {f.name: str(f.type) for f in state_of(ds).reader.schema}
    assert types["tokens"] == "list<item: uint16>" and types["f16"] == "halffloat"
    assert types["emb"] == "list<item: list<item: float>>" and types["png"] == "binary"


def test_columns_pickling_and_fingerprint(written: str, tmp_path: Path) -> None:
    ds = am.Dataset.from_mds(Path(written) / "index.json", columns=["tokens", "text"])
    assert ds.column_names == ["tokens", "text"]
    ref = read_with_streaming(written, str(tmp_path / "ref"))
    assert ds["text"] == [s["text"] for s in ref]
    again = pickle.loads(pickle.dumps(ds))
    assert again[:] == ds[:] and again.fingerprint == ds.fingerprint
    assert am.Dataset.from_mds(written, columns=["tokens", "text"]).fingerprint == ds.fingerprint
    assert am.Dataset.from_mds(written, columns=["tokens"]).fingerprint != ds.fingerprint
    with pytest.raises(ValueError, match=r"Column 'nope' is not in the MDS dataset"):
        am.Dataset.from_mds(written, columns=["nope"])
    with pytest.raises(ValueError, match=r"'obj' is pickled .*allow_unsafe_types=True"):
        am.Dataset.from_mds(written)


@pytest.fixture
def small(tmp_path: Path) -> str:
    """60 samples of text and token ids in 4 uncompressed shards."""
    cols = {"text": "str", "input_ids": "ndarray:int32", "id": "int"}
    rows = ({"text": f"t{k}", "input_ids": np.arange(k % 5 + 1, dtype=np.int32) + k, "id": k}
            for k in range(60))  # fmt: skip
    return write_mds(str(tmp_path / "small"), cols, rows, size_limit=500)


def double(row: dict) -> dict:
    return {"twice": row["id"] * 2}


def test_map_cache_is_reused_and_a_changed_shard_gets_a_new_one(small: str, tmp_path: Path) -> None:
    cache = tmp_path / "results"
    first = am.Dataset.from_mds(small, cache_dir=cache).map(double)
    assert first.cache_files and all(f.startswith(str(cache)) for f in first.cache_files)
    assert not any(n.endswith(".arrow") for n in os.listdir(small))  # nothing beside the shards
    second = am.Dataset.from_mds(small, cache_dir=cache).map(double)
    assert second.cache_files == first.cache_files and second["twice"] == [2 * k for k in range(60)]
    assert all(pa.ipc.open_file(f).schema.names == ["twice"] for f in first.cache_files)
    shard = Path(small) / "shard.00001.mds"
    data = bytearray(shard.read_bytes())
    at = data.index(b"t1")  # the text of a sample of the second shard, same length
    data[at : at + 2] = b"T1"
    shard.write_bytes(bytes(data))
    third = am.Dataset.from_mds(small, cache_dir=cache)
    assert third.fingerprint != first.fingerprint and "T1" in "".join(third["text"])


def test_streams_shards_as_chunks_and_token_path(small: str) -> None:
    ds = am.Dataset.from_mds(small)
    assert len(state_of(ds).file_offsets) > 4  # 4 shards or more: chunks of the stream
    for shuffle in ("global", "chunks"):
        got = sorted(r["id"] for r in ds.to_stream(shuffle=shuffle, seed=3, infinite=False))
        assert got == list(range(60)), shuffle
    same = am.Dataset.from_dict({"input_ids": ds["input_ids"]})
    same = same.cast_column("input_ids", ds.features["input_ids"])

    def batches(d: am.Dataset) -> list[Any]:
        s = d.select_columns(["input_ids"]).to_stream(seed=1, infinite=False)
        return [{k: v.tolist() for k, v in b.items()} for b in s.pack("input_ids", 16, tail="pad")]

    assert batches(ds) == batches(same)


def test_several_directories_and_a_bounded_cache(small: str, tmp_path: Path) -> None:
    other = write_mds(str(tmp_path / "other"), {"text": "str", "input_ids": "ndarray:int32",
                      "id": "int"}, ({"text": "o", "input_ids": np.ones(3, np.int32), "id": -k}
                      for k in range(10)))  # fmt: skip
    ds = am.Dataset.from_mds([small, other], cache_size="1KB")
    assert len(ds) == 70 and ds["id"][60:] == [-k for k in range(10)]
    assert state_of(ds).reader.stats()["evicted"] > 0
    bad = write_mds(str(tmp_path / "bad"), {"text": "str"}, [{"text": "x"}])
    with pytest.raises(SchemaMismatchError, match=r"bad.* has other columns"):
        am.Dataset.from_mds([small, bad])


# ---------------------------------------------------------------- damage


def test_truncated_shard_is_named_at_open(small: str) -> None:
    shard = Path(small) / "shard.00002.mds"
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises(ChunkFileError, match=r"shard.00002.mds' is \d+ bytes; index.json says"):
        am.Dataset.from_mds(small)


def test_truncated_compressed_shard_is_named(tmp_path: Path) -> None:
    out = write_mds(str(tmp_path / "z"), {"text": "str"}, ({"text": f"x{k}"} for k in range(50)),
                    compression="zstd", size_limit=300)  # fmt: skip
    shard = Path(out) / "shard.00000.mds.zstd"
    shard.write_bytes(shard.read_bytes()[:-3])
    with pytest.raises(ChunkFileError, match=r"shard.00000.mds.zstd' is \d+ bytes; index.json"):
        am.Dataset.from_mds(out)


def test_bad_index_json_is_named(small: str) -> None:
    index = Path(small) / "index.json"
    good = index.read_text()
    index.write_text(good[:-20])
    with pytest.raises(ChunkFileError, match=r"index.json' is not readable JSON"):
        am.Dataset.from_mds(small)
    meta = json.loads(good)
    meta["shards"][1]["format"] = "json"
    index.write_text(json.dumps(meta))
    with pytest.raises(ChunkFileError, match=r"index.json' describes shard 1 badly.*format"):
        am.Dataset.from_mds(small)
    index.unlink()
    with pytest.raises(ChunkFileError, match=r"index.json' does not exist"):
        am.Dataset.from_mds(small)


def test_missing_shard_is_named(small: str) -> None:
    (Path(small) / "shard.00003.mds").unlink()
    with pytest.raises(ChunkFileError, match=r"shard.00003.mds' .*does not exist"):
        am.Dataset.from_mds(small)


def test_shard_changed_after_open_and_damaged_offsets_are_named(small: str) -> None:
    ds = am.Dataset.from_mds(small)
    shard = Path(small) / "shard.00001.mds"
    data = bytearray(shard.read_bytes())
    data[8:12] = np.uint32(10**6).tobytes()  # an offset far out of the file, same size
    shard.write_bytes(bytes(data))
    with pytest.raises(ChunkFileError, match=r"shard.00001.mds' changed since it was opened"):
        ds[:]
    with pytest.raises(ChunkFileError, match=r"shard.00001.mds' is damaged: its sample offsets"):
        am.Dataset.from_mds(small)[:]


def test_an_encoding_not_read_is_named(tmp_path: Path) -> None:
    out = write_mds(str(tmp_path / "pil"), {"im": "pil", "k": "int"},
                    [{"im": Image.new("L", (2, 2)), "k": 1}])  # fmt: skip
    with pytest.raises(ValueError, match=r"MDS column 'im' .* encoding 'pil'"):
        am.Dataset.from_mds(out)
    assert am.Dataset.from_mds(out, columns=["k"])[:] == {"k": [1]}


def test_a_remote_url_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reads local MDS directories; 's3://b/mds' is remote"):
        am.Dataset.from_mds("s3://b/mds")
    assert streaming_mds().MDSWriter is not None


def test_a_str_int_beyond_int64_is_named(tmp_path: Path) -> None:
    out = write_mds(str(tmp_path / "big"), {"n": "str_int"}, [{"n": 1}, {"n": 10**30}])
    with pytest.raises(ChunkFileError, match=r"column 'n' \(str_int\) holds a value that is not"):
        am.Dataset.from_mds(out)[:]
