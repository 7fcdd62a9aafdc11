"""Unhashable objects: random fingerprint and exactly one warning per transform."""

from __future__ import annotations

import socket
import threading
import warnings
from pathlib import Path

import pytest

from arrowmix._fingerprint.functions import fingerprint_function
from arrowmix._fingerprint.transform import (
    fingerprint_transform,
    transform_record,
    validate_fingerprint,
)
from arrowmix.exceptions import FingerprintWarning

PARENT = "0123456789abcdef"


def _transform(
    fn: object, kwargs: dict[str, object] | None = None
) -> tuple[str, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fp = fingerprint_transform(PARENT, "arrowmix.map", 1, fn, kwargs)  # type: ignore[arg-type]
    return fp, caught


def test_lock_in_globals(load_module) -> None:
    mod = load_module(
        """
        import threading
        lock = threading.Lock()

        def tokenize(batch):
            with lock:
                return batch
        """
    )
    fp1, caught = _transform(mod.tokenize)
    assert len(caught) == 1
    warning = caught[0]
    assert warning.category is FingerprintWarning
    message = str(warning.message)
    assert "tokenize -> globals['lock']" in message
    assert "_thread.lock" in message
    assert "process state" in message  # why
    assert "random fingerprint" in message
    assert warning.filename == __file__  # stacklevel points at the caller
    fp2, _ = _transform(mod.tokenize)
    assert validate_fingerprint(fp1) == fp1
    assert fp1 != fp2  # random: never a false cache hit


def test_generator_in_closure_and_open_file_in_kwargs(tmp_path: Path) -> None:
    gen = (i for i in range(3))

    def take(batch):
        return next(gen)

    with (tmp_path / "f.txt").open("w") as handle:
        _, caught = _transform(take, {"fn_kwargs": {"out": handle}})
    assert len(caught) == 1  # two culprits, still one warning
    message = str(caught[0].message)
    assert "closure['gen']" in message
    assert "generator" in message
    assert "kwargs['fn_kwargs']" in message
    assert "TextIOWrapper" in message


def test_socket_and_nested_lock_inside_an_instance(load_module) -> None:
    mod = load_module(
        """
        import threading

        class Cache:
            def __init__(self):
                self.data = {"a": [1, 2]}
                self.guard = {"lock": threading.RLock()}

        CACHE = Cache()

        def lookup(key):
            return CACHE.data[key]
        """
    )
    _, caught = _transform(mod.lookup)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "lookup -> globals['CACHE']" in message
    assert "RLock" in message
    sock = socket.socket()
    try:
        _, caught = _transform(lambda x: (x, sock))
    finally:
        sock.close()
    assert len(caught) == 1
    assert "socket" in str(caught[0].message)


def test_warning_can_be_turned_into_an_error() -> None:
    lock = threading.Lock()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FingerprintWarning)
        with pytest.raises(FingerprintWarning, match=r"closure\['lock'\]"):
            fingerprint_transform(PARENT, "arrowmix.map", 1, lambda x: (x, lock))


def test_fingerprint_function_warns_once_too() -> None:
    lock = threading.Lock()

    def f(x):
        return x, lock

    with pytest.warns(FingerprintWarning) as record:
        a = fingerprint_function(f)
    assert len(record) == 1
    assert "f -> closure['lock']" in str(record[0].message)
    with pytest.warns(FingerprintWarning):
        assert a != fingerprint_function(f)


def test_record_lists_the_culprits() -> None:
    lock = threading.Lock()
    with pytest.warns(FingerprintWarning):
        record = transform_record(PARENT, "arrowmix.map", 1, lambda x: (x, lock))
    assert [p["path"] for p in record.unhashable] == [
        "test_record_lists_the_culprits.<locals>.<lambda> -> closure['lock']"
    ]
    assert "_thread.lock" in record.unhashable[0]["object"]


@pytest.mark.parametrize(
    ("make", "type_name"),
    [
        (
            lambda: __import__("multiprocessing").Lock(),
            "multiprocessing.synchronize.Lock",
        ),
        # A Queue's first unhashable attribute (in its __dict__ order) is its mutex.
        (lambda: __import__("queue").Queue(), "_thread.lock"),
        (threading.Event, "threading.Event"),
        (lambda: (x for x in range(3)), "generator"),
    ],
)
def test_process_state_objects(make, type_name: str) -> None:
    obj = make()
    fp1, caught = _transform(lambda x: (x, obj))
    assert len(caught) == 1
    assert caught[0].category is FingerprintWarning
    assert type_name in str(caught[0].message)
    assert "closure['obj']" in str(caught[0].message)
    fp2, _ = _transform(lambda x: (x, obj))
    assert fp1 != fp2
