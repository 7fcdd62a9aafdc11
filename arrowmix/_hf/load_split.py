"""HF's split grammar for ``load_dataset(split=...)``: slices of splits, added together.

``"train"``, ``"train[:2000]"``, ``"train[10:20]"``, ``"test[-5:]"``, ``"train[:5%]"``,
``"train[5%:]"``, ``"train[:10%]+test[-5:]"``, ``"all"`` (every split, in order), and a
percent slice's rounding in parentheses: ``"train[:33%](pct1_dropremainder)"``. Percent bounds
are rounded to the closest row (Python's ``round``: half to even) unless
``pct1_dropremainder`` asks for multiples of 1% of the rows (``n // 100`` each). Negative
bounds count from the end; bounds are clamped to the split. HF's ``ReadInstruction`` objects
are read through their string form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Slice", "parse_split", "select_split"]

_SPEC = re.compile(
    r"^(?P<split>\w+(\.\w+)*)"
    r"(\[((?P<from>-?[\d_]+)(?P<from_pct>%)?)?:((?P<to>-?[\d_]+)(?P<to_pct>%)?)?\])?"
    r"(\((?P<rounding>[^\)]*)\))?$"
)


@dataclass(frozen=True)
class Slice:
    """One term of a split spec: rows ``[start, stop)`` of ``split``, in rows or percent."""

    split: str
    start: int | None = None
    stop: int | None = None
    percent: bool = False
    rounding: str = "closest"

    def bounds(self, n: int) -> tuple[int, int]:
        """The absolute ``[start, stop)`` in a split of ``n`` rows."""
        if self.percent and self.rounding == "pct1_dropremainder" and n < 100:
            raise ValueError(
                'Using "pct1_dropremainder" rounding on a split with less than 100 elements is '
                "forbidden: it always results in an empty dataset."
            )

        def absolute(b: int | None, default: int) -> int:
            if b is None:
                return default
            if self.percent:
                b = round(b * n / 100.0) if self.rounding == "closest" else b * math.trunc(n / 100)
            return min(max(n + b, 0) if b < 0 else b, n)

        return absolute(self.start, 0), absolute(self.stop, n)


def parse_split(spec: Any) -> list[Slice]:
    """The terms of a split spec (a string or HF's ``ReadInstruction``/``NamedSplit``).

    Raises:
        ValueError: the spec does not follow the grammar (the message shows the bad term).
    """
    text = str(spec)
    terms = re.split(r"\s*\+\s*", text.strip())
    if not text.strip() or any(not t for t in terms):
        raise ValueError(f"No instructions could be built out of {text!r}.")
    return [_term(t) for t in terms]


def _term(term: str) -> Slice:
    m = _SPEC.match(term)
    if not m:
        raise ValueError(
            f"Unrecognized instruction format: {term!r}. Expected a split name, optionally "
            "sliced as `name[start:stop]` in rows or percent (`train[:10%]`, `test[-5:]`), "
            "terms joined with `+`."
        )
    percent = bool(m.group("from_pct") or m.group("to_pct"))
    rounding = m.group("rounding")
    if rounding is not None and not percent:
        raise ValueError("It is forbidden to specify rounding if not using percent slicing.")
    if rounding not in (None, "closest", "pct1_dropremainder"):
        raise ValueError("rounding must be either closest or pct1_dropremainder")
    start = int(m.group("from")) if m.group("from") else None
    stop = int(m.group("to")) if m.group("to") else None
    if percent and any(b is not None and abs(b) > 100 for b in (start, stop)):
        raise ValueError("Percent slice boundaries must be > -100 and < 100.")
    return Slice(m.group("split"), start, stop, percent, rounding or "closest")


def select_split(splits: Mapping[str, Any], spec: Any) -> Any:
    """The Dataset that ``spec`` names among ``splits`` (``{name: Dataset}``).

    One whole split is that Dataset; a slice is a view of its rows (no copy); terms joined by
    ``+`` are concatenated. The result's ``split`` is the spec, as in HF.

    Raises:
        ValueError: an unknown split name (the message lists the splits there are).
    """
    from arrowmix._dataset.state import derive, state_of
    from arrowmix._dataset.views.concatenate import concatenate_datasets

    text = str(spec)
    if text == "all":
        text = "+".join(splits)
    parts = []
    for term in parse_split(text):
        if term.split not in splits:
            raise ValueError(f'Unknown split "{term.split}". Should be one of {list(splits)}.')
        ds = splits[term.split]
        start, stop = term.bounds(len(ds))
        if (start, stop) != (0, len(ds)):
            ds = ds.select(range(start, max(start, stop)))
        parts.append(ds)
    out = parts[0] if len(parts) == 1 else concatenate_datasets(parts)
    return type(out)(derive(state_of(out), split=text))
