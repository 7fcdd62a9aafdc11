"""Trace which arrowmix modules call which during a ``Dataset.map`` call.

Usage (from the repository root, or with ``PYTHONPATH`` pointing at another checkout)::

    python scripts/trace_calls.py            # summary: modules crossed, pairs called both ways
    python scripts/trace_calls.py --pairs    # also list every (caller, callee) module pair

It installs ``sys.setprofile`` around two maps of a fresh chunked dataset (cache misses in a
new cache directory): one ``ds.map(fn, batched=True)`` and one ``ds.map(fn, num_proc=2)``.
Every Python call whose caller and callee frames both belong to ``arrowmix`` modules, and to
different ones, records the pair ``(caller module, callee module)``. A pair of modules that
call each other both ways is a cycle in the call graph, which the map engine's layering is
meant to avoid. Only the parent process is traced (the workers of ``num_proc=2`` run in other
processes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and (name == "arrowmix" or name.startswith("arrowmix.")):
        return name
    return None


def _collect(run: Any) -> tuple[set[tuple[str, str]], set[str]]:
    pairs: set[tuple[str, str]] = set()
    modules: set[str] = set()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        callee = _module(frame)
        if callee is None:
            return
        modules.add(callee)
        caller = _module(frame.f_back)
        if caller is not None and caller != callee:
            pairs.add((caller, callee))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return pairs, modules


def add_one(batch: dict[str, list[int]]) -> dict[str, list[int]]:
    """The batched function mapped by the trace."""
    return {"y": [x + 1 for x in batch["x"]]}


def double(row: dict[str, int]) -> dict[str, int]:
    """The per-row function mapped with ``num_proc=2``."""
    return {"z": row["x"] * 2}


def main(argv: list[str] | None = None) -> int:
    """Trace the two maps and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", action="store_true", help="list every module pair")
    args = parser.parse_args(argv)

    import arrowmix as am

    with tempfile.TemporaryDirectory() as tmp:
        am.write_chunks(({"x": i} for i in range(2000)), Path(tmp) / "src", rows_per_chunk=500)
        ds = am.Dataset.from_chunks(str(Path(tmp) / "src"))

        def run() -> None:
            out = ds.map(add_one, batched=True)
            assert out[0]["y"] == 1
            out = ds.map(double, num_proc=2)
            assert out[3]["z"] == 6

        pairs, modules = _collect(run)
    both = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
    print(f"arrowmix: {am.__file__}")
    print(f"modules on the traced path: {len(modules)}")
    print(f"module pairs (caller != callee): {len(pairs)}")
    print(f"pairs calling each other both ways: {len(both)}")
    for a, b in both:
        print(f"  {a} <-> {b}")
    if args.pairs:
        for caller, callee in sorted(pairs):
            print(f"  {caller} -> {callee}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
