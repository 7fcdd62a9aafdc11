"""Handing batches to torch: every batch arrives, and a checkpoint is never silently empty."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix
from arrowmix.stream import Stream, from_chunks

torch = pytest.importorskip("torch")

N_DOCS = 348  # 87 batches of 4


def _dataset() -> arrowmix.Dataset:
    docs = [list(range(100 * k, 100 * k + 1 + k % 17)) for k in range(N_DOCS)]
    return arrowmix.Dataset.from_arrow(
        pa.table({"input_ids": pa.array(docs, pa.list_(pa.int32()))})
    )


def _as_lists(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: np.asarray(v).tolist() for k, v in b.items()} for b in batches]


@pytest.mark.parametrize("stage", ["collate", "pack"])
def test_prefetch_processes_delivers_every_torch_batch(stage: str) -> None:
    ds = _dataset()

    def build() -> Stream[dict[str, Any]]:
        s = ds.to_stream(shuffle=None, infinite=False)
        if stage == "collate":
            return s.batch(4, columnar=True).collate(return_tensors="pt")
        return s.pack("input_ids", 32, batch_size=2, tail="pad", return_tensors="pt")

    want = _as_lists(list(build()))
    with build().prefetch(8, processes=True) as s:
        got = list(s)
    assert all(isinstance(v, torch.Tensor) for b in got for v in b.values())
    assert _as_lists(got) == want, f"{len(got)} of {len(want)} batches arrived"


def _chunk(i: int) -> list[int]:
    return [10 * i + k for k in range(5)]


def _pipeline() -> Stream[list[int]]:
    return from_chunks(list(range(8)), _chunk, seed=0, infinite=False).batch(2)


def test_plain_dataloader_with_workers_never_checkpoints_silently_empty() -> None:
    """A plain DataLoader keeps the progress in its workers: state_dict() says so, or resumes."""
    ds = _pipeline().to_torch()
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    it = iter(loader)
    head = [next(it) for _ in range(4)]
    msg = ""
    try:
        state = ds.state_dict()
    except Exception as exc:  # noqa: BLE001 - any clear error will do
        msg = str(exc)
    del it
    if msg:
        assert "StatefulDataLoader" in msg and "to_torch" in msg, msg
        return
    assert state.get("stream") is not None, f"state_dict() returned {state}"
    fresh = _pipeline().to_torch()
    fresh.load_state_dict(state)
    rest = list(torch.utils.data.DataLoader(fresh, batch_size=None, num_workers=2))
    every = sorted(
        x for b in torch.utils.data.DataLoader(_pipeline().to_torch(), batch_size=None) for x in b
    )
    assert sorted(x for b in head + rest for x in b) == every


def test_single_process_dataloader_checkpoints_and_resumes() -> None:
    ds = _pipeline().to_torch()
    it = iter(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
    head = [next(it) for _ in range(3)]
    state = ds.state_dict()
    fresh = _pipeline().to_torch()
    fresh.load_state_dict(state)
    rest = list(torch.utils.data.DataLoader(fresh, batch_size=None, num_workers=0))
    assert [list(map(int, b)) for b in head + rest] == list(_pipeline())


def _tensor_or_fail_at_5(i: int) -> Any:
    if i == 5:
        raise ValueError("batch 5 is broken")
    return {"x": torch.full((64, 64), i)}


def test_prefetch_processes_error_after_torch_batches_is_the_documented_runtime_error() -> None:
    from arrowmix.stream import from_iterable

    s = from_iterable(range(40)).map(_tensor_or_fail_at_5).prefetch(8, processes=True)
    with s:
        got = [int(next(s)["x"][0, 0]) for _ in range(5)]
        with pytest.raises(RuntimeError, match="_tensor_or_fail_at_5") as info:
            next(s)
        rest = [int(b["x"][0, 0]) for b in s]  # goes on after the failing item
    assert got == [0, 1, 2, 3, 4]
    assert "batch 5 is broken" in str(info.value.__cause__)
    assert rest == list(range(6, 40))
