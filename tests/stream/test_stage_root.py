"""The root is a wrapper: run state lives in one object; stage hooks are declared."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pyarrow as pa

from arrowmix._stream.root import PipelineRoot, root_of
from arrowmix._stream.topology import walk
from arrowmix.stream import (
    ElasticRole,
    StageHooks,
    Stream,
    TableRowSource,
    from_iterable,
    from_row_source,
    merge_states,
)

_RUN_ATTRS = ("_epoch_set", "_elastic", "_pending", "_pending_elastic", "_identity_cache")


def double(x: int) -> int:
    return 2 * x


def _sharded(n: int, r: int) -> Stream[Any]:
    rows = TableRowSource(pa.table({"x": list(range(24))}), chunk_rows=4)
    src = from_row_source(rows, seed=1, infinite=False, num_instances=n, instance_rank=r)
    return src.shuffle(4, seed=2)


def test_run_state_lives_in_the_root_and_no_stage_is_one() -> None:
    s = from_iterable(range(10)).shuffle(4, seed=0).map(double)
    s.set_epoch(2)
    next(s)
    assert not isinstance(s, PipelineRoot) and not issubclass(Stream, PipelineRoot)
    assert root_of(s).epoch == s.chosen_epoch == 2 and s.state_dict()["epoch"] == 2
    for node in walk(s):
        assert not set(_RUN_ATTRS) & set(vars(node)), type(node).__name__
    old = [_sharded(2, r) for r in range(2)]
    seen = [next(o)["x"] for o in old for _ in range(3)]
    new = _sharded(1, 0)
    new.load_state_dict(merge_states([o.state_dict() for o in old]))
    assert root_of(new).elastic is not None
    assert sorted(seen + [row["x"] for row in new]) == list(range(24))


def test_an_inner_stage_pickled_alone_resumes_where_it_stood() -> None:
    s = from_iterable(range(10)).map(double).batch(3)
    assert next(s) == [0, 2, 4]
    inner = pickle.loads(pickle.dumps(s.source))
    assert list(inner) == [6, 8, 10, 12, 14, 16, 18]
    copied = copy.deepcopy(s)
    assert root_of(copied).stage is copied
    assert list(copied) == [[6, 8, 10], [12, 14, 16], [18]]
    assert next(s) == [6, 8, 10]


class Pair(Stream[tuple[Any, Any]]):
    """Two named inputs, item by item; counts its pairs (hooks, no getattr lookup)."""

    ELASTIC_ROLE = ElasticRole.REFUSING
    ELASTIC_REFUSAL = "it pairs its inputs"
    STATE_KEYS = ("left", "right")

    def __init__(self, left: Stream[Any], right: Stream[Any]) -> None:
        super().__init__()
        self.left, self.right = left, right
        self.pairs = 0

    def reset(self, state: dict[str, Any] | None = None) -> None:
        super().reset(state)
        self.left.reset(None if state is None else state["left"])
        self.right.reset(None if state is None else state["right"])

    def get_state(self) -> dict[str, Any]:
        return {"left": self.left.get_state(), "right": self.right.get_state()}

    def next(self) -> tuple[Any, Any]:
        self.pairs += 1
        return self.left.next(), self.right.next()

    def child_names(self) -> list[str] | None:
        return ["web", "code"]

    def stats(self) -> dict[str, Any] | None:
        return {"pairs": self.pairs}


def test_a_user_stage_hooks_are_declared_and_called() -> None:
    assert StageHooks in Pair.__mro__
    s = Pair(from_iterable(range(4)).batch(2), from_iterable("abcd").batch(2))
    assert list(s) == [([0, 1], ["a", "b"]), ([2, 3], ["c", "d"])]
    stats = s.pipeline_stats()
    assert set(stats) == {"Pair", "Pair/web:batch", "Pair/code:batch"}
    assert stats["Pair"] == {"pairs": 3}  # the third call found the end
    assert stats["Pair/code:batch"]["rows"] == 4
    assert s.sharding is None and s.schedule_step() is None
