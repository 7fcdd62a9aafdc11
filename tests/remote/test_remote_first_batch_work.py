"""What a fresh process does on its way to the first rows of a bounded S3 corpus.

The S3 client botocore builds from its JSON descriptions holds some 10^5 objects: making it
must not set off a full garbage-collection pass (with torch imported, a pass over its 2x10^5
objects costs ~0.1 s). The first rows must not import ``numpy.ma`` (``np.unique``), nor
anything else: what they need is imported while the store answers the open.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent(
    """
    import gc, json, sys
    import numpy as np
    import arrowmix as am

    url, options, cache = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    gc.collect()  # a full pass now: what follows would set one off by its own allocations
    full = []
    gc.callbacks.append(lambda phase, info: full.append(1) if (
        phase == "start" and info["generation"] == 2) else None)
    ds = am.Dataset.from_chunks(url, storage_options=options, cache_limit="4MB",
                                chunk_cache_dir=cache)
    full_at_open, opened = len(full), set(sys.modules)
    stream = ds.with_format("numpy").to_stream(shuffle="chunks", seed=0, infinite=False)
    rows = sum(np.asarray(r["ids"]).size for r in stream)
    print(json.dumps({"full_at_open": full_at_open, "gc_on": gc.isenabled(), "rows": rows,
                      "numpy.ma": "numpy.ma" in sys.modules,
                      "imported after the open": sorted(set(sys.modules) - opened)}))
    """
)


def test_opening_and_reading_an_s3_corpus_sets_off_no_full_collection_nor_numpy_ma(
    s3_url: str, s3_storage_options: dict[str, Any], tmp_path: Any
) -> None:
    ids = [[i, i + 1, i + 2] for i in range(400)]
    am.write_chunks(
        pa.table({"ids": ids}), s3_url, rows_per_chunk=50, storage_options=s3_storage_options
    )
    got = subprocess.run(
        [sys.executable, "-c", SCRIPT, s3_url, json.dumps(s3_storage_options),
         str(tmp_path / "cache")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = json.loads(got.stdout.strip().splitlines()[-1])
    assert out == {
        "full_at_open": 0, "gc_on": True, "rows": 1200, "numpy.ma": False,
        "imported after the open": [],  # imported while the listing was answered
    }, got.stderr  # fmt: skip
