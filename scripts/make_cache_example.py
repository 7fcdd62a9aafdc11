"""Regenerate .cache-example/: a tiny corpus and the derived files arrowmix writes beside it.

The file names encode fingerprints, which must be identical on every machine: a test
(tests/test_cache_example.py) regenerates the example into a temporary directory and compares
the names with the committed ones.

Usage: python scripts/make_cache_example.py [OUT_DIR]   (default: .cache-example)
"""

from __future__ import annotations

import json
import os
import sys

import arrowmix as am
from arrowmix._dataset import indices

ROWS = [
    {"id": i, "text": text}
    for i, text in enumerate(
        [
            "In the beginning was the Word.",
            "def add(a, b):\n    return a + b",
            "To be, or not to be, that is the question.",
            "import this",
            "Beautiful is better than ugly.",
            "for i in range(3):\n    print(i)",
            "All the world's a stage.",
            "class Stack(list):\n    push = list.append",
            "Simple is better than complex.",
            "The quality of mercy is not strained.",
            "while True:\n    break",
            "Now is the winter of our discontent.",
        ]
    )
]


def n_chars(row: dict[str, object]) -> dict[str, int]:
    """The map of the example: a length column."""
    return {"n_chars": len(str(row["text"]))}


def is_code(row: dict[str, object]) -> bool:
    """The filter of the example: rows that look like Python code."""
    return ":" in str(row["text"]) or str(row["text"]).startswith("import")


def build(out_dir: str) -> list[str]:
    """Write the example into ``out_dir``; return the names of the arrowmix files in it."""
    indices.INDICES_FILE_MIN_ROWS = 1  # spill every mapping to a file, to show one
    am.write_chunks(iter(ROWS), out_dir, rows_per_chunk=5, overwrite=True)
    ds = am.Dataset.from_chunks(out_dir)
    shuffled = ds.shuffle(seed=0)
    shuffled.select(range(6)).sort("id").flatten_indices()
    ds.map(n_chars).filter(is_code)
    return sorted(n for n in os.listdir(out_dir) if n.endswith(".arrow"))


def environment() -> dict[str, str]:
    """What function fingerprints depend on besides the code: Python and dill minor versions."""
    import platform

    import dill

    return {
        "python": ".".join(platform.python_version_tuple()[:2]),
        "dill": ".".join(dill.__version__.split(".")[:2]),
    }


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else ".cache-example"
    names = build(target)
    for name in names:
        print(name)
    with open(os.path.join(target, "MANIFEST.json"), "w") as f:
        json.dump({"files": names, "environment": environment()}, f, indent=1)
        f.write("\n")
