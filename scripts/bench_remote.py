"""Streaming a tokenised corpus from S3 through a bounded local cache: arrowmix and its peers.

A moto S3 server on loopback holds one corpus of token rows (``input_ids``: 256 int32) in each
tool's own format (arrowmix chunks, Mosaic Streaming MDS shards, litdata chunks), of the same
shard size (1/40 of the corpus). Every tool reads through its own counting HTTP proxy in front
of the server, so "bytes fetched" is measured the same way for all: response bytes on the wire
(uploads go to the server directly and are not counted).

Every phase of every tool runs in a fresh process, with a fresh cache limited to a quarter of
the corpus (arrowmix ``cache_limit``, Mosaic ``cache_limit``, litdata ``max_cache_size``);
the tool's package and its storage client are imported before the clock starts. The tools run
interleaved, ``--rounds`` times; medians and the ratio arrowmix / peer:

1. **rows**: one shuffled epoch of numpy rows (``np.asarray(row["input_ids"])`` of each row
   the tool yields; arrowmix ``ds.with_format("numpy").to_stream(...)``): tokens/s from the
   constructor on, time to the first 256 rows, bytes fetched, the cache directory's peak
   size (sampled every 20 ms).
2. **batches**: one shuffled epoch of padded ``(256, L)`` batches: arrowmix
   ``.batch(256).collate("input_ids")`` (as a user writes it; "arrowmix collate") and
   ``.batch(256, columnar=True).map(Collator("input_ids"))`` ("arrowmix map"), Mosaic's
   ``StreamingDataLoader``, litdata's ``StreamingDataLoader``; the state half-way is saved.
3. **resume**: a fresh process with a fresh cache (a new node) builds the batches pipeline,
   loads that state and yields its first batch.
4. **ranks**: ``--ranks`` processes at once, each rank a node of its own (its own cache), one
   epoch of numpy rows each: bytes fetched by all ranks, rows per rank, disk peak.

Peers run in ``--peers-python`` (a venv with ``mosaicml-streaming`` and ``litdata``; it needs
numpy and boto3, not arrowmix), or are reported as skipped. ``--stub-broken-imports`` replaces
``transformers`` and ``torchvision`` by empty modules in the peer processes, for venvs where
those optional imports of Mosaic Streaming are broken; the code measured does not use them.
Loopback S3 measures the tools' own overheads, not a network: read the ratios.

Usage (from the repository root, in the arrowmix venv)::

    python scripts/bench_remote.py --rows 100000 --peers-python /work/peers-venv/bin/python \\
        --stub-broken-imports
    python scripts/bench_remote.py --quick      # 8k rows, 1 round
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib
import json
import logging
import os
import pickle
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


# ---- what runs in a fresh process: one phase of one tool -----------------------------------


class DiskPeak:
    """The largest size the cache directory reached, sampled every 20 ms on a thread."""

    def __init__(self, directory: str) -> None:
        self.directory, self.peak, self._stop = directory, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, du(self.directory))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, du(self.directory))


def du(directory: str) -> int:
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.stat(os.path.join(root, name)).st_size
    return total


class Arrowmix:
    """arrowmix: ``from_chunks(url, cache_limit=...)`` and ``to_stream(shuffle="chunks")``."""

    def __init__(self, endpoint: str, limit: int, cache: str, variant: str) -> None:
        self.endpoint, self.limit, self.cache, self.variant = endpoint, limit, cache, variant

    def _stream(self, rank: int = 0, world: int = 1, fmt: str | None = None) -> Any:
        import arrowmix as am

        ds = am.Dataset.from_chunks(AM_URL, storage_options=s3_options(self.endpoint),
                                    cache_limit=self.limit, chunk_cache_dir=self.cache)  # fmt: skip
        return ds.with_format(fmt).to_stream(shuffle="chunks", seed=0, infinite=False,
                                             num_instances=world, instance_rank=rank)  # fmt: skip

    def rows(self, rank: int = 0, world: int = 1) -> Any:
        self.s = self._stream(rank, world, "numpy")  # numpy rows, as an HF user asks
        return (np.asarray(r["input_ids"]) for r in self.s)

    def batches(self) -> Any:
        from arrowmix.stream import Collator

        s = self._stream()
        if self.variant == "collate":  # what a user writes
            self.s = s.batch(BATCH).collate("input_ids")
        else:  # the workaround while the token stages do not read bounded corpora
            self.s = s.batch(BATCH, columnar=True).map(Collator("input_ids"))
        return (b["input_ids"] for b in self.s)

    def state(self, rows: int) -> Any:
        return self.s.state_dict()

    def resume(self, state: Any) -> Any:
        self.batches()
        self.s.load_state_dict(state)
        return next(iter(self.s))["input_ids"]


class Mosaic:
    """Mosaic Streaming: ``StreamingDataset(remote=..., cache_limit=...)``."""

    def __init__(self, endpoint: str, limit: int, cache: str, variant: str) -> None:
        _peer_env(endpoint)
        self.limit, self.cache = limit, cache

    def _dataset(self, rows_hint: int) -> Any:
        from streaming import StreamingDataset

        # shuffle_block_size: samples of 4 shards, arrowmix's shuffle window (Mosaic's default
        # block spans the whole of this small corpus, and its cache then thrashes).
        return StreamingDataset(remote=f"s3://{BUCKET}/mosaic", local=self.cache, shuffle=True,
                                shuffle_seed=0, cache_limit=self.limit, batch_size=BATCH,
                                shuffle_block_size=max(1, rows_hint // 10))  # fmt: skip

    def rows(self, rank: int = 0, world: int = 1) -> Any:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK="0",
                          LOCAL_WORLD_SIZE="1")  # fmt: skip  # each rank a node of its own
        self.ds = self._dataset(ROWS_HINT[0])
        return (np.asarray(r["input_ids"]) for r in self.ds)

    def batches(self) -> Any:
        from streaming import StreamingDataLoader

        self.dl = StreamingDataLoader(self._dataset(ROWS_HINT[0]), batch_size=BATCH)
        return (b["input_ids"] for b in self.dl)

    def state(self, rows: int) -> Any:
        return self.dl.state_dict()

    def resume(self, state: Any) -> Any:
        self.batches()
        self.dl.load_state_dict(state)
        return next(iter(self.dl))["input_ids"]


class Litdata:
    """litdata: ``StreamingDataset(..., max_cache_size=...)``, batches by its loader."""

    def __init__(self, endpoint: str, limit: int, cache: str, variant: str) -> None:
        _peer_env(endpoint)
        _litdata_http()
        self.endpoint, self.limit, self.cache = endpoint, limit, cache

    def _dataset(self) -> Any:
        import litdata as ld

        # force_override_state_dict: the resumed reader has a fresh cache directory (a new
        # node), which litdata's state otherwise refuses.
        return ld.StreamingDataset(f"s3://{BUCKET}/litdata", shuffle=True, seed=0,
                                   cache_dir=self.cache, max_cache_size=self.limit,
                                   force_override_state_dict=True,
                                   storage_options={"endpoint_url": self.endpoint})  # fmt: skip

    def rows(self, rank: int = 0, world: int = 1) -> Any:
        from litdata.utilities.env import _DistributedEnv

        ds = self._dataset()
        if world > 1:  # each rank a node of its own (no torch.distributed here)
            ds.distributed_env = _DistributedEnv(world, rank, world)
        return (np.asarray(r["input_ids"]) for r in ds)

    def batches(self) -> Any:
        import litdata as ld

        self.dl = ld.StreamingDataLoader(self._dataset(), batch_size=BATCH, num_workers=0)
        return (b["input_ids"] for b in self.dl)

    def state(self, rows: int) -> Any:
        return self.dl.state_dict()

    def resume(self, state: Any) -> Any:
        self.batches()
        self.dl.load_state_dict(state)
        return next(iter(self.dl))["input_ids"]


TOOLS = {"arrowmix": Arrowmix, "mosaic-streaming": Mosaic, "litdata": Litdata}
#: Each tool's package and storage client, imported before the clock starts.
IMPORTS = {"arrowmix": ("arrowmix", "arrowmix.stream", "s3fs"),
           "mosaic-streaming": ("streaming", "boto3"),
           "litdata": ("litdata", "obstore", "boto3")}  # fmt: skip
ROWS_HINT = [0]


def child_main(args: argparse.Namespace) -> dict[str, Any]:
    """One phase of one tool, in this fresh process (imports are not timed)."""
    if args.tool != "arrowmix":
        _peer_env(args.endpoint)
        if args.stub_broken_imports:
            _stub_imports(("transformers", "torchvision"))
        import torch  # noqa: F401  # the peers import it at top level: not timed
    ROWS_HINT[0] = args.rows
    for module in IMPORTS[args.tool]:  # imports are not timed, for any tool
        with contextlib.suppress(ImportError):
            importlib.import_module(module)

    cache = tempfile.mkdtemp(prefix=f"bench-{args.tool}-", dir=args.workdir)
    tool = TOOLS[args.tool](args.endpoint, args.limit, cache, args.variant)
    state_file = os.path.join(args.workdir, f"state-{args.tool}-{args.variant}.pkl")
    if args.phase == "resume":
        with open(state_file, "rb") as f:
            state = pickle.load(f)
        t0 = time.perf_counter()
        first = tool.resume(state)
        return {"resume_s": time.perf_counter() - t0, "first_shape": list(np.shape(first))}
    disk = DiskPeak(cache)
    t0 = time.perf_counter()
    if args.phase == "ranks":
        items = tool.rows(args.rank, args.world)
    else:
        items = tool.rows() if args.phase == "rows" else tool.batches()
    tokens, rows, first, saved = 0, 0, None, False
    for item in items:
        tokens += int(np.prod(item.shape))
        rows += len(item) if args.phase == "batches" else 1
        if first is None and rows >= BATCH:
            first = time.perf_counter() - t0
        if args.phase == "batches" and not saved and rows >= args.rows // 2:
            with open(state_file, "wb") as f:
                pickle.dump(tool.state(rows), f)
            saved = True
    total = time.perf_counter() - t0
    if args.phase == "ranks" and "torch" in sys.modules:  # Mosaic's ranks meet before leaving
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.barrier()
    return {"tokens_per_s": tokens / total, "first_batch_s": first, "rows": rows,
            "disk_peak": disk.stop()}  # fmt: skip


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


PEERS = {"mosaic-streaming": prepare_mosaic, "litdata": prepare_litdata}


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


def spawn(args: argparse.Namespace, tool: str, variant: str, phase: str, endpoint: str,
          sizes: dict[str, int], rank: int = 0, world: int = 1) -> Any:  # fmt: skip
    """Start one phase of one tool in a fresh process."""
    python = sys.executable if tool == "arrowmix" else args.peers_python
    cmd = [python, os.path.abspath(__file__), "--tool", tool, "--variant", variant,
           "--phase", phase, "--endpoint", endpoint, "--rows", str(sizes["rows"]),
           "--shard-bytes", str(sizes["shard_bytes"]), "--limit", str(sizes["limit"]),
           "--workdir", args.workdir, "--rank", str(rank), "--world", str(world)]  # fmt: skip
    if args.stub_broken_imports:
        cmd.append("--stub-broken-imports")
    # arrowmix runs from this checkout; the peers' venv gets no PYTHONPATH of ours.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": here if tool == "arrowmix" else ""}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip


def result(proc: Any) -> dict[str, Any]:
    """The RESULT line of a process started by :func:`spawn`."""
    try:
        out, err = proc.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"failed": "timed out after 30 minutes"}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            got: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return got
    return {"failed": f"exit {proc.returncode}: {err.strip()[-300:]}"}


def run_child(args: argparse.Namespace, tool: str, variant: str, phase: str, endpoint: str,
              sizes: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    return result(spawn(args, tool, variant, phase, endpoint, sizes))


def prepare_peer(args: argparse.Namespace, name: str, endpoint: str,
                 sizes: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    return run_child(args, name, "", "prepare", endpoint, sizes)


# ---- the run ---------------------------------------------------------------------------------

#: (tool, variant) measured; arrowmix's padded batches both as a user writes them and by the
#: ``map(Collator(...))`` workaround.
CASES = [("arrowmix", "collate"), ("arrowmix", "map"), ("mosaic-streaming", ""),
         ("litdata", "")]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=40_000)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--peers-python", default=sys.executable)
    p.add_argument("--stub-broken-imports", action="store_true")
    p.add_argument("--workdir", default=None)
    p.add_argument("--tool", choices=sorted(TOOLS), help=argparse.SUPPRESS)
    p.add_argument("--variant", default="", help=argparse.SUPPRESS)
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--shard-bytes", type=int, help=argparse.SUPPRESS)
    p.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.tool:
        try:
            if args.phase == "prepare":
                if args.stub_broken_imports:
                    _stub_imports(("transformers", "torchvision"))
                PEERS[args.tool](corpus_rows(args.rows), args.endpoint, args.shard_bytes)
                out: dict[str, Any] = {}
            else:
                out = child_main(args)
        except ImportError as exc:
            out = {"skipped": f"not installed ({exc.name})"}
        except Exception as exc:  # noqa: BLE001  # a tool's failure is a result too
            out = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)  # peers leave download threads and shared memory behind
    rows = 8_000 if args.quick else args.rows
    rounds = 1 if args.quick else args.rounds
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="bench-remote-")
    data = corpus_rows(rows)
    corpus = data.nbytes
    shard, limit = corpus // 40, corpus // 4  # 40 shards, 10 of them fit
    sizes = {"rows": rows, "shard_bytes": shard, "limit": limit}
    server, endpoint = start_s3()
    proxies = {name: CountingProxy(endpoint) for name in TOOLS}
    samples: dict[str, list[dict[str, Any]]] = {f"{t} {v}".strip(): [] for t, v in CASES}
    ranks: dict[str, Any] = {}
    try:
        stored = prepare_arrowmix(data, endpoint, shard)
        ready = {"arrowmix": {}}
        for name in PEERS:
            ready[name] = prepare_peer(args, name, endpoint, sizes)
        for _ in range(rounds):  # interleaved: every tool once per round, each phase fresh
            for tool, variant in CASES:
                if ready[tool]:
                    continue  # skipped or failed while preparing
                res: dict[str, Any] = {}
                for phase in ("rows", "batches", "resume"):
                    if phase == "rows" and variant == "map":
                        continue  # the rows are the same as the collate case's
                    proxies[tool].reset()
                    got = run_child(args, tool, variant, phase, proxies[tool].endpoint, sizes)
                    res[phase] = {**got, "bytes": proxies[tool].bytes,
                                  "requests": proxies[tool].requests}  # fmt: skip
                samples[f"{tool} {variant}".strip()].append(res)
        for tool in TOOLS:
            if ready[tool]:
                continue
            proxies[tool].reset()  # all ranks at once, each a node of its own
            procs = [spawn(args, tool, "collate", "ranks", proxies[tool].endpoint, sizes,
                           rank=r, world=args.ranks) for r in range(args.ranks)]  # fmt: skip
            per_rank = [result(proc) for proc in procs]
            per_rank[0]["all_bytes"] = proxies[tool].bytes
            ranks[tool] = per_rank
    finally:
        for proxy in proxies.values():
            proxy.stop()
        server.stop()
    report(rows, corpus, stored, sizes, ready, samples, ranks)


def _med(runs: list[dict[str, Any]], phase: str, key: str) -> float | None:
    vals = [r[phase][key] for r in runs if r.get(phase, {}).get(key) is not None]
    return statistics.median(vals) if vals else None


def _why(runs: list[dict[str, Any]], phase: str) -> str:
    for r in runs:
        got = r.get(phase, {})
        if "failed" in got or "skipped" in got:
            return str(got.get("failed") or got.get("skipped"))[:120]
    return ""


def report(rows: int, corpus: int, stored: int, sizes: dict[str, int], ready: dict[str, Any],
           samples: dict[str, list[dict[str, Any]]], ranks: dict[str, Any]) -> None:  # fmt: skip
    print(f"corpus: {rows} rows x {TOKENS} int32 tokens = {corpus / 1e6:.1f} MB of tokens "
          f"({stored / 1e6:.1f} MB as arrowmix chunks); shards {sizes['shard_bytes'] / 1e6:.2f} "
          f"MB; cache limit {sizes['limit'] / 1e6:.1f} MB\n")  # fmt: skip
    print(
        "| tool | tokens/s, numpy rows | tokens/s, padded (256, L) | first 256 rows (s) "
        "| resume to first batch (s) | MB fetched: epoch / corpus | disk peak / limit |"
    )
    print("|---|---|---|---|---|---|---|")
    med: dict[str, dict[str, float | None]] = {}
    for name, runs in samples.items():
        tool = name.split()[0]
        if ready.get(tool):
            print(f"| {name} | {json.dumps(ready[tool])[:120]} | | | | | |")
            continue
        m = med[name] = {
            "rows": _med(runs, "rows", "tokens_per_s"),
            "batches": _med(runs, "batches", "tokens_per_s"),
            "first": _med(runs, "rows", "first_batch_s"),
            "resume": _med(runs, "resume", "resume_s"),
            "bytes": _med(runs, "rows", "bytes"),
            "disk": _med(runs, "rows", "disk_peak"),
        }

        def cell(v: float | None, fmt: str, phase: str, runs: list[Any] = runs) -> str:
            return fmt.format(v) if v is not None else (_why(runs, phase) or "-")

        print(f"| {name} | {cell(m['rows'] and m['rows'] / 1e6, '{:.2f} M', 'rows')} | "
              f"{cell(m['batches'] and m['batches'] / 1e6, '{:.2f} M', 'batches')} | "
              f"{cell(m['first'], '{:.2f}', 'rows')} | {cell(m['resume'], '{:.2f}', 'resume')} | "
              f"{cell(m['bytes'] and m['bytes'] / stored, '{:.2f}', 'rows')} | "
              f"{cell(m['disk'] and m['disk'] / sizes['limit'], '{:.2f}', 'rows')} |")  # fmt: skip
    peers = [n for n in med if not n.startswith("arrowmix")]
    print("\n| arrowmix / faster peer | " + " | ".join(peers) + " |")
    print("|---|" + "---|" * len(peers))
    labels = (("rows", "tokens/s, numpy rows"), ("batches", "tokens/s, padded batches"),
              ("first", "first 256 rows (time)"), ("resume", "resume (time)"))  # fmt: skip
    for key, label in labels:
        for am_case in ("arrowmix collate", "arrowmix map"):
            a = med.get(am_case, {}).get(key)
            if key in ("rows", "first") and am_case == "arrowmix map":
                continue
            cells = []
            for n in peers:
                v = med[n].get(key)
                cells.append(f"{a / v:.2f}" if a and v else "-")
            print(f"| {label} ({am_case}) | " + " | ".join(cells) + " |")
    print(f"\n{len(next(iter(ranks.values()), []))} ranks at once, each a node of its own "
          "(its own cache), one epoch of numpy rows each:\n")  # fmt: skip
    print("| tool | bytes fetched by all ranks / corpus | rows per rank | disk peak / limit |")
    print("|---|---|---|---|")
    for tool, per_rank in ranks.items():
        bad = [r for r in per_rank if "failed" in r or "skipped" in r]
        if bad:
            print(f"| {tool} | {str(bad[0])[:120]} | | |")
            continue
        disk = max(r["disk_peak"] for r in per_rank) / sizes["limit"]
        print(f"| {tool} | {per_rank[0]['all_bytes'] / stored:.2f} "
              f"| {[r['rows'] for r in per_rank]} | {disk:.2f} |")  # fmt: skip
    print("\n" + json.dumps({"sizes": sizes, "samples": samples, "ranks": ranks}))


if __name__ == "__main__":
    main()
