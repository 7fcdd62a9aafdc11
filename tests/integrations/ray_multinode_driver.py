"""Driver of the multi-node Ray test (run in its own process: one Ray cluster per driver).

A moto S3 server holds the corpus and the cache directory; a Ray cluster of two nodes runs on
this machine, each node with its own ``ARROWMIX_CACHE`` (no shared local directory: chunks
are read through each node's bounded cache). The map runs with ``executor="ray"``; the worker
node is removed while segments are being computed. A second run computes only the segments
that are missing, and the result equals a local run's, bit for bit. Prints one JSON line.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time

ROWS, ROWS_PER_CHUNK, SEGMENT_ROWS = 240, 40, 20


def slow_square(batch):
    """The mapped function: slow on the Ray nodes, so that the node removal lands mid-map.

    On the worker node (``BLOCK_IN`` set) a call writes a marker and blocks: the node is
    removed while it computes a segment, whatever the machine's speed.
    """
    time.sleep(float(os.environ.get("SLOW_SQUARE_SECONDS", "0")))
    marks = os.environ.get("BLOCK_IN")
    if marks:
        os.makedirs(marks, exist_ok=True)
        open(os.path.join(marks, "blocked"), "w").close()
        time.sleep(600)  # the node is removed meanwhile
    return {"sq": [i * i for i in batch["id"]]}


def _copies(directory: str) -> int:
    """Chunk copies in one node's cache directory."""
    names = os.listdir(directory) if os.path.isdir(directory) else []
    return len([n for n in names if n.endswith(".arrow")])


def main() -> None:
    root = tempfile.mkdtemp(prefix="amray", dir="/tmp")  # short: Ray's socket paths are limited
    os.environ["RAY_TMPDIR"] = root  # the cluster's files (and address file) stay in here
    os.environ["ARROWMIX_CACHE"] = os.path.join(root, "driver")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    so = {"key": "testing", "secret": "testing",
          "client_kwargs": {"endpoint_url": f"http://{host}:{port}"}}  # fmt: skip
    import s3fs

    s3 = s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False, **so)
    s3.mkdir("ray-bucket")
    import arrowmix as am
    from arrowmix._cache import segments as segmod

    segmod.SEGMENT_ROWS = segmod.MIN_SEGMENT_ROWS = SEGMENT_ROWS
    corpus, cache = "s3://ray-bucket/corpus", "s3://ray-bucket/cache"
    rows = ({"id": i, "text": f"row {i}"} for i in range(ROWS))
    am.write_chunks(rows, corpus, rows_per_chunk=ROWS_PER_CHUNK, storage_options=so)
    local = am.Dataset.from_chunks(corpus, storage_options=so).map(
        slow_square, batched=True, batch_size=SEGMENT_ROWS
    )

    from ray.cluster_utils import Cluster

    env = {"PYTHONPATH": os.pathsep.join(sys.path), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_TMPDIR": root, "SLOW_SQUARE_SECONDS": "1"}  # fmt: skip
    node_args = {"include_dashboard": False, "object_store_memory": 80 * 2**20}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, **node_args,
                        "env_vars": {**env, "ARROWMIX_CACHE": os.path.join(root, "n0")}},
    )  # fmt: skip
    marks = os.path.join(root, "n1-marks")
    worker = cluster.add_node(
        num_cpus=1,
        env_vars={**env, "ARROWMIX_CACHE": os.path.join(root, "n1"), "BLOCK_IN": marks},
        **node_args,
    )
    import ray

    from arrowmix.integrations.ray import RayExecutor

    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    nodes = len([n for n in ray.nodes() if n["Alive"]])
    ds = am.Dataset.from_chunks(corpus, cache_dir=cache, storage_options=so, cache_limit=4096)
    n_segments = ROWS // SEGMENT_ROWS

    def segments_done() -> list[str]:
        try:
            return [p for p in s3.ls(cache, refresh=True) if "/cache-" in p]
        except FileNotFoundError:
            return []

    finished = threading.Event()

    def kill_when_both_nodes_worked() -> None:
        # Both nodes have read chunks through their own caches, a segment is stored, and the
        # worker node is computing a segment it will not finish.
        while not finished.is_set():
            blocked = os.path.exists(os.path.join(marks, "blocked"))
            if blocked and segments_done() and _copies(os.path.join(root, "n1", "remote-chunks")):
                cluster.remove_node(worker, allow_graceful=False)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_both_nodes_worked, daemon=True)
    killer.start()
    first_error = None
    try:
        ds.map(
            slow_square, batched=True, batch_size=SEGMENT_ROWS, executor=RayExecutor(max_retries=0)
        )
    except Exception as exc:  # noqa: BLE001  # the run the node loss interrupted
        first_error = type(exc).__name__
    finished.set()
    killer.join()
    done = {p: s3.info(p)["LastModified"] for p in segments_done()}
    out = ds.map(slow_square, batched=True, batch_size=SEGMENT_ROWS, executor="ray")
    kept = all(s3.info(p)["LastModified"] == t for p, t in done.items())
    ray.shutdown()
    cluster.shutdown()
    server.stop()
    copies = [_copies(os.path.join(root, n, "remote-chunks")) for n in ("n0", "n1", "driver")]
    shutil.rmtree(root, ignore_errors=True)
    equal = out.to_table().equals(local.to_table()) and out.fingerprint == local.fingerprint
    print(json.dumps({
        "nodes": nodes, "segments": n_segments, "done_before_rerun": len(done),
        "first_error": first_error, "kept": kept, "equal": equal,
        "node_copies": copies, "columns": out.column_names, "rows": len(out),
    }))  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
