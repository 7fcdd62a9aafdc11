"""torch.compile'd functions and modules are fingerprinted by what they wrap, so maps reuse."""

from __future__ import annotations

import warnings

import pytest

import arrowmix as am
from arrowmix._fingerprint.functions import fingerprint_function

torch = pytest.importorskip("torch")


# The CI tier (ARROWMIX_TEST_SLOW=1 scripts/test): the first torch.compile of a process takes
# half a minute.
pytestmark = pytest.mark.slow


def _compile(obj):
    with warnings.catch_warnings():  # torch's own deprecation warnings while importing inductor
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.compile(obj)


def double(batch):
    return {"y": [2 * v for v in batch["x"]]}


def triple(batch):
    return {"y": [3 * v for v in batch["x"]]}


def test_compiled_function_hashes_as_its_function():
    compiled = _compile(double)
    assert fingerprint_function(compiled) == fingerprint_function(_compile(double))
    assert fingerprint_function(compiled) != fingerprint_function(_compile(triple))
    assert fingerprint_function(compiled) == fingerprint_function(double)  # as HF hashes it


def test_compiled_module_hashes_as_its_module():
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 2)
    assert fingerprint_function(_compile(lin)) == fingerprint_function(_compile(lin))
    other = torch.nn.Linear(2, 2)  # other weights
    assert fingerprint_function(_compile(lin)) != fingerprint_function(_compile(other))


def test_map_with_a_compiled_function_is_reused(tmp_path):
    ds = am.Dataset.from_dict({"x": list(range(10))})
    first = ds.map(_compile(double), batched=True)
    again = ds.map(_compile(double), batched=True)
    assert first.fingerprint == again.fingerprint
    assert again.cache_files == first.cache_files
    assert again["y"] == [2 * v for v in range(10)]
    assert ds.map(double, batched=True).cache_files == first.cache_files
