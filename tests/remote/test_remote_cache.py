"""Remote chunks read on demand through a bounded local cache (moto S3 on loopback)."""

from __future__ import annotations

import contextlib
import itertools
import os

import numpy as np
import pytest

import arrowmix as am
import arrowmix.stream
from arrowmix._dataset.state import state_of
from arrowmix._remote import meta as remote_meta
from arrowmix._remote.retry import remote_fs
from arrowmix.exceptions import CacheLimitError, ObjectChangedError, RemoteReadError

pytestmark = pytest.mark.integration

ROWS_PER_CHUNK = 200
PAD = "p" * 1000  # ~1 KB per row: a 200-row chunk is ~200 KB, larger than the footer windows


def rows(n: int, start: int = 0, pad: str = PAD):
    for i in range(start, start + n):
        yield {"id": i, "text": f"{i} {pad}"}


def write_corpus(url, so, n_chunks, pad=PAD):
    return am.write_chunks(
        rows(n_chunks * ROWS_PER_CHUNK, pad=pad), url, rows_per_chunk=ROWS_PER_CHUNK,
        storage_options=so,
    )  # fmt: skip


def chunk_sizes(so, url) -> list[int]:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **so)
    chunks = [f for f in fs.ls(url, detail=True) if f["name"].endswith(".arrow")]
    return [f["size"] for f in sorted(chunks, key=lambda f: f["name"])]


def chunk_size(so, url) -> int:
    return max(chunk_sizes(so, url))


def local_bytes(directory) -> int:
    """Bytes of the files in the cache directory (copies and partial downloads)."""
    if not os.path.isdir(directory):
        return 0
    total = 0
    for name in os.listdir(directory):
        # a lock or copy removed since the listing (another worker's eviction)
        with contextlib.suppress(FileNotFoundError):
            total += os.path.getsize(os.path.join(directory, name))
    return total


@pytest.fixture
def count_ranges(monkeypatch):
    """Bytes requested through ranged reads, recorded as (url, start, stop)."""
    seen: list[tuple[str, int, int]] = []
    real = remote_meta.fetch_ranges

    def counting(fs, path, url, ranges, tag=None):
        seen.extend((url, a, b) for a, b in ranges)
        return real(fs, path, url, ranges, tag)

    monkeypatch.setattr(remote_meta, "fetch_ranges", counting)
    return seen


def test_open_reads_footers_only_and_rows_are_downloaded_on_first_read(
    s3_url, s3_storage_options, tmp_path, count_ranges
):
    so = s3_storage_options
    big = "b" * 6000  # 1.2 MB chunks: the sampled content summary reads 192 KB of each
    write_corpus(s3_url, so, 4, pad=big)
    size = chunk_size(so, s3_url)
    cache = str(tmp_path / "chunks")
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit=2 * size, chunk_cache_dir=cache
    )
    opened = sum(b - a for _, a, b in count_ranges)
    assert opened <= 4 * 40 * 1024  # a 16 KiB head and tail per chunk, and batch headers
    assert local_bytes(cache) == 0
    assert len(ds) == 4 * ROWS_PER_CHUNK
    local = am.Dataset.from_chunks(
        os.path.dirname(
            am.write_chunks(rows(800, pad=big), str(tmp_path / "local"), rows_per_chunk=200)[0]
        )
    )
    assert ds.fingerprint == local.fingerprint  # content-addressed, as a local copy
    assert ds[5]["id"] == 5 and ds[199]["id"] == 199
    assert local_bytes(cache) == chunk_sizes(so, s3_url)[0]  # only the chunk read is local
    assert ds["id"] == list(range(800))
    assert local_bytes(cache) <= 2 * size


def test_limit_below_largest_chunk_is_an_error(s3_url, s3_storage_options, tmp_path):
    write_corpus(s3_url, s3_storage_options, 2)
    size = chunk_size(s3_storage_options, s3_url)
    with pytest.raises(CacheLimitError, match=r"smaller than the chunk .*chunk-0000"):
        am.Dataset.from_chunks(
            s3_url, storage_options=s3_storage_options, cache_limit=size - 1,
            chunk_cache_dir=str(tmp_path),
        )  # fmt: skip
    with pytest.raises(ValueError, match="cache_limit"):
        am.Dataset.from_chunks(s3_url, storage_options=s3_storage_options, cache_limit="lots")


def test_object_changed_before_download_raises(
    s3_url, s3_storage_options, s3_other_client, tmp_path
):
    so = s3_storage_options
    write_corpus(s3_url, so, 2)
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit="10MB", chunk_cache_dir=str(tmp_path)
    )
    assert ds[0]["id"] == 0  # chunk 0 is local now
    replacement = am.Dataset.from_dict({"id": [7] * 200, "text": ["changed"] * 200})
    other = str(tmp_path / "new")
    am.write_chunks(replacement, other, rows_per_chunk=200)
    s3_other_client.put(f"{other}/chunk-00000.arrow", f"{s3_url}/chunk-00001.arrow")
    with pytest.raises(ObjectChangedError, match=r"chunk-00001\.arrow"):
        ds[250]
    assert ds[1]["id"] == 1  # the copy taken before the change is one consistent version
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".partial")]


def test_transient_errors_are_retried_then_name_the_object(
    s3_url, s3_storage_options, tmp_path, monkeypatch
):
    so = s3_storage_options
    write_corpus(s3_url, so, 2)
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit="10MB", chunk_cache_dir=str(tmp_path)
    )
    monkeypatch.setattr(remote_meta.RETRY, "backoff", 0.001)
    fs, _ = remote_fs(s3_url, so)  # the instance fsspec hands every remote read
    real = fs.cat_ranges
    failures = {"left": 2}

    def flaky(*args, **kwargs):
        if failures["left"] > 0:
            failures["left"] -= 1
            raise ConnectionResetError("connection reset by peer")
        return real(*args, **kwargs)

    monkeypatch.setattr(fs, "cat_ranges", flaky)
    assert ds[0]["id"] == 0  # two failures, then success
    failures["left"] = 100
    with pytest.raises(RemoteReadError, match=r"chunk-00001\.arrow.*5 times"):
        ds[300]
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".partial", "1.arrow"))]


def test_shuffled_reads_stay_within_the_limit(s3_url, s3_storage_options, tmp_path):
    so = s3_storage_options
    write_corpus(s3_url, so, 4, pad="r" * 100)
    size = chunk_size(so, s3_url)
    cache = str(tmp_path / "c")
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit=2 * size + 10, chunk_cache_dir=cache
    )
    order = np.random.default_rng(0).permutation(len(ds))
    got = []
    for start in range(0, len(ds), 200):  # each read touches every chunk: evict, refetch
        got.extend(ds[order[start : start + 200].tolist()]["id"])
        assert local_bytes(cache) <= 2 * size + 10
    assert got == order.tolist()


# ---- streams: a mixed, shuffled, 4-rank epoch over a corpus four times the cache ----------

RANKS = 4
NODES = 2  # two ranks per node share its chunk cache directory and budget
STREAM_ROWS = 100  # rows per chunk of the stream corpora (~30 KB chunks)
STREAM_CHUNKS = 48  # chunks per corpus: 12 of each corpus per rank
BLOCK = 50  # rows per read of a source: half a chunk, as chunks of real corpora are larger


def chunk_of(row_id: int) -> tuple[str, int]:
    """The corpus and chunk a row id comes from (ids of corpus "b" start at 10**6)."""
    name, local = ("b", row_id - 10**6) if row_id >= 10**6 else ("a", row_id)
    return name, local // STREAM_ROWS


def stream_corpora(s3_url, so):
    for name, base in (("a", 0), ("b", 10**6)):
        am.write_chunks(
            ({"id": base + i, "text": f"{i} " + "t" * 300}
             for i in range(STREAM_CHUNKS * STREAM_ROWS)),
            f"{s3_url}/{name}", rows_per_chunk=STREAM_ROWS, storage_options=so,
        )  # fmt: skip


def node_datasets(s3_url, so, cache, limit):
    """The two corpora opened on one node (its ranks build their streams from them)."""
    return [
        am.Dataset.from_chunks(
            f"{s3_url}/{name}", storage_options=so, cache_limit=limit, chunk_cache_dir=cache
        )
        for name in ("a", "b")
    ]


def rank_stream(datasets, rank):
    """Rank ``rank`` of 4: each corpus chunk-shuffled and dealt by chunks, then mixed."""
    from arrowmix._dataset.to_stream import to_stream

    # fmt: off
    parts = [
        to_stream(ds, 1, shuffle="chunks", seed=7, infinite=False, num_instances=RANKS,
                  instance_rank=rank, block_rows=BLOCK)
        for ds in datasets
    ]
    # fmt: on
    return am.stream.mix(parts, stopping="longest_drop")


def downloads(seen) -> list[tuple[str, int]]:
    """The chunks of the ranged reads that downloaded a copy (one per part read)."""
    out = []
    for url, a, b in seen:
        corpus, name = url.rsplit("/", 2)[-2:]
        if b > a and a == 0:  # the first part of a download (footers were read at open)
            out.append((corpus, int(name[len("chunk-") : -len(".arrow")])))
    return out


@pytest.mark.slow  # runs several processes: the slow tier (CI)
def test_a_4_rank_mixed_epoch_downloads_each_rank_only_its_chunks_within_the_limit(
    s3_url, s3_storage_options, tmp_path, count_ranges
):
    so = s3_storage_options
    stream_corpora(s3_url, so)
    sizes = {(c, i): n for c in "ab" for i, n in enumerate(chunk_sizes(so, f"{s3_url}/{c}"))}
    limit = sum(sizes.values()) // 4  # 96 chunks, four times the limit: 24 chunks per node
    nodes = [str(tmp_path / f"node{k}") for k in range(NODES)]
    opened = [node_datasets(s3_url, so, nodes[k], limit) for k in range(NODES)]
    streams = [rank_stream(opened[r % NODES], r) for r in range(RANKS)]
    count_ranges.clear()  # opening read footers only; from now on, downloads
    ids: list[list[int]] = [[] for _ in range(RANKS)]
    state, tail = None, 0
    while True:  # the ranks step in lockstep, as in data-parallel training
        got = [[r["id"] for r in itertools.islice(s, 100)] for s in streams]
        if not any(got):
            break
        assert len({len(g) for g in got}) == 1, "the ranks yield the same number of rows"
        for r, g in enumerate(got):
            ids[r].extend(g)
        for node in nodes:
            assert local_bytes(node) <= limit, f"{node} over the limit after {len(ids[0])} rows"
        if len(ids[3]) == 1200:
            state, tail = streams[3].state_dict(), len(ids[3])
    n = STREAM_CHUNKS * STREAM_ROWS
    every = [*range(n), *range(10**6, 10**6 + n)]
    assert sorted([i for part in ids for i in part]) == every  # every row of the epoch exactly once
    fetched = downloads(count_ranges)
    assert sorted(fetched) == sorted(sizes)  # each chunk downloaded once, by one node
    for r, s in enumerate(streams):
        mine = {chunk_of(i) for i in ids[r]}
        assert len(mine) == 2 * STREAM_CHUNKS // RANKS  # 12 whole chunks of each corpus
        stats = [p.stats() for p in s.children()]
        assert sum(st["bytes_downloaded"] for st in stats) == sum(sizes[c] for c in mine)
        assert sum(st["chunks_downloaded"] for st in stats) == len(mine)
        assert all(st["wait_seconds"] >= 0 for st in stats)
        s.close()
    assert all(p.stats()["evicted"] > 0 for p in streams[0].children())  # the node made room
    # Exact resume of rank 3 on a fresh node: the same tail, and only the chunks of the
    # window it replays and of what follows are downloaded.
    fresh = rank_stream(node_datasets(s3_url, so, str(tmp_path / "resumed"), limit), 3)
    count_ranges.clear()
    fresh.load_state_dict(state)
    rest = [r["id"] for r in fresh]
    fresh.close()
    assert rest == ids[3][tail:], f"resume mismatch from state {state}"
    refetched = set(downloads(count_ranges))
    assert refetched <= {chunk_of(i) for i in ids[3][tail - 4 * STREAM_ROWS :]}
    assert len(refetched) < len({chunk_of(i) for i in ids[3]})


# ---- map / filter over a bounded corpus ----------------------------------------------------


def test_map_and_filter_process_chunk_by_chunk_within_the_limit(
    s3_url, s3_storage_options, tmp_path
):
    so = s3_storage_options
    write_corpus(s3_url, so, 8, pad="m" * 400)
    size = chunk_size(so, s3_url)
    chunks = str(tmp_path / "chunks")
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_dir=str(tmp_path / "results"),
        cache_limit=2 * size, chunk_cache_dir=chunks,
    )  # fmt: skip
    log = tmp_path / "local-bytes.txt"  # written by the worker processes, read here

    def double(batch):
        with open(log, "a") as f:
            f.write(f"{local_bytes(chunks)}\n")
        return {"double": [2 * i for i in batch["id"]]}

    out = ds.map(double, batched=True, batch_size=64, num_proc=2)
    assert out["double"] == [2 * i for i in range(1600)]
    assert out.column_names == ["id", "text", "double"]  # kept columns stored locally
    peak = [int(line) for line in log.read_text().split()]
    assert len(peak) >= 1600 // 64 and max(peak) <= 2 * size  # one line per batch
    assert local_bytes(chunks) <= 2 * size
    evens = out.filter(lambda r: r["id"] % 2 == 0)
    assert evens["id"] == list(range(0, 1600, 2))


def test_a_killed_download_is_never_taken_for_a_chunk(s3_url, s3_storage_options, tmp_path):
    so = s3_storage_options
    write_corpus(s3_url, so, 2, pad="k" * 100)
    size = chunk_size(so, s3_url)
    cache = tmp_path / "c"
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit=size + 10, chunk_cache_dir=str(cache)
    )  # room for one chunk: the dead partial must go for a download to fit
    key = state_of(ds).table.chunks[1].key
    cache.mkdir()
    # What `kill -9` during a download leaves: a partial file at its full (sparse) size, of
    # another chunk, and a half-written one of the chunk about to be read.
    (cache / f"dl-{state_of(ds).table.chunks[0].key}-99999-dead.partial").write_bytes(b"\0" * size)
    (cache / f"dl-{key}-99998-dead.partial").write_bytes(b"ARROW1" + b"\0" * 100)
    assert ds[250]["id"] == 250  # the dead partials were removed, not counted or read
    assert ds[0]["id"] == 0  # chunk 1 evicted to make room for chunk 0
    left = [n for n in os.listdir(cache) if n.endswith((".arrow", ".partial"))]
    assert left == [f"{state_of(ds).table.chunks[0].key}.arrow"]


def test_a_chunk_pinned_by_another_reader_is_never_evicted(
    s3_url, s3_storage_options, tmp_path, monkeypatch
):
    import fcntl

    from arrowmix._remote import cache as remote_cache

    so = s3_storage_options
    write_corpus(s3_url, so, 2, pad="q" * 100)
    size = chunk_size(so, s3_url)
    cache = tmp_path / "shared"
    ds = am.Dataset.from_chunks(
        s3_url, storage_options=so, cache_limit=size + 10, chunk_cache_dir=str(cache)
    )
    assert ds[0]["id"] == 0
    # Another process reading chunk 0 holds a shared flock on its pin file (a lock taken
    # through another open file description conflicts exactly as another process's does).
    state_of(ds).table.cache._trim(0)  # this process is done with it
    fd = os.open(cache / f"{state_of(ds).table.chunks[0].key}.pin", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)
    monkeypatch.setattr(remote_cache, "WAIT_FOR_SPACE", 0.3)
    try:
        with pytest.raises(CacheLimitError, match=r"cannot make room .*chunk-00001\.arrow"):
            ds[250]
        assert (cache / f"{state_of(ds).table.chunks[0].key}.arrow").exists()
    finally:
        os.close(fd)
    assert ds[250]["id"] == 250  # released: now chunk 0 may go
    assert not (cache / f"{state_of(ds).table.chunks[0].key}.arrow").exists()


def test_cleanup_cache_never_takes_a_download_in_progress_for_a_dead_writers_file():
    from arrowmix._cache.listing import TMP_FILE_RE
    from arrowmix._remote import cache as remote_cache

    # A chunk key of digits followed by a file name starting with a hex run: the shape a
    # dead writer's temporary file has ("tmp-<pid>-<hex>-...").
    name = f"{remote_cache._PARTIAL}1234567890123456-abc-1.arrow-{os.getpid()}-0f0f0f0f.partial"
    assert TMP_FILE_RE.match(name) is None
