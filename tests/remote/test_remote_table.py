"""Bounded remote tables without a server: fsspec's in-process ``memory://`` filesystem."""

from __future__ import annotations

import os
import pickle
import uuid

import fsspec
import numpy as np
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._remote.meta import _batch_length, _footer_blocks


@pytest.fixture
def memory_url():
    url = f"memory://remote-table-{uuid.uuid4().hex[:8]}"
    yield url
    fsspec.filesystem("memory").rm(url[len("memory://") :], recursive=True)


def open_bounded(url, tmp_path, limit="1MB"):
    return am.Dataset.from_chunks(url, cache_limit=limit, chunk_cache_dir=str(tmp_path / "c"))


def test_footer_reader_counts_rows_of_every_record_batch(tmp_path):
    import pyarrow as pa

    path = tmp_path / "f.arrow"
    table = pa.table({"x": list(range(1000)), "s": [str(i) for i in range(1000)]})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        for batch in [*table.to_batches(max_chunksize=300), table.to_batches()[0].slice(0, 0)]:
            w.write_batch(batch)
    data = path.read_bytes()
    footer_len = int.from_bytes(data[-10:-6], "little")
    blocks = _footer_blocks(data[-10 - footer_len : -10])
    assert [_batch_length(data[o : o + n]) for o, n, _ in blocks] == [300, 300, 300, 100, 0]


def test_columns_views_and_pickling_keep_reading_through_the_cache(memory_url, tmp_path):
    am.write_chunks(({"id": i, "t": str(i)} for i in range(50)), memory_url, rows_per_chunk=20)
    ds = open_bounded(memory_url, tmp_path)
    view = ds.rename_column("t", "text").select_columns(["text", "id"]).select([49, 0, 21])
    assert view[:] == {"text": ["49", "0", "21"], "id": [49, 0, 21]}
    again = pickle.loads(pickle.dumps(view))
    assert again[:] == view[:] and again.fingerprint == view.fingerprint
    with pytest.raises(ValueError, match="concatenate_datasets"):
        am.concatenate_datasets([ds, ds])


def test_stream_over_a_bounded_corpus_pickles_and_resumes(memory_url, tmp_path):
    am.write_chunks(({"id": i} for i in range(400)), memory_url, rows_per_chunk=50)
    ds = open_bounded(memory_url, tmp_path)
    s = ds.to_stream(shuffle="chunks", seed=3, infinite=False, read_ahead="1KB")
    head = [r["id"] for r in (next(s) for _ in range(120))]
    clone = pickle.loads(pickle.dumps(s))
    rest = [r["id"] for r in s]
    assert [r["id"] for r in clone] == rest
    assert sorted(head + rest) == list(range(400))
    assert s.stats()["chunks_downloaded"] >= 1
    s.close()
    clone.close()
    with pytest.raises(ValueError, match="read_ahead"):
        ds.to_stream(read_ahead=-1)


def test_a_local_chunk_with_cache_limit_is_refused(tmp_path):
    out = str(tmp_path / "local")
    am.write_chunks(({"id": i} for i in range(5)), out)
    with pytest.raises(ValueError, match="local file"):
        am.Dataset.from_chunks(out, cache_limit="1MB")
    assert np.array_equal(am.Dataset.from_chunks(out)["id"], list(range(5)))


def test_a_damaged_remote_chunk_is_refused_naming_it(memory_url, tmp_path):
    from arrowmix.exceptions import ChunkFileError

    am.write_chunks(({"s": "abcdefghij"} for _ in range(100)), memory_url, rows_per_chunk=50)
    fs = fsspec.filesystem("memory")
    path = f"{memory_url[len('memory://') :]}/chunk-00001.arrow"
    data = bytearray(fs.cat_file(path))
    footer_len = int.from_bytes(data[-10:-6], "little")
    offset, meta_len, _ = _footer_blocks(bytes(data[-10 - footer_len : -10]))[0]
    body = offset + meta_len
    data[body : body + 64] = b"\xff" * 64  # the string offsets: no longer valid
    fs.pipe_file(path, bytes(data))
    ds = open_bounded(memory_url, tmp_path)
    assert ds[0]["s"] == "abcdefghij"
    with pytest.raises(ChunkFileError, match=r"chunk-00001\.arrow.* is damaged"):
        ds[60]
    assert not [n for n in os.listdir(tmp_path / "c") if n.endswith(".partial")]


def test_token_stages_read_a_bounded_corpus_through_its_cache(memory_url, tmp_path):
    rows = [{"ids": list(range(i % 7 + 1))} for i in range(60)]
    am.write_chunks(rows, memory_url, rows_per_chunk=20)
    ds = open_bounded(memory_url, tmp_path)
    s = ds.to_stream(shuffle=None, infinite=False).batch(4, columnar=True).collate("ids")
    local = am.Dataset.from_list(rows).to_stream(shuffle=None, infinite=False)
    expected = [b["input_ids"].tolist() for b in local.batch(4).collate("ids")]
    assert [b["input_ids"].tolist() for b in s] == expected
    with pytest.raises(KeyError, match="no column 'x'"):
        next(ds.to_stream(shuffle=None, infinite=False).batch(4, columnar=True).collate("x"))


def test_token_stages_after_mix_of_bounded_corpora_collate_the_mixed_rows(memory_url, tmp_path):
    from arrowmix.stream import Collator, mix

    am.write_chunks(({"ids": [i] * (i % 3 + 1)} for i in range(40)), memory_url, rows_per_chunk=10)
    ds = open_bounded(memory_url, tmp_path)

    def mixed(ds):
        a, b = (ds.to_stream(seed=k, infinite=False, shuffle="chunks") for k in (0, 1))
        return mix([a, b], [0.5, 0.5]).batch(4, columnar=True)

    local = am.Dataset.from_chunks(memory_url)
    expected = [b["input_ids"].tolist() for b in mixed(local).collate("ids")]
    assert [b["input_ids"].tolist() for b in mixed(ds).collate("ids")] == expected
    assert [b["input_ids"].tolist() for b in mixed(ds).map(Collator("ids"))] == expected
    assert len(expected) == 20


def test_ranks_of_a_bounded_corpus_read_their_own_chunks_by_default(memory_url, tmp_path):
    am.write_chunks(({"id": i} for i in range(400)), memory_url, rows_per_chunk=50)
    ds = open_bounded(memory_url, tmp_path)
    local = am.Dataset.from_dict({"id": list(range(400))})
    for shuffle in ("chunks", None):
        ranks = [
            [r["id"] for r in ds.to_stream(shuffle=shuffle, seed=1, infinite=False,
                                           num_instances=4, instance_rank=k)]
            for k in range(4)
        ]  # fmt: skip
        assert sorted([i for part in ranks for i in part]) == list(range(400))
        assert [len({i // 50 for i in ids}) for ids in ranks] == [2, 2, 2, 2]
        # Local data keeps row dealing: every rank reads rows of every chunk.
        row_dealt = local.to_stream(shuffle=shuffle, seed=1, infinite=False, num_instances=4)
        assert len({r["id"] // 50 for r in row_dealt}) == 8
    # A global shuffle touches every chunk anyway: rows are dealt, and chunks are refused.
    s = ds.to_stream(shuffle="global", seed=1, infinite=False, num_instances=4)
    assert len({r["id"] // 50 for r in s}) == 8
    with pytest.raises(ValueError, match="shuffle='global'"):
        ds.to_stream(shuffle="global", num_instances=4, shard="chunks")
    explicit = local.to_stream(shuffle="chunks", seed=1, infinite=False, num_instances=4,
                               shard="chunks")  # fmt: skip
    assert len({r["id"] // 50 for r in explicit}) <= 3


def test_lock_files_go_with_their_downloads_and_copies(memory_url, tmp_path):
    am.write_chunks(({"id": i, "t": "x" * 200} for i in range(400)), memory_url,
                    rows_per_chunk=50)  # fmt: skip
    fs = fsspec.filesystem("memory")
    listing = fs.ls(memory_url[len("memory://") :], detail=False)
    size = max(fs.size(p) for p in listing if p.endswith(".arrow"))
    ds = open_bounded(memory_url, tmp_path, limit=2 * size)
    assert ds["id"] == list(range(400))  # 8 chunks through room for 2: 6 evictions
    names = os.listdir(tmp_path / "c")
    copies = {n[: -len(".arrow")] for n in names if n.endswith(".arrow")}
    assert 1 <= len(copies) <= 2
    assert not [n for n in names if n.endswith(".dl")]  # every download finished
    assert {n[: -len(".pin")] for n in names if n.endswith(".pin")} <= copies


def test_cleanup_cache_removes_idle_chunk_cache_lock_files(memory_url, tmp_path):
    from arrowmix._cache.cleanup import remove_idle_locks

    cache = tmp_path / "c"
    cache.mkdir()
    # What a process killed while downloading leaves once its partial file is gone.
    orphan = cache / "0123456789abcdef-chunk-00003.arrow.pin"
    orphan.write_bytes(b"")
    (cache / "0123456789abcdef-chunk-00003.arrow.dl").write_bytes(b"")
    am.write_chunks(({"id": i} for i in range(10)), memory_url)
    ds = open_bounded(memory_url, tmp_path)
    s = ds.to_stream(shuffle=None, infinite=False)
    assert next(s)["id"] == 0  # its copy stays open, so pinned, in this process
    held = [n for n in os.listdir(cache) if n.endswith(".pin") and n != orphan.name]
    assert len(held) == 1
    removed = {os.path.basename(p) for p in remove_idle_locks([str(cache)])}
    assert removed == {orphan.name, "0123456789abcdef-chunk-00003.arrow.dl"}
    assert (cache / held[0]).exists()
    assert [r["id"] for r in s] == list(range(1, 10))
    s.close()


def test_room_is_made_from_the_chunk_a_read_moved_on_from(memory_url, tmp_path):
    am.write_chunks(({"id": i, "t": "x" * 200} for i in range(150)), memory_url,
                    rows_per_chunk=50)  # fmt: skip
    fs = fsspec.filesystem("memory")
    listing = fs.ls(memory_url[len("memory://") :], detail=False)
    size = max(fs.size(p) for p in listing if p.endswith(".arrow"))
    ds = open_bounded(memory_url, tmp_path, limit=2 * size + 10)  # room for two chunks
    cache = state_of(ds).table.cache
    # One read that ends in chunk 0 (as a block ends in the window a stream goes on with),
    # then chunk 2: the room must come from chunk 1, the chunk the reader moved on from.
    assert ds[[60, 61, 3, 4]]["id"] == [60, 61, 3, 4]
    assert ds[[120]]["id"] == [120]
    before = cache.stats.chunks_downloaded
    assert ds[[5, 6]]["id"] == [5, 6]
    assert cache.stats.chunks_downloaded == before  # chunk 0 was still there


class _Order:
    """The upcoming order of a stream reading ``order`` (row positions), from ``cursor``."""

    def __init__(self, order, index):
        self.order = np.asarray(order, dtype=np.int64)
        self.cursor = (0, index)

    def positions(self, cursor, n):
        start = cursor[1]
        stop = min(len(self.order), start + n)
        return self.order[start:stop], (0, stop)


def _pinned(cache, chunk):
    """Whether some reader pins ``chunk``'s copy (eviction would skip it)."""
    import fcntl

    fd = os.open(os.path.join(cache.directory, chunk.key + ".pin"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_read_ahead_keeps_the_window_being_read_and_makes_room_from_passed_chunks(
    memory_url, tmp_path
):
    from arrowmix._remote.table import ReadAhead

    am.write_chunks(({"id": i, "t": "x" * 200} for i in range(60)), memory_url,
                    rows_per_chunk=10)  # fmt: skip
    fs = fsspec.filesystem("memory")
    size = max(fs.size(p) for p in fs.ls(memory_url[len("memory://") :], detail=False))
    ds = open_bounded(memory_url, tmp_path, limit=4 * size)
    table, cache = state_of(ds).table, state_of(ds).table.cache
    # Three windows of two chunks each, read interleaved (a shuffled window's order).
    order = [r + k for w in (0, 20, 40) for k in range(10) for r in (w, w + 10)]
    ahead = ReadAhead(table, chunks=2)

    def at(index):
        ahead.read_ahead(_Order(order, index))
        for _, fut in ahead._ahead.values():  # wait for the downloads started
            fut.result()

    at(0)
    at(5)  # in the first window: its chunks are read again until row 19 of the order
    assert [_pinned(cache, c) for c in table.chunks] == [True] * 4 + [False] * 2
    at(25)  # in the second window: the third is downloaded in place of the first
    assert [_pinned(cache, c) for c in table.chunks[2:]] == [True] * 4
    assert [cache.copied(c) for c in table.chunks] == [False] * 2 + [True] * 4
    assert cache.stats.chunks_downloaded == 6
    ahead.close()
    cache.close_idle()
    assert not any(_pinned(cache, c) for c in table.chunks)
