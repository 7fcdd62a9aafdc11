"""Ready tensors through ``to_torch()``: collated and packed batches in a DataLoader."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from arrowmix.stream import Stream
from tests.stream.tokens.token_helpers import token_source, tokens_of

torch = pytest.importorskip("torch")
pin_memory = pytest.importorskip("torch.utils.data._utils.pin_memory")

pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")


def collated() -> Stream[Any]:
    # 12 batches of 4 documents per window: dealt evenly to 1, 2 or 3 workers
    s = token_source(144).budget_bucket("input_ids", 120, 48, max_batch_size=4, seed=1)
    return s.collate(labels="shift", return_tensors="pt")


def packed() -> Stream[Any]:
    # tail="pad": every token is delivered, however the workers split the windows
    return token_source(144).pack(
        "input_ids", 32, batch_size=2, tail="pad", read_ahead=20, return_tensors="pt"
    )


def load(stream: Stream[Any], workers: int, pin: bool = False) -> list[dict[str, Any]]:
    loader = torch.utils.data.DataLoader(
        stream.to_torch(), batch_size=None, num_workers=workers, pin_memory=pin
    )
    return list(loader)


def token_counts(batches: list[dict[str, Any]]) -> Counter[int]:
    return Counter(t for b in batches for t in tokens_of({k: v.numpy() for k, v in b.items()}))


@pytest.mark.parametrize("make", [collated, packed])
@pytest.mark.parametrize("workers", [0, 2])
def test_loader_hands_over_ready_tensors(make: Any, workers: int) -> None:
    batches = load(make(), workers)
    assert batches
    for b in batches:  # tensors as the stage made them: no collation in the workers
        assert all(isinstance(v, torch.Tensor) and v.dtype == torch.int64 for v in b.values())
        assert all(v.is_contiguous() and v.dim() == 2 for v in b.values())
    # every worker's share together: each token exactly once, as in one process
    assert token_counts(batches) == token_counts(list(make()))


@pytest.mark.parametrize("make", [collated, packed])
def test_batches_take_the_pin_memory_path(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # What DataLoader(pin_memory=True) applies to each batch, with Tensor.pin_memory
    # recorded (CPU torch has no page-locked memory): every tensor of the dict goes through
    # it and the batch keeps its keys.
    pinned: list[Any] = []

    def fake_pin(self: Any, *args: Any, **kwargs: Any) -> Any:
        pinned.append(self)
        return self.clone()

    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    batch = next(iter(make()))
    out = pin_memory.pin_memory(batch)
    assert set(out) == set(batch) and len(pinned) == len(batch)
    for k in batch:
        assert torch.equal(out[k], batch[k])


def test_dataloader_pins_the_tensors() -> None:
    if not torch.accelerator.is_available():
        pytest.skip("no accelerator: this torch cannot page-lock memory (pinning needs one)")
    batches = load(collated(), 2, pin=True)
    assert all(v.is_pinned() for b in batches for v in b.values())
    assert np.array_equal(batches[0]["input_ids"].numpy(), next(iter(collated()))["input_ids"])
