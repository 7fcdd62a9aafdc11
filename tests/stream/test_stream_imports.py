"""Streaming imports nothing heavy on the way to the first batch (a fresh process's latency)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa

import arrowmix as am

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import arrowmix as am
    import arrowmix.stream
    ds = am.Dataset.from_chunks(sys.argv[1])
    rows = ds.with_format("numpy").to_stream(shuffle="chunks", seed=0, infinite=False)
    assert sum(np.asarray(r["input_ids"]).size for r in rows) > 0
    batches = ds.to_stream(shuffle="chunks", seed=0, infinite=False).batch(4).collate()
    assert sum(b["input_ids"].size for b in batches) > 0
    print(sorted(m for m in ("pandas", "torch", "polars", "numpy.ma") if m in sys.modules))
    """
)


def test_numpy_rows_and_collated_batches_do_not_import_pandas(tmp_path: Path) -> None:
    """``np.asarray`` of an Arrow array with a dtype imports pandas (0.2 s on the clock of the
    first batch); the stream paths convert with ``to_numpy`` instead."""
    ids = pa.array([[i, i + 1, i + 2][: 1 + i % 3] for i in range(64)], pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), str(tmp_path / "c"), rows_per_chunk=16)
    got = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert got.stdout.strip() == "[]", got.stdout + got.stderr


RESUME = textwrap.dedent(
    """
    import sys
    import arrowmix as am
    from arrowmix.stream import Collator
    ds = am.Dataset.from_chunks(sys.argv[1])

    def build(pad_id):
        s = ds.to_stream(shuffle="chunks", seed=0, infinite=False)
        return s.batch(4, columnar=True).map(Collator("input_ids", pad_id=pad_id))

    trained = build(0)
    next(trained)
    state = trained.state_dict()
    build(0).load_state_dict(state)  # a fresh pipeline (as a new process builds it)
    try:
        build(7).load_state_dict(state)
    except am.exceptions.StateError as exc:
        assert "Collator" in str(exc), exc
    else:
        raise AssertionError("a collator with another pad_id took the checkpoint")
    print(sorted(m for m in ("pandas", "torch") if m in sys.modules))
    """
)


def test_a_collator_is_identified_by_its_configuration_without_importing_torch(
    tmp_path: Path,
) -> None:
    """Checkpointing ``map(Collator(...))`` identifies the collator by its settings: hashing
    its code by value imported torch (seconds before a resumed pipeline's first batch)."""
    ids = pa.array([[i, i + 1][: 1 + i % 2] for i in range(32)], pa.list_(pa.int32()))
    am.write_chunks(pa.table({"input_ids": ids}), str(tmp_path / "c"), rows_per_chunk=8)
    got = subprocess.run(
        [sys.executable, "-c", RESUME, str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert got.stdout.strip() == "[]", got.stdout + got.stderr
