"""The garbage collector paused around bursts of allocations, and always given back."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator

import pytest

from arrowmix._storage.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:  # tests turn it off: give the next test the setting this one found
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_paused_inside_and_back_on_after_nested_sections() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer section is still open
    assert gc.isenabled()


def test_the_collector_is_back_on_after_an_exception() -> None:
    with pytest.raises(ValueError, match="boom"), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def paused_on_another_thread() -> tuple[threading.Thread, threading.Event]:
    """A thread that opens a paused section and holds it until the event is set."""
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            entered.set()
            release.wait(120)  # a timeout only ends a failed test

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(120)
    return t, release


def test_overlapping_sections_on_two_threads_turn_it_on_only_when_the_last_closes() -> None:
    with gc_paused():
        t, release = paused_on_another_thread()
    assert not gc.isenabled()  # the other thread's section is still open
    release.set()
    t.join(120)
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_another_thread_is_paused_has_its_collector_back() -> None:
    t, release = paused_on_another_thread()
    try:
        pid = os.fork()
        if pid == 0:  # the child: the paused thread does not exist here
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        t.join(120)
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_after_the_program_turned_the_collector_off_keeps_it_off() -> None:
    with gc_paused():  # rows built earlier, with the collector on
        pass
    gc.freeze()  # the usual way before forking workers: no pages copied by collections
    gc.disable()
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if not gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        gc.unfreeze()
