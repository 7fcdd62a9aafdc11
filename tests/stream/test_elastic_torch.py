"""Elastic resume across real torch.distributed ranks and DataLoader workers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arrowmix._stream.topology import split
from arrowmix.integrations.torch import worker_stream_states
from tests.stream import dist_elastic_worker as worker

torch = pytest.importorskip("torch")
pytest.importorskip("torchdata")

pytestmark = [
    pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),  # 2 cores
]

SCRIPT = Path(worker.__file__).resolve()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.integration
# The CI tier (ARROWMIX_TEST_SLOW=1 scripts/test): DataLoader workers; the fast tier resumes
# elastically in tests/stream/test_elastic.py.
@pytest.mark.slow
def test_two_ranks_two_workers_resume_on_three_workers(tmp_path: Path) -> None:
    out = tmp_path / "ckpt.json"
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), str(rank), "2", "5", str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for rank in range(2)
    ]
    logs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    ckpt = json.loads(out.read_text())
    assert len(ckpt["merged"]["merged"]) == 4  # 2 ranks x 2 workers
    assert len(ckpt["seen"]) > 0
    # A new "cluster": one process, three DataLoader workers.
    ds = worker.build().to_torch()
    ds.load_state_dict({"stream": ckpt["merged"]})
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3, collate_fn=lambda x: x)
    rest = [i for batch in dl for i in batch]
    assert sorted(ckpt["seen"] + rest) == list(range(worker.ROWS))


def test_in_process_workers_any_split() -> None:
    # The same path without processes: old 3 instances, new 5 (topology.split).
    def instance(parts: int, index: int) -> Any:
        s = worker.build()
        split(s, [(1, 0)], parts, index)
        return s

    old = [instance(3, k) for k in range(3)]
    seen = [i for s in old for _ in range(4) for i in next(s)]
    from arrowmix.stream import merge_states

    merged = merge_states([s.state_dict() for s in old])
    rest = []
    for j in range(5):
        s = instance(5, j)
        s.load_state_dict(merged)
        rest += [i for batch in s for i in batch]
    assert sorted(seen + rest) == list(range(worker.ROWS))


def test_worker_stream_states_without_workers() -> None:
    from torchdata.stateful_dataloader import StatefulDataLoader

    dl = StatefulDataLoader(worker.build().to_torch(), batch_size=None, num_workers=0)
    it = iter(dl)
    next(it)
    (state,) = worker_stream_states(dl.state_dict())
    assert set(state) == {"format", "pipeline", "state", "nodes"}
    with pytest.raises(ValueError, match="no arrowmix stream state"):
        worker_stream_states({"fetcher_state": None, "dataset_state": None})
