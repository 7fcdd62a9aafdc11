"""Benchmark function fingerprinting (arrowmix vs HF ``datasets`` when importable).

Usage: python scripts/bench/bench_fingerprint.py [--repeat N] [--quick]

Prints the median time per call of ``fingerprint_function`` and
``fingerprint_transform`` for typical map functions, and of
``datasets.fingerprint.Hasher.hash`` on the same functions when ``datasets`` is
installed. Each case is fingerprinted in a fresh call (no result caching between
calls), as a rerun of a training script would.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
from bench_common import base_parser, interleaved, machine_summary

from arrowmix._fingerprint.functions import fingerprint_function
from arrowmix._fingerprint.transform import fingerprint_transform

MAX_LEN = 128
WORD = re.compile(r"\w+|[^\w\s]")


def _normalise(text: str) -> str:
    return text.lower().strip()


def make_python_tokenizer(vocab: dict[str, int]) -> Callable[[dict[str, Any]], Any]:
    """A pure-Python tokenizer closure over a vocabulary dict."""

    def tokenize(batch: dict[str, Any]) -> dict[str, Any]:
        ids = [
            [vocab.get(w, 0) for w in WORD.findall(_normalise(t))][:MAX_LEN] for t in batch["text"]
        ]
        return {"input_ids": ids, "length": [len(i) for i in ids]}

    return tokenize


def make_hf_tokenizer(n_words: int) -> Callable[[dict[str, Any]], Any] | None:
    """A closure over a HF ``tokenizers.Tokenizer`` (WordLevel), if installed."""
    try:
        import tokenizers
    except ImportError:
        return None
    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(n_words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.enable_truncation(MAX_LEN)

    def tokenize(batch: dict[str, Any]) -> dict[str, Any]:
        enc = tok.encode_batch(batch["text"])
        return {"input_ids": [e.ids for e in enc]}

    return tokenize


def cases() -> dict[str, Callable[..., Any]]:
    """The functions to fingerprint."""
    out: dict[str, Callable[..., Any]] = {
        "lambda": lambda row: {"n": len(row["text"])},
        "py tokenizer closure (1k vocab)": make_python_tokenizer(
            {f"w{i}": i for i in range(1_000)}
        ),
        "closure over 200k-entry dict": make_python_tokenizer({f"w{i}": i for i in range(200_000)}),
    }
    word_pieces = {f"w{i}": [i, i + 1] for i in range(200_000)}
    out["closure over 200k dict[str, list]"] = lambda w: word_pieces.get(w)
    merges = {(f"a{i}", f"b{i % 977}"): i for i in range(200_000)}
    out["closure over 200k BPE merges"] = lambda pair: merges.get(pair)
    hf = make_hf_tokenizer(30_000)
    if hf is not None:
        out["HF tokenizers closure (30k vocab)"] = hf
    table = np.random.default_rng(0).random((1000, 256))
    out["closure over 2 MB ndarray"] = lambda row: table[row["i"]]
    return out


def hf_hasher() -> Callable[[Any], str] | None:
    """``datasets.fingerprint.Hasher.hash`` if ``datasets`` is importable."""
    try:
        from datasets.fingerprint import Hasher  # type: ignore[import-untyped]
    except ImportError:
        return None
    return Hasher.hash  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per case."""
    parser = base_parser(
        __doc__,
        rows=None,
        quick="smoke run: 3 calls per case",
        workdir_flags=(),
        repeats=15,
        repeats_flags=("--repeat", "--repeats"),
        seed=False,
    )
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeats
    hf = hf_hasher()
    print(f"# {machine_summary()}")
    parent = "0123456789abcdef"
    header = f"{'case':36} {'arrowmix fn':>12} {'transform':>10} {'HF Hasher':>10}"
    print(header)
    print("-" * len(header))
    for name, fn in cases().items():
        timings = interleaved(
            {
                "fn": functools.partial(fingerprint_function, fn),
                "transform": functools.partial(
                    fingerprint_transform,
                    parent,
                    "arrowmix.map",
                    1,
                    fn,
                    {"batched": True},
                    {"batched": False},
                ),
            },
            repeat,
            warmup=1,  # imports, code-object caches
            verbose=False,
        )
        ours, trans = (timings[k].median * 1e3 for k in ("fn", "transform"))
        theirs = "n/a"
        if hf is not None:
            hf_t = interleaved(
                {"hf": functools.partial(hf, fn)}, max(3, repeat // 3), warmup=1, verbose=False
            )
            hf_ms = hf_t["hf"].median * 1e3
            theirs = f"{hf_ms:.2f}"
        print(f"{name:36} {ours:10.2f}ms {trans:8.2f}ms {theirs:>8}ms")
    print("medians in ms per call; HF column: datasets.fingerprint.Hasher.hash")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
