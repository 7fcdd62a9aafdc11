"""Build the documentation site (MkDocs Material + mkdocstrings), after checking the pages.

Usage::

    python scripts/build_docs.py [--out build/docs]

Runs ``scripts/check_docs.py`` first (relative links and anchors in ``README.md`` and
``docs/``, Python blocks compile) and stops on a problem, then ``mkdocs build --strict`` with
``mkdocs.yml``: a broken link or anchor between pages, a page missing from the navigation, or a
docstring mkdocstrings cannot render fails the build. The API reference pages under
``docs/api/`` are rendered from the docstrings of the public names; the command-line reference
from the real parser (``scripts/docs_hooks.py``). The doctests in the pages are run by the test
suite (``pytest --doctest-glob='*.md'``), not here. ``scripts/docs`` installs what this needs
and runs it (``scripts/docs serve`` for a live preview).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_docs

ROOT = Path(__file__).resolve().parents[1]


def build(out: Path, root: Path = ROOT) -> Path:
    """Check the pages, then build the site into ``out``; return ``out``."""
    report = check_docs.check(root)
    if report.problems:
        raise SystemExit("\n".join(str(p) for p in report.problems))
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        # the hooks and mkdocstrings read this checkout, not an installed copy
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict"]
    cmd += ["--config-file", str(root / "mkdocs.yml"), "--site-dir", str(out.resolve())]
    subprocess.run(cmd, check=True, cwd=root, env=env)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "docs"))
    args = parser.parse_args()
    try:
        build(Path(args.out))
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"mkdocs build --strict failed (exit {exc.returncode})") from None
    print(f"site -> {args.out} (open {Path(args.out) / 'index.html'})")


if __name__ == "__main__":
    main()
