"""MkDocs hooks for the arrowmix site (see ``hooks:`` in mkdocs.yml).

``<!-- cli-help -->`` in a page is replaced by the ``--help`` text of ``arrowmix`` and of every
subcommand, taken from the real parser at build time, so the reference cannot drift from the
command.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-help -->"


def _commands(
    parser: argparse.ArgumentParser, prog: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(command line, parser)`` of ``parser`` and of its subcommands, depth first."""
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prog} {name}")


def cli_reference() -> str:
    """Markdown: one section with the help text per command."""
    from arrowmix._cli.main import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"  # argparse wraps help text to $COLUMNS
    try:
        parts = []
        for prog, parser in _commands(build_parser(), "arrowmix"):
            text = parser.format_help().rstrip()
            parts.append(f"## `{prog}`\n\n```text\n{text}\n```\n")
        return "\n".join(parts)
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the CLI reference marker."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, cli_reference())
    return markdown
