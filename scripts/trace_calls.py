"""Trace which arrowmix modules call which during a ``Dataset.map`` call and a token path.

Usage (from the repository root, or with ``PYTHONPATH`` pointing at another checkout)::

    python scripts/trace_calls.py            # summary: modules crossed, pairs called both ways
    python scripts/trace_calls.py --pairs    # also list every (caller, callee) module pair

It installs ``sys.setprofile`` around two traced paths, each reported alone and then together:

- **map**: two maps of a fresh chunked dataset (cache misses in a new cache directory), one
  ``ds.map(fn, batched=True)`` and one ``ds.map(fn, num_proc=2)``;
- **tokens**: token rows to tensors, over a chunked dataset of ``list<int32>`` token ids:
  ``ds.to_stream(...).budget_bucket(...).collate(return_tensors="pt")`` and
  ``ds.to_stream(...).shuffle(...).batch(columnar=True).collate()`` (numpy arrays), the
  first also checkpointed and restored once.

Every Python call whose caller and callee frames both belong to ``arrowmix`` modules, and to
different ones, records the pair ``(caller module, callee module)``. A pair of modules that
call each other both ways is a cycle in the call graph, which the layering is meant to avoid.
Only the parent process is traced (the workers of ``num_proc=2`` run in other processes).

Each summary gives two counts. *All calls* counts every call. *Across objects* leaves out
the calls an object makes to its own methods (the caller and the callee are methods with
the same ``self``, or the same ``cls`` for class methods): a stage's ``__init__`` calling its
base class's ``super().__init__``, a class's ``__init_subclass__`` calling its base's,
and a base class's template method calling the hook its subclass overrides, cross modules
only because a class and its base live in different files. The calls are all still traced
and listed with ``--pairs``; the second count only names which cycles are between objects.
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


def _receiver(frame: FrameType | None) -> object:
    """The ``self`` (or ``cls``) of the method running in ``frame``, or a sentinel."""
    code = None if frame is None else frame.f_code
    if frame is None or code is None or not code.co_argcount:
        return _NONE
    first = code.co_varnames[0]
    return frame.f_locals.get(first, _NONE) if first in ("self", "cls") else _NONE


_NONE = object()
Pairs = set[tuple[str, str]]


def _collect(run: Any) -> tuple[Pairs, Pairs, set[str]]:
    """``(every module pair, the pairs seen in a call between two objects, modules)``."""
    pairs: Pairs = set()
    crossing: Pairs = set()
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
            if (caller, callee) not in crossing:
                own = _receiver(frame)
                if own is _NONE or own is not _receiver(frame.f_back):
                    crossing.add((caller, callee))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return pairs, crossing, modules


def add_one(batch: dict[str, list[int]]) -> dict[str, list[int]]:
    """The batched function mapped by the trace."""
    return {"y": [x + 1 for x in batch["x"]]}


def double(row: dict[str, int]) -> dict[str, int]:
    """The per-row function mapped with ``num_proc=2``."""
    return {"z": row["x"] * 2}


def _trace_map(tmp: Path) -> tuple[Pairs, Pairs, set[str]]:
    """The map path: one batched map and one ``num_proc=2`` map, both cache misses."""
    import arrowmix as am

    am.write_chunks(({"x": i} for i in range(2000)), tmp / "src", rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(tmp / "src"))

    def run() -> None:
        out = ds.map(add_one, batched=True)
        assert out[0]["y"] == 1
        out = ds.map(double, num_proc=2)
        assert out[3]["z"] == 6

    return _collect(run)


def _trace_tokens(tmp: Path) -> tuple[Pairs, Pairs, set[str]]:
    """The token path: ``list<int32>`` rows to torch tensors and numpy arrays."""
    import numpy as np
    import pyarrow as pa

    import arrowmix as am

    rows = [{"input_ids": [(i * 7 + j) % 1000 for j in range(1 + i % 23)]} for i in range(2000)]
    schema = pa.schema([("input_ids", pa.list_(pa.int32()))])
    table = pa.Table.from_pylist(rows, schema=schema)
    am.write_chunks(table, tmp / "tok", rows_per_chunk=500)
    ds = am.Dataset.from_chunks(str(tmp / "tok"))

    def run() -> None:
        import torch

        s = ds.to_stream(seed=0, infinite=False)
        s = s.budget_bucket("input_ids", 64, read_ahead=4, seed=0)
        tensors = s.collate(labels="shift", return_tensors="pt")
        first = next(tensors)
        assert isinstance(first["input_ids"], torch.Tensor)
        assert first["input_ids"].shape[1] >= 1
        state = tensors.state_dict()
        later = next(tensors)
        tensors.load_state_dict(state)
        assert torch.equal(next(tensors)["input_ids"], later["input_ids"])
        s = ds.to_stream(shuffle="global", seed=1, infinite=False).shuffle(64, seed=1)
        arrays = s.batch(8, columnar=True).collate(pad_to_multiple_of=8)
        batches = list(arrays)
        assert all(isinstance(b["input_ids"], np.ndarray) for b in batches)
        total = sum(int(b["attention_mask"].sum()) for b in batches)
        assert isinstance(first["attention_mask"], torch.Tensor)
        assert total == sum(len(r["input_ids"]) for r in rows)

    return _collect(run)


def _both_ways(pairs: Pairs) -> list[tuple[str, str]]:
    return sorted({(min(a, b), max(a, b)) for a, b in pairs if (b, a) in pairs})


def _report(title: str, traced: tuple[Pairs, Pairs, set[str]], every: bool) -> None:
    pairs, crossing, modules = traced
    both, across = _both_ways(pairs), _both_ways(crossing)
    print(f"[{title}]")
    print(f"modules on the traced path: {len(modules)}")
    print(f"module pairs (caller != callee): {len(pairs)}")
    print(f"pairs calling each other both ways, all calls: {len(both)}")
    for a, b in both:
        mark = "" if (a, b) in across else "   (only an object calling its own methods)"
        print(f"  {a} <-> {b}{mark}")
    print(f"pairs calling each other both ways, across objects: {len(across)}")
    if every:
        for caller, callee in sorted(pairs):
            print(f"  {caller} -> {callee}")


def main(argv: list[str] | None = None) -> int:
    """Trace the map path and the token path and print the summaries."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", action="store_true", help="list every module pair")
    args = parser.parse_args(argv)

    import arrowmix as am

    print(f"arrowmix: {am.__file__}")
    with tempfile.TemporaryDirectory() as tmp:
        on_map = _trace_map(Path(tmp))
        on_tokens = _trace_tokens(Path(tmp))
    _report("map", on_map, args.pairs)
    _report("tokens", on_tokens, args.pairs)
    union = tuple(a | b for a, b in zip(on_map, on_tokens, strict=True))
    _report("both paths", union, False)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
