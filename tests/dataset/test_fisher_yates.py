"""The out-of-core replay of numpy's permutation gives numpy's values, bit for bit.

Budgets are made tiny so that small ``n`` goes through every path: several batches, chains
of writes inside a batch, steps whose ``j`` is their own ``i``, mask boundaries inside a
batch, odd and even counts of 32-bit words consumed, and scratch windows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrowmix._dataset import fisher_yates as fy
from arrowmix._dataset.permutation import permutation


def _emulated(n: int, seed: int) -> np.ndarray:
    """numpy's pass as described: low then high half of each raw draw, masked rejection."""
    bit = np.random.default_rng(seed).bit_generator
    words: list[int] = []

    def next32() -> int:
        if not words:
            raw = int(bit.random_raw())
            words.extend([raw >> 32, raw & 0xFFFFFFFF])
        return words.pop()

    a = list(range(n))
    for i in range(n - 1, 0, -1):
        mask = (1 << i.bit_length()) - 1
        while (j := next32() & mask) > i:
            pass
        a[i], a[j] = a[j], a[i]
    return np.array(a, dtype=np.int64)


@pytest.mark.parametrize("n", [2, 10, 257, 1000])
def test_numpy_permutation_is_the_pass_replayed(n):
    # the facts the replay rests on, checked against the installed numpy
    assert np.array_equal(_emulated(n, 3), np.random.default_rng(3).permutation(n))


def _replayed(n, seed, tmp_path, prefix_rows, batch_rows):
    out = np.full(n, -1, dtype=np.int64)
    fy.replay(n, seed, out, str(tmp_path), prefix_rows=prefix_rows, batch_rows=batch_rows)
    return out


@pytest.mark.parametrize(
    ("n", "prefix_rows", "batch_rows"),
    [
        (1, 1, 1),  # nothing to do
        (2, 1, 1),  # one step, replayed
        (5, 1, 1),  # every step its own batch
        (64, 1, 7),  # batches across every mask boundary down to i = 1
        (300, 16, 300),  # one batch, many chains and own-j steps
        (300, 300, 5),  # all in the prefix: numpy's pass only
        (1025, 31, 64),  # a mask boundary inside batches, the prefix not a power of two
        (4096, 2048, 100),  # the prefix exactly at a mask boundary
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 42])
def test_replay_equals_numpy(n, prefix_rows, batch_rows, seed, tmp_path):
    got = _replayed(n, seed, tmp_path, prefix_rows, batch_rows)
    np.testing.assert_array_equal(got, np.random.default_rng(seed).permutation(n))


def test_scratch_windows_and_odd_word_counts(tmp_path, monkeypatch):
    monkeypatch.setattr(fy, "_WINDOW_ROWS", 64)  # many windows per batch
    odd = set()
    for prefix_rows in (100, 101):  # word counts of both parities at the handover
        draws = fy.Draws(5)
        draws.take(1499, 1500 - prefix_rows)
        odd.add(draws.consumed % 2)
        got = _replayed(1500, 5, tmp_path, prefix_rows, 700)
        np.testing.assert_array_equal(got, np.random.default_rng(5).permutation(1500))
    assert odd == {0, 1}


def test_draws_hand_over_numpys_generator_state():
    # a fresh generator is handed over unchanged
    expected = np.random.default_rng(9).integers(0, 2**31, size=3)
    np.testing.assert_array_equal(fy.Draws(9).generator().integers(0, 2**31, size=3), expected)
    # after 400 steps drawn here, the handed-over generator draws numpy's next steps
    a = np.arange(500)
    np.random.default_rng(9).shuffle(a)
    draws = fy.Draws(9)
    b = np.arange(500)
    for k, j in enumerate(draws.take(499, 400)):
        b[[499 - k, j]] = b[[j, 499 - k]]
    draws.generator().shuffle(b[:100])
    np.testing.assert_array_equal(a, b)


def test_draws_reject_steps_out_of_range():
    with pytest.raises(ValueError, match="not all in"):
        fy.Draws(0).take(3, 4)  # down to step 0
    with pytest.raises(ValueError, match="at most 2\\*\\*32"):
        fy.replay(2**32 + 1, 0, np.empty(0, dtype=np.int64), ".")


@settings(max_examples=5, deadline=None)
@given(
    n=st.integers(2, 600),
    seed=st.integers(0, 2**32),
    prefix=st.integers(1, 600),
    batch=st.integers(1, 600),
)
def test_replay_equals_numpy_for_any_budget(tmp_path_factory, n, seed, prefix, batch):
    tmp = tmp_path_factory.mktemp("fy")
    got = _replayed(n, seed, tmp, prefix, batch)
    np.testing.assert_array_equal(got, np.random.default_rng(seed).permutation(n))


def test_permutation_replays_above_its_threshold(tmp_path, monkeypatch):
    monkeypatch.setattr(fy, "MIN_ROWS", 150_000)
    monkeypatch.setattr(fy, "PREFIX_ROWS", 50_000)
    monkeypatch.setattr(fy, "BATCH_ROWS", 40_000)
    replays = []
    real = fy.replay
    monkeypatch.setattr(fy, "replay", lambda *a, **k: replays.append(a[0]) or real(*a, **k))
    for n in (120_000, 200_000):  # numpy's pass over the mapping, then the replay
        got = permutation(n, 11, str(tmp_path))
        np.testing.assert_array_equal(got, np.random.default_rng(11).permutation(n))
    assert replays == [200_000]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 123456789])
def test_replay_equals_numpy_at_millions_of_rows(seed, tmp_path):
    n = 3_000_017
    got = _replayed(n, seed, tmp_path, 1_000_003, 262_144)
    np.testing.assert_array_equal(got, np.random.default_rng(seed).permutation(n))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 5000),
    seed=st.integers(0, 2**63),
    prefix=st.integers(1, 5000),
    batch=st.integers(1, 5000),
)
def test_replay_equals_numpy_many_budgets(tmp_path_factory, n, seed, prefix, batch):
    tmp = tmp_path_factory.mktemp("fy")
    got = _replayed(n, seed, tmp, prefix, batch)
    np.testing.assert_array_equal(got, np.random.default_rng(seed).permutation(n))
