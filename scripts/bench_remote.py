"""Streaming a tokenised corpus from S3 through a bounded local cache: arrowmix and its peers.

A moto S3 server on loopback holds one corpus of token rows (``input_ids``: int32 lists) in
each tool's own format (arrowmix chunks, Mosaic Streaming MDS shards, litdata chunks), of
about the same shard size. Each tool then reads one shuffled epoch through a local cache
limited to a quarter of the corpus, and reports:

- tokens/s over the epoch, and the time to the first batch (256 rows) from a cold cache;
- bytes downloaded (the tool's own counter; the cache directory's growth is no measure once
  evictions start), against the bytes the corpus takes in the bucket;
- the resume time: a fresh reader restored from the state taken half-way, to its first row.

Peers run only when installed (``pip install mosaicml-streaming litdata``); a peer that is
missing or fails is reported as such. Loopback S3 measures the tools' own overheads, not a
network: the ratios, not the absolute numbers, are the result.

Usage (from the repository root)::

    python scripts/bench_remote.py            # 40k rows of 256 tokens (~40 MB)
    python scripts/bench_remote.py --quick    # 8k rows
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from typing import Any

import numpy as np

import arrowmix as am

TOKENS = 256
BATCH = 256


def corpus_rows(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 50_000, size=(n, TOKENS), dtype=np.int32)


def start_s3() -> tuple[Any, dict[str, Any], str]:
    """A moto server and the storage options reaching it; a bucket ``bench-remote``."""
    dummy = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    for k, v in dummy.items():
        os.environ.setdefault(k, v)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    so = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}
    import s3fs

    s3fs.S3FileSystem(skip_instance_cache=True, **so).mkdir("bench-remote")
    return server, so, endpoint


def bench_arrowmix(data: np.ndarray, so: dict[str, Any], shard_bytes: int, limit: int) -> dict:
    url = "s3://bench-remote/arrowmix"
    import pyarrow as pa

    flat = pa.array(data.reshape(-1))
    ids = pa.FixedSizeListArray.from_arrays(flat, TOKENS).cast(pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), url, bytes_per_chunk=shard_bytes,
                    storage_options=so)  # fmt: skip

    def reader(cache: str) -> Any:
        ds = am.Dataset.from_chunks(url, storage_options=so, cache_limit=limit,
                                    chunk_cache_dir=cache)  # fmt: skip
        return ds.to_stream(shuffle="chunks", seed=0, infinite=False)

    import s3fs

    stored = s3fs.S3FileSystem(skip_instance_cache=True, **so).du(url)
    cache = tempfile.mkdtemp(prefix="bench-am-")
    t0 = time.perf_counter()
    s = reader(cache)
    opened = time.perf_counter() - t0
    tokens, first, state = 0, None, None
    for i, row in enumerate(s):
        tokens += len(row["input_ids"])
        if i + 1 == BATCH:
            first = time.perf_counter() - t0
        if i + 1 == len(data) // 2:
            state = s.state_dict()
    total = time.perf_counter() - t0
    stats = s.stats()
    s.close()
    t1 = time.perf_counter()
    fresh = reader(tempfile.mkdtemp(prefix="bench-am-resume-"))
    fresh.load_state_dict(state)
    next(fresh)
    resume = time.perf_counter() - t1
    fresh.close()
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "open_s": opened,
            "resume_s": resume, "bytes_downloaded": stats["bytes_downloaded"],
            "bytes_stored": stored, "wait_s": stats["wait_seconds"],
            "rows": tokens // TOKENS}  # fmt: skip


def bench_mosaic(data: np.ndarray, endpoint: str, shard_bytes: int, limit: int) -> dict:
    from streaming import MDSWriter, StreamingDataset

    os.environ["S3_ENDPOINT_URL"] = endpoint
    remote = "s3://bench-remote/mosaic"
    local_out = tempfile.mkdtemp(prefix="bench-mds-out-")
    with MDSWriter(out=(local_out, remote), columns={"input_ids": "ndarray:int32"},
                   size_limit=shard_bytes) as w:  # fmt: skip
        for row in data:
            w.write({"input_ids": row})

    def reader(cache: str) -> Any:
        return StreamingDataset(remote=remote, local=cache, shuffle=True, shuffle_seed=0,
                                cache_limit=limit, batch_size=BATCH)  # fmt: skip

    t0 = time.perf_counter()
    ds = reader(tempfile.mkdtemp(prefix="bench-mds-"))
    tokens, first = 0, None
    for i, row in enumerate(ds):
        tokens += len(row["input_ids"])
        if i + 1 == BATCH:
            first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    t1 = time.perf_counter()
    again = reader(tempfile.mkdtemp(prefix="bench-mds-resume-"))
    again.load_state_dict(ds.state_dict(len(data) // 2, from_beginning=True))
    next(iter(again))
    resume = time.perf_counter() - t1
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "resume_s": resume,
            "bytes_downloaded": None, "rows": tokens // TOKENS}  # fmt: skip


def bench_litdata(data: np.ndarray, endpoint: str, shard_bytes: int, limit: int) -> dict:
    import litdata as ld

    opts = {"endpoint_url": endpoint}
    out = "s3://bench-remote/litdata"
    ld.optimize(fn=lambda i: {"input_ids": data[i]}, inputs=list(range(len(data))),
                output_dir=out, chunk_bytes=shard_bytes, num_workers=1,
                storage_options=opts)  # fmt: skip

    def reader(cache: str) -> Any:
        return ld.StreamingDataset(out, cache_dir=cache, shuffle=True, seed=0,
                                   max_cache_size=limit, storage_options=opts)  # fmt: skip

    t0 = time.perf_counter()
    ds = reader(tempfile.mkdtemp(prefix="bench-ld-"))
    tokens, first = 0, None
    for i, row in enumerate(ds):
        tokens += len(row["input_ids"])
        if i + 1 == BATCH:
            first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "resume_s": None,
            "bytes_downloaded": None, "rows": tokens // TOKENS}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=40_000)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    rows = 8_000 if args.quick else args.rows
    data = corpus_rows(rows)
    corpus = data.nbytes
    shard, limit = corpus // 40, corpus // 4  # 40 shards, 10 of them fit
    server, so, endpoint = start_s3()
    results: dict[str, Any] = {}
    try:
        for name, run in (
            ("arrowmix", lambda: bench_arrowmix(data, so, shard, limit)),
            ("mosaic-streaming", lambda: bench_mosaic(data, endpoint, shard, limit)),
            ("litdata", lambda: bench_litdata(data, endpoint, shard, limit)),
        ):
            try:
                results[name] = run()
            except ImportError as exc:
                results[name] = {"skipped": f"not installed ({exc.name})"}
            except Exception as exc:  # noqa: BLE001  # a peer's failure is a result too
                results[name] = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        server.stop()
    print(json.dumps({"rows": rows, "corpus_bytes": corpus, "shard_bytes": shard,
                      "cache_limit": limit, "results": results}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
