"""stats() of the batching stages and Stream.pipeline_stats(), checked by hand on small corpora."""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import numpy as np
import pytest

from arrowmix.exceptions import DroppedDataWarning
from arrowmix.stream import from_iterable, mix
from tests.stream.tokens.token_helpers import token_source

# Documents of these lengths; token j of document k is 100 * k + j + 1 (never 0: no pad id).
LENGTHS = [3, 5, 2, 7, 4, 1, 6]
DOCS = [[100 * k + j + 1 for j in range(n)] for k, n in enumerate(LENGTHS)]


def _source_of(ids: np.ndarray) -> dict[int, int]:
    """Real tokens per corpus of token_source (seed s: ids 100000 * (s + 1) + ...)."""
    corpus, count = np.unique(ids // 100_000 - 1, return_counts=True)
    return {int(c): int(n) for c, n in zip(corpus, count, strict=True)}


def _mixed(**kwargs: Any) -> Any:
    return mix({"web": token_source(40, 0), "code": token_source(30, 1)}, **kwargs)


def test_collate_counts_padding_and_truncation_by_hand() -> None:
    s = from_iterable(DOCS).batch(3).collate("ids", max_length=5)
    batches = list(s)
    # batches [3, 5, 2] [7, 4, 1] [6] -> kept [3, 5, 2] [5, 4, 1] [5], widths 5, 5, 5
    assert [b["input_ids"].shape for b in batches] == [(3, 5), (3, 5), (1, 5)]
    stats = s.stats()
    assert stats["batches"] == 3 and stats["rows"] == 7
    assert stats["tokens"] == 25 == sum(int(b["attention_mask"].sum()) for b in batches)
    assert stats["padded_tokens"] == 35
    assert stats["padding_efficiency"] == pytest.approx(25 / 35)
    assert stats["dropped_tokens"] == 2 + 1  # the 7 and the 6 cut to 5
    assert stats["dropped_rows"] == 0


def test_collate_pad_to_multiple_counts_the_rounded_width() -> None:
    s = from_iterable(DOCS).batch(4).collate("ids", pad_to_multiple_of=4)
    list(s)
    # widths: longest 7 -> 8, longest 6 -> 8; 4 and 3 rows
    assert s.stats()["padded_tokens"] == 4 * 8 + 3 * 8
    assert s.stats()["tokens"] == sum(LENGTHS)


def test_batch_drop_last_counts_the_dropped_rows() -> None:
    s = from_iterable(range(7)).batch(3, drop_last=True)
    assert len(list(s)) == 2
    assert s.stats() == {**s.stats(), "batches": 2, "rows": 6, "dropped_rows": 1}
    assert "tokens" not in s.stats()  # batch has no notion of tokens


def test_stats_before_any_item_are_zero() -> None:
    s = from_iterable(DOCS).batch(2).collate("ids")
    stats = s.pipeline_stats()
    assert stats["collate"]["tokens"] == 0
    assert stats["collate"]["padding_efficiency"] is None
    assert stats["collate/batch"]["rows"] == 0


def test_a_dataset_source_reports_where_it_will_start_before_any_item() -> None:
    from arrowmix import Dataset

    s = Dataset.from_dict({"x": list(range(6))}).to_stream(shuffle=None, infinite=False)
    assert s.stats() == {"epoch": 0, "index": 0}
    s.set_epoch(3)
    assert s.stats()["epoch"] == 3
    next(s)
    assert s.stats() == {"epoch": 3, "index": 1}


def test_concat_pack_dropped_tokens_equal_the_warning() -> None:
    s = from_iterable(DOCS).pack("ids", 4, batch_size=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(s)
    [warning] = [w for w in caught if issubclass(w.category, DroppedDataWarning)]
    dropped = int(re.search(r"dropped the last (\d+) tokens", str(warning.message))[1])  # type: ignore[index]
    stats = s.stats()
    assert dropped == stats["dropped_tokens"] == sum(LENGTHS) % 8 == 4
    assert stats["tokens"] == stats["padded_tokens"] == 24 == 8 * len(batches)
    assert stats["rows"] == 6 and stats["padding_efficiency"] == 1.0


def test_concat_pack_tail_pad_efficiency_by_hand() -> None:
    s = from_iterable(DOCS).pack("ids", 4, batch_size=2, tail="pad")
    batches = list(s)
    # 28 tokens: three full batches of 2 x 4, then one row of 4 tokens
    assert [b["input_ids"].shape for b in batches] == [(2, 4)] * 3 + [(1, 4)]
    stats = s.stats()
    assert stats["tokens"] == 28 and stats["padded_tokens"] == 28 and stats["rows"] == 7
    s = from_iterable(DOCS).pack("ids", 5, batch_size=2, tail="pad")
    batches = list(s)
    stats = s.stats()
    real = sum(int((b["segment_ids"] > 0).sum()) for b in batches)
    assert stats["tokens"] == real == 28
    assert stats["padded_tokens"] == 5 * sum(len(b["input_ids"]) for b in batches) == 30
    assert stats["padding_efficiency"] == pytest.approx(28 / 30)


def test_bin_pack_truncate_counts_the_cut_tokens() -> None:
    s = from_iterable(DOCS).pack("ids", 4, batch_size=2, strategy="first_fit", long_docs="truncate")
    batches = list(s)
    stats = s.stats()
    assert stats["dropped_tokens"] == (5 - 4) + (7 - 4) + (6 - 4)
    real = sum(int((b["segment_ids"] > 0).sum()) for b in batches)
    assert stats["tokens"] == real == sum(LENGTHS) - 6
    assert stats["padded_tokens"] == 4 * 2 * len(batches)
    assert stats["rows"] == 2 * len(batches)


def test_tokens_per_source_sum_to_the_collated_tokens() -> None:
    s = _mixed(weights={"web": 0.6, "code": 0.4}).budget_bucket("input_ids", 64, 1000, seed=1)
    s = s.collate()
    seen: dict[int, int] = {}
    for b in s:
        for k, n in _source_of(b["input_ids"][b["attention_mask"] > 0]).items():
            seen[k] = seen.get(k, 0) + n
    stats = s.pipeline_stats()
    tokens = stats["collate/budget_bucket/mix"]["tokens"]
    assert tokens == {"web": seen[0], "code": seen[1]}
    assert sum(tokens.values()) == stats["collate"]["tokens"]
    assert stats["collate/budget_bucket"]["tokens"] == stats["collate"]["tokens"]
    assert stats["collate/budget_bucket"]["padded_tokens"] == stats["collate"]["padded_tokens"]
    assert stats["collate/budget_bucket/mix/web:source"]["index"] == 40


@pytest.mark.parametrize("strategy", ["concat", "best_fit"])
def test_tokens_per_source_of_a_pack_sum_to_its_tokens_and_drops(strategy: str) -> None:
    s = _mixed(seed=0).pack("input_ids", 16, batch_size=2, strategy=strategy, read_ahead=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)
        seen: dict[int, int] = {}
        for b in s:
            for k, n in _source_of(b["input_ids"][b["segment_ids"] > 0]).items():
                seen[k] = seen.get(k, 0) + n
    stats = s.pipeline_stats()
    tokens = stats["pack/mix"]["tokens"]
    assert sum(tokens.values()) == stats["pack"]["tokens"] + stats["pack"]["dropped_tokens"]
    if strategy == "best_fit":  # nothing dropped: the sources' tokens are the batches'
        assert tokens == {"web": seen[0], "code": seen[1]}


def test_mix_window_tokens_are_since_the_previous_call() -> None:
    m = _mixed()
    s = m.batch(5, columnar=True).collate()
    first = sum(int(next(s)["attention_mask"].sum()) for _ in range(3))
    assert sum(m.stats()["window_tokens"].values()) == first
    second = sum(int(next(s)["attention_mask"].sum()) for _ in range(2))
    stats = m.stats()
    assert sum(stats["window_tokens"].values()) == second
    assert sum(stats["tokens"].values()) == first + second


def test_budget_bucket_dropped_rows_equal_the_warning() -> None:
    # one read-ahead window: the one warning covers everything dropped
    ranks = []
    for rank in range(4):
        s = _mixed(seed=3).budget_bucket(
            "input_ids", 50, 1000, num_instances=4, instance_rank=rank, seed=1
        )
        s = s.collate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            list(s)
        said = [w for w in caught if issubclass(w.category, DroppedDataWarning)]
        bb = s.pipeline_stats()["collate/budget_bucket"]
        if rank == 0:  # instance 0 speaks for the pipeline: one warning per job
            [warning] = said
            rows = int(re.search(r"\((\d+) rows", str(warning.message))[1])  # type: ignore[index]
        else:
            assert said == []
        assert bb["dropped_rows"] == rows > 0
        assert bb["dropped_tokens"] > 0
        ranks.append(bb)
    # every rank reports the same dropped batches; with the rows yielded, that is all
    assert len({(r["dropped_rows"], r["dropped_tokens"]) for r in ranks}) == 1
    assert sum(r["rows"] for r in ranks) + ranks[0]["dropped_rows"] == 70
    web, code = token_source(40, 0), token_source(30, 1)
    total = sum(len(r["input_ids"]) for r in (*web, *code))
    assert sum(r["tokens"] for r in ranks) + ranks[0]["dropped_tokens"] == total


def test_bucket_counts_padding_by_key() -> None:
    s = from_iterable(DOCS).bucket(len, 2, read_ahead=4)
    batches = list(s)
    # windows [3, 5, 2, 7] -> [7, 5] [3, 2]; [4, 1, 6] -> [6, 4] [1]
    assert sorted(tuple(map(len, b)) for b in batches) == [(1,), (3, 2), (6, 4), (7, 5)]
    stats = s.stats()
    assert stats["batches"] == 4 and stats["rows"] == 7
    assert stats["tokens"] == sum(LENGTHS)
    assert stats["padded_tokens"] == 2 * 7 + 2 * 3 + 2 * 6 + 1
    collated = from_iterable(DOCS).bucket(len, 2, read_ahead=4).collate("ids")
    list(collated)
    assert collated.stats()["padded_tokens"] == stats["padded_tokens"]


def test_wait_seconds_covers_a_slow_source() -> None:
    def slow(doc: list[int]) -> list[int]:
        time.sleep(0.002)
        return doc

    s = from_iterable(DOCS).map(slow).batch(2).collate("ids")
    list(s)
    stats = s.pipeline_stats()
    assert stats["collate/batch"]["wait_seconds"] >= 7 * 0.002
    assert stats["collate"]["wait_seconds"] >= stats["collate/batch"]["wait_seconds"]


@pytest.mark.parametrize("processes", [False, True])
def test_stats_below_a_prefetch_match_the_plain_pipeline(processes: bool) -> None:
    def build() -> Any:
        return _mixed(weights={"web": 0.5, "code": 0.5}).batch(4, columnar=True).collate()

    plain = build()
    list(plain)
    want = plain.pipeline_stats()
    s = build().prefetch(2, processes=processes)
    list(s)
    got = s.pipeline_stats()
    for path in ("collate", "collate/batch", "collate/batch/mix"):
        mine = {k: v for k, v in got[f"prefetch/{path}"].items() if "wait" not in k}
        assert mine == {k: v for k, v in want[path].items() if "wait" not in k}
    s.close()


def test_process_prefetch_windows_are_between_calls() -> None:
    s = _mixed(weights={"web": 0.5, "code": 0.5}).batch(2, columnar=True).collate()
    s = s.prefetch(1, processes=True)
    for _ in range(3):
        next(s)
    first = s.pipeline_stats()["prefetch/collate/batch/mix"]
    for _ in range(3):
        next(s)
    second = s.pipeline_stats()["prefetch/collate/batch/mix"]
    assert sum(second["window_counts"].values()) == sum(second["counts"].values()) - sum(
        first["counts"].values()
    )
    assert sum(second["window_tokens"].values()) > 0
    s.close()


def test_stats_are_not_checkpointed_and_keep_counting_after_a_restore() -> None:
    s = from_iterable(DOCS).batch(2).collate("ids")
    next(s)
    state = s.state_dict()
    assert "stats" not in str(state) and "tokens" not in str(state)
    rest = list(s)
    s.load_state_dict(state)
    assert len(list(s)) == len(rest)
    # counted in this process since the stage was built: the first pass and the resumed one
    assert s.stats()["batches"] == 1 + 2 * len(rest)


def test_pipeline_stats_flat_for_a_logger() -> None:
    s = _mixed().batch(4, columnar=True).collate()
    for _ in range(2):
        next(s)
    flat = s.pipeline_stats(flat=True)
    assert flat["collate/tokens"] == sum(
        flat[f"collate/batch/mix/tokens/{k}"] for k in ("web", "code")
    )
    assert flat["collate/batch/rows"] == 8
    assert all(not isinstance(v, (dict, list)) for v in flat.values())
