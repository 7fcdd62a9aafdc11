"""collate(keep=...) behind budget_bucket: kept columns read once per window, same values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource
from tests.stream.tokens.token_helpers import token_table


def source(n: int = 80) -> ArrowSource:
    t = token_table(n)
    names = np.array(["web", "code", "maths"])[np.arange(n) % 3]
    t = t.append_column("src", pa.array(names.tolist())).append_column(
        "score", pa.array(np.arange(n) / 4.0)
    )
    rows = TableRowSource(pa.Table.from_batches(t.to_batches(max_chunksize=17)), chunk_rows=10)
    return ArrowSource(rows, seed=0, shuffle="global", infinite=False)


def expected(table: pa.Table) -> dict[tuple[int, ...], tuple[int, str, float]]:
    names = ["web", "code", "maths"]
    docs = table["input_ids"].to_pylist()
    return {tuple(d): (k, names[k % 3], k / 4.0) for k, d in enumerate(docs)}


def test_kept_columns_across_windows_match_each_row() -> None:
    want = expected(token_table(80))
    s = source().budget_bucket("input_ids", 64, 12, seed=0).collate(keep=["src", "id", "score"])
    seen = 0
    for b in s:
        assert b["src"].dtype == object and b["id"].dtype == np.int64
        for row, mask, k, name, score in zip(
            b["input_ids"], b["attention_mask"], b["id"], b["src"], b["score"], strict=True
        ):
            assert want[tuple(row[mask > 0].tolist())] == (k, name, score)
        seen += len(b["id"])
    assert seen == 80


def test_resume_mid_window_keeps_the_same_columns() -> None:
    def build() -> Any:
        return source().budget_bucket("input_ids", 64, 12, seed=0).collate(keep=["src", "id"])

    full = list(build())
    s = build()
    head = [next(s) for _ in range(5)]
    state = s.state_dict()
    resumed = build()
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(head) + len(rest) == len(full)
    for a, b in zip(full, head + rest, strict=True):
        assert a["src"].tolist() == b["src"].tolist() and a["id"].tolist() == b["id"].tolist()
