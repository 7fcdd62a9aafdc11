"""The token rules' fast paths choose exactly as the per-item rules, checkpoints included.

``token_runs`` chooses runs of items over read-ahead token counts (a loop over plain ints
for the deterministic rule, verified blocks of draws for the random one), and the mix's
positions path keeps each input's read-ahead between calls. Both are compared, element
for element, with the per-item rules (``most_behind`` + ``charge``, ``draw``) and with the
mix read item by item, on random weights, lengths, stopping rules and schedules.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._stream.mixing import token_ahead
from arrowmix._stream.mixing.by_tokens import charge, draw, most_behind
from arrowmix._stream.mixing.deficits import SCHEDULE_SCALE
from arrowmix._stream.mixing.token_runs import run_draws, run_most_behind
from arrowmix.stream import TableRowSource, WeightSchedule, from_row_source, mix


def _case(rng: np.random.Generator) -> tuple[int, list[list[int]], list[bool], list[int]]:
    k = int(rng.integers(1, 6))
    sizes = []
    for _ in range(k):
        n = int(rng.choice([0, 3, 40, 400]))
        s = rng.integers(0, 80, n)
        s[rng.random(n) < 0.1] = 0  # empty documents
        s[rng.random(n) < 0.05] = 3000  # a few long ones
        sizes.append(s.tolist())
    mask = (rng.random(k) < 0.85).tolist()
    mask[int(rng.integers(k))] = True
    used = [int(rng.integers(0, len(s) // 2 + 1)) for s in sizes]
    return k, sizes, mask, used


@pytest.mark.parametrize("seed", range(6))
def test_deterministic_runs_choose_as_the_per_item_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(60):
        k, sizes, mask, used = _case(rng)
        big = rng.random() < 0.3  # a schedule's units
        ints = rng.integers(1, SCHEDULE_SCALE if big else 12, k).tolist()
        if rng.random() < 0.3:
            ints = [ints[0]] * k  # ties everywhere
        rank = sorted(range(k), key=lambda i: (-ints[i], i))
        cur = (rng.integers(-400, 400, k) * max(ints)).tolist()
        n = int(rng.integers(1, 600))
        want, cur_w, used_w = [], list(cur), list(used)
        for _ in range(n):
            i = most_behind(cur_w, rank, mask)
            if used_w[i] == len(sizes[i]):
                break
            charge(cur_w, ints, mask, i, sizes[i][used_w[i]])
            used_w[i] += 1
            want.append(i)
        cums = [[0, *np.cumsum(s, dtype=np.int64).tolist()] for s in sizes]
        got = run_most_behind(cur, ints, rank, mask, cums, used, n)
        assert (got, cur, used) == (want, cur_w, used_w)


@pytest.mark.parametrize("seed", range(6))
def test_random_blocks_choose_as_the_per_item_rule(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for _ in range(40):
        k, sizes, mask, used = _case(rng)
        weights = rng.random(k) + 0.01
        weights[rng.random(k) < 0.2] = 0.0
        weights = (weights / weights.sum()).tolist() if weights.sum() else [1.0 / k] * k
        if not any(m and w > 0 for m, w in zip(mask, weights, strict=True)):
            mask, weights = [True] * k, [1.0 / k] * k
        counts = rng.choice([0, 1, 7, 900], k).tolist()
        tokens = [c * int(rng.integers(0, 60)) for c in counts]
        us = rng.random(int(rng.integers(1, 2500))).tolist()
        want, tok_w, cnt_w, used_w = [], list(tokens), list(counts), list(used)
        for u in us:
            i = draw(u, weights, mask, tok_w, cnt_w)
            if used_w[i] == len(sizes[i]):
                break
            tok_w[i] += sizes[i][used_w[i]]
            cnt_w[i] += 1
            used_w[i] += 1
            want.append(i)
        arrays = [np.asarray(s, dtype=np.int64) for s in sizes]
        got = run_draws(us, weights, mask, tokens, counts, sizes, used, arrays)
        assert (got, tokens, counts, used) == (want, tok_w, cnt_w, used_w)


# ----------------------------------------------------------- the mix, end to end
def _rows(n: int, mean: int, offset: int, seed: int) -> TableRowSource:
    lengths = np.random.default_rng(seed).integers(0, 2 * mean + 1, n)
    ids = pa.array([[1] * int(x) for x in lengths], pa.list_(pa.int32()))
    t = pa.table({"id": np.arange(offset, offset + n), "input_ids": ids})
    return TableRowSource(t, chunk_rows=16)


def _config(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    tables = [
        _rows(int(rng.integers(5, 120)), int(rng.choice([5, 20, 60])), 1000 * j, seed + j)
        for j in range(k)
    ]
    weights: Any = (rng.random(k) + 0.05).tolist()
    if rng.random() < 0.3:  # a schedule whose weights change every few steps
        first, later = weights, (rng.random(k) + 0.05).tolist()
        weights = WeightSchedule(
            [(0, first), (int(rng.integers(3, 40)), later)], interpolate="linear", every=7
        )
    stopping = str(rng.choice(["shortest", "longest_drop", "longest_cycle"]))
    caps = [int(rng.integers(1, 3)) for _ in range(k)] if rng.random() < 0.3 else None
    return {
        "tables": tables,
        "weights": weights,
        "stopping": stopping,
        "seed": None,
        "max_epochs": caps,
        "batch": int(rng.choice([1, 5, 33, 100])),
    }


def _mix(c: dict[str, Any]) -> Any:
    streams = [
        from_row_source(t, seed=j, shuffle="global", infinite=False)
        for j, t in enumerate(c["tables"])
    ]
    return mix(
        streams,
        c["weights"],
        stopping=c["stopping"],
        seed=c["seed"],
        tokens="input_ids",
        max_epochs=c["max_epochs"],
    )


_SLOW = pytest.mark.slow
CASES = [
    *[(seed, 3) for seed in (2, 3, 4, 5)],
    *[pytest.param(seed, 3, marks=_SLOW) for seed in (0, 1, 6, 7, 8, 9, 12, 13)],
    *[pytest.param(seed, 1024, marks=_SLOW) for seed in range(10)],
]


@pytest.mark.parametrize("rule", ["deterministic", "seeded"])
@pytest.mark.parametrize(("seed", "ahead"), CASES)
def test_the_positions_path_reads_and_checkpoints_as_item_by_item(
    rule: str, seed: int, ahead: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same items, same mix state after every batch, and resumes from those states."""
    monkeypatch.setattr(token_ahead, "_AHEAD", ahead)  # 3: inputs read ahead many times
    c = _config(seed)
    c["seed"] = None if rule == "deterministic" else seed
    ref = _mix(c)
    size = c["batch"]
    items: list[int] = []
    states: dict[int, Any] = {}  # the mix's state after each full batch's worth of items
    for row in ref:
        items.append(int(row["id"]))
        if len(items) % size == 0:
            states[len(items)] = ref.get_state()
    end = ref.get_state()  # where the mix found its end
    m = _mix(c)
    batches = m.batch(size, columnar=True)
    got: list[int] = []
    for i, table in enumerate(batches):
        got += table["id"].to_pylist()
        assert m.get_state() == (states[len(got)] if len(table) == size else end), len(got)
        if i in (1, 4, 17):  # resume a copy from this checkpoint
            copy = _mix(c)
            rest = copy.batch(c["batch"], columnar=True)
            rest.load_state_dict(json.loads(json.dumps(batches.state_dict())))
            tail = [x for t in rest for x in t["id"].to_pylist()]
            assert got + tail == items
    assert got == items
