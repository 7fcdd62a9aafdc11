"""The base protocol: lazy start, JSON states, pickling, context manager."""

from __future__ import annotations

import json
import pickle

import pytest

from arrowmix.exceptions import StateError
from arrowmix.stream import from_iterable


def test_lazy_start_and_state_dict_before_next() -> None:
    s = from_iterable(range(3)).shuffle(2, seed=0)
    state = s.state_dict()
    json.dumps(state)
    assert state["state"]["window"] == 0
    items = list(s)
    s.load_state_dict(state)
    assert list(s) == items


def test_load_none_resets() -> None:
    s = from_iterable(range(3))
    assert list(s) == [0, 1, 2]
    s.load_state_dict(None)
    assert list(s) == [0, 1, 2]


def test_load_rejects_non_checkpoints() -> None:
    s = from_iterable(range(3))
    with pytest.raises(StateError, match="missing keys"):
        s.load_state_dict({"index": 1})
    with pytest.raises(StateError, match="must be a dict"):
        s.load_state_dict([1])  # type: ignore[arg-type]


def test_pickle_does_not_store_buffers() -> None:
    s = from_iterable(list(range(1000))).shuffle(500, seed=0)
    for _ in range(3):
        next(s)
    clone = pickle.loads(pickle.dumps(s))
    assert "_buf" not in clone.__dict__
    assert list(clone) == list(s)


def test_explain_and_fingerprint() -> None:
    a = from_iterable([1, 2]).batch(2)
    expected = (
        "BatchIterator(batch_size=2, drop_last=False) <- [IterableSource(type='list', len=2)]"
    )
    assert a.explain() == expected
    assert a.pipeline_fingerprint() == from_iterable([3, 4]).batch(2).pipeline_fingerprint()
    assert a.pipeline_fingerprint() != from_iterable([3, 4]).batch(3).pipeline_fingerprint()


def test_context_manager_closes() -> None:
    with from_iterable(range(4)).prefetch(2) as s:
        assert next(s) == 0
    assert s.__dict__.get("_worker") is None
