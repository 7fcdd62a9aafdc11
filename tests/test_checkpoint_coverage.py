"""Every concrete stream class must go through the checkpoint round-trip suite."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import arrowmix._stream as stream_pkg
from arrowmix._stream.base import Stream
from arrowmix._stream.passthrough import PassThrough
from arrowmix._stream.replay import AnchoredStage
from arrowmix.testing import CheckpointRoundTripTests

# Bases that exist only to be subclassed; each concrete subclass is checked instead.
ABSTRACT = {Stream, PassThrough, AnchoredStage}


def concrete_stream_classes() -> set[type]:
    found: set[type] = set()
    for info in pkgutil.iter_modules(stream_pkg.__path__):
        module = importlib.import_module(f"{stream_pkg.__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Stream) and obj.__module__.startswith(stream_pkg.__name__):
                found.add(obj)
    return found - ABSTRACT


def round_trip_classes() -> set[type]:
    here = Path(__file__).parent
    for path in sorted((here / "stream").glob("test_*.py")):
        importlib.import_module(f"tests.stream.{path.stem}")
    todo, seen = list(CheckpointRoundTripTests.__subclasses__()), set()
    while todo:
        cls = todo.pop()
        seen.add(cls)
        todo.extend(cls.__subclasses__())
    return {c.iterator_cls for c in seen}


def test_concrete_classes_are_found() -> None:
    names = {c.__name__ for c in concrete_stream_classes()}
    assert {"ArrowSource", "BufferShuffleIterator", "WeightedMixIterator"} <= names


def test_every_stream_class_has_round_trip_tests() -> None:
    covered = round_trip_classes()
    missing = sorted(c.__qualname__ for c in concrete_stream_classes() if c not in covered)
    assert not missing, f"stream classes without a CheckpointRoundTripTests class: {missing}"
