"""Tensors and random generators are hashed by value, the same in every process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from arrowmix._fingerprint.hasher import hash_bytes
from arrowmix._fingerprint.pickler import dumps

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

# Builds the same values in this process and in a child; prints their digests.
_VALUES = """
import numpy as np, torch
from arrowmix._fingerprint.hasher import hash_bytes
from arrowmix._fingerprint.pickler import dumps
values = [
    torch.arange(6, dtype=torch.float32).reshape(2, 3),
    torch.tensor([1, 2, 3], dtype=torch.int64)[1:],
    torch.Generator().manual_seed(7),
    np.random.default_rng(7),
    np.random.RandomState(7),
]
digests = [hash_bytes(dumps(v)) for v in values]
"""
_MAP = """
import arrowmix as am
SCALE = torch.full((3,), 2.0)
ds = am.Dataset.from_dict({"x": [1.0, 2.0]})
fingerprint = ds.map(lambda row: {"y": float((SCALE * row["x"]).sum())}).fingerprint
"""


def _digest(v: object) -> str:
    return hash_bytes(dumps(v))


def test_tensors_by_value() -> None:
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert _digest(t) == _digest(t.clone()) == _digest(torch.tensor([[0.0, 1, 2], [3, 4, 5]]))
    assert _digest(t) != _digest(t + 1)  # values
    assert _digest(t) != _digest(t.reshape(3, 2))  # shape
    assert _digest(t) != _digest(t.double())  # dtype
    assert _digest(t.t()) == _digest(t.t().contiguous())  # layout in memory does not matter
    assert _digest(torch.nn.Parameter(t)) == _digest(torch.nn.Parameter(t.clone()))
    assert _digest(torch.tensor([1.0]).to(torch.bfloat16)) != _digest(torch.tensor([2.0]))


def test_generators_by_state() -> None:
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert _digest(g1) == _digest(g2)
    assert _digest(g1) != _digest(torch.Generator().manual_seed(4))
    torch.rand(2, generator=g2)  # a used generator is in another state
    assert _digest(g1) != _digest(g2)
    assert _digest(np.random.default_rng(3)) == _digest(np.random.default_rng(3))
    assert _digest(np.random.default_rng(3)) != _digest(np.random.default_rng(4))
    assert _digest(np.random.RandomState(3)) != _digest(np.random.RandomState(4))


@pytest.mark.slow  # runs several processes: the slow tier (CI)
def test_same_digests_in_a_new_process(tmp_path: Path) -> None:
    """Values hash alike in this process and in children; so does a map reading a tensor."""
    scope: dict[str, object] = {}
    exec(textwrap.dedent(_VALUES), scope)
    script = textwrap.dedent(_VALUES + _MAP) + "\nprint(' '.join([*digests, fingerprint]))\n"
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONPATH=str(ROOT), ARROWMIX_CACHE=str(tmp_path))
        env["PYTHONHASHSEED"] = seed
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        runs.append(out.stdout.split())
    assert runs[0][:-1] == scope["digests"]
    assert runs[0] == runs[1]
