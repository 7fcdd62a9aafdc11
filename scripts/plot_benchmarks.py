"""Plot the speed-ups recorded in docs/benchmarks.md as one bar chart (docs/img/benchmarks.png).

Reads every results table of the page whose header has a ratio column ("arrowmix / <peer>" or
"ratio") and whose arrowmix and peer cells hold measurements, turns each row into "times
faster than the peer" (the ratio for rates such as rows/s, its inverse for durations), and
draws them on a log scale with the 1x line. Rerun it after a benchmark updates the page.

Usage: python scripts/plot_benchmarks.py [--out docs/img/benchmarks.png]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATIO = re.compile(r"^~?(\d+(?:\.\d+)?)x$")


def speedups(markdown: str) -> list[tuple[str, str, float]]:
    """``(section, metric, times faster)`` for every measured row of a results table."""
    out: list[tuple[str, str, float]] = []
    section, header = "", None
    for line in markdown.splitlines():
        if line.startswith("## "):
            section, header = line[3:].strip(), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        col = next((i for i, h in enumerate(header) if " / " in h or h == "ratio"), None)
        if col is None or col >= len(cells) or len(cells) < 3:
            continue
        m = RATIO.match(cells[col].replace(",", ""))
        if not m or not cells[1] or not cells[2]:
            continue
        ratio = float(m.group(1))
        rate = "/s" in cells[1] or "/s" in header[1]
        metric = re.sub(r"`", "", cells[0])
        out.append((section, metric, ratio if rate else 1.0 / ratio))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "benchmarks.png"))
    args = parser.parse_args()
    rows = speedups((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.2))
    labels = [f"{s}: {m}"[:80] for s, m, _ in rows]
    values = [v for _, _, v in rows]
    colors = ["tab:green" if v >= 1 else "tab:red" for v in values]
    ax.barh(range(len(rows)), values, color=colors)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", lw=0.8)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.1f}x", va="center", fontsize=7)
    ax.set_xlabel("times faster than the peer (log scale; from docs/benchmarks.md)")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"{len(rows)} results -> {args.out}")


if __name__ == "__main__":
    main()
