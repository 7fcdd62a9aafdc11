"""Tokenized corpus to padded or packed tensors: arrowmix vs its peers and the raw limit.

Run from the repository root (peers: ``pip install 'arrowmix[bench,torch]'``)::

    python scripts/bench/bench_tokens.py            # 100k documents, 3 interleaved rounds
    python scripts/bench/bench_tokens.py --quick    # 20k documents, 2 rounds, for iteration
    python scripts/bench/bench_tokens.py --docs 1000000 --no-children \
        --libs arrowmix,torchdata,infinibatch,grain,raw    # 1M documents, throughput only
    python scripts/bench/bench_tokens.py --keep-only --repeats 7   # what collate(keep=) costs on A

The last table is the goals: arrowmix at least 2x the fastest peer and at least 0.8x the
raw numpy loop, in tokens/s on CPU time (wall time beside it); for each pipeline that
misses one, a cProfile of one arrowmix epoch and one raw-loop epoch follows
(``--profile all`` profiles every pipeline, ``--profile none`` none).

Corpus: ``--docs`` documents of token ids (``list<int32>``, uniform in ``[0, 32000)``),
lognormal lengths (median 200, sigma 1, clipped to ``[1, 4096]``): ~32.7 M tokens for
100k documents, written once as arrowmix chunks (memory-mapped) and, for the peers, as a
memory-mapped ``int32`` token array with an ``int64`` offsets array (torchdata, grain,
infinibatch, the raw loop) and a Hugging Face dataset saved to disk (memory-mapped).

Pipelines, one epoch each, one process, no DataLoader workers:

- **A**: global shuffle, read-ahead windows of 8,192 documents sorted by length and cut
  into batches of at most 16,384 padded tokens (``B * L <= 16384``), batch order shuffled;
  output ``input_ids`` and ``attention_mask``, int64 ``[B, L]``.
- **B**: global shuffle, each window of 8,192 documents concatenated and cut into
  ``[8, 2048]`` batches (peers drop each window's tail; grain and arrowmix carry it over);
  output ``input_ids``, ``segment_ids``, ``position_ids``, int64 ``[8, 2048]``.
- **C**: three corpora (50k/30k/20k documents for 100k) mixed 50/30/20, then A.

Every library does the same work in its own idiom; the window planner
(:func:`plan_window`) is shared so that every library cuts the same batches. Rates count
document tokens delivered (not padding). Throughput: interleaved rounds (A, B, ... per
round), median. Then, per library and pipeline, two fresh processes: one runs an epoch
(time to first batch, peak RSS, the checkpoint at the middle of the epoch and its size),
one resumes from that checkpoint (build, load, first batch; imports not counted) and
checks that the batch equals the one the uninterrupted run yielded there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import pickle
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import interleaved, machine_summary

BUDGET = 16_384
READ_AHEAD = 8_192
SEQ_LEN, ROWS = 2_048, 8
ROW_POS = np.arange(SEQ_LEN)
VOCAB = 32_000
WEIGHTS = (0.5, 0.3, 0.2)
LIBS = ("arrowmix", "torchdata", "infinibatch", "datasets", "mosaic", "litdata", "grain", "raw")
PIPELINES = ("A", "B", "C")


# ---- corpus --------------------------------------------------------------------------------
def make_corpus(docs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets int64 [docs + 1], tokens int32)`` of the seeded corpus."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.rint(rng.lognormal(math.log(200), 1.0, docs)), 1, 4096).astype(np.int64)
    offsets = np.zeros(docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, VOCAB, int(offsets[-1]), dtype=np.int32)
    return offsets, tokens


def corpus_sizes(docs: int, pipeline: str) -> list[int]:
    if pipeline == "C":
        return [docs * 5 // 10, docs * 3 // 10, docs - docs * 5 // 10 - docs * 3 // 10]
    return [docs]


def prepare(workdir: Path, docs: int, libs: tuple[str, ...] = LIBS) -> None:
    """Write every corpus in the formats of ``libs`` (kept in ``workdir`` for later runs)."""
    import datasets

    import arrowmix

    datasets.disable_progress_bars()
    wanted = {*corpus_dirs(workdir, docs, "A"), *corpus_dirs(workdir, docs, "C")}
    for d in sorted(wanted):
        if (d / "done").exists():
            continue
        _, n, seed = d.name.split("-")
        d.mkdir(parents=True, exist_ok=True)
        offsets, tokens = make_corpus(int(n), int(seed))
        np.save(d / "offsets.npy", offsets)
        tokens.tofile(d / "tokens.bin")
        arr = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(tokens))
        table = pa.table({"input_ids": arr})
        arrowmix.write_chunks(table, str(d / "arrowmix"), overwrite=True)
        datasets.Dataset(datasets.table.InMemoryTable(table)).save_to_disk(str(d / "hf"))
        (d / "done").write_text("ok")
    for d in sorted(wanted):  # peers with formats of their own, when installed
        if "mosaic" in libs and available("mosaic") and not (d / "mds/index.json").exists():
            prepare_mosaic(d)
        if "litdata" in libs and available("litdata") and not (d / "litdata/index.json").exists():
            prepare_litdata(d)


def corpus_dirs(workdir: Path, docs: int, pipeline: str) -> list[Path]:
    if pipeline == "C":
        return [workdir / f"corpus-{n}-{1 + k}" for k, n in enumerate(corpus_sizes(docs, "C"))]
    return [workdir / f"corpus-{docs}-0"]


class Memmap:
    """The token array of a corpus, memory-mapped: document ``i`` as a zero-copy view."""

    def __init__(self, d: Path) -> None:
        # plain ndarray views of the mappings: slicing an np.memmap builds a memmap
        # object per slice, twice as slow per document
        self.offsets = np.asarray(np.load(d / "offsets.npy", mmap_mode="r"))
        self.tokens = np.asarray(np.memmap(d / "tokens.bin", dtype=np.int32, mode="r"))
        self.lengths = np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i] : self.offsets[i + 1]]


# ---- the shared planning and output rules --------------------------------------------------
def plan_window(lengths: np.ndarray, window: int) -> list[np.ndarray]:
    """Budget batches of one window (indices into it), longest first, then shuffled."""
    order = np.argsort(-lengths, kind="stable")
    caps = BUDGET // lengths[order]
    out, i = [], 0
    while i < len(order):
        k = int(caps[i])
        out.append(order[i : i + k])
        i += k
    perm = np.random.default_rng([7, window]).permutation(len(out))
    return [out[j] for j in perm]


def pad_docs(docs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The plain way: one row copy per document."""
    width = max(len(d) for d in docs)
    ids = np.zeros((len(docs), width), dtype=np.int64)
    mask = np.zeros((len(docs), width), dtype=np.int64)
    for i, d in enumerate(docs):
        ids[i, : len(d)] = d
        mask[i, : len(d)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def split_window(docs: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Concatenate one window and cut ``[ROWS, SEQ_LEN]`` batches (tail dropped)."""
    flat = np.concatenate(docs)
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    return _split(flat, lengths)


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Batches of ``flat`` (documents of ``lengths``): ids, segment and position ids.

    Batch by batch, so that every temporary array stays in the CPU cache.
    """
    unit = ROWS * SEQ_LEN
    starts = np.cumsum(lengths) - lengths
    rows = np.arange(0, unit + 1, SEQ_LEN)
    out = []
    for lo in range(0, len(flat) // unit * unit, unit):
        hi = lo + unit
        first = int(np.searchsorted(starts, lo, side="right")) - 1
        last = int(np.searchsorted(starts, hi, side="left"))
        # pieces: a document inside a row; their bounds are document and row starts
        bounds = np.union1d(np.maximum(starts[first:last], lo) - lo, rows)
        pstart, plen = bounds[:-1], np.diff(bounds)
        row = pstart // SEQ_LEN
        segnum = np.arange(len(row)) - np.searchsorted(row, row, side="left") + 1
        seg = np.repeat(segnum, plen).reshape(ROWS, SEQ_LEN)
        pos = (np.arange(unit) - np.repeat(pstart, plen)).reshape(ROWS, SEQ_LEN)
        ids = flat[lo:hi].astype(np.int64).reshape(ROWS, SEQ_LEN)
        out.append({"input_ids": ids, "segment_ids": seg, "position_ids": pos})
    return out


def tokens_of(batch: dict[str, Any]) -> int:
    if "attention_mask" in batch:
        return int(np.count_nonzero(np.asarray(batch["attention_mask"])))
    return int(np.asarray(batch["input_ids"]).size)


def mix_draws(sizes: list[int]) -> np.ndarray:
    """Seeded 50/30/20 input choices, up to the first draw of an exhausted input."""
    draws = np.random.default_rng(5).choice(3, size=sum(sizes), p=list(WEIGHTS))
    n = len(draws)
    for k, size in enumerate(sizes):
        hits = np.flatnonzero(draws == k)
        if len(hits) > size:
            n = min(n, int(hits[size]))
    return draws[:n]


# ---- arrowmix ------------------------------------------------------------------------------
#: ``--provenance``: arrowmix's sources carry each row's source (collate: ``sources``,
#: pack: ``segment_sources``), to measure what it costs.
PROVENANCE = {"on": False}


def build_arrowmix(dirs: list[Path], pipeline: str) -> Any:
    import arrowmix
    from arrowmix.stream import mix

    streams = [
        arrowmix.Dataset.from_chunks(str(d / "arrowmix")).to_stream(
            shuffle="global", seed=k, infinite=False, provenance=PROVENANCE["on"]
        )
        for k, d in enumerate(dirs)
    ]
    s = streams[0] if len(streams) == 1 else mix(streams, list(WEIGHTS), stopping="shortest")
    if pipeline == "B":
        return s.pack("input_ids", SEQ_LEN, batch_size=ROWS, read_ahead=READ_AHEAD)
    s = s.budget_bucket("input_ids", BUDGET, READ_AHEAD, seed=7)
    return s.collate("input_ids")


# ---- torchdata.nodes -----------------------------------------------------------------------
def build_torchdata(dirs: list[Path], pipeline: str) -> Any:
    import torch
    import torchdata.nodes as tn

    class Windows(tn.BaseNode):  # type: ignore[misc]
        """Read-ahead windows of documents turned into batches (anchor and replay)."""

        def __init__(self, source: Any, fn: Callable[[list[np.ndarray], int], list[Any]]):
            super().__init__()
            self.source, self.fn = source, fn

        def reset(self, initial_state: dict[str, Any] | None = None) -> None:
            super().reset(initial_state)
            self.window, skip = 0, 0
            if initial_state is not None:
                self.source.reset(initial_state["source"])
                self.window, skip = initial_state["window"], initial_state["emitted"]
            else:
                self.source.reset()
            self.buf: list[Any] = []
            self.pos = 0
            self._read(skip)

        def _read(self, skip: int) -> None:
            self.anchor = self.source.state_dict()
            docs = []
            try:
                for _ in range(READ_AHEAD):
                    docs.append(next(self.source))
            except StopIteration:
                pass
            self.buf, self.pos = (self.fn(docs, self.window) if docs else []), skip

        def next(self) -> Any:
            while self.pos >= len(self.buf):
                if not self.buf:
                    raise StopIteration
                self.window += 1
                self._read(0)
            self.pos += 1
            return self.buf[self.pos - 1]

        def get_state(self) -> dict[str, Any]:
            return {"source": self.anchor, "window": self.window, "emitted": self.pos}

    def docs_node(d: Path, seed: int) -> Any:
        mm = Memmap(d)
        g = torch.Generator().manual_seed(seed)
        sampler = torch.utils.data.RandomSampler(range(len(mm)), generator=g)
        return tn.Mapper(tn.SamplerWrapper(sampler), lambda i: mm[int(i)])

    nodes = [docs_node(d, k) for k, d in enumerate(dirs)]
    if len(nodes) == 1:
        src = nodes[0]
    else:
        names = {f"c{k}": n for k, n in enumerate(nodes)}
        weights = {f"c{k}": w for k, w in enumerate(WEIGHTS)}
        src = tn.MultiNodeWeightedSampler(names, weights, stop_criteria="FIRST_DATASET_EXHAUSTED")
    if pipeline == "B":
        root = Windows(src, lambda docs, w: split_window(docs))
    else:
        root = Windows(src, lambda docs, w: _pad_planned(docs, w))
    return root


def _pad_planned(docs: list[np.ndarray], window: int) -> list[dict[str, np.ndarray]]:
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    return [pad_docs([docs[i] for i in b]) for b in plan_window(lengths, window)]


# ---- infinibatch ---------------------------------------------------------------------------
def build_infinibatch(dirs: list[Path], pipeline: str) -> Any:
    from infinibatch import iterators as ii

    def docs_it(d: Path, seed: int) -> Any:
        # chunked_dataset_iterator's composition, for one epoch: chunks in a seeded
        # order, their documents, a shuffle buffer
        mm = Memmap(d)
        chunks = [(a, min(a + 1000, len(mm))) for a in range(0, len(mm), 1000)]
        order = np.random.default_rng(seed).permutation(len(chunks)).tolist()
        src = ii.ChunkedSourceIterator([chunks[i] for i in order])
        docs = ii.SelectManyIterator(src, lambda c: (mm[i] for i in range(*c)))
        return ii.BufferedShuffleIterator(docs, 10_000, seed)

    its = [docs_it(d, k) for k, d in enumerate(dirs)]
    if len(its) == 1:
        src = its[0]
    else:
        # Multiplex cannot end on an exhausted input: draw until the first one would be
        choices = mix_draws([len(Memmap(d)) for d in dirs]).tolist()
        src = ii.MultiplexIterator(ii.NativeCheckpointableIterator(choices), its)
    windows = ii.FixedBatchIterator(src, READ_AHEAD)
    if pipeline == "B":
        return ii.SelectManyIterator(windows, split_window)
    batches = ii.BucketedReadaheadBatchIterator(
        src, READ_AHEAD, key=len, batch_size=lambda longest: BUDGET // len(longest), seed=7
    )
    return ii.MapIterator(batches, pad_docs)


# ---- Hugging Face datasets -----------------------------------------------------------------
class HFWindows:
    """Windows of a shuffled Hugging Face dataset (numpy format) turned into batches."""

    def __init__(self, ds: Any, fn: Callable[[list[np.ndarray], int], list[Any]]) -> None:
        self.ds, self.fn = ds, fn
        self.load_state_dict({"window": 0, "emitted": 0})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.window, self.pos = state["window"], state["emitted"]
        self.buf: list[Any] = []
        self._read()

    def _read(self) -> None:
        a = self.window * READ_AHEAD
        rows = self.ds[a : a + READ_AHEAD]["input_ids"] if a < len(self.ds) else []
        self.buf = self.fn(list(rows), self.window) if len(rows) else []

    def state_dict(self) -> dict[str, Any]:
        return {"window": self.window, "emitted": self.pos}

    def __iter__(self) -> HFWindows:
        return self

    def __next__(self) -> Any:
        while self.pos >= len(self.buf):
            if not self.buf:
                raise StopIteration
            self.window, self.pos = self.window + 1, 0
            self._read()
        self.pos += 1
        return self.buf[self.pos - 1]


def build_datasets(dirs: list[Path], pipeline: str) -> Any:
    import datasets

    datasets.disable_progress_bars()
    parts = [
        datasets.load_from_disk(str(d / "hf")).shuffle(seed=k).with_format("numpy")
        for k, d in enumerate(dirs)
    ]
    ds = parts[0]
    if len(parts) > 1:
        ds = datasets.interleave_datasets(
            parts, probabilities=list(WEIGHTS), seed=5, stopping_strategy="first_exhausted"
        ).with_format("numpy")
    if pipeline == "B":
        return HFWindows(ds, lambda docs, w: split_window(docs))
    return HFWindows(ds, _pad_planned)


# ---- Mosaic Streaming and litdata: their own shard formats, written once, read locally ------
class CountedWindows:
    """Windows of documents from peers that resume at a document count (their checkpoint).

    ``opens[k](n)`` iterates corpus ``k`` from its ``n``-th document of the epoch, through
    the library's own state (``state_dict``/``load_state_dict``). With ``draws`` (C), the
    documents come from the corpora in that seeded 50/30/20 order, as for infinibatch.
    State: the documents read from each corpus at the window start, the window, the
    batches of the window yielded.
    """

    def __init__(
        self,
        opens: list[Callable[[int], Any]],
        sizes: list[int],
        draws: np.ndarray | None,
        fn: Callable[[list[np.ndarray], int], list[Any]],
    ) -> None:
        self.opens, self.sizes, self.draws, self.fn = opens, sizes, draws, fn
        self.load_state_dict({"counts": [0] * len(opens), "window": 0, "emitted": 0})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # opened on the first batch: a resume never opens (and reads) the epoch's start
        self.counts = list(state["counts"])
        self.window, self.pos = state["window"], state["emitted"]
        self.its: list[Any] | None = None

    def _open(self) -> None:
        # one generator per dataset: litdata's __iter__ restarts the epoch on every call
        # (which islice would make once per window)
        self.its = [_items(o(c)) for o, c in zip(self.opens, self.counts, strict=True)]
        self._read()

    def state_dict(self) -> dict[str, Any]:
        if self.its is None:
            return {"counts": self.counts, "window": self.window, "emitted": self.pos}
        return {"counts": self.anchor, "window": self.window, "emitted": self.pos}

    def _read(self) -> None:
        assert self.its is not None
        self.anchor = list(self.counts)
        docs: list[np.ndarray] = []
        if self.draws is None:  # at most the corpus: litdata's iterator starts over
            n = min(READ_AHEAD, self.sizes[0] - self.counts[0])
            docs = [r["input_ids"] for r in itertools.islice(self.its[0], n)]
            self.counts[0] += len(docs)
        else:
            at = sum(self.counts)
            for k in self.draws[at : at + READ_AHEAD].tolist():
                docs.append(next(self.its[k])["input_ids"])
                self.counts[k] += 1
        self.buf = self.fn(docs, self.window) if docs else []

    def __iter__(self) -> CountedWindows:
        return self

    def __next__(self) -> Any:
        if self.its is None:
            self._open()
        while self.pos >= len(self.buf):
            if not self.buf:
                raise StopIteration
            self.window, self.pos = self.window + 1, 0
            self._read()
        self.pos += 1
        return self.buf[self.pos - 1]


def _items(ds: Any) -> Any:
    yield from ds


def _windows(opens: list[Callable[[int], Any]], dirs: list[Path], pipeline: str) -> Any:
    sizes = [len(Memmap(d)) for d in dirs]
    draws = None if len(dirs) == 1 else mix_draws(sizes)
    fn = (lambda docs, w: split_window(docs)) if pipeline == "B" else _pad_planned
    return CountedWindows(opens, sizes, draws, fn)


def stub_broken_imports() -> None:
    """Empty ``transformers`` and ``torchvision`` modules for Mosaic Streaming's imports.

    Its ``transformers<5`` wants a ``huggingface-hub`` older than ``datasets==5.2.0`` does,
    and a CPU torch wheel may come with a ``torchvision`` built for another torch; the
    code measured here uses neither.
    """
    import importlib.abc
    import importlib.machinery
    import types

    class Empty(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
            if name.split(".")[0] in ("transformers", "torchvision"):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            return Empty(spec.name)

        def exec_module(self, module: Any) -> None:
            module.__path__ = []

    for name in ("transformers", "torchvision"):
        try:
            importlib.import_module(name)
        except (ImportError, RuntimeError):
            for loaded in [m for m in sys.modules if m.split(".")[0] == name]:
                del sys.modules[loaded]
            sys.meta_path.insert(0, Finder())
            return


def prepare_mosaic(d: Path) -> None:
    stub_broken_imports()
    from streaming import MDSWriter

    mm = Memmap(d)
    with MDSWriter(out=str(d / "mds"), columns={"input_ids": "ndarray:int32"}) as w:
        for i in range(len(mm)):
            w.write({"input_ids": mm[i]})


def build_mosaic(dirs: list[Path], pipeline: str) -> Any:
    stub_broken_imports()
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()

    def opener(d: Path, seed: int) -> Callable[[int], Any]:
        def open_at(n: int) -> Any:
            # predownload: the whole corpus (it is local); with the default of 8 samples
            # ahead, iterating in one process polls and runs about 10x slower
            ds = StreamingDataset(
                local=str(d / "mds"),
                shuffle=True,
                shuffle_seed=seed,
                batch_size=1,
                predownload=len(Memmap(d)),
            )
            if n:
                state = ds.state_dict(n, from_beginning=True)
                state["epoch"] = 0  # a dataset not yet iterated says -1
                ds.load_state_dict(state)
            return ds

        return open_at

    return _windows([opener(d, k) for k, d in enumerate(dirs)], dirs, pipeline)


_LD_MM: Memmap | None = None


def _ld_item(i: int) -> dict[str, np.ndarray]:
    assert _LD_MM is not None
    return {"input_ids": np.array(_LD_MM[i])}


def prepare_litdata(d: Path) -> None:
    import litdata as ld

    global _LD_MM
    _LD_MM = Memmap(d)
    ld.optimize(
        fn=_ld_item,
        inputs=list(range(len(_LD_MM))),
        output_dir=str(d / "litdata"),
        chunk_bytes="64MB",
        num_workers=1,
        start_method="fork",
        verbose=False,
    )


def build_litdata(dirs: list[Path], pipeline: str) -> Any:
    import litdata as ld

    def opener(d: Path, seed: int) -> Callable[[int], Any]:
        def open_at(n: int) -> Any:
            ds = ld.StreamingDataset(str(d / "litdata"), shuffle=True, seed=seed)
            if n:
                ds.load_state_dict(ds.state_dict(n, num_workers=0, batch_size=1))
            return ds

        return open_at

    return _windows([opener(d, k) for k, d in enumerate(dirs)], dirs, pipeline)


# ---- grain (concat-then-split only: it has no token-budget bucketing) ----------------------
def build_grain(dirs: list[Path], pipeline: str) -> Any:
    if pipeline != "B":
        return None
    import grain
    from grain import experimental as ge

    mm = Memmap(dirs[0])

    class Source:
        def __len__(self) -> int:
            return len(mm)

        def __getitem__(self, i: int) -> dict[str, np.ndarray]:
            return {"input_ids": mm[int(i)]}

    ds = grain.MapDataset.source(Source()).shuffle(seed=0).to_iter_dataset()
    ds = ge.ConcatThenSplitIterDataset(ds, length_struct={"input_ids": SEQ_LEN})
    ds = ds.batch(ROWS, drop_remainder=True)

    def rename(b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            "input_ids": b["input_ids"].astype(np.int64),
            "segment_ids": b["input_ids_segment_ids"].astype(np.int64),
            "position_ids": b["input_ids_positions"].astype(np.int64),
        }

    return iter(ds.map(rename))


# ---- raw numpy loop: the limit -------------------------------------------------------------
class Raw:
    """The least work that gives the same batches: numpy over the memory-mapped arrays."""

    def __init__(self, dirs: list[Path], pipeline: str) -> None:
        self.mms = [Memmap(d) for d in dirs]
        self.pipeline = pipeline
        perms = [np.random.default_rng(k).permutation(len(m)) for k, m in enumerate(self.mms)]
        if len(self.mms) == 1:
            self.src, self.doc = np.zeros(len(perms[0]), np.int64), perms[0]
        else:
            self.src = mix_draws([len(p) for p in perms])
            self.doc = np.empty(len(self.src), dtype=np.int64)
            for k, p in enumerate(perms):
                sel = self.src == k
                self.doc[sel] = p[: int(sel.sum())]
        self.load_state_dict({"window": 0, "emitted": 0})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.window, self.pos = state["window"], state["emitted"]
        self._read()

    def state_dict(self) -> dict[str, Any]:
        return {"window": self.window, "emitted": self.pos}

    def _spans(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src, doc = self.src[a:b], self.doc[a:b]
        starts = np.empty(len(doc), np.int64)
        lengths = np.empty(len(doc), np.int64)
        for k, m in enumerate(self.mms):
            sel = src == k
            starts[sel] = m.offsets[doc[sel]]
            lengths[sel] = m.lengths[doc[sel]]
        return src, starts, lengths

    def _gather(
        self,
        src: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """The documents' tokens, concatenated: one slice (a view) per document, one copy
        (into ``out`` when given, converting the type on the way)."""
        ends = (starts + lengths).tolist()
        if len(self.mms) == 1:
            t = self.mms[0].tokens
            parts = [t[a:b] for a, b in zip(starts.tolist(), ends, strict=True)]
        else:
            ts = [m.tokens for m in self.mms]
            spans = zip(src.tolist(), starts.tolist(), ends, strict=True)
            parts = [ts[k][a:b] for k, a, b in spans]
        return np.concatenate(parts, out=out)

    def _read(self) -> None:
        a = self.window * READ_AHEAD
        b = min(a + READ_AHEAD, len(self.doc))
        self.buf: list[Any] = []
        if a >= b:
            return
        src, starts, lengths = self._spans(a, b)
        if self.pipeline == "B":  # batch bounds only; tokens are copied batch by batch
            unit = ROWS * SEQ_LEN
            self.spans = (src, starts, lengths, np.cumsum(lengths) - lengths)
            self.buf = list(range(0, int(lengths.sum()) // unit * unit, unit))
            return
        self.buf = [(src[p], starts[p], lengths[p]) for p in plan_window(lengths, self.window)]

    def _batch_b(self, lo: int) -> dict[str, np.ndarray]:
        """One ``[ROWS, SEQ_LEN]`` batch straight from the mapped tokens (one copy).

        A document's piece of a row starts at max(document start, row start): position
        ids are the smaller of the offsets from the two, segment ids count documents
        from the row's first one.
        """
        src, starts, lengths, doc_start = self.spans
        unit = ROWS * SEQ_LEN
        hi = lo + unit
        first = int(np.searchsorted(doc_start, lo, side="right")) - 1
        last = int(np.searchsorted(doc_start, hi, side="left"))
        a = np.maximum(doc_start[first:last], lo)
        take = np.minimum(doc_start[first:last] + lengths[first:last], hi) - a
        ids = np.empty(unit, np.int64)
        sel = slice(first, last)
        self._gather(src[sel], starts[sel] + (a - doc_start[sel]), take, out=ids)
        which = np.repeat(np.arange(last - first), take).reshape(ROWS, SEQ_LEN)
        seg = which - (which[:, :1] - 1)
        pos = np.minimum((np.arange(lo, hi) - np.repeat(a, take)).reshape(ROWS, SEQ_LEN), ROW_POS)
        return {"input_ids": ids.reshape(ROWS, SEQ_LEN), "segment_ids": seg, "position_ids": pos}

    def __iter__(self) -> Raw:
        return self

    def __next__(self) -> Any:
        while self.pos >= len(self.buf):
            if not self.buf:
                raise StopIteration
            self.window, self.pos = self.window + 1, 0
            self._read()
        item = self.buf[self.pos]
        self.pos += 1
        if self.pipeline == "B":
            return self._batch_b(item)
        src, starts, lengths = item
        width = int(lengths.max())
        mask = np.arange(width) < lengths[:, None]
        ids = np.zeros(mask.shape, np.int64)
        ids[mask] = self._gather(src, starts, lengths)
        return {"input_ids": ids, "attention_mask": mask.astype(np.int64)}


def build(lib: str, dirs: list[Path], pipeline: str) -> Any:
    return {
        "arrowmix": build_arrowmix,
        "torchdata": build_torchdata,
        "infinibatch": build_infinibatch,
        "datasets": build_datasets,
        "mosaic": build_mosaic,
        "litdata": build_litdata,
        "grain": build_grain,
        "raw": Raw,
    }[lib](dirs, pipeline)


# ---- checkpoints ---------------------------------------------------------------------------
def get_state(lib: str, it: Any) -> Any:
    if lib == "infinibatch":
        return it.getstate()
    if lib == "grain":
        return it.get_state()
    return it.state_dict()


def set_state(lib: str, it: Any, state: Any) -> None:
    if lib == "torchdata":
        it.reset(state)
    elif lib == "infinibatch":
        it.setstate(state)
    elif lib == "grain":
        it.set_state(state)
    else:
        it.load_state_dict(state)


def state_bytes(state: Any) -> tuple[int, str]:
    try:
        return len(json.dumps(state)), "JSON"
    except TypeError:
        return len(pickle.dumps(state)), "pickle"


# ---- measurements --------------------------------------------------------------------------
#: Libraries too slow for a full epoch: their rate is measured on the first batches.
BATCH_CAP = {"grain": 200}


def epoch(lib: str, dirs: list[Path], pipeline: str) -> tuple[int, int]:
    """Tokens and batches of one full epoch (or of the first ``BATCH_CAP`` batches)."""
    it = iter(build(lib, dirs, pipeline))
    tokens = batches = 0
    cap = BATCH_CAP.get(lib, -1)
    for b in it:
        tokens += tokens_of(b)
        batches += 1
        if batches == cap:
            break
    return tokens, batches


def peak_rss_mb() -> float:
    """This process's peak resident memory (``VmHWM``: reset at exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


PREIMPORT = {
    "arrowmix": ["arrowmix", "arrowmix.stream"],
    "torchdata": ["torch", "torchdata.nodes"],
    "infinibatch": ["infinibatch.iterators"],
    "datasets": ["datasets"],
    "mosaic": ["streaming"],
    "litdata": ["litdata"],
    "grain": ["grain", "grain.experimental"],
    "raw": [],
}


def child(args: argparse.Namespace) -> int:
    """One fresh process: ``run`` (an epoch, the middle checkpoint) or ``resume``."""
    import importlib

    dirs = [Path(p) for p in args.dirs.split(",")]
    lib, pipeline, out = args.lib, args.pipeline, Path(args.out)
    if lib == "mosaic":
        stub_broken_imports()
    for name in PREIMPORT[lib]:  # imports are not part of the first batch or the resume
        importlib.import_module(name)
    if args.child == "run":
        t0 = time.perf_counter()
        it = iter(build(lib, dirs, pipeline))
        first = next(it)
        ttfb = time.perf_counter() - t0
        n = 1
        middle = args.middle
        for _ in it:
            n += 1
            if n == BATCH_CAP.get(lib, -1):
                break
            if n == middle:
                state = get_state(lib, it)
                with open(out / "state.pkl", "wb") as f:
                    pickle.dump(state, f)
                expected = next(it)
                n += 1
                np.save(out / "expected.npy", np.asarray(expected["input_ids"]))
        size, fmt = state_bytes(state)
        res = {"ttfb": ttfb, "rss": peak_rss_mb(), "state": size, "fmt": fmt, "batches": n}
        del first
    else:
        with open(out / "state.pkl", "rb") as f:
            state = pickle.load(f)
        t0 = time.perf_counter()
        it = iter(build(lib, dirs, pipeline))
        set_state(lib, it, state)
        got = next(it)
        dt = time.perf_counter() - t0
        exact = bool(np.array_equal(np.asarray(got["input_ids"]), np.load(out / "expected.npy")))
        res = {"resume": dt, "exact": exact}
    (out / f"{args.child}.json").write_text(json.dumps(res))
    return 0


def run_child(mode: str, lib: str, pipeline: str, dirs: list[Path], out: Path, middle: int) -> Any:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        __file__,
        "--child",
        mode,
        "--lib",
        lib,
        "--pipeline",
        pipeline,
        "--dirs",
        ",".join(map(str, dirs)),
        "--out",
        str(out),
        "--middle",
        str(middle),
    ]
    env = dict(os.environ, PYTHONWARNINGS="ignore", TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(cmd, check=True, env=env, stderr=subprocess.DEVNULL)
    return json.loads((out / f"{mode}.json").read_text())


def available(lib: str) -> bool:
    import importlib.util

    mod = {"mosaic": "streaming"}
    name = mod.get(lib, lib)
    return lib in ("arrowmix", "raw") or importlib.util.find_spec(name) is not None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--quick", action="store_true", help="20k documents, 2 rounds")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--workdir", default="/tmp/arrowmix-bench-tokens")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--pipelines", default=",".join(PIPELINES))
    ap.add_argument("--no-children", action="store_true", help="throughput only")
    ap.add_argument(
        "--keep",
        action="store_true",
        help="also: arrowmix's A with collate(keep=['src']) against A without it",
    )
    ap.add_argument("--keep-only", action="store_true", help="only the keep= measurement")
    ap.add_argument(
        "--provenance",
        action="store_true",
        help="arrowmix's sources built with provenance=True (what provenance costs)",
    )
    ap.add_argument(
        "--profile",
        choices=["missed", "all", "none"],
        default="missed",
        help="cProfile arrowmix and the raw loop on the pipelines that miss a goal (default)",
    )
    ap.add_argument("--child", choices=["run", "resume"], help=argparse.SUPPRESS)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--pipeline", help=argparse.SUPPRESS)
    ap.add_argument("--dirs", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--middle", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    PROVENANCE["on"] = args.provenance
    if args.child:
        return child(args)
    docs = 20_000 if args.quick and args.docs == 100_000 else args.docs
    repeats = args.repeats or (2 if args.quick else 3)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    import warnings

    warnings.simplefilter("ignore")
    if args.keep_only:
        print(f"# {machine_summary()}")
        keep_cost(workdir, docs, repeats)
        return 0
    prepare(workdir, docs, tuple(args.libs.split(",")))
    libs = [x for x in args.libs.split(",") if available(x)]
    pipelines = args.pipelines.split(",")
    print(f"# {machine_summary()}")
    total = int(np.load(corpus_dirs(workdir, docs, "A")[0] / "offsets.npy")[-1])
    print(f"# corpus: {docs} documents, {total / 1e6:.1f} M tokens; libraries: {libs}")
    cases = {
        (lib, p): (lambda lib=lib, p=p: epoch(lib, corpus_dirs(workdir, docs, p), p))
        for p in pipelines
        for lib in libs
        if not (lib == "grain" and p != "B")
    }
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    cpu: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    work: dict[tuple[str, str], tuple[int, int]] = {}
    for fn in cases.values():  # warm-up: imports, page cache
        fn()
    for r in range(repeats):
        for key, fn in cases.items():
            c0, t0 = time.process_time(), time.perf_counter()
            work[key] = fn()
            samples[key].append(time.perf_counter() - t0)
            cpu[key].append(time.process_time() - c0)
        line = " ".join(f"{k[0]}/{k[1]}={v[-1]:.2f}s" for k, v in samples.items())
        print(f"  round {r + 1}/{repeats}: {line}", file=sys.stderr, flush=True)
    rates = {k: work[k][0] / statistics.median(v) for k, v in samples.items()}
    cpu_rates = {k: work[k][0] / statistics.median(v) for k, v in cpu.items()}
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    if not args.no_children:
        for key in cases:
            lib, p = key
            dirs = corpus_dirs(workdir, docs, p)
            out = workdir / "runs" / f"{lib}-{p}"
            run = run_child("run", lib, p, dirs, out, work[key][1] // 2)
            run.update(run_child("resume", lib, p, dirs, out, 0))
            extra[key] = run
    for p in pipelines:
        print(f"\n## Pipeline {p}\n")
        print(
            "| library | M tokens/s | arrowmix / it | same on CPU time | first batch "
            "| resume (fresh process) | exact | state | peak RSS |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        ours = rates.get(("arrowmix", p), math.nan)
        ours_cpu = cpu_rates.get(("arrowmix", p), math.nan)
        for lib in libs:
            key = (lib, p)
            if key not in rates:
                continue
            e = extra.get(key, {})
            cells = [
                lib + (f" (first {BATCH_CAP[lib]} batches)" if lib in BATCH_CAP else ""),
                f"{rates[key] / 1e6:.1f}",
                f"{ours / rates[key]:.2f}x",
                f"{ours_cpu / cpu_rates[key]:.2f}x",
                f"{e['ttfb'] * 1e3:.0f} ms" if e else "-",
                f"{e['resume'] * 1e3:.0f} ms" if e else "-",
                ("yes" if e["exact"] else "**no**") if e else "-",
                f"{e['state']} B {e['fmt']}" if e else "-",
                f"{e['rss']:.0f} MB" if e else "-",
            ]
            print("| " + " | ".join(cells) + " |")
    missed = print_goals(pipelines, docs, rates, cpu_rates)
    if args.keep:
        keep_cost(workdir, docs, repeats)
    wanted = pipelines if args.profile == "all" else missed if args.profile == "missed" else []
    for p in wanted:
        print_profile(corpus_dirs(workdir, docs, p), p)
    return 0


def keep_cost(workdir: Path, docs: int, repeats: int) -> None:
    """arrowmix's A with ``collate(keep=[...])`` against the same pipeline without it.

    A's corpus written again with two more columns: ``src`` (one of three source names,
    a string) and ``doc_id`` (int64). Every case reads that corpus; interleaved rounds,
    medians of CPU time (wall time in brackets).
    """
    import arrowmix

    base = corpus_dirs(workdir, docs, "A")[0]
    d = workdir / f"keep-{docs}"
    if not (d / "done").exists():
        prepare(workdir, docs, ("arrowmix",))
        offsets = np.load(base / "offsets.npy")
        tokens = np.fromfile(base / "tokens.bin", dtype=np.int32)
        ids = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(tokens))
        n = len(offsets) - 1
        src = np.array(["web", "code", "maths"])[np.arange(n) % 3]
        table = pa.table({"input_ids": ids, "src": pa.array(src.tolist()), "doc_id": np.arange(n)})
        arrowmix.write_chunks(table, str(d / "arrowmix"), overwrite=True)
        (d / "done").write_text("ok")

    def run(keep: list[str]) -> None:
        s = arrowmix.Dataset.from_chunks(str(d / "arrowmix")).to_stream(
            shuffle="global", seed=0, infinite=False
        )
        s = s.budget_bucket("input_ids", BUDGET, READ_AHEAD, seed=7)
        for _ in s.collate("input_ids", keep=keep):
            pass

    cases = {
        "A": lambda: run([]),
        "A, keep=['src']": lambda: run(["src"]),
        "A, keep=['doc_id']": lambda: run(["doc_id"]),
    }
    t = interleaved(cases, repeats=max(repeats, 5), warmup=1)
    print(f"\n## collate(keep=...) on A ({docs} documents, {max(repeats, 5)} rounds)\n")
    print("| case | CPU s (wall s) | against A without keep: CPU (wall) | goal >= 0.8 |")
    print("|---|---|---|---|")
    a = t["A"]
    for name, tm in t.items():
        r_cpu, r_wall = a.cpu_median / tm.cpu_median, a.median / tm.median
        met = "" if name == "A" else ("met" if r_cpu >= 0.8 else "**no**")
        print(
            f"| {name} | {tm.cpu_median:.3f} ({tm.median:.3f}) | {r_cpu:.2f}x ({r_wall:.2f}x) "
            f"| {met} |"
        )


#: Goals: arrowmix against the fastest peer and against the raw numpy loop (tokens/s).
GOAL_PEER, GOAL_RAW = 2.0, 0.8


def print_goals(
    pipelines: list[str],
    docs: int,
    rates: dict[tuple[str, str], float],
    cpu_rates: dict[tuple[str, str], float],
) -> list[str]:
    """The summary table of the goals (CPU time decides, wall time beside it).

    Returns the pipelines where a goal is missed.
    """
    print(f"\n## Goals at {docs:,} documents (CPU time decides; wall time in brackets)\n")
    print(
        f"| pipeline | arrowmix M tokens/s | fastest peer | arrowmix / peer (>= {GOAL_PEER}x) "
        f"| raw loop M tokens/s | arrowmix / raw (>= {GOAL_RAW}) | met |"
    )
    print("|---|---|---|---|---|---|---|")
    missed = []
    for p in pipelines:
        peers = [k for k in rates if k[1] == p and k[0] not in ("arrowmix", "raw")]
        if ("arrowmix", p) not in rates or not peers or ("raw", p) not in rates:
            continue
        best = max(peers, key=cpu_rates.__getitem__)
        ours, raw = ("arrowmix", p), ("raw", p)
        vs_peer, vs_raw = cpu_rates[ours] / cpu_rates[best], cpu_rates[ours] / cpu_rates[raw]
        met = vs_peer >= GOAL_PEER and vs_raw >= GOAL_RAW
        if not met:
            missed.append(p)
        cells = [
            p,
            f"{cpu_rates[ours] / 1e6:.1f} ({rates[ours] / 1e6:.1f})",
            f"{best[0]} {cpu_rates[best] / 1e6:.1f} ({rates[best] / 1e6:.1f})",
            f"{vs_peer:.2f}x ({rates[ours] / rates[best]:.2f}x)",
            f"{cpu_rates[raw] / 1e6:.1f} ({rates[raw] / 1e6:.1f})",
            f"{vs_raw:.2f} ({rates[ours] / rates[raw]:.2f})",
            "yes" if met else "**no**",
        ]
        print("| " + " | ".join(cells) + " |")
    return missed


def print_profile(dirs: list[Path], pipeline: str, top: int = 12) -> None:
    """cProfile of one arrowmix epoch and one raw-loop epoch: where the time goes."""
    import cProfile
    import pstats

    print(f"\n### Profile of pipeline {pipeline} (one epoch each, cProfile, own time)\n")
    for lib in ("arrowmix", "raw"):
        prof = cProfile.Profile()
        prof.enable()
        epoch(lib, dirs, pipeline)
        prof.disable()
        stats: Any = pstats.Stats(prof)
        total = stats.total_tt
        print(f"{lib}: {total:.3f} s in {stats.total_calls} calls\n")
        print("| function | calls | own time | share |")
        print("|---|---|---|---|")
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
        for (path, line, name), (_, calls, own, _, _) in rows:
            where = f"{Path(path).name}:{line}({name})" if line else name
            print(f"| `{where}` | {calls} | {own:.3f} s | {own / total:.0%} |")
        print()


if __name__ == "__main__":
    raise SystemExit(main())
