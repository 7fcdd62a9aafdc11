"""Streaming a tokenised corpus from S3 through a bounded local cache: arrowmix and its peers.

A moto S3 server on loopback holds one corpus of token rows (``input_ids``: 256 int32) in each
tool's own format (arrowmix chunks, Mosaic Streaming MDS shards, litdata chunks), of the same
shard size (1/40 of the corpus). Every tool reads through its own counting HTTP proxy in front
of the server, so "bytes downloaded" is measured the same way for all: response bytes on the
wire during the read (uploads go to the server directly and are not counted).

1. **One reader, one shuffled epoch**, through a local cache limited to a quarter of the corpus
   (arrowmix ``cache_limit``, Mosaic ``cache_limit``, litdata ``max_cache_size``), cold each
   time: tokens/s over the epoch, time to the first 256 rows, bytes downloaded, and the resume
   time (a fresh reader with a fresh cache restored from the state taken half-way, to its first
   row). The tools run interleaved, ``--rounds`` times; medians and the ratio arrowmix / peer.
2. **Padded ``(256, L)`` batches** (arrowmix only), written as a user writes them,
   ``.batch(256).collate("input_ids")``, over the local copy of the corpus and through the
   bounded cache (cold), against ``.batch(256, columnar=True).collate()`` and the former
   workaround ``.batch(256, columnar=True).map(Collator())``: tokens/s of one chunk-shuffled
   epoch (opening included) and bytes downloaded / corpus, interleaved, medians.
3. **Four ranks** (arrowmix only): bytes each rank downloads in one epoch with
   ``shard="chunks"`` (each rank a span of the chunk order) and ``shard="rows"`` (rows of every
   chunk to every rank), each rank with its own cache (one node per rank).

Peers run in a subprocess of ``--peers-python`` (a venv with ``mosaicml-streaming`` and
``litdata``; it needs numpy and boto3 only, not arrowmix), or are reported as skipped.
``--stub-broken-imports`` replaces ``transformers`` and ``torchvision`` by empty modules in the
peer process, for venvs where those optional imports of Mosaic Streaming are broken (a
``huggingface-hub`` too new for ``transformers``, a ``torchvision`` built for another torch);
the code measured does not use them. Loopback S3 measures the tools' own overheads, not a
network: read the ratios, not the absolute numbers.

Usage (from the repository root, in the arrowmix venv)::

    python scripts/bench_remote.py --peers-python /work/peers-venv/bin/python \\
        --stub-broken-imports                   # 40k rows of 256 tokens (~40 MB), 3 rounds
    python scripts/bench_remote.py --quick      # 8k rows, 1 round
    python scripts/bench_remote.py --padded-only --rounds 5   # the padded batches only
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

TOKENS = 256
BATCH = 256
BUCKET = "bench-remote"
DUMMY_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip


def corpus_rows(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 50_000, size=(n, TOKENS), dtype=np.int32)


# ---- the S3 server and the counting proxies ----------------------------------------------


class CountingProxy:
    """An HTTP proxy in front of the S3 server that counts the response bytes it relays."""

    def __init__(self, upstream: str) -> None:
        target = urllib.parse.urlsplit(upstream)
        proxy = self
        self.bytes = 0
        self.requests = 0
        self._lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                if self.path == "/__bytes__":  # what a peer process asks between phases
                    count = str(proxy.bytes).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(count)))
                    self.end_headers()
                    self.wfile.write(count)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                with proxy._lock:
                    proxy.bytes += len(data)
                    proxy.requests += 1
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                if self.command == "HEAD":
                    self.send_header("Content-Length", resp.getheader("Content-Length") or "0")
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _relay

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients that drop a kept-alive connection

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self._lock:
            self.bytes = self.requests = 0

    def stop(self) -> None:
        self._server.shutdown()


def start_s3() -> tuple[Any, str]:
    """A moto server (bucket ``bench-remote``) and its endpoint."""
    for k, v in DUMMY_AWS.items():
        os.environ.setdefault(k, v)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import s3fs

    s3fs.S3FileSystem(skip_instance_cache=True, **s3_options(endpoint)).mkdir(BUCKET)
    return server, endpoint


def s3_options(endpoint: str) -> dict[str, Any]:
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint}}


# ---- arrowmix --------------------------------------------------------------------------------

AM_URL = f"s3://{BUCKET}/arrowmix"


def prepare_arrowmix(data: np.ndarray, endpoint: str, shard_bytes: int) -> int:
    import pyarrow as pa

    import arrowmix as am

    flat = pa.array(data.reshape(-1))
    ids = pa.FixedSizeListArray.from_arrays(flat, TOKENS).cast(pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), AM_URL, bytes_per_chunk=shard_bytes,
                    storage_options=s3_options(endpoint))  # fmt: skip
    import s3fs

    return int(s3fs.S3FileSystem(skip_instance_cache=True, **s3_options(endpoint)).du(AM_URL))


def _am_stream(endpoint: str, limit: int, cache: str, **kwargs: Any) -> Any:
    import arrowmix as am

    ds = am.Dataset.from_chunks(AM_URL, storage_options=s3_options(endpoint), cache_limit=limit,
                                chunk_cache_dir=cache)  # fmt: skip
    return ds.to_stream(shuffle="chunks", seed=0, infinite=False, **kwargs)


def wire_bytes(endpoint: str) -> int:
    """Response bytes the counting proxy at ``endpoint`` has relayed so far."""
    with urllib.request.urlopen(f"{endpoint}/__bytes__", timeout=30) as resp:
        return int(resp.read())


def read_arrowmix(endpoint: str, rows: int, limit: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    s = _am_stream(endpoint, limit, tempfile.mkdtemp(prefix="bench-am-"))
    tokens, first, state = 0, None, None
    for i, row in enumerate(s):
        tokens += len(row["input_ids"])
        if i + 1 == BATCH:
            first = time.perf_counter() - t0
        if i + 1 == rows // 2:
            state = s.state_dict()
    total = time.perf_counter() - t0
    own = s.stats()
    s.close()
    epoch_bytes = wire_bytes(endpoint)
    t1 = time.perf_counter()
    fresh = _am_stream(endpoint, limit, tempfile.mkdtemp(prefix="bench-am-resume-"))
    fresh.load_state_dict(state)
    next(fresh)
    resume = time.perf_counter() - t1
    fresh.close()
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "resume_s": resume,
            "rows": tokens // TOKENS, "epoch_bytes": epoch_bytes,
            "own_bytes_downloaded": own["bytes_downloaded"],
            "wait_s": own["wait_seconds"]}  # fmt: skip


def arrowmix_ranks(proxy: CountingProxy, limit: int, ranks: int = 4) -> dict[str, Any]:
    """Bytes per rank of one 4-rank epoch, dealing chunks and dealing rows."""
    import warnings

    out: dict[str, Any] = {}
    for shard in ("chunks", "rows"):
        per_rank, rows = [], []
        for r in range(ranks):
            proxy.reset()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the remainder rows of shard="chunks"
                s = _am_stream(proxy.endpoint, limit, tempfile.mkdtemp(prefix="bench-am-rank-"),
                               num_instances=ranks, instance_rank=r, shard=shard)  # fmt: skip
            rows.append(sum(1 for _ in s))
            per_rank.append(s.stats()["bytes_downloaded"])
            s.close()
        out[shard] = {"bytes_per_rank": per_rank, "rows_per_rank": rows}
    return out


# ---- padded (256, L) batches: the token stages, local and through the bounded cache ----------

#: How a user writes padded batches, and where the corpus is: (label, remote, pipeline).
PADDED = (
    ("local: .batch(256).collate()", False, "collate"),
    ("remote: .batch(256).collate()", True, "collate"),
    ("remote: .batch(256, columnar=True).collate()", True, "columnar"),
    ("remote: .batch(256, columnar=True).map(Collator())", True, "workaround"),
)


def prepare_local(data: np.ndarray, shard_bytes: int) -> str:
    """The same corpus as local chunk files (the local side of the padded batches)."""
    import pyarrow as pa

    import arrowmix as am

    out = tempfile.mkdtemp(prefix="bench-am-local-")
    flat = pa.array(data.reshape(-1))
    ids = pa.FixedSizeListArray.from_arrays(flat, TOKENS).cast(pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), out, bytes_per_chunk=shard_bytes)
    return out


def padded_arrowmix(endpoint: str, limit: int, local: str, case: int) -> dict[str, Any]:
    """Tokens/s of one chunk-shuffled epoch of padded ``(256, L)`` batches (cold cache)."""
    import arrowmix as am
    from arrowmix.stream import Collator

    _, remote, how = PADDED[case]
    t0 = time.perf_counter()
    if remote:
        s = _am_stream(endpoint, limit, tempfile.mkdtemp(prefix="bench-am-padded-"))
    else:
        s = am.Dataset.from_chunks(local).to_stream(shuffle="chunks", seed=0, infinite=False)
    if how == "collate":
        pipe = s.batch(BATCH).collate("input_ids")
    elif how == "columnar":
        pipe = s.batch(BATCH, columnar=True).collate("input_ids")
    else:
        pipe = s.batch(BATCH, columnar=True).map(Collator("input_ids"))
    tokens = batches = 0
    for b in pipe:
        tokens += int(b["attention_mask"].sum())
        batches += 1
    total = time.perf_counter() - t0
    own = s.stats() if remote else {"bytes_downloaded": 0, "wait_seconds": 0.0}
    s.close()
    return {"tokens_per_s": tokens / total, "seconds": total, "batches": batches,
            "bytes_downloaded": own["bytes_downloaded"],
            "wait_s": own["wait_seconds"]}  # fmt: skip


def padded_report(stored: int, runs: dict[int, list[dict[str, Any]]]) -> None:
    med = {k: statistics.median(r["tokens_per_s"] for r in v) for k, v in runs.items()}
    spread = {k: (min(r["tokens_per_s"] for r in v), max(r["tokens_per_s"] for r in v))
              for k, v in runs.items()}  # fmt: skip
    print("\narrowmix, padded (256, L) batches, one chunk-shuffled epoch, cold cache:\n")
    print("| pipeline | tokens/s | / local | / workaround | bytes / corpus | epoch (s) | "
          "waiting for downloads (s) | batches |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for k, (label, remote, _) in enumerate(PADDED):
        if k not in runs:
            continue
        lo, hi = spread[k]
        got = statistics.median(r["bytes_downloaded"] for r in runs[k]) / stored
        secs = statistics.median(r["seconds"] for r in runs[k])
        wait = statistics.median(r["wait_s"] for r in runs[k])
        print(f"| `{label}` | {med[k] / 1e6:.2f} M ({lo / 1e6:.2f}-{hi / 1e6:.2f}) | "
              f"{med[k] / med[0]:.2f} | {med[k] / med[3]:.2f} | "
              f"{f'{got:.2f}' if remote else '-'} | {secs:.2f} | {wait:.2f} | "
              f"{runs[k][0]['batches']} |")  # fmt: skip


# ---- peers (run in the peers' interpreter) ----------------------------------------------------


def _peer_env(endpoint: str) -> None:
    for k, v in DUMMY_AWS.items():
        os.environ.setdefault(k, v)
    os.environ["S3_ENDPOINT_URL"] = endpoint  # Mosaic Streaming's S3 endpoint


def _litdata_http() -> None:
    """Let litdata's obstore client talk plain HTTP (the loopback server has no TLS)."""
    import litdata.streaming.downloader as dl

    dl._OBSTORE_CLIENT_OPTIONS = {**dl._OBSTORE_CLIENT_OPTIONS, "allow_http": "true"}


def prepare_mosaic(data: np.ndarray, endpoint: str, shard_bytes: int) -> None:
    from streaming import MDSWriter

    _peer_env(endpoint)
    out = (tempfile.mkdtemp(prefix="bench-mds-out-"), f"s3://{BUCKET}/mosaic")
    with MDSWriter(out=out, columns={"input_ids": "ndarray:int32"}, size_limit=shard_bytes) as w:
        for row in data:
            w.write({"input_ids": row})


def read_mosaic(endpoint: str, rows: int, limit: int) -> dict[str, Any]:
    from streaming import StreamingDataset

    _peer_env(endpoint)

    def reader() -> Any:
        # shuffle_block_size: samples of 4 shards, arrowmix's shuffle window (Mosaic's default
        # block spans the whole of this small corpus, and its cache then thrashes).
        return StreamingDataset(remote=f"s3://{BUCKET}/mosaic", shuffle=True, shuffle_seed=0,
                                local=tempfile.mkdtemp(prefix="bench-mds-"), cache_limit=limit,
                                batch_size=BATCH,
                                shuffle_block_size=max(1, rows // 10))  # fmt: skip

    t0 = time.perf_counter()
    ds = reader()
    tokens, first = 0, None
    for i, row in enumerate(ds):
        tokens += len(row["input_ids"])
        if i + 1 == BATCH:
            first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    state = ds.state_dict(rows // 2, from_beginning=True)
    epoch_bytes = wire_bytes(endpoint)
    t1 = time.perf_counter()
    again = reader()
    again.load_state_dict(state)
    next(iter(again))
    resume = time.perf_counter() - t1
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "resume_s": resume,
            "rows": tokens // TOKENS, "epoch_bytes": epoch_bytes}  # fmt: skip


_LD_DATA: np.ndarray | None = None


def _ld_item(i: int) -> dict[str, Any]:
    assert _LD_DATA is not None
    return {"input_ids": _LD_DATA[i]}


def prepare_litdata(data: np.ndarray, endpoint: str, shard_bytes: int) -> None:
    import litdata as ld

    global _LD_DATA
    _LD_DATA = data
    _peer_env(endpoint)
    _litdata_http()
    ld.optimize(fn=_ld_item, inputs=list(range(len(data))), output_dir=f"s3://{BUCKET}/litdata",
                chunk_bytes=shard_bytes, num_workers=1, start_method="fork", verbose=False,
                storage_options={"endpoint_url": endpoint})  # fmt: skip


def read_litdata(endpoint: str, rows: int, limit: int) -> dict[str, Any]:
    import litdata as ld

    _peer_env(endpoint)
    _litdata_http()

    def loader() -> Any:
        # force_override_state_dict: the resumed reader has a fresh cache directory (a new
        # node), which litdata's state otherwise refuses.
        ds = ld.StreamingDataset(f"s3://{BUCKET}/litdata", shuffle=True, seed=0,
                                 cache_dir=tempfile.mkdtemp(prefix="bench-ld-"),
                                 max_cache_size=limit, force_override_state_dict=True,
                                 storage_options={"endpoint_url": endpoint})  # fmt: skip
        return ld.StreamingDataLoader(ds, batch_size=BATCH, num_workers=0)

    t0 = time.perf_counter()
    dl = loader()
    tokens, first, state, seen = 0, None, None, 0
    for batch in dl:
        tokens += int(batch["input_ids"].numel())
        seen += len(batch["input_ids"])
        if first is None:
            first = time.perf_counter() - t0
        if state is None and seen >= rows // 2:
            state = dl.state_dict()
    total = time.perf_counter() - t0
    epoch_bytes = wire_bytes(endpoint)
    t1 = time.perf_counter()
    again = loader()
    again.load_state_dict(state)
    next(iter(again))
    resume = time.perf_counter() - t1
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "resume_s": resume,
            "rows": tokens // TOKENS, "epoch_bytes": epoch_bytes}  # fmt: skip


PEERS = {"mosaic-streaming": (prepare_mosaic, read_mosaic),
         "litdata": (prepare_litdata, read_litdata)}  # fmt: skip


def peer_main(args: argparse.Namespace) -> None:
    """The peer subprocess: one phase of one peer; prints a JSON line."""
    if args.stub_broken_imports:
        _stub_imports(("transformers", "torchvision"))
    prepare, read = PEERS[args.peer]
    try:
        if args.phase == "prepare":
            prepare(corpus_rows(args.rows), args.endpoint, args.shard_bytes)
            out: dict[str, Any] = {}
        else:
            out = read(args.endpoint, args.rows, args.limit)
    except ImportError as exc:
        out = {"skipped": f"not installed ({exc.name})"}
    except Exception as exc:  # noqa: BLE001  # a peer's failure is a result too
        out = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
    print("RESULT " + json.dumps(out), flush=True)
    os._exit(0)  # peers leave download threads and shared memory behind; do not wait on them


def _stub_imports(names: tuple[str, ...]) -> None:
    import importlib.abc
    import importlib.machinery
    import types

    class Stub(types.ModuleType):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.__path__: list[str] = []

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname.split(".")[0] in names:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            return Stub(spec.name)

        def exec_module(self, module: Any) -> None:
            pass

    sys.meta_path.insert(0, Finder())


def run_peer(args: argparse.Namespace, name: str, phase: str, endpoint: str,
             **extra: int) -> dict[str, Any]:  # fmt: skip
    cmd = [args.peers_python, os.path.abspath(__file__), "--peer", name, "--phase", phase,
           "--endpoint", endpoint, "--rows", str(extra["rows"]),
           "--shard-bytes", str(extra["shard_bytes"]), "--limit", str(extra["limit"])]  # fmt: skip
    if args.stub_broken_imports:
        cmd.append("--stub-broken-imports")
    env = {**os.environ, "PYTHONPATH": ""}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    except subprocess.TimeoutExpired:
        return {"failed": "timed out after 30 minutes"}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    return {"failed": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}


# ---- the run ---------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=40_000)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--peers-python", default=sys.executable)
    p.add_argument("--stub-broken-imports", action="store_true")
    p.add_argument("--padded-only", action="store_true",
                   help="measure only arrowmix's padded (256, L) batches")  # fmt: skip
    p.add_argument("--peer", choices=sorted(PEERS), help=argparse.SUPPRESS)
    p.add_argument("--phase", choices=("prepare", "read"), help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--shard-bytes", type=int, help=argparse.SUPPRESS)
    p.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.peer:
        peer_main(args)
        return
    rows = 8_000 if args.quick else args.rows
    rounds = 1 if args.quick else args.rounds
    data = corpus_rows(rows)
    corpus = data.nbytes
    shard, limit = corpus // 40, corpus // 4  # 40 shards, 10 of them fit
    sizes = {"rows": rows, "shard_bytes": shard, "limit": limit}
    server, endpoint = start_s3()
    tools = ["arrowmix", *PEERS]
    proxies = {name: CountingProxy(endpoint) for name in tools}
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}
    try:
        stored = prepare_arrowmix(data, endpoint, shard)
        local = prepare_local(data, shard)
        padded: dict[int, list[dict[str, Any]]] = {k: [] for k in range(len(PADDED))}
        for _ in range(rounds):  # interleaved: every pipeline once per round
            for k in range(len(PADDED)):
                padded[k].append(padded_arrowmix(proxies["arrowmix"].endpoint, limit, local, k))
        padded_report(stored, padded)
        if args.padded_only:
            return
        ready = {"arrowmix": {}}
        for name in PEERS:
            ready[name] = run_peer(args, name, "prepare", endpoint, **sizes)
        for _ in range(rounds):  # interleaved: every tool once per round
            for name in tools:
                if ready[name]:
                    continue  # skipped or failed while preparing
                proxies[name].reset()
                if name == "arrowmix":
                    res = read_arrowmix(proxies[name].endpoint, rows, limit)
                else:
                    res = run_peer(args, name, "read", proxies[name].endpoint, **sizes)
                res["bytes_downloaded"] = proxies[name].bytes
                res["requests"] = proxies[name].requests
                samples[name].append(res)
        ranks = arrowmix_ranks(proxies["arrowmix"], limit)
    finally:
        for proxy in proxies.values():
            proxy.stop()
        server.stop()
    report(rows, corpus, stored, sizes, ready, samples, ranks)


def report(rows: int, corpus: int, stored: int, sizes: dict[str, int], ready: dict[str, Any],
           samples: dict[str, list[dict[str, Any]]], ranks: dict[str, Any]) -> None:  # fmt: skip
    keys = ("tokens_per_s", "first_batch_s", "resume_s", "bytes_downloaded", "epoch_bytes",
            "requests")  # fmt: skip
    med: dict[str, dict[str, float]] = {}
    print(f"corpus: {rows} rows x {TOKENS} int32 tokens = {corpus / 1e6:.1f} MB of tokens "
          f"({stored / 1e6:.1f} MB as arrowmix chunks); shards {sizes['shard_bytes'] / 1e6:.2f} "
          f"MB; cache limit {sizes['limit'] / 1e6:.1f} MB\n")  # fmt: skip
    print("| tool | tokens/s | first batch (s) | resume (s) | MB downloaded: epoch | resume "
          "| requests | rows |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in samples.items():
        if not runs:
            print(f"| {name} | {json.dumps(ready[name])} | | | | | | |")
            continue
        bad = [r for r in runs if "failed" in r or "skipped" in r]
        if bad:
            print(f"| {name} | {json.dumps(bad[0])} | | | | | | |")
            continue
        med[name] = {k: statistics.median(r[k] for r in runs) for k in keys}
        m = med[name]
        print(f"| {name} | {m['tokens_per_s'] / 1e6:.2f}M | {m['first_batch_s']:.2f} | "
              f"{m['resume_s']:.2f} | {m['epoch_bytes'] / 1e6:.1f} | "
              f"{(m['bytes_downloaded'] - m['epoch_bytes']) / 1e6:.1f} | "
              f"{m['requests']:.0f} | {runs[0]['rows']} |")  # fmt: skip
    if "arrowmix" in med:
        a = med["arrowmix"]
        print("\n| ratio arrowmix / peer | tokens/s | first batch | resume | epoch bytes |")
        print("|---|---|---|---|---|")
        for name, m in med.items():
            if name != "arrowmix":
                print(f"| {name} | {a['tokens_per_s'] / m['tokens_per_s']:.2f} | "
                      f"{a['first_batch_s'] / m['first_batch_s']:.2f} | "
                      f"{a['resume_s'] / m['resume_s']:.2f} | "
                      f"{a['epoch_bytes'] / m['epoch_bytes']:.2f} |")  # fmt: skip
    print("\narrowmix, 4 ranks, one epoch each, own cache each (MB downloaded per rank):\n")
    print("| shard | rank 0 | rank 1 | rank 2 | rank 3 | all ranks / corpus | rows per rank |")
    print("|---|---|---|---|---|---|---|")
    for shard, res in ranks.items():
        b = res["bytes_per_rank"]
        cells = " | ".join(f"{x / 1e6:.1f}" for x in b)
        print(f"| {shard} | {cells} | {sum(b) / stored:.2f} | {res['rows_per_rank']} |")
    print("\n" + json.dumps({"sizes": sizes, "samples": samples, "ranks": ranks}))


if __name__ == "__main__":
    main()
