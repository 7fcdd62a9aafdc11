"""Pipeline identity in checkpoints: functions by value, harmless knobs, clear mismatches."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from arrowmix.exceptions import FingerprintWarning, StateError
from arrowmix.stream import Stream, from_iterable
from tests.stream.helpers import arrow, ident

SCALE = 2


def scaled(x: int) -> int:
    return x * SCALE


def checkpoint(s: Stream[Any], steps: int = 3) -> dict[str, Any]:
    for _ in range(steps):
        next(s)
    state: dict[str, Any] = json.loads(json.dumps(s.state_dict()))
    return state


def test_a_changed_lambda_refuses_the_checkpoint_naming_node_and_field() -> None:
    state = checkpoint(from_iterable(range(20)).map(lambda x: x * 2).shuffle(4, seed=1))
    other = from_iterable(range(20)).map(lambda x: x * 3).shuffle(4, seed=1)
    with pytest.raises(StateError, match=r"node 1 \(MapIterator\) differs in `fn`") as info:
        other.load_state_dict(state)
    assert len(str(info.value)) < 400  # the difference, not two long reprs
    same = from_iterable(range(20)).map(lambda x: x * 2).shuffle(4, seed=1)
    same.load_state_dict(state)  # the same code loads


def test_a_changed_global_of_the_function_refuses_the_checkpoint() -> None:
    global SCALE
    state = checkpoint(from_iterable(range(20)).map(scaled))
    SCALE = 5
    try:
        with pytest.raises(StateError, match=r"`fn` .*code, constants or globals changed"):
            from_iterable(range(20)).map(scaled).load_state_dict(state)
    finally:
        SCALE = 2


def test_a_changed_field_is_named() -> None:
    state = checkpoint(from_iterable(range(20)).shuffle(4, seed=1).batch(3))
    with pytest.raises(StateError, match=r"node 0 \(BatchIterator\) differs in `batch_size` "):
        from_iterable(range(20)).shuffle(4, seed=1).batch(2).load_state_dict(state)
    with pytest.raises(StateError, match="node 1 is another stage in the checkpoint than Map"):
        from_iterable(range(20)).map(ident).batch(3).load_state_dict(state)


def test_another_instance_count_names_the_fix() -> None:
    state = checkpoint(arrow(60, seed=1, num_instances=2, instance_rank=0).map(ident))
    other = arrow(60, seed=1, num_instances=3, instance_rank=0).map(ident)
    with pytest.raises(StateError, match=r"differs in `num_instances` \(here: 3\)"):
        other.load_state_dict(state)
    with pytest.raises(StateError, match=r"merge_states"):
        other.load_state_dict(state)


def test_parallel_map_worker_count_does_not_matter() -> None:
    def build(workers: int) -> Stream[Any]:
        return from_iterable(range(90)).map(scaled, num_workers=workers)

    ref = list(build(1))
    for a, b in [(4, 1), (1, 3), (2, 5)]:
        s = build(a)
        head = [next(s) for _ in range(11)]  # inside the first chunk of a
        state = s.state_dict()
        s.close()
        other = build(b)
        other.load_state_dict(state)
        assert head + list(other) == ref, (a, b)
        other.close()


def test_an_unhashable_function_is_matched_by_name_with_a_warning() -> None:
    lock = threading.Lock()  # cannot be hashed by value

    def locked(x: int) -> int:
        with lock:
            return x

    state = checkpoint(from_iterable(range(10)).map(locked))
    with pytest.warns(FingerprintWarning, match="MapIterator: function .*locked.* name only"):
        from_iterable(range(10)).map(locked).load_state_dict(state)


@pytest.mark.parametrize("labels", [None, "shift"])
def test_a_collator_checkpointed_mid_epoch_loads_into_a_fresh_pipeline(labels: str | None) -> None:
    """The checkpoint of ``map(Collator(...))`` is first taken after batches went through the
    collator (as in training); a fresh process builds a fresh collator and must accept it."""
    import numpy as np

    from arrowmix import Dataset
    from arrowmix.stream import Collator

    ds = Dataset.from_dict({"input_ids": [[i] * (1 + i % 5) for i in range(40)]})

    def build() -> Stream[Any]:
        return (
            ds.to_stream(shuffle=None, infinite=False)
            .batch(4, columnar=True)
            .map(Collator("input_ids", labels=labels))
        )

    trained = build()
    state = checkpoint(trained, steps=3)  # the first state_dict, after three collated batches
    rest = [b["input_ids"] for b in trained]
    fresh = build()
    fresh.load_state_dict(state)
    again = [b["input_ids"] for b in fresh]
    assert len(again) == len(rest) == 7
    assert all(np.array_equal(a, b) for a, b in zip(again, rest, strict=True))


_SUBCLASS_HASHES = """
import json
from arrowmix._fingerprint.hasher import hash_value
from arrowmix.stream import Collator

def once(self, batch):
    return {"n": 1}

def twice(self, batch):
    return {"n": 2}

def scaled(method):  # the same class name, other code
    return type("Scaled", (Collator,), {"from_spans": method})("input_ids")

one, two = scaled(once), scaled(twice)
hash_value(one)  # a first hash imports what the code imports
print(json.dumps([hash_value(one), hash_value(one), hash_value(two),
                  hash_value(Collator("input_ids")), hash_value(Collator("input_ids", pad_id=3))]))
"""


def test_a_collator_subclass_is_identified_by_its_code() -> None:
    """A ``Collator`` is identified by its settings; a user's subclass also by its code, so
    an edited subclass never takes a checkpoint (or a cached map) of the old one.

    Run in a fresh interpreter, as a training script is: the process running the suite holds
    the state of every test before this one (threads, imported modules).
    """
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _SUBCLASS_HASHES], capture_output=True, text=True, check=True
    )
    one, again, two, plain, padded = json.loads(out.stdout)
    assert one == again
    assert one != two
    assert plain != padded
