"""The deterministic pickler and the hasher's canonical encodings."""

from __future__ import annotations

import collections
import dataclasses
import enum
import re
import threading

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._fingerprint.hasher import BIG_CONTAINER, hash_value
from arrowmix._fingerprint.pickler import UnhashableError, dumps


def test_set_order_does_not_matter_dict_order_does() -> None:
    assert dumps({3, 1, 2}) == dumps({2, 3, 1})
    assert dumps(frozenset({"x", "y"})) == dumps(frozenset({"y", "x"}))
    assert dumps({"a": {(1, 2), (3, 4)}}) == dumps({"a": {(3, 4), (1, 2)}})
    assert dumps({"b": 1, "a": 2}) == dumps(dict(zip("ba", (1, 2), strict=True)))
    # Dicts iterate in insertion order: it is part of their value.
    assert dumps({"b": 1, "a": 2}) != dumps({"a": 2, "b": 1})
    assert dumps({1: "x", "k": (1, 2)}) != dumps({"k": (1, 2), 1: "x"})
    assert hash_value({"b": 1, "a": 2}) != hash_value({"a": 2, "b": 1})
    big = {f"w{i}": i for i in range(BIG_CONTAINER)}
    assert hash_value(big) != hash_value(dict(reversed(big.items())))
    assert dumps(big) != dumps(dict(reversed(big.items())))


def test_numpy_scalars_hash_with_their_dtype() -> None:
    values = [2, np.int64(2), np.int32(2), np.uint8(2), np.float64(2), np.float32(2), 2.0]
    assert len({hash_value(v) for v in values}) == len(values)
    assert len({dumps(v) for v in values}) == len(values)
    assert hash_value(np.int64(2)) == hash_value(np.int64(2))
    assert hash_value(np.bool_(True)) != hash_value(True)
    assert hash_value([np.int32(1)]) != hash_value([np.int64(1)])


def test_values_and_types_matter() -> None:
    assert dumps({"a": 1}) != dumps({"a": 2})
    assert dumps({1, 2}) != dumps(frozenset({1, 2}))
    assert dumps([1, 2]) != dumps((1, 2))
    assert dumps(collections.OrderedDict(a=1, b=2)) != dumps(
        collections.OrderedDict(b=2, a=1)
    )  # order is part of an OrderedDict's value
    d1: collections.defaultdict[str, list[int]] = collections.defaultdict(list, b=[1], a=[])
    d2: collections.defaultdict[str, list[int]] = collections.defaultdict(list, b=[1], a=[])
    assert dumps(d1) == dumps(d2)
    assert dumps(d1) != dumps(dict(d1))


def test_identity_of_equal_strings_does_not_matter() -> None:
    shared = "".join(["to", "ken"])
    same = [shared, shared]
    distinct = ["".join(["to", "ken"]), "".join(["tok", "en"])]
    assert same[0] is same[1]
    assert distinct[0] is not distinct[1]
    assert dumps(same) == dumps(distinct)


def test_cycles_terminate_deterministically() -> None:
    a: dict[str, object] = {"x": 1}
    a["self"] = a
    b: dict[str, object] = {"x": 1}
    b["self"] = b
    assert dumps(a) == dumps(b)
    lst: list[object] = [1]
    lst.append(lst)
    assert dumps(lst) == dumps(lst)


def test_classes_enums_dataclasses_and_patterns() -> None:
    @dataclasses.dataclass
    class Cfg:
        n: int
        tags: set[str] = dataclasses.field(default_factory=set)

    class Color(enum.Enum):
        RED = 1
        BLUE = 2

    assert dumps(Cfg(1, {"a", "b"})) == dumps(Cfg(1, {"b", "a"}))
    assert dumps(Cfg(1)) != dumps(Cfg(2))
    assert dumps(Color.RED) != dumps(Color.BLUE)
    assert dumps(re.compile("a+")) != dumps(re.compile("a*"))


def test_arrays_are_hashed_by_content_not_pickled() -> None:
    big = np.arange(2_000_000, dtype=np.int64)
    assert len(dumps(big)) < 200  # a digest, not 16 MB of pickle
    assert dumps(big) == dumps(big.copy())
    assert dumps(np.arange(3)) != dumps(np.arange(3).astype(np.int32))
    chunked = pa.chunked_array([[1, 2], [3]])
    assert dumps({"t": chunked}) == dumps({"t": pa.chunked_array([[1, 2, 3]])})


def test_unhashable_types_raise_with_the_culprit() -> None:
    with pytest.raises(UnhashableError) as info:
        dumps({"cfg": {"nested": [1, threading.Lock()]}}, path="fn -> globals['cfg']")
    err = info.value
    assert err.culprit_name == "_thread.lock"
    assert "fn -> globals['cfg']" in str(err)
    with pytest.raises(UnhashableError, match="generator"):
        dumps(x for x in range(2))


@pytest.mark.parametrize(
    "make",
    [
        lambda n: [f"w{i}" for i in range(n)],
        lambda n: list(range(n)),
        lambda n: [i / 3 for i in range(n)],
        lambda n: {f"w{i}": i for i in range(n)},
        lambda n: {f"w{i}": f"v{i}" for i in range(n)},
        lambda n: {f"w{i}" for i in range(n)},
        lambda n: tuple(range(n)),
    ],
)
def test_big_container_fast_path_is_canonical(make) -> None:
    n = BIG_CONTAINER * 3
    value = make(n)
    assert hash_value(value) == hash_value(make(n))
    assert dumps(value) == dumps(make(n))
    if isinstance(value, dict):
        assert hash_value(value) == hash_value(dict(value.items()))
        assert hash_value(value) != hash_value(dict(reversed(list(value.items()))))
        changed = dict(value)
        changed["w7"] = changed["w8"]
        assert hash_value(changed) != hash_value(value)


def test_big_container_fast_path_keeps_types_apart() -> None:
    n = BIG_CONTAINER
    ints = list(range(n))
    assert hash_value(ints) != hash_value([float(i) for i in ints])
    assert hash_value(ints) != hash_value(tuple(ints))
    assert hash_value([True] * n) != hash_value([1] * n)
    mixed = [*ints[:-1], 1.5]
    assert hash_value(mixed) != hash_value([*ints[:-1], 1])
    huge = [2**70 + i for i in range(n)]  # beyond int64: generic path
    assert hash_value(huge) != hash_value([2**70 + i + 1 for i in range(n)])
    small = {"a": 1}
    assert hash_value(small) != hash_value({"a": 1.0})


def test_nested_big_containers_keep_types_and_lengths_apart() -> None:
    n = BIG_CONTAINER
    lists = [[i, i + 1] for i in range(n)]
    assert hash_value(lists) == hash_value([[i, i + 1] for i in range(n)])
    assert hash_value(lists) != hash_value([(i, i + 1) for i in range(n)])
    assert hash_value(lists) != hash_value([[float(i), i + 1.0] for i in range(n)])
    # same flat values, different split into rows
    regrouped = [[0, 1, 1], *[[i, i + 1] for i in range(1, n - 1)], [n - 1, n, n - 1]]
    regrouped[1] = [2]
    assert hash_value(lists) != hash_value(regrouped)
    vocab = {f"w{i}": [i, i * 2] for i in range(n)}
    assert hash_value(vocab) == hash_value(dict(vocab.items()))
    assert hash_value(vocab) != hash_value(dict(reversed(list(vocab.items()))))
    assert hash_value(vocab) != hash_value({**vocab, "w3": [3, 7]})
    assert hash_value([[] for _ in range(n)]) != hash_value([[[]] for _ in range(n)])


def test_big_dict_with_tuple_keys() -> None:
    merges = {(f"a{i}", f"b{i % 7}"): i for i in range(BIG_CONTAINER * 2)}
    assert hash_value(merges) != hash_value(dict(reversed(list(merges.items()))))
    assert hash_value(merges) != hash_value({**merges, ("a3", "b3"): -1})
    copy = dict(merges)
    assert dumps(merges) == dumps(copy)


def test_immutable_digest_cache_never_hides_a_mutation() -> None:
    rows = tuple([i] for i in range(BIG_CONTAINER))  # a tuple of *mutable* lists
    before = dumps(rows)
    rows[3].append(1)
    assert dumps(rows) != before
    frozen = frozenset(range(BIG_CONTAINER))
    assert hash_value(frozen) == hash_value(frozenset(range(BIG_CONTAINER)))
    assert dumps(frozen) == dumps(frozen)


def test_a_ctypes_function_is_hashed_by_name_and_signature_not_address() -> None:
    """A function calling libc through ctypes keeps its fingerprint in every process, and
    a call to another C function (or with another signature) changes it."""
    import ctypes
    import ctypes.util

    def loaded(name: str, argtypes: list[object]) -> object:
        f = getattr(ctypes.CDLL(ctypes.util.find_library("c")), name)
        f.argtypes = argtypes
        return f

    one = loaded("strlen", [ctypes.c_char_p])
    again = loaded("strlen", [ctypes.c_char_p])  # another CDLL object: another address
    assert one is not again
    assert hash_value(one) == hash_value(again)
    assert hash_value(one) != hash_value(loaded("abs", [ctypes.c_char_p]))
    assert hash_value(one) != hash_value(loaded("strlen", [ctypes.c_void_p]))
