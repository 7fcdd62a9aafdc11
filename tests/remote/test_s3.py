"""Remote storage against a real S3-compatible server (moto, started once per session)."""

from __future__ import annotations

import gzip
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._dataset import indices
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError

pytestmark = pytest.mark.integration

BIG_TEXT = "s" * 1000  # ~1 KB per row: 300 rows make a chunk larger than the sampled summary


def rows(n: int, start: int = 0):
    for i in range(start, start + n):
        yield {"id": i, "text": f"row {i} " + "x" * (i % 5)}


def names(fs, url: str) -> list[str]:
    return sorted(p.rsplit("/", 1)[-1] for p in fs.find(url))


def remote_copies() -> list[str]:
    root = os.path.join(os.environ["ARROWMIX_CACHE"], "remote")
    return sorted(os.listdir(root)) if os.path.isdir(root) else []


def copy_stamps() -> list[int]:
    root = os.path.join(os.environ["ARROWMIX_CACHE"], "remote")
    return [os.stat(os.path.join(root, name)).st_mtime_ns for name in remote_copies()]


def test_write_chunks_leaves_only_complete_chunk_objects(
    s3_url, s3_storage_options, s3_other_client
):
    paths = am.write_chunks(rows(25), s3_url, rows_per_chunk=10, storage_options=s3_storage_options)
    assert paths == [f"{s3_url}/chunk-{i:05d}.arrow" for i in range(3)]
    assert names(s3_other_client, s3_url) == [
        "_manifest.json",
        "chunk-00000.arrow",
        "chunk-00001.arrow",
        "chunk-00002.arrow",
    ]
    ds = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    assert ds["id"] == list(range(25))
    assert ds.cache_files == paths


def test_failure_mid_stream_leaves_only_complete_chunks(
    s3_url, s3_storage_options, s3_other_client
):
    def gen():
        yield from rows(25)
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        am.write_chunks(gen(), s3_url, rows_per_chunk=10, storage_options=s3_storage_options)
    assert names(s3_other_client, s3_url) == ["chunk-00000.arrow", "chunk-00001.arrow"]
    with pytest.raises(IncompleteCorpusError, match=r"_manifest\.json"):
        am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    ds = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options, allow_incomplete=True)
    assert ds["id"] == list(range(20))


def test_existing_chunks_are_not_mixed_with_new_ones(s3_url, s3_storage_options):
    am.write_chunks(rows(5), s3_url, storage_options=s3_storage_options)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        am.write_chunks(rows(5), s3_url, storage_options=s3_storage_options)
    am.write_chunks(rows(3, 100), s3_url, storage_options=s3_storage_options, overwrite=True)
    assert am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)["id"] == [
        100,
        101,
        102,
    ]


def test_read_through_local_copy_is_memory_mapped_and_reused(s3_url, s3_storage_options):
    table = pa.table({"text": [BIG_TEXT] * 3000})
    am.write_chunks(table, s3_url, rows_per_chunk=1500, storage_options=s3_storage_options)
    before = pa.total_allocated_bytes()
    ds = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    assert len(ds) == 3000 and ds[2999]["text"] == BIG_TEXT
    assert pa.total_allocated_bytes() - before < 500_000  # ~3 MB of data, mapped not read
    copies = remote_copies()
    assert sorted(c.split("-", 1)[1] for c in copies) == ["chunk-00000.arrow", "chunk-00001.arrow"]
    stamps = copy_stamps()
    again = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    assert again.fingerprint == ds.fingerprint
    assert remote_copies() == copies  # reused, not downloaded again
    assert copy_stamps() == stamps


def test_glob_urls_and_lists(s3_url, s3_storage_options):
    paths = am.write_chunks(rows(9), s3_url, rows_per_chunk=3, storage_options=s3_storage_options)
    ds = am.Dataset.from_chunks(
        f"{s3_url}/chunk-0000[02].arrow", storage_options=s3_storage_options
    )
    assert ds["id"] == [0, 1, 2, 6, 7, 8]
    assert am.Dataset.from_chunks(f"{s3_url}/*.arrow", storage_options=s3_storage_options)[
        "id"
    ] == list(range(9))
    listed = am.Dataset.from_chunks([paths[2], paths[0]], storage_options=s3_storage_options)
    assert listed["id"] == [6, 7, 8, 0, 1, 2]
    assert am.Dataset.from_file(paths[1], storage_options=s3_storage_options)["id"] == [3, 4, 5]


def test_fingerprint_is_content_addressed_not_path_based(tmp_path, s3_url, s3_storage_options):
    # Chunks over 256 KiB take the sampled summary path locally: remote must agree with it.
    table = pa.table({"id": list(range(600)), "text": [BIG_TEXT] * 600})
    am.write_chunks(table, s3_url, rows_per_chunk=300, storage_options=s3_storage_options)
    am.write_chunks(table, tmp_path / "local", rows_per_chunk=300)
    remote = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    local = am.Dataset.from_chunks(str(tmp_path / "local"))
    assert remote.fingerprint == local.fingerprint
    assert remote.shuffle(seed=3).fingerprint == local.shuffle(seed=3).fingerprint
    other = am.Dataset.from_chunks(str(tmp_path / "local" / "chunk-00000.arrow"))
    assert other.fingerprint != local.fingerprint


def ipc_bytes(table: pa.Table) -> bytes:
    """An Arrow IPC file as ``write_chunks`` would write it (same metadata, so same size)."""
    table = table.replace_schema_metadata({"arrowmix": '{"format": 1, "kind": "chunk"}'})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def test_changed_remote_object_is_fetched_again(s3_url, s3_storage_options, s3_other_client):
    am.write_chunks(pa.table({"v": ["aaaa", "bbbb"]}), s3_url, storage_options=s3_storage_options)
    first = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    assert first["v"] == ["aaaa", "bbbb"]
    # Another host replaces the object with one of the same size (only its ETag tells them
    # apart) and adds a chunk, while our s3fs instance caches the listing of the read above.
    key = f"{s3_url}/chunk-00000.arrow"
    new_data = ipc_bytes(pa.table({"v": ["cccc", "dddd"]}))
    assert len(new_data) == s3_other_client.size(key)
    s3_other_client.pipe_file(key, new_data)
    s3_other_client.pipe_file(f"{s3_url}/chunk-00001.arrow", ipc_bytes(pa.table({"v": ["e"]})))
    # chunk-00001 is not in the corpus manifest: opening the directory needs the opt-in.
    second = am.Dataset.from_chunks(
        s3_url, storage_options=s3_storage_options, allow_incomplete=True
    )
    assert second["v"] == ["cccc", "dddd", "e"]
    assert second.fingerprint != first.fingerprint
    assert first["v"] == ["aaaa", "bbbb"]  # the old copy stays valid for readers that map it
    assert len(remote_copies()) == 3


def test_server_side_copy_over_a_chunk_is_seen(s3_url, s3_storage_options, s3_other_client):
    am.write_chunks([{"v": "aaaa"}], s3_url, storage_options=s3_storage_options)
    before = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    other = f"{s3_url}-b"
    am.write_chunks([{"v": "bbbb"}], other, storage_options=s3_storage_options)
    s3_other_client.copy(f"{other}/chunk-00000.arrow", f"{s3_url}/chunk-00000.arrow")
    after = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    assert (before["v"], after["v"]) == (["aaaa"], ["bbbb"])
    assert after.fingerprint != before.fingerprint
    assert (
        after.fingerprint
        == am.Dataset.from_chunks(other, storage_options=s3_storage_options).fingerprint
    )


def test_missing_bucket_and_prefix_errors_name_the_url(s3_url, s3_storage_options):
    for url in ("s3://arrowmix-no-such-bucket/corpus", f"{s3_url}/nothing-here"):
        with pytest.raises(ChunkFileError, match=url):
            am.Dataset.from_chunks(url, storage_options=s3_storage_options)
    with pytest.raises(ChunkFileError, match="nothing-here"):
        am.Dataset.from_chunks(f"{s3_url}/nothing-here/*.arrow", storage_options=s3_storage_options)
    with pytest.raises(FileNotFoundError, match="arrowmix-no-such-bucket"):
        am.Dataset.from_text(
            "s3://arrowmix-no-such-bucket/a.txt", storage_options=s3_storage_options
        )


def test_truncated_remote_chunk_error_names_the_url(s3_url, s3_storage_options, s3_other_client):
    (path,) = am.write_chunks(rows(50), s3_url, storage_options=s3_storage_options)
    data = s3_other_client.cat_file(path)
    s3_other_client.pipe_file(path, data[: len(data) // 2])
    with pytest.raises(ChunkFileError, match=path):
        am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)


def test_from_text_and_json_ingest_s3_objects(s3_url, s3_storage_options, s3_other_client):
    s3_other_client.pipe_file(f"{s3_url}/in/a.txt", b"alpha\nbeta\n")
    s3_other_client.pipe_file(f"{s3_url}/in/b.txt.gz", gzip.compress(b"gamma\r\ndelta"))
    text = am.Dataset.from_text(f"{s3_url}/in/*", storage_options=s3_storage_options)
    assert text["text"] == ["alpha", "beta", "gamma", "delta"]
    assert text.cache_files[0].startswith(os.environ["ARROWMIX_CACHE"])  # ingested locally
    s3_other_client.pipe_file(f"{s3_url}/in/c.txt", b"epsilon")  # a file added by another host
    more = am.Dataset.from_text(f"{s3_url}/in/*", storage_options=s3_storage_options)
    assert more["text"] == ["alpha", "beta", "gamma", "delta", "epsilon"]
    lines = b"".join(json.dumps({"id": i, "tag": "t"}).encode() + b"\n" for i in range(5))
    s3_other_client.pipe_file(f"{s3_url}/j/data.jsonl", lines)
    js = am.Dataset.from_json(f"{s3_url}/j/data.jsonl", storage_options=s3_storage_options)
    assert js["id"] == list(range(5))
    again = am.Dataset.from_json(f"{s3_url}/j/data.jsonl", storage_options=s3_storage_options)
    assert again.fingerprint == js.fingerprint and again.cache_files == js.cache_files
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"n": [1.5, 2.5]}), sink)
    s3_other_client.pipe_file(f"{s3_url}/p/data.parquet", sink.getvalue().to_pybytes())
    pqds = am.Dataset.from_parquet(f"{s3_url}/p/data.parquet", storage_options=s3_storage_options)
    assert pqds["n"] == [1.5, 2.5]


def test_stream_over_remote_chunks(s3_url, s3_storage_options):
    am.write_chunks(rows(20), s3_url, rows_per_chunk=6, storage_options=s3_storage_options)
    ds = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    with ds.to_stream(shuffle="chunks", seed=5, infinite=False) as stream:
        assert sorted(r["id"] for r in stream) == list(range(20))


def test_views_over_remote_data_write_to_the_local_cache_root(
    tmp_path, monkeypatch, s3_url, s3_storage_options, s3_other_client
):
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)  # back views by indices files
    am.write_chunks(rows(30), s3_url, rows_per_chunk=8, storage_options=s3_storage_options)
    am.write_chunks(rows(30), tmp_path / "local", rows_per_chunk=8)
    ds = am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options)
    local = am.Dataset.from_chunks(str(tmp_path / "local"))
    root = os.environ["ARROWMIX_CACHE"]
    assert ds.cache_dir == root  # the corpus directory is remote: derived files stay local
    shuffled = ds.shuffle(seed=7)
    assert shuffled["id"] == local.shuffle(seed=7)["id"]
    assert sorted(shuffled["id"]) == list(range(30))
    picked = shuffled.select([0, 5, 29])
    assert picked["id"] == [shuffled[0]["id"], shuffled[5]["id"], shuffled[29]["id"]]
    by_text = ds.sort("text", reverse=True)
    assert by_text["text"] == sorted(local["text"], reverse=True)
    flat = shuffled.flatten_indices()
    assert flat["id"] == shuffled["id"]
    (cache_file,) = flat.cache_files
    assert os.path.dirname(cache_file) == root
    assert os.path.dirname(shuffled.cache_files[-1]) == root  # its indices-<fp>.arrow
    assert os.path.basename(shuffled.cache_files[-1]).startswith("indices-")
    # Nothing derived is written next to the remote chunks.
    assert names(s3_other_client, s3_url) == [
        "_manifest.json",
        *(f"chunk-{i:05d}.arrow" for i in range(4)),
    ]


def test_writing_to_a_missing_bucket_names_it_and_creates_nothing(
    s3_storage_options, s3_other_client
):
    url = "s3://arrowmix-typo-bucket/corpus"
    with pytest.raises(FileNotFoundError, match="arrowmix-typo-bucket"):
        am.write_chunks(rows(3), url, storage_options=s3_storage_options)
    assert not s3_other_client.exists("arrowmix-typo-bucket")


def test_cleanup_of_one_remote_dataset_spares_another_datasets_files(
    monkeypatch, s3_url, s3_storage_options
):
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    am.write_chunks(rows(30), f"{s3_url}/a", storage_options=s3_storage_options)
    am.write_chunks(rows(40), f"{s3_url}/b", storage_options=s3_storage_options)
    a = am.Dataset.from_chunks(f"{s3_url}/a", storage_options=s3_storage_options)
    b = am.Dataset.from_chunks(f"{s3_url}/b", storage_options=s3_storage_options).shuffle(seed=1)
    other = b.cache_files[-1]
    assert os.path.basename(other).startswith("indices-")
    del b
    a.cleanup_cache_files()
    assert os.path.exists(other)
