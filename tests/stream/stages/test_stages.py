"""Per-item stages, batching, windows, parallel map, limit and collate."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from arrowmix.stream import from_iterable, pad_batch


def test_map_filter_flat_map() -> None:
    s = from_iterable(range(10)).map(lambda x: x * 3).filter(lambda x: x % 2 == 0)
    assert list(s.flat_map(lambda x: [x, -x])) == [v for x in range(0, 30, 6) for v in (x, -x)]


def test_batch_and_drop_last() -> None:
    assert list(from_iterable(range(7)).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(from_iterable(range(7)).batch(3, drop_last=True)) == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    with pytest.raises(ValueError, match="batch_size"):
        from_iterable([]).batch(0)


def test_window_slides() -> None:
    assert list(from_iterable("abcd").window(3)) == [("a", "b", "c"), ("b", "c", "d")]
    assert list(from_iterable("ab").window(3)) == []
    with pytest.raises(ValueError, match="width"):
        from_iterable("ab").window(0)


def test_take_limits() -> None:
    assert list(from_iterable(range(100)).take(3)) == [0, 1, 2]


def test_parallel_map_keeps_order_and_uses_threads() -> None:
    seen: set[str] = set()

    def slow(x: int) -> int:
        seen.add(threading.current_thread().name)
        time.sleep(0.001 * (x % 3))
        return x * x

    with from_iterable(range(100)).map(slow, num_workers=4) as s:
        assert list(s) == [x * x for x in range(100)]
    assert len(seen) > 1
    with pytest.raises(ValueError, match="num_workers"):
        from_iterable([]).map(slow, num_workers=0)


def test_parallel_map_propagates_errors() -> None:
    def boom(x: int) -> int:
        if x == 5:
            raise KeyError("bad row")
        return x

    s = from_iterable(range(10)).map(boom, num_workers=2)
    with pytest.raises(KeyError, match="bad row"):
        list(s)
    s.close()


def test_pad_batch() -> None:
    out = pad_batch([[1, 2, 3], [4], []], pad_id=9)
    assert out.dtype == np.int64
    assert out.tolist() == [[1, 2, 3], [4, 9, 9], [9, 9, 9]]
    assert pad_batch([[1, 2, 3]], max_length=2).tolist() == [[1, 2]]
    assert pad_batch([]).shape == (0, 0)


def test_functions_must_be_callable() -> None:
    s = from_iterable([1])
    for stage in (s.map, s.filter, s.flat_map):
        with pytest.raises(TypeError, match="`fn` must be callable"):
            stage(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`fn` must be callable"):
        s.map(3, num_workers=2)  # type: ignore[arg-type]


def test_from_iterable_reads_a_one_shot_iterator_lazily() -> None:
    import itertools

    s = from_iterable(itertools.count())  # returned at once: nothing is read ahead
    assert [next(s) for _ in range(5)] == [0, 1, 2, 3, 4]
    state = s.state_dict()
    assert [next(s) for _ in range(3)] == [5, 6, 7]
    s.load_state_dict(state)  # replays the remembered items, then reads on
    assert [next(s) for _ in range(5)] == [5, 6, 7, 8, 9]
    s.load_state_dict(None)
    assert next(s) == 0

    gen = (x * x for x in range(4))
    g = from_iterable(gen)
    assert list(g) == [0, 1, 4, 9]
    g.load_state_dict(None)
    assert list(g) == [0, 1, 4, 9]
