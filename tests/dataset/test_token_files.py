"""Flat numpy token files (nanoGPT's ``train.bin``) read in place."""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np
import pytest

import arrowmix as am
from arrowmix._storage.local import cache_root
from arrowmix.exceptions import CacheWarning, ChunkFileError, TokenFileError


def write(path: Any, tokens: list[int], dtype: Any = np.uint16) -> str:
    np.asarray(tokens, dtype=dtype).tofile(path)
    return str(path)


def test_nanogpt_train_bin_in_blocks(tmp_path: Any) -> None:
    """nanoGPT's uint16 ``train.bin``, cut as its ``get_batch`` cuts samples (no shuffle)."""
    tokens = np.random.default_rng(0).integers(0, 50257, 1000).astype(np.uint16)
    path = str(tmp_path / "train.bin")
    tokens.tofile(path)
    block = 64
    ds = am.Dataset.from_token_file(path, np.uint16, seq_len=block + 1)
    data = np.memmap(path, dtype=np.uint16, mode="r")  # as nanoGPT opens it
    assert len(ds) == 1000 // (block + 1)
    for i in (0, 7, len(ds) - 1):
        row = np.asarray(ds[i]["input_ids"])
        x, y = data[i * (block + 1) : i * (block + 1) + block], data[i * (block + 1) + 1 :][:block]
        assert row[:-1].tolist() == x.tolist() and row[1:].tolist() == y.tolist()
    assert ds.features["input_ids"].feature.dtype == "uint16"


def test_eos_boundaries_are_scanned_once_and_cached(tmp_path: Any) -> None:
    path = write(tmp_path / "t.bin", [7, 8, 2, 2, 9, 10, 11, 2, 12], np.uint32)
    ds = am.from_token_file(path, "uint32", eos_id=2)
    assert ds["input_ids"] == [[7, 8, 2], [2], [9, 10, 11, 2], [12]]
    cached = os.listdir(os.path.join(cache_root(), "token-bounds"))
    assert any(name.endswith("-le-u4-eos2.bounds") for name in cached)
    again = am.from_token_file(path, np.uint32, eos_id=2)
    assert again["input_ids"] == ds["input_ids"] and again._fingerprint == ds._fingerprint
    assert am.from_token_file(path, np.uint32, eos_id=9)._fingerprint != ds._fingerprint
    ending = write(tmp_path / "e.bin", [1, 2, 3, 2], np.uint32)
    assert am.from_token_file(ending, np.uint32, eos_id=2)["input_ids"] == [[1, 2], [3, 2]]


def _bounds_files() -> list[str]:
    top = os.path.join(cache_root(), "token-bounds")
    return sorted(os.path.join(top, n) for n in os.listdir(top))


@pytest.mark.parametrize("damage", ["swap", "flip", "truncate", "empty", "old-format"])
def test_damaged_or_swapped_eos_boundaries_are_computed_again(tmp_path: Any, damage: str) -> None:
    """The boundaries' cache checks what it serves: never another file's documents."""
    a = write(tmp_path / "a.bin", [5, 6, 0, 7, 0, 8, 9, 10, 0])
    b = write(tmp_path / "b.bin", [1, 0, 2, 3, 4, 0, 5, 0, 6])
    want_a = [[5, 6, 0], [7, 0], [8, 9, 10, 0]]
    want_b = [[1, 0], [2, 3, 4, 0], [5, 0], [6]]
    assert am.from_token_file(a, np.uint16, eos_id=0)["input_ids"] == want_a
    assert am.from_token_file(b, np.uint16, eos_id=0)["input_ids"] == want_b
    x, y = _bounds_files()
    if damage == "swap":  # each file's boundaries in the other's place
        os.rename(x, x + ".t"), os.rename(y, x), os.rename(x + ".t", y)
    elif damage == "flip":  # one bit of a boundary
        with open(x, "r+b") as f:
            f.seek(8)
            byte = f.read(1)
            f.seek(8)
            f.write(bytes([byte[0] ^ 1]))
    elif damage == "truncate":
        os.truncate(x, os.path.getsize(x) - 3)
    elif damage == "empty":
        os.truncate(x, 0)
    else:  # a plain array where a sealed one is expected
        with open(x, "wb") as f:
            f.write(np.array([0, 1, 9], dtype="<i8").tobytes())
    with pytest.warns(CacheWarning, match="token file"):
        got = [am.from_token_file(p, np.uint16, eos_id=0)["input_ids"] for p in (a, b)]
    assert got == [want_a, want_b]


def test_eos_boundaries_of_another_dtype_are_not_served(tmp_path: Any) -> None:
    path = write(tmp_path / "t.bin", [5, 6, 0, 7, 0, 3])
    as_u2 = am.from_token_file(path, np.uint16, eos_id=0)["input_ids"]
    as_u1 = am.from_token_file(path, np.uint8, eos_id=0)["input_ids"]
    assert as_u2 == [[5, 6, 0], [7, 0], [3]]
    assert as_u1 == [[5, 0], [6, 0], [0], [0], [7, 0], [0], [0], [3, 0]]  # bytes of uint16


def test_document_offsets_from_an_array_or_npy(tmp_path: Any) -> None:
    path = write(tmp_path / "t.bin", list(range(10)), np.uint32)
    np.save(tmp_path / "offsets.npy", np.array([0, 3, 3, 8]))
    by_file = am.from_token_file(path, np.uint32, offsets=str(tmp_path / "offsets.npy"))
    expected = [[0, 1, 2], [], [3, 4, 5, 6, 7], [8, 9]]
    assert by_file["input_ids"] == expected
    by_array = am.from_token_file(path, np.uint32, offsets=[0, 3, 3, 8, 10])
    assert by_array["input_ids"] == expected
    other = am.from_token_file(path, np.uint32, offsets=[0, 4])
    assert other._fingerprint not in (by_file._fingerprint, by_array._fingerprint)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([1, 3], "must start at 0"),
        ([0, 5, 3], r"decrease at position 2 \(3 after 5\)"),
        ([0, 11], "reach token 11, past the file's 10 tokens"),
        ([[0, 1]], "1-d integer array"),
    ],
)
def test_bad_offsets_name_the_file(tmp_path: Any, offsets: Any, message: str) -> None:
    path = write(tmp_path / "t.bin", list(range(10)), np.uint32)
    with pytest.raises(TokenFileError, match=message) as info:
        am.from_token_file(path, np.uint32, offsets=offsets)
    assert "t.bin" in str(info.value)


def test_size_not_a_multiple_of_the_dtype(tmp_path: Any) -> None:
    path = write(tmp_path / "odd.bin", [1, 2, 3], np.uint8)
    with pytest.raises(TokenFileError, match=r"odd\.bin' has 3 bytes, not a multiple of the 2"):
        am.from_token_file(path, np.uint16, seq_len=1)


def test_boundaries_must_be_given_once(tmp_path: Any) -> None:
    path = write(tmp_path / "t.bin", [1, 2])
    with pytest.raises(ValueError, match="exactly one of"):
        am.from_token_file(path, np.uint16)
    with pytest.raises(ValueError, match="exactly one of"):
        am.from_token_file(path, np.uint16, eos_id=0, seq_len=4)
    with pytest.raises(ValueError, match="integer type"):
        am.from_token_file(path, np.float32, seq_len=1)
    with pytest.raises(TokenFileError, match="does not exist"):
        am.from_token_file(str(tmp_path / "none.bin"), np.uint16, seq_len=1)


def test_several_files_and_pickling(tmp_path: Any) -> None:
    a = write(tmp_path / "a.bin", [1, 0, 2, 3, 0])
    b = write(tmp_path / "b.bin", [4, 0])
    ds = am.from_token_file([a, b], np.uint16, eos_id=0)
    assert ds["input_ids"] == [[1, 0], [2, 3, 0], [4, 0]]
    blob = pickle.dumps(ds)
    assert pickle.loads(blob)["input_ids"] == ds["input_ids"]
    write(tmp_path / "b.bin", [5, 0])  # rewritten in place
    with pytest.raises(ChunkFileError, match=r"b\.bin' changed since it was opened"):
        pickle.loads(blob)
    assert am.from_token_file([a, b], np.uint16, eos_id=0)._fingerprint != ds._fingerprint


@pytest.mark.parametrize("eos_id", [-1, 70000])
def test_an_eos_id_the_dtype_cannot_hold_is_refused(tmp_path: Any, eos_id: int) -> None:
    path = write(tmp_path / "t.bin", [5, 6, 0, 7])
    with pytest.raises(ValueError, match=rf"`eos_id` {eos_id} cannot occur .* uint16"):
        am.from_token_file(path, np.uint16, eos_id=eos_id)


def test_input_paths_of_another_type_are_named(tmp_path: Any) -> None:
    with pytest.raises(TypeError, match=r"Input paths must be paths.*got int 123"):
        am.Dataset.from_parquet(123, in_place=True)
    with pytest.raises(TypeError, match="got NoneType None"):
        am.Dataset.from_json([str(tmp_path / "a.jsonl"), None])
    with pytest.raises(TypeError, match="got int 5"):
        am.Dataset.from_mds(5)
