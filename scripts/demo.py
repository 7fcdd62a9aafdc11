"""The arrowmix quickstart on sample data that ships with every Python: the standard library.

Builds a two-source corpus (module docstrings as prose, function bodies as code), writes it to
Arrow chunk files, opens them memory-mapped, and shows zero-copy views.

Run it with ``scripts/demo`` (creates .venv and installs arrowmix) or ``python scripts/demo.py``.
"""

from __future__ import annotations

import argparse
import ast
import os
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import arrowmix as am


def stdlib_files(limit: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.is_file())
    return files[:limit]


def corpus(limit: int) -> Iterator[dict[str, str]]:
    """Rows ``{"source", "module", "text"}``: docstrings (prose) and functions (code)."""
    for path in stdlib_files(limit):
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src)
            lines = src.splitlines()
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    yield {"source": "prose", "module": path.stem, "text": doc}
            if isinstance(node, ast.FunctionDef):
                code = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                if code:
                    yield {"source": "code", "module": path.stem, "text": code}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=".demo", help="where chunks and caches go")
    parser.add_argument("--files", type=int, default=120, help="stdlib files to read")
    args = parser.parse_args()
    os.environ.setdefault("ARROWMIX_CACHE", os.path.join(args.workdir, "cache"))
    chunks = os.path.join(args.workdir, "chunks")

    print("== 1. write Arrow chunk files from a stream of rows")
    t0 = time.perf_counter()
    paths = am.write_chunks(corpus(args.files), chunks, rows_per_chunk=2000, overwrite=True)
    print(f"   {len(paths)} chunk files in {chunks} ({time.perf_counter() - t0:.2f}s)")

    print("== 2. open them memory-mapped")
    t0 = time.perf_counter()
    ds = am.Dataset.from_chunks(chunks)
    ms = (time.perf_counter() - t0) * 1e3
    print(f"   {ds.num_rows} rows, columns {ds.column_names}, opened in {ms:.1f} ms")
    print(f"   fingerprint {ds.fingerprint} (content-addressed: same data, same fingerprint)")
    print(f"   ds[0] = {ds[0]['source']}/{ds[0]['module']}: {ds[0]['text'][:60]!r}...")

    print("== 3. zero-copy views: shuffle -> select -> sort (an indices mapping, no data copied)")
    with_len = am.Dataset.from_arrow(
        ds.to_table().append_column("n_chars", [[len(t) for t in ds["text"]]])
    )
    view = with_len.shuffle(seed=0).select(range(1000)).sort("n_chars", reverse=True)
    print(f"   {len(view)} rows; the 3 longest of a random 1000:")
    for row in view.select([0, 1, 2]):
        print(f"     {row['n_chars']:6d} chars  {row['source']:5s}  {row['module']}")
    train, test = ds.train_test_split(test_size=0.05, seed=0)
    print(f"   train/test split: {len(train)} / {len(test)}")
    shards = [len(ds.shard(num_shards=4, index=i)) for i in range(4)]
    print(f"   4 shards: {shards} rows (disjoint, covering all {ds.num_rows})")
    flat = view.flatten_indices()
    print(f"   flatten_indices -> {os.path.basename(flat.cache_files[0])}")
    print("done.")


if __name__ == "__main__":
    main()
