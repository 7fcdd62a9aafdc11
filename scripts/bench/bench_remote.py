# mypy: disable-error-code="import-not-found,import-untyped"
"""Streaming a tokenised corpus from S3 through a bounded local cache: arrowmix and its peers.

A moto S3 server on loopback holds one corpus of token rows (``input_ids``: 256 int32) in each
tool's own format (arrowmix chunks, Mosaic Streaming MDS shards, litdata chunks), of the same
shard size (1/40 of the corpus). Every tool reads through its own counting HTTP proxy in front
of the server, so "bytes fetched" is measured the same way for all: response bytes on the wire
(uploads go to the server directly and are not counted).

Every phase of every tool runs in a fresh process, with a fresh cache limited to a quarter of
the corpus (arrowmix ``cache_limit``, Mosaic ``cache_limit``, litdata ``max_cache_size``);
the tool's package, its storage client and torch are imported before the clock starts. The
tools run interleaved, ``--rounds`` times; medians and the ratio arrowmix / peer. Each phase is
written as the tool's users write it, and every tool hands the consumer the same thing:

1. **rows**: one shuffled epoch; the consumer takes ``np.asarray(row["input_ids"])`` of each
   row (a numpy array already, for every tool: arrowmix ``ds.with_format("numpy")
   .to_stream(shuffle="chunks")`` gives HF's numpy dtype, int64; Mosaic and litdata the stored
   int32). Tokens/s from the constructor on, time to the first 256 rows, bytes fetched, the
   cache directory's peak size (sampled every 20 ms).
2. **batches**: one shuffled epoch of ``(256, 256)`` torch tensors of the ids: arrowmix
   ``.batch(256).collate("input_ids", return_tensors="pt")`` ("arrowmix collate") and
   ``.batch(256, columnar=True).map(Collator("input_ids", return_tensors="pt"))`` ("arrowmix
   map"), each an int64 ``input_ids`` plus an ``attention_mask``; Mosaic's and litdata's
   ``StreamingDataLoader(ds, batch_size=256)``, torch's default collation of the rows (int32,
   no mask). Not equal: arrowmix's batch holds 4x the peers' bytes (int64 ids and a mask).
   The peers' loaders run with ``num_workers`` at its default, 0 (Mosaic's quick start does
   so; litdata's README prefers ``num_workers > 0``), so that each tool reads in one process
   plus its own download threads. The state half-way is saved.
3. **resume**: a fresh process with a fresh cache (a new node) builds the batches pipeline,
   loads that state and yields its first batch.
4. **ranks**: ``--ranks`` ranks at once on one node, started as torchrun starts them (``RANK``,
   ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE=--ranks``, ``MASTER_ADDR``/``PORT``),
   sharing one cache directory and one limit, one epoch of numpy rows each. arrowmix reads its
   rank from ``RANK``/``WORLD_SIZE`` (``to_stream(num_instances=, instance_rank=)``); Mosaic
   from the same variables (its docs' requirement: the node's ranks share its shared-memory
   prefix, and a rank that is a node of its own on a shared host collides with the others');
   litdata from the ``torch.distributed`` group (gloo), which the peers' ranks join before
   the clock, as a DDP script does. Reported: bytes fetched by all ranks / corpus, rows per
   rank, rows of the corpus no rank read and rows read twice (rows told apart by their first
   4 tokens), and the node's disk peak / limit.

``--quick`` (8,000 rows, one round) checks that every phase runs: the three tools run at once,
and each phase is forked from an interpreter per venv that has imported the tools (``--fork``;
the same state as a fresh process after the untimed imports, without paying torch's import
again per phase). Its numbers are not results. Progress goes to stderr.

Peers run in ``--peers-python`` (a venv with ``mosaicml-streaming`` and ``litdata``; it needs
numpy and boto3, not arrowmix), or are reported as skipped. ``--stub-broken-imports`` replaces
``transformers`` and ``torchvision`` by empty modules in the peer processes, for venvs where
those optional imports of Mosaic Streaming are broken; the code measured does not use them.
Loopback S3 measures the tools' own overheads, not a network: read the ratios.

Usage (from the repository root, in the arrowmix venv)::

    python scripts/bench/bench_remote.py --rows 100000 --peers-python /work/peers-venv/bin/python \\
        --stub-broken-imports
    python scripts/bench/bench_remote.py --quick      # 8k rows, 1 round
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import importlib
import json
import logging
import os
import pickle
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import numpy as np
from bench_common import base_parser, disk_usage, machine_summary, markdown_row, print_markdown

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
                conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=120)
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


def prepare_arrowmix(data: np.ndarray, endpoint: str, shard_bytes: int) -> dict[str, int]:
    import pyarrow as pa

    import arrowmix as am

    flat = pa.array(data.reshape(-1))
    ids = pa.FixedSizeListArray.from_arrays(flat, TOKENS).cast(pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), AM_URL, bytes_per_chunk=shard_bytes,
                    storage_options=s3_options(endpoint))  # fmt: skip
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_options(endpoint))
    return {"stored": int(fs.du(AM_URL))}


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
    return disk_usage(directory, links=True)


class Arrowmix:
    """arrowmix: ``from_chunks(url, cache_limit=...)`` and ``to_stream(shuffle="chunks")``."""

    def __init__(self, endpoint: str, limit: int, cache: str, variant: str) -> None:
        self.endpoint, self.limit, self.cache, self.variant = endpoint, limit, cache, variant

    def _stream(self, fmt: str | None = None) -> Any:
        import arrowmix as am

        ds = am.Dataset.from_chunks(AM_URL, storage_options=s3_options(self.endpoint),
                                    cache_limit=self.limit, chunk_cache_dir=self.cache)  # fmt: skip
        world, rank = launcher_rank()  # as a script started by torchrun reads them
        return ds.with_format(fmt).to_stream(shuffle="chunks", seed=0, infinite=False,
                                             num_instances=world, instance_rank=rank)  # fmt: skip

    def rows(self) -> Any:
        self.s = self._stream("numpy")  # numpy rows, as an HF user asks
        return (r["input_ids"] for r in self.s)

    def batches(self) -> Any:
        from arrowmix.stream import Collator

        s = self._stream()
        if self.variant == "collate":  # what a user writes; torch tensors, as the peers' loaders
            self.s = s.batch(BATCH).collate("input_ids", return_tensors="pt")
        else:  # the workaround while the token stages did not read bounded corpora
            self.s = s.batch(BATCH, columnar=True).map(Collator("input_ids", return_tensors="pt"))
        return (b["input_ids"] for b in self.s)

    def state(self) -> Any:
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

    def _dataset(self) -> Any:
        from streaming import StreamingDataset

        # shuffle_block_size: samples of 4 shards, arrowmix's shuffle window (Mosaic's default
        # block spans the whole of this small corpus, and its cache then thrashes). The ranks
        # come from RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE, as Mosaic's docs require.
        return StreamingDataset(remote=f"s3://{BUCKET}/mosaic", local=self.cache, shuffle=True,
                                shuffle_seed=0, cache_limit=self.limit, batch_size=BATCH,
                                shuffle_block_size=max(1, ROWS_HINT[0] // 10))  # fmt: skip

    def rows(self) -> Any:
        self.ds = self._dataset()
        return (r["input_ids"] for r in self.ds)

    def batches(self) -> Any:
        from streaming import StreamingDataLoader

        # num_workers: DataLoader's default (0), as in Mosaic's quick start
        self.dl = StreamingDataLoader(self._dataset(), batch_size=BATCH,
                                      num_workers=PEER_WORKERS[0])  # fmt: skip
        return (b["input_ids"] for b in self.dl)

    def state(self) -> Any:
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
        # node), which litdata's state otherwise refuses. The ranks come from the initialised
        # torch.distributed group (one node).
        return ld.StreamingDataset(f"s3://{BUCKET}/litdata", shuffle=True, seed=0,
                                   cache_dir=self.cache, max_cache_size=self.limit,
                                   force_override_state_dict=True,
                                   storage_options={"endpoint_url": self.endpoint})  # fmt: skip

    def rows(self) -> Any:
        return (r["input_ids"] for r in self._dataset())

    def batches(self) -> Any:
        import litdata as ld

        # num_workers: the API's default (0); litdata's README prefers num_workers > 0
        self.dl = ld.StreamingDataLoader(self._dataset(), batch_size=BATCH,
                                         num_workers=PEER_WORKERS[0])  # fmt: skip
        return (b["input_ids"] for b in self.dl)

    def state(self) -> Any:
        return self.dl.state_dict()

    def resume(self, state: Any) -> Any:
        self.batches()
        self.dl.load_state_dict(state)
        return next(iter(self.dl))["input_ids"]


class Tool(Protocol):
    """What the phases ask of each tool's wrapper."""

    def rows(self) -> Iterator[Any]: ...
    def batches(self) -> Iterator[Any]: ...
    def state(self) -> Any: ...
    def resume(self, state: Any) -> Any: ...


TOOLS: dict[str, Callable[[str, int, str, str], Tool]] = {
    "arrowmix": Arrowmix,
    "mosaic-streaming": Mosaic,
    "litdata": Litdata,
}
#: Each tool's package, its storage client and torch (every tool hands torch tensors in
#: batches), imported before the clock starts.
IMPORTS = {"arrowmix": ("arrowmix", "arrowmix.stream", "s3fs", "torch"),
           "mosaic-streaming": ("torch", "streaming", "boto3"),
           "litdata": ("torch", "litdata", "obstore", "boto3")}  # fmt: skip
ROWS_HINT = [0]
#: ``num_workers`` of the peers' loaders (``--peer-workers``; their default, 0).
PEER_WORKERS = [0]
#: Rows are told apart by their first tokens (random ids: no two rows of the corpus share them).
KEY_TOKENS = 4


def launcher_rank() -> tuple[int, int]:
    """``(WORLD_SIZE, RANK)`` as torchrun sets them (1, 0 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))


def preimport(tool: str, stub: bool) -> None:
    """Import what the tool's phases use, so that no phase times an import."""
    if tool != "arrowmix" and stub:
        _stub_imports(("transformers", "torchvision"))
    for module in IMPORTS[tool]:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def describe(item: Any) -> str:
    """What the consumer was handed: ``"torch.Tensor int64 (256, 256)"``."""
    kind = type(item)
    return f"{kind.__module__.split('.')[0]}.{kind.__name__} {item.dtype} {tuple(item.shape)}"


def child_main(args: argparse.Namespace) -> dict[str, Any]:
    """One phase of one tool, in this fresh process (imports are not timed)."""
    if args.tool != "arrowmix":
        _peer_env(args.endpoint)
    preimport(args.tool, args.stub_broken_imports)
    ROWS_HINT[0], PEER_WORKERS[0] = args.rows, args.peer_workers
    world, rank = launcher_rank()
    if world > 1 and args.tool != "arrowmix":  # a DDP script joins its group first
        import torch.distributed as dist

        dist.init_process_group("gloo")  # MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE

    cache = args.cache or tempfile.mkdtemp(prefix=f"bench-{args.tool}-", dir=args.workdir)
    tool = TOOLS[args.tool](args.endpoint, args.limit, cache, args.variant)
    state_file = os.path.join(args.workdir, f"state-{args.tool}-{args.variant}.pkl")
    if args.phase == "resume":
        with open(state_file, "rb") as f:
            state = pickle.load(f)
        t0 = time.perf_counter()
        first = tool.resume(state)
        return {"resume_s": time.perf_counter() - t0, "first_shape": list(first.shape),
                "got": describe(first)}  # fmt: skip
    disk = DiskPeak(cache)
    t0 = time.perf_counter()
    items = tool.batches() if args.phase == "batches" else tool.rows()
    tokens, rows, first, got, keys, saved = 0, 0, None, "", [], False
    for item in items:
        if not got:
            got = describe(item)
        if args.phase == "batches":
            rows += len(item)
            tokens += int(np.prod(item.shape))
        else:  # each row as a numpy array, for every tool
            row = np.asarray(item)
            rows += 1
            tokens += row.size  # not np.prod per row: microseconds the tools did not spend
            if args.phase == "ranks":
                keys.append(row[:KEY_TOKENS])
        if first is None and rows >= BATCH:
            first = time.perf_counter() - t0
        if args.phase == "batches" and not saved and rows >= args.rows // 2:
            with open(state_file, "wb") as f:
                pickle.dump(tool.state(), f)
            saved = True
    total = time.perf_counter() - t0
    out = {"tokens_per_s": tokens / total, "first_batch_s": first, "rows": rows,
           "disk_peak": disk.stop(), "got": got}  # fmt: skip
    if args.phase == "ranks":
        np.save(os.path.join(args.workdir, f"keys-{args.tool}-{rank}.npy"),
                np.array(keys, dtype=np.int64).reshape(-1, KEY_TOKENS))  # fmt: skip
        if "torch" in sys.modules:  # the ranks meet before leaving, as a DDP script does
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                dist.barrier()
    return out


# ---- peers (run in the peers' interpreter) ----------------------------------------------------


def _peer_env(endpoint: str) -> None:
    for k, v in DUMMY_AWS.items():
        os.environ.setdefault(k, v)
    os.environ["S3_ENDPOINT_URL"] = endpoint  # Mosaic Streaming's S3 endpoint


def _litdata_http() -> None:
    """Let litdata's obstore client talk plain HTTP (the loopback server has no TLS)."""
    import litdata.streaming.downloader as dl

    dl._OBSTORE_CLIENT_OPTIONS = {**dl._OBSTORE_CLIENT_OPTIONS, "allow_http": "true"}


def prepare_mosaic(data: np.ndarray, endpoint: str, shard_bytes: int) -> dict[str, int]:
    from streaming import MDSWriter

    _peer_env(endpoint)
    out = (tempfile.mkdtemp(prefix="bench-mds-out-"), f"s3://{BUCKET}/mosaic")
    with MDSWriter(out=out, columns={"input_ids": "ndarray:int32"}, size_limit=shard_bytes) as w:
        for row in data:
            w.write({"input_ids": row})
    return {}


_LD_DATA: np.ndarray | None = None


def _ld_item(i: int) -> dict[str, Any]:
    assert _LD_DATA is not None
    return {"input_ids": _LD_DATA[i]}


def prepare_litdata(data: np.ndarray, endpoint: str, shard_bytes: int) -> dict[str, int]:
    import litdata as ld

    global _LD_DATA
    _LD_DATA = data
    _peer_env(endpoint)
    _litdata_http()
    ld.optimize(fn=_ld_item, inputs=list(range(len(data))), output_dir=f"s3://{BUCKET}/litdata",
                chunk_bytes=shard_bytes, num_workers=1, start_method="fork", verbose=False,
                storage_options={"endpoint_url": endpoint})  # fmt: skip
    return {}


#: How each tool's copy of the corpus is written (in a process of the tool's venv).
PREPARE = {"arrowmix": prepare_arrowmix, "mosaic-streaming": prepare_mosaic,
           "litdata": prepare_litdata}  # fmt: skip
PEERS = ("litdata", "mosaic-streaming")


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


# ---- starting phases: fresh processes, or forks of an interpreter that imported the tools --

SCRIPT = os.path.abspath(__file__)
HERE = os.path.dirname(os.path.dirname(SCRIPT))
TIMEOUT = 600  # a phase that has not ended by then is reported as failed


class Child:
    """A phase started in a fresh process; :meth:`output` waits for it."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def output(self) -> tuple[int, str, str]:
        """``(exit status, stdout, stderr)``; raises ``subprocess.TimeoutExpired``."""
        try:
            out, err = self.proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return self.proc.returncode, out, err


class ForkServer:
    """An interpreter that imported the tools once and forks one process per phase.

    What ``--quick`` uses: a fresh interpreter per phase costs seconds of imports (torch)
    that no phase times anyway. A forked phase starts from the same state as a fresh
    process after those imports: no cache, no connection, no data read.
    """

    def __init__(self, python: str, tools: list[str], args: argparse.Namespace) -> None:
        cmd = [python, SCRIPT, "--serve", ",".join(tools), "--workdir", args.workdir]
        if args.stub_broken_imports:
            cmd.append("--stub-broken-imports")
        self.workdir = args.workdir
        env = interpreter_env(tools == ["arrowmix"], args.workdir)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)  # fmt: skip
        self._done: dict[int, int] = {}
        self._closed = False
        self._cond = threading.Condition()
        self._count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ident, status = (int(x) for x in line.split())
            with self._cond:
                self._done[ident] = status
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def start(self, argv: list[str], env: dict[str, str]) -> ForkedChild:
        """Fork a phase with these arguments and environment variables."""
        assert self.proc.stdin is not None
        with self._cond:  # phases start from several threads with --quick
            self._count += 1
            ident = self._count
            out = os.path.join(self.workdir, f"phase-{os.getpid()}-{id(self)}-{ident}.out")
            self.proc.stdin.write(json.dumps({"id": ident, "argv": argv, "env": env,
                                              "out": out}) + "\n")  # fmt: skip
            self.proc.stdin.flush()
        return ForkedChild(self, ident, out)

    def wait(self, ident: int) -> int:
        """The exit status of phase ``ident``."""
        with self._cond:
            if not self._cond.wait_for(lambda: ident in self._done or self._closed, TIMEOUT):
                raise subprocess.TimeoutExpired("fork server", TIMEOUT)
            return self._done.get(ident, -1)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


class ForkedChild:
    """A phase forked by a :class:`ForkServer`."""

    def __init__(self, server: ForkServer, ident: int, out: str) -> None:
        self.server, self.ident, self.out = server, ident, out

    def output(self) -> tuple[int, str, str]:
        status = self.server.wait(self.ident)
        with open(self.out) as f:
            text = f.read()
        return status, text, text


def serve(tools: list[str], stub: bool) -> None:
    """``--serve``: import the tools, then fork a phase per request line of stdin."""
    for tool in tools:
        preimport(tool, stub)
    children: dict[int, int] = {}
    pending, reading = b"", True
    while reading or children:
        if reading and select.select([0], [], [], 0.05)[0]:
            chunk = os.read(0, 1 << 16)
            reading = bool(chunk)
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _run_forked(request)
                children[pid] = request["id"]
        elif not reading:
            time.sleep(0.05)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            os.write(1, f"{children.pop(pid)} {os.waitstatus_to_exitcode(status)}\n".encode())


def _run_forked(request: dict[str, Any]) -> None:
    """In the forked phase: output to the request's file, its arguments, then exit."""
    try:
        fd = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.environ.update(request["env"])
        sys.argv = [SCRIPT, *request["argv"]]
        main()
    finally:
        os._exit(1)  # main() leaves by os._exit(0) after its RESULT line


def spawn(
    args: argparse.Namespace,
    tool: str,
    variant: str,
    phase: str,
    endpoint: str,
    sizes: dict[str, int],
    cache: str = "",
    env: dict[str, str] | None = None,
) -> Child | ForkedChild:
    """Start one phase of one tool: a fresh process (or a fork, with ``--quick``)."""
    argv = ["--tool", tool, "--variant", variant, "--phase", phase, "--endpoint", endpoint,
            "--rows", str(sizes["rows"]), "--shard-bytes", str(sizes["shard_bytes"]),
            "--limit", str(sizes["limit"]), "--workdir", args.workdir,
            "--cache", cache, "--peer-workers", str(args.peer_workers)]  # fmt: skip
    if args.stub_broken_imports:
        argv.append("--stub-broken-imports")
    if args.servers:
        server: ForkServer = args.servers[tool == "arrowmix"]
        return server.start(argv, env or {})
    python = sys.executable if tool == "arrowmix" else args.peers_python
    proc = subprocess.Popen([python, SCRIPT, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**interpreter_env(tool == "arrowmix", args.workdir),
                                 **(env or {})})  # fmt: skip
    return Child(proc)


def interpreter_env(ours: bool, workdir: str) -> dict[str, str]:
    """arrowmix runs from this checkout; the peers' venv gets no PYTHONPATH of ours.

    The peers' temporary files (Mosaic's file locks, named after its shared-memory prefix,
    outlive its processes) go into the work directory, not the machine's ``/tmp``.
    """
    if ours:
        return {**os.environ, "PYTHONPATH": HERE}
    tmp = os.path.join(workdir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    return {**os.environ, "PYTHONPATH": "", "TMPDIR": tmp}


def launcher_env(rank: int, world: int, port: int) -> dict[str, str]:
    """What torchrun sets for rank ``rank`` of ``world`` on one node."""
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world), "GROUP_RANK": "0", "NODE_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def result(child: Child | ForkedChild) -> dict[str, Any]:
    """The RESULT line of a phase started by :func:`spawn`."""
    try:
        status, out, err = child.output()
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {TIMEOUT} s"}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            got: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return got
    return {"failed": f"exit {status}: {err.strip()[-300:]}"}


_T0 = time.monotonic()


def progress(what: str) -> None:
    """A line on stderr: seconds since the start, and what just finished."""
    print(f"[{time.monotonic() - _T0:6.1f} s] {what}", file=sys.stderr, flush=True)


def run_child(args: argparse.Namespace, tool: str, variant: str, phase: str, endpoint: str,
              sizes: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    return result(spawn(args, tool, variant, phase, endpoint, sizes))


def coverage(data: np.ndarray, files: list[str]) -> dict[str, int] | None:
    """Rows of the corpus no rank read, and reads of a row beyond its first (None: unknown)."""
    want = {tuple(k) for k in data[:, :KEY_TOKENS].tolist()}
    if len(want) != len(data) or not all(os.path.exists(f) for f in files):
        return None
    seen: collections.Counter[tuple[int, ...]] = collections.Counter()
    for f in files:
        seen.update(tuple(k) for k in np.load(f).tolist())
    return {"missing": len(want - seen.keys()), "repeated": sum(c - 1 for c in seen.values()),
            "foreign": len(seen.keys() - want)}  # fmt: skip


# ---- the run ---------------------------------------------------------------------------------

#: (tool, variant) measured; arrowmix's padded batches both as a user writes them and by the
#: ``map(Collator(...))`` workaround.
CASES = [("arrowmix", "collate"), ("arrowmix", "map"), ("mosaic-streaming", ""),
         ("litdata", "")]  # fmt: skip


def parse_args() -> argparse.Namespace:
    p = base_parser(
        __doc__.splitlines()[0],
        rows=40_000,
        quick="8,000 rows, 1 round: a check",
        repeats=3,
        repeats_flags=("--rounds", "--repeats"),
        seed=False,
    )
    p.add_argument("--fork", action=argparse.BooleanOptionalAction, default=None,
                   help="fork phases from an interpreter that imported the tools "
                        "(default: only with --quick)")  # fmt: skip
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--peers-python", default=sys.executable)
    p.add_argument(
        "--peer-workers", type=int, default=0, help="num_workers of the peers' batch loaders"
    )
    p.add_argument("--stub-broken-imports", action="store_true")
    p.add_argument("--tool", choices=sorted(TOOLS), help=argparse.SUPPRESS)
    p.add_argument("--variant", default="", help=argparse.SUPPRESS)
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--shard-bytes", type=int, help=argparse.SUPPRESS)
    p.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    p.add_argument("--cache", default="", help=argparse.SUPPRESS)
    p.add_argument("--serve", help=argparse.SUPPRESS)
    return p.parse_args()


def phase_main(args: argparse.Namespace) -> None:
    """One phase (or preparing a peer's copy of the corpus); prints ``RESULT {...}``."""
    try:
        if args.phase == "prepare":
            if args.stub_broken_imports and args.tool != "arrowmix":
                _stub_imports(("transformers", "torchvision"))
            done = PREPARE[args.tool](corpus_rows(args.rows), args.endpoint, args.shard_bytes)
            out: dict[str, Any] = {"prepared": done}
        else:
            out = child_main(args)
    except ImportError as exc:
        out = {"skipped": f"not installed ({exc.name})"}
    except Exception as exc:  # noqa: BLE001  # a tool's failure is a result too
        out = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
    print("RESULT " + json.dumps(out), flush=True)
    os._exit(0)  # peers leave download threads and shared memory behind


def main() -> None:
    args = parse_args()
    if args.serve:
        serve(args.serve.split(","), args.stub_broken_imports)
        os._exit(0)  # every phase has ended; tearing down torch's imports takes seconds
    if args.tool:
        phase_main(args)
    rows = 8_000 if args.quick else args.rows
    own_workdir = not args.workdir
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="bench-remote-")
    data = corpus_rows(rows)
    corpus = data.nbytes
    shard, limit = corpus // 40, corpus // 4  # 40 shards, 10 of them fit
    sizes = {"rows": rows, "shard_bytes": shard, "limit": limit}
    args.servers = {}
    if args.quick if args.fork is None else args.fork:
        args.servers = {
            True: ForkServer(sys.executable, ["arrowmix"], args),
            False: ForkServer(args.peers_python, list(PEERS), args),
        }
    server, endpoint = start_s3()
    proxies = {name: CountingProxy(endpoint) for name in TOOLS}
    try:
        progress("S3 server up")
        # each tool's copy of the corpus, written at once (setup, not measured)
        started = {name: spawn(args, name, "", "prepare", endpoint, sizes) for name in TOOLS}
        ready: dict[str, dict[str, Any]] = {}  # {} when ready, else why not
        prepared: dict[str, dict[str, int]] = {}
        for name, child in started.items():
            got = result(child)
            prepared[name], ready[name] = got.get("prepared", {}), {} if "prepared" in got else got
            progress(f"corpus written for {name}")
        if ready["arrowmix"]:
            raise RuntimeError(f"writing arrowmix's corpus failed: {ready['arrowmix']}")
        tools = [tool for tool in TOOLS if not ready[tool]]  # else skipped or failed
        samples, ranks = measure(args, tools, proxies, sizes, data)
    finally:
        for proxy in proxies.values():
            proxy.stop()
        server.stop()
        for fork_server in args.servers.values():
            fork_server.stop()
        progress("servers stopped")
    report(rows, corpus, prepared["arrowmix"]["stored"], sizes, ready, samples, ranks)
    if own_workdir:  # the caches, the states, the peers' temporary files
        shutil.rmtree(args.workdir, ignore_errors=True)


def measure(
    args: argparse.Namespace,
    tools: list[str],
    proxies: dict[str, CountingProxy],
    sizes: dict[str, int],
    data: np.ndarray,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every case's rounds, then each tool's ranks on one node: ``(samples, ranks)``."""
    samples: dict[str, list[dict[str, Any]]] = {f"{t} {v}".strip(): [] for t, v in CASES}
    ranks: dict[str, Any] = {}

    def sequence(tool: str) -> None:
        for t, variant in CASES:
            if t == tool:
                got = one_round(args, t, variant, proxies[t], sizes)
                samples[f"{t} {variant}".strip()].append(got)
        ranks[tool] = one_node(args, tool, proxies[tool], sizes, data)

    if args.quick:  # a check that every phase runs: the tools at once
        threads = [threading.Thread(target=sequence, args=(tool,)) for tool in tools]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return samples, ranks
    for _ in range(args.repeats):  # interleaved: every tool once per round, each phase fresh
        for tool, variant in CASES:
            if tool in tools:
                got = one_round(args, tool, variant, proxies[tool], sizes)
                samples[f"{tool} {variant}".strip()].append(got)
    for tool in tools:
        ranks[tool] = one_node(args, tool, proxies[tool], sizes, data)
    return samples, ranks


def one_round(args: argparse.Namespace, tool: str, variant: str, proxy: CountingProxy,
              sizes: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    """The rows, batches and resume phases of one case, one after the other."""
    res: dict[str, Any] = {}
    for phase in ("rows", "batches", "resume"):
        if phase == "rows" and variant == "map":
            continue  # the rows are the same as the collate case's
        proxy.reset()
        got = run_child(args, tool, variant, phase, proxy.endpoint, sizes)
        progress(f"{tool} {variant} {phase}".replace("  ", " "))
        res[phase] = {**got, "bytes": proxy.bytes, "requests": proxy.requests}
    return res


def one_node(args: argparse.Namespace, tool: str, proxy: CountingProxy, sizes: dict[str, int],
             data: np.ndarray) -> dict[str, Any]:  # fmt: skip
    """``--ranks`` ranks at once on one node: one cache directory and limit, as torchrun runs."""
    keys = [os.path.join(args.workdir, f"keys-{tool}-{r}.npy") for r in range(args.ranks)]
    for stale in keys:
        with contextlib.suppress(FileNotFoundError):
            os.remove(stale)
    proxy.reset()
    node = tempfile.mkdtemp(prefix=f"node-{tool}-", dir=args.workdir)
    port, n = free_port(), args.ranks
    started = [
        spawn(args, tool, "collate", "ranks", proxy.endpoint, sizes, node, launcher_env(r, n, port))
        for r in range(n)
    ]
    per_rank = [result(child) for child in started]
    progress(f"{tool} {n} ranks")
    return {"per_rank": per_rank, "all_bytes": proxy.bytes, "coverage": coverage(data, keys)}


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
    print(f"# {machine_summary()}")
    print(f"corpus: {rows} rows x {TOKENS} int32 tokens = {corpus / 1e6:.1f} MB of tokens "
          f"({stored / 1e6:.1f} MB as arrowmix chunks); shards {sizes['shard_bytes'] / 1e6:.2f} "
          f"MB; cache limit {sizes['limit'] / 1e6:.1f} MB\n")  # fmt: skip
    if any(samples.values()):  # --rounds 0 measures the ranks only
        report_phases(stored, sizes, ready, samples)
    else:
        for tool, why in ready.items():
            if why:
                print(f"{tool}: {json.dumps(why)[:160]}")
    report_ranks(stored, sizes, ranks)
    print("\n" + json.dumps({"sizes": sizes, "samples": samples, "ranks": ranks}))


def report_phases(stored: int, sizes: dict[str, int], ready: dict[str, Any],
                  samples: dict[str, list[dict[str, Any]]]) -> None:  # fmt: skip
    """The rows, batches and resume phases: medians, ratios, what the consumer got."""
    header = [
        "tool",
        "tokens/s, numpy rows",
        "tokens/s, padded (256, L)",
        "first 256 rows (s)",
        "resume to first batch (s)",
        "MB fetched: epoch / corpus",
        "disk peak / limit",
    ]
    table: list[list[str]] = []
    med: dict[str, dict[str, float | None]] = {}
    for name, runs in samples.items():
        tool = name.split()[0]
        if ready.get(tool):
            table.append([name, json.dumps(ready[tool])[:120], "", "", "", "", ""])
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

        table.append(
            [
                name,
                cell(m["rows"] and m["rows"] / 1e6, "{:.2f} M", "rows"),
                cell(m["batches"] and m["batches"] / 1e6, "{:.2f} M", "batches"),
                cell(m["first"], "{:.2f}", "rows"),
                cell(m["resume"], "{:.2f}", "resume"),
                cell(m["bytes"] and m["bytes"] / stored, "{:.2f}", "rows"),
                cell(m["disk"] and m["disk"] / sizes["limit"], "{:.2f}", "rows"),
            ]
        )
    print_markdown(header, table)
    peers = [n for n in med if not n.startswith("arrowmix")]
    if peers:
        report_ratios(med, peers)
    report_kinds(samples)


def report_ratios(med: dict[str, dict[str, float | None]], peers: list[str]) -> None:
    """arrowmix's medians over each peer's."""
    print()
    table: list[list[str]] = []
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
            table.append([f"{label} ({am_case})", *cells])
    print_markdown(["arrowmix / faster peer", *peers], table)


def report_kinds(samples: dict[str, list[dict[str, Any]]]) -> None:
    """What each case handed the consumer in the rows and batches phases."""
    print("\nWhat the consumer is handed (the rows phase converts each row by np.asarray):\n")
    table = []
    for name, runs in samples.items():
        kinds = [next((r[p]["got"] for r in runs if r.get(p, {}).get("got")), "-")
                 for p in ("rows", "batches")]  # fmt: skip
        table.append([name, *kinds])
    print_markdown(["tool", "rows phase: each row", "batches phase: each batch's input_ids"], table)


def report_ranks(stored: int, sizes: dict[str, int], ranks: dict[str, Any]) -> None:
    """The ranks on one node: bytes, rows per rank, every row once, the node's disk."""
    world = max((len(node["per_rank"]) for node in ranks.values()), default=0)
    print(f"\n{world} ranks at once on one node (torchrun's variables, LOCAL_WORLD_SIZE={world}), "
          "sharing one cache directory and limit, one epoch of numpy rows each:\n")  # fmt: skip
    print_markdown(["tool", "bytes fetched by all ranks / corpus", "rows per rank",
                    "rows missing / read twice", "disk peak / limit"], [])  # fmt: skip
    for tool, node in sorted(ranks.items(), key=lambda item: list(TOOLS).index(item[0])):
        per_rank = node["per_rank"]
        bad = [r for r in per_rank if "failed" in r or "skipped" in r]
        if bad:
            print(markdown_row([tool, str(bad[0])[:160], "", "", ""]))
            continue
        disk = max(r["disk_peak"] for r in per_rank) / sizes["limit"]
        cov = node["coverage"]
        once = f"{cov['missing']} / {cov['repeated']}" if cov else "not checked"
        rows = str([r["rows"] for r in per_rank])
        print(markdown_row([tool, f"{node['all_bytes'] / stored:.2f}", rows, once, f"{disk:.2f}"]))


if __name__ == "__main__":
    main()
