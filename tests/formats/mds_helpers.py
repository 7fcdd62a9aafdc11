"""MDS datasets written by mosaicml-streaming's own writer, and read by its own shard reader.

The test group installs ``mosaicml-streaming`` without its declared dependencies (they pin
``transformers<5``, which conflicts with HF ``datasets``), plus the few its MDS modules
import. The package's ``__init__`` also imports its torch DataLoader and vision datasets
(``transformers``, ``torchvision``), which its MDS writer and reader never use: the
``streaming`` and ``streaming.base`` packages are registered here without running their
``__init__``, then the MDS modules are imported as they are.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import sys
import types
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pytest


def streaming_mds() -> types.SimpleNamespace:
    """``MDSWriter``, ``reader_from_json`` and ``decompress`` of mosaicml-streaming (or skip)."""
    found = _streaming_mds()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@functools.cache
def _streaming_mds() -> types.SimpleNamespace | str:
    registered = getattr(sys.modules.get("streaming"), "__path__", None)
    if registered:  # imported already (by another import of this module, or for real)
        root = next(iter(registered))
    else:
        spec = importlib.util.find_spec("streaming")
        if spec is None or not spec.submodule_search_locations:
            return "mosaicml-streaming is not installed (scripts/test installs it)"
        root = next(iter(spec.submodule_search_locations))
    for name, sub in (("streaming", root), ("streaming.base", os.path.join(root, "base"))):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [sub]
            sys.modules[name] = package
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from streaming.base.compression import decompress
            from streaming.base.format import reader_from_json
            from streaming.base.format.mds.writer import MDSWriter
    except ImportError as exc:  # torch (for its util module) not installed
        return f"mosaicml-streaming's MDS modules cannot be imported: {exc}"
    return types.SimpleNamespace(
        MDSWriter=MDSWriter, reader_from_json=reader_from_json, decompress=decompress
    )


def write_mds(
    out: str, columns: Mapping[str, str], samples: Iterable[Mapping[str, Any]], **kwargs: Any
) -> str:
    """``samples`` written with streaming's ``MDSWriter`` to the new directory ``out``."""
    mds = streaming_mds()
    with mds.MDSWriter(out=out, columns=dict(columns), **kwargs) as writer:
        for sample in samples:
            writer.write(dict(sample))
    return out


def read_with_streaming(directory: str, scratch: str) -> list[dict[str, Any]]:
    """Every sample as streaming's ``MDSReader`` decodes it, shard by shard.

    A compressed shard is first decompressed by streaming (into ``scratch``, as its
    ``StreamingDataset`` does into its local cache), so ``directory`` stays as written.
    """
    mds = streaming_mds()
    with open(os.path.join(directory, "index.json")) as f:
        index = json.load(f)
    os.makedirs(scratch, exist_ok=True)
    rows = []
    for obj in index["shards"]:
        raw = obj["raw_data"]["basename"]
        if obj.get("zip_data"):
            with open(os.path.join(directory, obj["zip_data"]["basename"]), "rb") as f:
                data = mds.decompress(obj["compression"], f.read())
            with open(os.path.join(scratch, raw), "wb") as f:
                f.write(data)
        else:
            shutil.copyfile(os.path.join(directory, raw), os.path.join(scratch, raw))
        reader = mds.reader_from_json(scratch, None, obj)
        rows.extend(reader.get_item(i) for i in range(reader.samples))
    return rows
