"""Checkpoints and pipeline fingerprints pinned on main d1e9def (before the stream reshape).

``pins_d1e9def.json`` holds, per pipeline, the ``state_dict()`` JSON taken after three
items and digests of the items before and after it. A refactor of the stream layer must
reproduce them byte for byte, and a checkpoint written by d1e9def must resume the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from arrowmix.exceptions import StateError
from arrowmix.stream import from_iterable, from_row_source, mix
from arrowmix.stream import zip as szip
from tests.stream.helpers import arrow, double, ident, is_even, n_tokens, rows
from tests.stream.tokens.token_helpers import token_rows

PINS = json.loads((Path(__file__).parent / "pins_d1e9def.json").read_text())
#: Pipelines whose output or state changed on purpose since d1e9def, and why.
CHANGED = {
    "pack_concat": "concat packing no longer drops each read-ahead window's tail: a "
    "window's unfinished row continues in the next, and the state records where the "
    "first token not yielded lies",
}
KEPT = sorted(set(PINS) - set(CHANGED))


def twice(x: int) -> list[int]:
    return [x, x]


def tok(**kw: Any) -> Any:
    kw.setdefault("infinite", False)
    return from_row_source(token_rows(), seed=3, **kw)


def pipelines() -> dict[str, Any]:
    return {
        "rows_shuffle_batch": lambda: (
            from_row_source(rows(100), shuffle="global", seed=1, infinite=False)
            .shuffle(16, seed=2)
            .batch(5)
        ),
        "columnar_collate": lambda: (
            tok().shuffle(8, seed=1).batch(4, columnar=True).collate(pad_id=-1, keep=["id"])
        ),
        "bucket_columnar": lambda: (
            tok().bucket("input_ids", 4, 20, seed=5, columnar=True).collate()
        ),
        "bucket_rows": lambda: arrow(100, seed=1).bucket("n_tokens", 3, 12, seed=2),
        "budget_collate": lambda: (
            tok().budget_bucket("input_ids", 90, 24, seed=4).collate(labels="shift")
        ),
        "budget_rows": lambda: arrow(100, seed=1).budget_bucket(n_tokens, 600, 20, seed=4),
        "mix_positions": lambda: (
            mix(
                [tok(), from_row_source(token_rows(40, seed=1), seed=2, infinite=False)],
                [0.7, 0.3],
                seed=9,
            )
            .batch(3, columnar=True)
            .collate()
        ),
        "mix_rows": lambda: mix(
            [arrow(50, seed=1), arrow(30, seed=2)], [1, 2], seed=7, stopping="longest_cycle"
        ).map(ident),
        "mix_cycle_shuffle": lambda: (
            mix(
                [tok(), from_row_source(token_rows(25, seed=1), seed=2, infinite=False)],
                [1, 1],
                seed=9,
                stopping="longest_cycle",
            )
            .shuffle(11, seed=4)
            .batch(5, columnar=True)
        ),
        "mix_bulk": lambda: (
            mix([arrow(3000, seed=1), arrow(2000, seed=2)], [2, 1], seed=5)
            .shuffle(64, seed=1)
            .batch(100, columnar=True)
        ),
        "zip": lambda: szip([from_iterable(range(20)), from_iterable(range(5, 30))]),
        "pack_concat": lambda: tok().pack("input_ids", 16, batch_size=2, separator=0),
        "pack_bestfit": lambda: (
            tok().shuffle(10, seed=1).pack("input_ids", 32, strategy="best_fit", read_ahead=20)
        ),
        "map_filter_window": lambda: (
            from_iterable(range(40)).map(double).filter(is_even).window(3).take(9)
        ),
        "prefetch": lambda: arrow(60, seed=1).map(ident).prefetch(4),
        "flat_shuffle": lambda: from_iterable(range(30)).shuffle(7, seed=3).flat_map(twice),
    }


def digest(items: Any) -> str:
    def norm(x: Any) -> Any:
        if isinstance(x, pa.Table):
            return x.to_pylist()
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, np.ndarray):
            return x.tolist()
        if isinstance(x, (list, tuple)):
            return [norm(v) for v in x]
        if isinstance(x, np.generic):
            return x.item()
        return x

    text = json.dumps(norm(items), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", KEPT)
def test_state_and_fingerprint_match_d1e9def(name: str) -> None:
    pin = PINS[name]
    s = pipelines()[name]()
    first = [next(s) for _ in range(3)]
    assert json.dumps(s.state_dict()) == pin["state"]
    rest = list(s)
    s.close()
    assert (digest(first), digest(rest), 3 + len(rest)) == (pin["first"], pin["rest"], pin["n"])


@pytest.mark.parametrize("name", KEPT)
def test_d1e9def_checkpoint_resumes_the_same(name: str) -> None:
    pin = PINS[name]
    s = pipelines()[name]()
    s.load_state_dict(json.loads(pin["state"]))
    rest = list(s)
    s.close()
    assert (digest(rest), 3 + len(rest)) == (pin["rest"], pin["n"])


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_d1e9def_checkpoint_of_a_changed_stage_is_refused(name: str) -> None:
    """A checkpoint whose meaning changed is refused, never resumed into other data."""
    s = pipelines()[name]()
    with pytest.raises(StateError, match="cannot load this state"):
        s.load_state_dict(json.loads(PINS[name]["state"]))
