"""Build the documentation into static HTML pages, after checking it.

Usage::

    python scripts/build_docs.py [--out build/docs]

Runs ``scripts/check_docs.py`` first (relative links, anchors, Python blocks) and stops on a
problem. Then renders ``README.md`` (as ``README.html``) and every
``docs/**/*.md`` with markdown-it-py (CommonMark plus tables), with heading ids that match the
anchors the checker accepts (GitHub's slugs), rewrites links to ``.md`` pages into links to the
built ``.html`` pages, and copies the images. The doctests in the pages are run by the test
suite (``pytest --doctest-glob='*.md'``), not here.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from pathlib import Path

from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_docs

ROOT = Path(__file__).resolve().parents[1]
_MD_HREF = re.compile(r'(href="(?![a-z][a-z0-9+.-]*:)[^"#]*?)\.md((?:#[^"]*)?")')
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{title} - arrowmix</title>
<style>
body {{ max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
       font: 16px/1.5 system-ui, sans-serif; }}
pre {{ background: #f5f5f5; padding: .8rem; overflow-x: auto; }}
code {{ font-size: 90%; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: .2rem .5rem; }} img {{ max-width: 100%; }}
</style></head><body>
<nav><a href="{home}">arrowmix docs</a></nav>
{body}
</body></html>
"""


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    seen: dict[str, int] = {}

    def heading_open(self, tokens, idx, options, env):  # type: ignore[no-untyped-def]
        text = tokens[idx + 1].content
        slug = check_docs.slugify(text)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        tokens[idx].attrSet("id", slug if n == 0 else f"{slug}-{n}")
        return md.renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("heading_open", heading_open)
    return md


def build(out: Path, root: Path = ROOT) -> list[Path]:
    """Check, then render every page under ``out``; return the HTML files written."""
    report = check_docs.check(root)
    if report.problems:
        raise SystemExit("\n".join(str(p) for p in report.problems))
    written = []
    extra = [root / ".cache-example" / "README.md"]  # linked from README.md
    for src in [*check_docs.doc_files(root), *(p for p in extra if p.exists())]:
        rel = src.relative_to(root)
        dest = (out / rel).with_suffix(".html")
        dest.parent.mkdir(parents=True, exist_ok=True)
        body = _renderer().render(src.read_text(encoding="utf-8"))
        body = _MD_HREF.sub(r"\1.html\2", body)
        title = next(
            (
                line[2:].strip()
                for line in src.read_text(encoding="utf-8").splitlines()
                if line.startswith("# ")
            ),
            rel.stem,
        )
        home = Path(*[".."] * (len(rel.parts) - 1), "docs", "index.html")
        dest.write_text(
            _PAGE.format(title=html.escape(title), home=home.as_posix(), body=body),
            encoding="utf-8",
        )
        written.append(dest)
    for img in (root / "docs").rglob("*.png"):
        target = out / img.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(img, target)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "docs"))
    args = parser.parse_args()
    pages = build(Path(args.out))
    print(f"{len(pages)} pages -> {args.out}")


if __name__ == "__main__":
    main()
