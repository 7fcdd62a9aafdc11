"""Small builders shared by the stream tests (module-level functions pickle)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa

from arrowmix._stream.row_source import TableRowSource
from arrowmix._stream.sources.rows import ArrowSource


def table(n: int = 100, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.zipf(1.5, size=n).clip(1, 500)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "n_tokens": lengths.astype(np.int64),
            "lang": [["en", "de", "fr"][i % 3] for i in range(n)],
        }
    )


def rows(
    n: int = 100, chunk_rows: int | None = 16, fingerprint: str | None = None
) -> TableRowSource:
    return TableRowSource(table(n), fingerprint=fingerprint, chunk_rows=chunk_rows)


def arrow(n: int = 100, **kwargs: Any) -> ArrowSource:
    kwargs.setdefault("infinite", False)
    kwargs.setdefault("block_rows", 7)
    return ArrowSource(rows(n), **kwargs)


def ident(row: dict[str, Any]) -> int:
    return int(row["id"])


def double(x: int) -> int:
    return 2 * x


def is_even(x: int) -> bool:
    return x % 2 == 0


def repeat_mod3(x: int) -> list[int]:
    return [x] * (x % 3)


def n_tokens(row: dict[str, Any]) -> int:
    return int(row["n_tokens"])


def budget(longest: dict[str, Any]) -> int:
    return max(1, 600 // int(longest["n_tokens"]))


def within(seconds: float, fn: Any) -> Any:
    """``fn()``, or a failure when it has not returned after ``seconds`` (a hang)."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"did not end within {seconds} s"
    return out[0]
