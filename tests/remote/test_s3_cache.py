"""map/filter/indices results in a remote cache directory (``cache_dir="s3://..."``), on moto."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cache import segments
from arrowmix._dataset import indices
from arrowmix.exceptions import CacheWarning

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIG_TEXT = "s" * 1000


def names(fs, url: str) -> list[str]:
    return sorted(p.rsplit("/", 1)[-1] for p in fs.find(url))


def remote_copies() -> list[str]:
    root = os.path.join(os.environ["ARROWMIX_CACHE"], "remote")
    return sorted(n.split("-", 1)[1] for n in os.listdir(root)) if os.path.isdir(root) else []


@pytest.fixture
def corpus(s3_url, s3_storage_options):
    """30 rows in remote chunks; the cache directory is another prefix of the bucket."""
    rows = ({"id": i, "text": f"row {i}"} for i in range(30))
    am.write_chunks(rows, f"{s3_url}/corpus", rows_per_chunk=8, storage_options=s3_storage_options)
    return f"{s3_url}/corpus", f"{s3_url}/cache"


def open_corpus(corpus, options):
    data, cache = corpus
    return am.Dataset.from_chunks(data, cache_dir=cache, storage_options=options)


def test_map_and_filter_segments_are_written_to_the_remote_cache_dir(
    small_segments, corpus, s3_storage_options, s3_other_client, tmp_path
):
    log = str(tmp_path / "calls.log")  # a side effect the fingerprint does not see change

    def square(row):
        with open(log, "a") as f:
            f.write(f"{row['id']}\n")
        return {"sq": row["id"] ** 2}

    def calls():
        with open(log) as f:
            return f.read().split()

    ds = open_corpus(corpus, s3_storage_options)
    assert ds.cache_dir == corpus[1]
    out = ds.map(square)
    assert out["sq"] == [i * i for i in range(30)] and len(calls()) == 30
    fp = out.fingerprint
    seg_names = [f"cache-{fp}-{i:05d}-of-00003.arrow" for i in range(3)]
    assert names(s3_other_client, corpus[1]) == seg_names  # no tmp-* key left
    assert out.cache_files[-3:] == [f"{corpus[1]}/{n}" for n in seg_names]
    assert set(seg_names) <= set(remote_copies())  # read back through local copies
    again = open_corpus(corpus, s3_storage_options).map(square)
    assert again["sq"] == out["sq"] and len(calls()) == 30  # a cache hit: nothing recomputed
    even = out.filter(lambda row: row["id"] % 2 == 0)
    assert even["id"] == list(range(0, 30, 2)) and even["sq"] == [i * i for i in range(0, 30, 2)]
    stored = names(s3_other_client, corpus[1])
    assert [n for n in stored if n.startswith(f"cache-{even.fingerprint}")] == [
        f"cache-{even.fingerprint}-{i:05d}-of-00003.arrow" for i in range(3)
    ]
    assert not any(n.startswith("tmp-") for n in stored)
    assert names(s3_other_client, corpus[0]) == [
        "_manifest.json",
        *(f"chunk-{i:05d}.arrow" for i in range(4)),
    ]
    assert out.cleanup_cache_files() == 0  # nothing is ever removed remotely


def test_remote_results_are_memory_mapped(s3_url, s3_storage_options):
    table = pa.table({"id": list(range(3000))})
    am.write_chunks(table, f"{s3_url}/corpus", storage_options=s3_storage_options)
    ds = am.Dataset.from_chunks(
        f"{s3_url}/corpus", cache_dir=f"{s3_url}/cache", storage_options=s3_storage_options
    )

    def texts(batch):
        return {"text": [BIG_TEXT] * len(batch["id"])}

    ds.map(texts, batched=True)
    before = pa.total_allocated_bytes()
    hit = am.Dataset.from_chunks(
        f"{s3_url}/corpus", cache_dir=f"{s3_url}/cache", storage_options=s3_storage_options
    ).map(texts, batched=True)
    assert len(hit) == 3000 and hit[2999]["text"] == BIG_TEXT
    assert pa.total_allocated_bytes() - before < 500_000  # ~3 MB of text, mapped not read


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import arrowmix as am
    from arrowmix._cache import segments
    segments.SEGMENT_ROWS = segments.MIN_SEGMENT_ROWS = 10
    data, cache, log, options = sys.argv[1:5]

    def fn(row):
        with open(log, "a") as f:
            f.write(f"{row['id']}\\n")
        return {"twice": row["id"] * 2}

    ds = am.Dataset.from_chunks(data, cache_dir=cache, storage_options=json.loads(options))
    out = ds.map(fn)
    print(json.dumps([out.fingerprint, out["twice"]]))
    """
)


def test_a_new_process_on_another_host_gets_cache_hits(
    corpus, s3_storage_options, tmp_path, s3_other_client
):
    log = tmp_path / "calls.log"

    def run(local_cache):
        env = {**os.environ, "ARROWMIX_PROGRESS": "0", "ARROWMIX_CACHE": str(local_cache)}
        args = [*corpus, str(log), json.dumps(s3_storage_options)]
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    first = run(tmp_path / "host-a")
    assert first[1] == [2 * i for i in range(30)]
    assert len(log.read_text().split()) == 30
    # A fresh local cache stands for another machine: only the bucket is shared.
    second = run(tmp_path / "host-b")
    assert second == first
    assert len(log.read_text().split()) == 30  # nothing recomputed
    assert len([n for n in names(s3_other_client, corpus[1]) if n.startswith("cache-")]) == 3


def test_failed_map_leaves_no_final_object_and_resumes(
    small_segments, corpus, s3_storage_options, s3_other_client
):
    calls = []

    def fn(row):
        calls.append(row["id"])
        if row["id"] == 25 and fail:
            raise RuntimeError("boom")
        return {"neg": -row["id"]}

    fp = "00000000000000ab"
    ds = open_corpus(corpus, s3_storage_options)
    fail = True
    with pytest.raises(RuntimeError, match="boom"):
        ds.map(fn, new_fingerprint=fp)
    # Segments 0 and 1 are committed; segment 2 failed: no final object, no temporary key.
    assert names(s3_other_client, corpus[1]) == [
        f"cache-{fp}-{i:05d}-of-00003.arrow" for i in range(2)
    ]
    fail = False
    calls.clear()
    out = ds.map(fn, new_fingerprint=fp)
    assert out["neg"] == [-i for i in range(30)]
    assert sorted(calls) == list(range(20, 30))  # only the missing segment is computed


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporary_keys_of_dead_writers_are_removed_on_the_next_run(
    monkeypatch, corpus, s3_storage_options, s3_other_client
):
    fp, other = "00000000000000cd", "00000000000000ef"
    cache = corpus[1]
    dead, live = dead_pid(), os.getpid()
    stale = f"tmp-{dead}-0badc0de-cache-{fp}.arrow.partial"
    mine = f"tmp-{live}-0badc0de-cache-{fp}.arrow.partial"
    foreign = f"tmp-{dead}-0badc0de-cache-{other}.arrow.partial"
    for name in (stale, mine, foreign):
        s3_other_client.pipe_file(f"{cache}/{name}", b"half a file")
    ds = open_corpus(corpus, s3_storage_options)
    ds.map(lambda row: {"x": 1}, new_fingerprint=fp, load_from_cache_file=False)
    # A fresh key may belong to a live writer on another host (the pid says nothing there).
    assert stale in names(s3_other_client, cache)
    monkeypatch.setattr(segments, "REMOTE_TMP_MIN_AGE", 0.0)
    out = ds.map(lambda row: {"x": 1}, new_fingerprint=fp, load_from_cache_file=False)
    assert out["x"] == [1] * 30
    assert names(s3_other_client, cache) == sorted([f"cache-{fp}.arrow", mine, foreign])


def test_an_invalid_remote_segment_is_recomputed(corpus, s3_storage_options, s3_other_client):
    ds = open_corpus(corpus, s3_storage_options)
    fp = "0000000000000abc"
    out = ds.map(lambda row: {"y": row["id"] + 1}, new_fingerprint=fp)
    key = f"{corpus[1]}/cache-{fp}.arrow"
    s3_other_client.pipe_file(key, b"not an arrow file")
    with pytest.warns(CacheWarning, match="not usable"):
        again = open_corpus(corpus, s3_storage_options).map(
            lambda row: {"y": row["id"] + 1}, new_fingerprint=fp
        )
    assert again["y"] == out["y"] == [i + 1 for i in range(30)]
    assert s3_other_client.cat_file(key)[:6] == b"ARROW1"


def test_concurrent_writers_without_a_lock_leave_one_valid_result(
    small_segments, corpus, s3_storage_options, s3_other_client
):
    barrier = threading.Barrier(2, timeout=120)  # a timeout only ends a failed test
    waited: set[int] = set()

    def fn(row):
        me = threading.get_ident()
        if me not in waited:  # both writers are computing at once: nobody waits on a lock
            waited.add(me)
            barrier.wait()
        return {"z": row["id"] * 3}

    ds = open_corpus(corpus, s3_storage_options)
    fp = "000000000000abcd"
    results: list = [None, None]

    def work(i):
        results[i] = ds.map(fn, new_fingerprint=fp)["z"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [[3 * i for i in range(30)]] * 2
    assert len(waited) == 2
    assert names(s3_other_client, corpus[1]) == [
        f"cache-{fp}-{i:05d}-of-00003.arrow" for i in range(3)
    ]
    assert open_corpus(corpus, s3_storage_options).map(fn, new_fingerprint=fp)["z"] == results[0]


def test_indices_and_flatten_files_go_to_the_remote_cache_dir(
    monkeypatch, corpus, s3_storage_options, s3_other_client
):
    monkeypatch.setattr(indices, "INDICES_FILE_MIN_ROWS", 10)
    ds = open_corpus(corpus, s3_storage_options)
    shuffled = ds.shuffle(seed=4)
    assert sorted(shuffled["id"]) == list(range(30))
    path = shuffled.cache_files[-1]
    assert path == f"{corpus[1]}/indices-{shuffled.fingerprint}.arrow"
    assert s3_other_client.exists(path)
    reopened = open_corpus(corpus, s3_storage_options).shuffle(seed=4)
    assert reopened["id"] == shuffled["id"]
    flat = shuffled.flatten_indices()
    assert flat["id"] == shuffled["id"]
    assert flat.cache_files == [f"{corpus[1]}/cache-{flat.fingerprint}.arrow"]
    kept = shuffled.filter(lambda row: row["id"] < 20)
    assert sorted(kept["id"]) == list(range(20))
    assert kept.cache_files[-1] == f"{corpus[1]}/indices-{kept.fingerprint}.arrow"
    assert not any(n.startswith("tmp-") for n in names(s3_other_client, corpus[1]))


def test_local_chunks_with_a_remote_cache_dir(tmp_path, s3_url, s3_storage_options):
    am.write_chunks(({"id": i} for i in range(12)), tmp_path / "c", rows_per_chunk=5)
    ds = am.Dataset.from_chunks(
        str(tmp_path / "c"), cache_dir=f"{s3_url}/cache", storage_options=s3_storage_options
    )
    out = ds.map(lambda row: {"s": str(row["id"])})
    assert out["s"] == [str(i) for i in range(12)]
    assert out.cache_files[-1].startswith(f"{s3_url}/cache/cache-")
    assert sorted(os.listdir(tmp_path / "c")) == [
        "_manifest.json",
        *(f"chunk-{i:05d}.arrow" for i in range(3)),
    ]


class RayTasksInProcess:
    """Runs the Ray task body of ``executor="ray"`` here, on the payload Ray would ship."""

    def run_segments(self, fn, job, segments, num_proc, *, on_segment):
        import pickle

        from arrowmix.integrations import ray as amray

        source = pickle.loads(pickle.dumps(amray._source(None, job.ds)))  # crosses a process
        self.storage_options = source.storage_options
        payload = (fn, job.kind, job.call, job.fingerprint, job.zero_copy_ok, job.record, source)
        try:
            for seg in segments:
                on_segment(amray._segment_task(payload, seg))
        finally:
            amray._OPENED.clear()


def test_ray_tasks_write_to_the_remote_cache_dir_with_the_storage_options(
    small_segments, corpus, s3_storage_options, s3_other_client
):
    pytest.importorskip("ray")
    ds = open_corpus(corpus, s3_storage_options)
    executor = RayTasksInProcess()
    fp = "00000000000abcde"
    out = ds.map(lambda row: {"h": row["id"] // 2}, new_fingerprint=fp, executor=executor)
    assert executor.storage_options == s3_storage_options
    assert out["h"] == [i // 2 for i in range(30)]
    assert names(s3_other_client, corpus[1]) == [
        f"cache-{fp}-{i:05d}-of-00003.arrow" for i in range(3)
    ]
