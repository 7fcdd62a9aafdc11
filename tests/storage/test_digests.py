"""Root fingerprints from chunk content digests: recorded at write, full hash for foreign files."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage import digests, integrity
from arrowmix.exceptions import ChunkFileError


def _foreign_chunk(path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _forget_memory(monkeypatch) -> None:
    """As in a new process: nothing remembered in memory (the on-disk digest cache stays)."""
    monkeypatch.setattr(digests, "_MEMO", {})
    monkeypatch.setattr(digests, "_MANIFESTS", {})


def _count_full_hashes(monkeypatch) -> list[str]:
    hashed: list[str] = []
    real = digests._hash_file

    def counting(path: str) -> str:
        hashed.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(digests, "_hash_file", counting)
    return hashed


def test_same_size_rewrite_with_corrected_labels_changes_fingerprint_and_results(tmp_path):
    # 100k int64 labels (800 KB) then the text: the corrected labels lie ~160 KB into the
    # file, away from its start, middle and end.
    n = 100_000
    labels = [i % 2 for i in range(n)]
    am.write_chunks(pa.table({"label": labels, "text": ["t"] * n}), tmp_path)
    ds = am.Dataset.from_chunks(str(tmp_path))

    def double(batch):
        return {"y": [v * 2 for v in batch["label"]]}

    assert ds.map(double, batched=True)["y"][20_000:20_002] == [0, 2]
    assert len(ds.filter(lambda b: [v == 1 for v in b["label"]], batched=True)) == n // 2
    size = (tmp_path / "chunk-00000.arrow").stat().st_size
    fixed = labels[:20_000] + [1 - v for v in labels[20_000:20_100]] + labels[20_100:]
    am.write_chunks(pa.table({"label": fixed, "text": ["t"] * n}), tmp_path, overwrite=True)
    assert (tmp_path / "chunk-00000.arrow").stat().st_size == size
    again = am.Dataset.from_chunks(str(tmp_path))
    assert again.fingerprint != ds.fingerprint
    assert again.map(double, batched=True)["y"][20_000:20_002] == [2, 0]
    kept = again.filter(lambda b: [v == 1 for v in b["label"]], batched=True)
    assert len(kept) == n // 2  # as many flipped each way
    assert kept[10_000 - 0]["label"] == 1


def test_moved_or_copied_corpus_keeps_its_fingerprint(tmp_path, monkeypatch):
    am.write_chunks(({"v": i} for i in range(30)), tmp_path / "a", rows_per_chunk=10)
    fp = am.Dataset.from_chunks(str(tmp_path / "a")).fingerprint
    shutil.move(tmp_path / "a", tmp_path / "b")
    hashed = _count_full_hashes(monkeypatch)
    assert am.Dataset.from_chunks(str(tmp_path / "b")).fingerprint == fp
    assert hashed == []  # mv keeps inode and mtime: the recorded digests are used
    shutil.copytree(tmp_path / "b", tmp_path / "c", copy_function=shutil.copy)
    assert am.Dataset.from_chunks(str(tmp_path / "c")).fingerprint == fp
    assert len(hashed) == 3  # new inodes and mtimes: hashed in full, to the same digests


def test_opening_an_arrowmix_corpus_reads_no_data(tmp_path, monkeypatch):
    am.write_chunks(({"v": i} for i in range(100)), tmp_path, rows_per_chunk=10)
    _forget_memory(monkeypatch)
    monkeypatch.setattr(integrity, "_checked", set())
    hashed = _count_full_hashes(monkeypatch)

    def no_validation(*args, **kwargs):
        raise AssertionError("validated again although write_chunks validated it")

    monkeypatch.setattr(integrity, "problem", no_validation)
    am.Dataset.from_chunks(str(tmp_path))
    assert hashed == []
    manifest = json.loads((tmp_path / "_manifest.json").read_text())
    assert [c["name"] for c in manifest["chunks"]] == [f"chunk-{i:05d}.arrow" for i in range(10)]
    assert manifest["rows"] == 100
    for chunk in manifest["chunks"]:  # the recorded digest is the full file's xxh3
        assert chunk["digest"] == digests._hash_file(str(tmp_path / chunk["name"]))


def test_foreign_chunks_are_hashed_in_full_once(tmp_path, monkeypatch):
    for i in range(3):
        _foreign_chunk(tmp_path / f"part-{i}.arrow", pa.table({"v": [i] * 1000}))
    hashed = _count_full_hashes(monkeypatch)
    fp = am.Dataset.from_chunks(str(tmp_path)).fingerprint
    assert sorted(hashed) == ["part-0.arrow", "part-1.arrow", "part-2.arrow"]
    _forget_memory(monkeypatch)
    assert am.Dataset.from_chunks(str(tmp_path)).fingerprint == fp
    assert len(hashed) == 3  # remembered under the cache root, per file version
    assert list((tmp_path / "..").glob("digests")) == []  # nothing written beside the data


def test_foreign_in_place_edit_outside_any_sample_changes_fingerprint(tmp_path, monkeypatch):
    # 1 MiB of values: an edit in the middle of a column, away from the file's start, middle
    # and end, used to go unseen by sampled summaries.
    values = list(range(2**17))
    path = tmp_path / "data.arrow"
    _foreign_chunk(path, pa.table({"v": values}))
    before = am.Dataset.from_chunks(str(path))
    assert before["v"][40_000] == 40_000
    values[40_000] = -1
    _foreign_chunk(path, pa.table({"v": values}))  # same size, same inode
    stat = path.stat()
    # Filesystem timestamps are coarse: make sure this rewrite has its own mtime, as any
    # rewrite more than a clock tick later has.
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    _forget_memory(monkeypatch)
    after = am.Dataset.from_chunks(str(path))
    assert after["v"][40_000] == -1
    assert after.fingerprint != before.fingerprint


def test_chunk_replaced_behind_the_manifest_is_hashed_and_refused(tmp_path):
    am.write_chunks(({"v": i} for i in range(20)), tmp_path / "a", rows_per_chunk=10)
    am.write_chunks(({"v": -i} for i in range(20)), tmp_path / "b", rows_per_chunk=10)
    fp_a = am.Dataset.from_chunks(str(tmp_path / "a")).fingerprint
    # Another tool replaces chunk 1 of `a` with chunk 1 of `b`; a's manifest still lists the
    # old digest, but the file's inode and mtime no longer match it: it is hashed, and its
    # bytes are not those recorded, so it is refused (never served as `a`'s data).
    shutil.copy(tmp_path / "b" / "chunk-00001.arrow", tmp_path / "a" / "chunk-00001.arrow")
    with pytest.raises(ChunkFileError, match=r"chunk-00001\.arrow.*_manifest\.json"):
        am.Dataset.from_chunks(str(tmp_path / "a"))
    shutil.copy(tmp_path / "b" / "chunk-00001.arrow", tmp_path / "a" / "chunk-00000.arrow")
    (tmp_path / "a" / "_manifest.json").unlink()  # no record: opens under its bytes' digests
    ds = am.Dataset.from_chunks(str(tmp_path / "a"), allow_incomplete=True)
    assert ds["v"][10:12] == [-10, -11]
    assert ds.fingerprint != fp_a


@pytest.mark.parametrize("size", [0, 10, 3 * 2**20])
def test_digest_of_local_file_is_its_full_xxh3(tmp_path, size):
    import xxhash

    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert digests._hash_file(str(tmp_path / "f")) == xxhash.xxh3_64_hexdigest(data)


def test_invalid_arrow_data_is_not_written(tmp_path):
    offsets = pa.py_buffer(b"\x00\x00\x00\x00\x02\x00\x00\x00")
    bad = pa.StringArray.from_buffers(1, offsets, pa.py_buffer(b"\xff\xfe"))  # not UTF-8
    with pytest.raises(ValueError, match=r"chunk-00000\.arrow"):
        am.write_chunks(pa.table({"s": bad}), tmp_path)
    assert not list(tmp_path.glob("chunk-*.arrow"))


def test_digests_recorded_for_batches_of_many_pieces_are_those_of_the_bytes(tmp_path):
    import xxhash

    # Buffers larger than the writer's piece size: the digests cover every byte, in order.
    big = "x" * (digests.WRITE_PIECE + 12_345)
    rows = [{"s": big if i % 2 else str(i), "n": i} for i in range(8)]
    am.write_chunks(rows, tmp_path, rows_per_chunk=5)
    manifest = json.loads((tmp_path / "_manifest.json").read_text())
    for chunk in manifest["chunks"]:
        data = (tmp_path / chunk["name"]).read_bytes()
        assert chunk["digest"] == xxhash.xxh3_64_hexdigest(data)
        for start, end, _rows, digest in chunk["batches"]:
            assert digest == xxhash.xxh3_64_hexdigest(data[start:end])
    assert am.Dataset.from_chunks(str(tmp_path))["s"] == [r["s"] for r in rows]
