"""Known hashes, pinned so that an accidental change of an encoding fails a test.

Pickle bytes depend on the dill minor version and bytecode on the Python minor version,
so pins are keyed by both. On another combination the dill/bytecode pins are skipped
with a message; print the values to pin with
``python tests/fingerprint/test_pinned.py``.
A deliberate encoding change must update these pins (and say so in the changelog: every
user's cache is invalidated).
"""

from __future__ import annotations

import re
import sys
import types

import dill
import pytest

from arrowmix._fingerprint.functions import fingerprint_function
from arrowmix._fingerprint.hasher import hash_bytes, hash_value
from arrowmix._fingerprint.pickler import dumps
from arrowmix._fingerprint.record import build_record

DILL_MINOR = ".".join(dill.__version__.split(".")[:2])
PY_MINOR = f"{sys.version_info[0]}.{sys.version_info[1]}"

# Hasher encodings (no dill involved): independent of versions.
PLAIN_VALUE = {"a": [1, 2.5, None, True], "b": {3, 4}, "c": ("x", b"y"), 5: range(3)}
PLAIN_PIN = "c71b91e2efbfd70d"

PINS: dict[tuple[str, str], dict[str, str]] = {
    ("0.4", "3.11"): {
        "pickled": "d7409e01d86f90b9",
        "function": "29e8e97160f35739",
        "transform": "8ffb66acb727871d",
    },
}

FUNCTION_SRC = """
SCALE = 3
def helper(x):
    return x * SCALE
def fn(batch, k=2):
    return {"y": [helper(v) + k for v in batch["x"]]}
"""


def _function() -> types.FunctionType:
    module = types.ModuleType("pinned_user_module")
    exec(compile(FUNCTION_SRC, "<pinned>", "exec"), module.__dict__)
    return module.fn  # type: ignore[no-any-return]


def current() -> dict[str, str]:
    """The values to pin for this dill / Python combination."""
    record = build_record("0123456789abcdef", "arrowmix.map", 1, _function(), {"batched": True}, {})
    return {
        "pickled": hash_bytes(dumps(("x", 1, frozenset({1, 2}), re.compile("a+"), 1j))),
        "function": fingerprint_function(_function()),
        "transform": record.fingerprint,
    }


def test_plain_value_pin() -> None:
    assert hash_value(PLAIN_VALUE) == PLAIN_PIN


@pytest.mark.parametrize("name", ["pickled", "function", "transform"])
def test_versioned_pins(name: str) -> None:
    pins = PINS.get((DILL_MINOR, PY_MINOR))
    if pins is None:
        pytest.skip(
            f"no pinned hashes for dill {DILL_MINOR} / Python {PY_MINOR}: run "
            "`python tests/fingerprint/test_pinned.py` and add them to PINS"
        )
    assert current()[name] == pins[name]


if __name__ == "__main__":
    print(f"dill {DILL_MINOR} / Python {PY_MINOR}: {current()}")
    print(f"plain: {hash_value(PLAIN_VALUE)}")
