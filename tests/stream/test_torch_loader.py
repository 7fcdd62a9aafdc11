"""``stream.to_torch().loader()``: the DataLoader made right, and the wrong one refused."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import arrowmix as am
from arrowmix.exceptions import DroppedDataWarning, StateError
from arrowmix.stream import from_iterable

torch = pytest.importorskip("torch")
pytest.importorskip("torchdata")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> am.Dataset:
    path = tmp_path_factory.mktemp("loader") / "chunks"
    rows = ({"ids": list(range(1 + i % 11))} for i in range(1200))
    am.write_chunks(rows, path, rows_per_chunk=300)
    return am.Dataset.from_chunks(str(path))


def pipeline(ds: am.Dataset) -> Any:
    return (
        ds.to_stream(shuffle="global", seed=0, infinite=False)
        .budget_bucket("ids", 64, read_ahead=400, seed=1, remainder="pad")
        .collate("ids", labels="shift", return_tensors="pt")
    )


def test_a_dataloader_left_at_batch_size_1_is_refused_with_the_fix() -> None:
    ds = from_iterable(range(6)).batch(2).prefetch(2).to_torch()
    with pytest.raises(ValueError, match=r"batch_size=None.*loader\(num_workers"):
        next(iter(torch.utils.data.DataLoader(ds)))
    rows = from_iterable(range(6)).to_torch()  # a stream of rows: the DataLoader batches them
    got = [b.tolist() for b in torch.utils.data.DataLoader(rows, batch_size=3)]
    assert got == [[0, 1, 2], [3, 4, 5]]


def test_loader_yields_the_streams_batches_unchanged(corpus: am.Dataset) -> None:
    direct = list(pipeline(corpus))
    got = list(pipeline(corpus).to_torch().loader())
    assert len(got) == len(direct)
    for a, b in zip(got, direct, strict=True):
        assert a["input_ids"].dim() == 2
        assert torch.equal(a["input_ids"], b["input_ids"])
        assert torch.equal(a["labels"], b["labels"])


@pytest.mark.parametrize("name", ["batch_size", "shuffle", "sampler", "batch_sampler"])
def test_loader_refuses_what_the_pipeline_does(name: str) -> None:
    with pytest.raises(TypeError, match=name):
        from_iterable(range(4)).batch(2).to_torch().loader(
            **{name: 4 if name != "shuffle" else True}
        )


@pytest.mark.integration
def test_stats_add_up_over_two_workers(corpus: am.Dataset) -> None:
    loader = pipeline(corpus).to_torch().loader(num_workers=2, stats_every=0.0)
    batches = list(loader)
    stats = loader.pipeline_stats()
    rows = sum(int(b["attention_mask"].shape[0]) for b in batches)
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    slots = sum(b["attention_mask"].numel() for b in batches)
    collate = stats["collate"]
    assert (collate["batches"], collate["rows"]) == (len(batches), rows)
    assert (collate["tokens"], collate["padded_tokens"]) == (tokens, slots)
    assert collate["padding_efficiency"] == pytest.approx(tokens / slots)
    flat = loader.pipeline_stats(flat=True)
    assert flat["collate/tokens"] == tokens


@pytest.mark.integration
def test_resume_needs_the_same_worker_count_and_is_exact(corpus: am.Dataset) -> None:
    whole = [b["input_ids"] for b in pipeline(corpus).to_torch().loader(num_workers=2)]
    first = pipeline(corpus).to_torch().loader(num_workers=2)
    it = iter(first)
    head = [next(it)["input_ids"] for _ in range(7)]
    state = first.state_dict()
    del it
    other = pipeline(corpus).to_torch().loader(num_workers=1)
    with pytest.raises(StateError, match=r"num_workers=2.*num_workers=1"):
        other.load_state_dict(state)
    again = pipeline(corpus).to_torch().loader(num_workers=2)
    again.load_state_dict(state)
    rest = [b["input_ids"] for b in again]
    assert len(head) + len(rest) == len(whole)
    for a, b in zip(head + rest, whole, strict=True):
        assert torch.equal(a, b)


def test_dropped_data_is_warned_once_per_pipeline_not_per_instance(corpus: am.Dataset) -> None:
    def instance(rank: int) -> Any:
        return corpus.to_stream(shuffle="global", seed=0, infinite=False).budget_bucket(
            "ids", 64, read_ahead=100, seed=1, num_instances=2, instance_rank=rank
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rank in (0, 1):
            for _ in instance(rank):
                pass
    dropped = [w for w in caught if issubclass(w.category, DroppedDataWarning)]
    assert len(dropped) == 1
    assert "remainder='pad'" in str(dropped[0].message)
