"""MkDocs hooks and a griffe extension for the arrowmix site (``hooks:`` and ``extensions:`` in
mkdocs.yml).

- ``<!-- cli-help -->`` in a page is replaced by the ``--help`` text of ``arrowmix`` and of every
  subcommand, taken from the real parser at build time, so the reference cannot drift from the
  command.
- ``<!-- include: PATH -->`` is replaced by the file ``docs/PATH`` as a code block (the
  tutorial's script, which the tests run as it is).
- ``<!-- api-summary -->`` in an API page is replaced by a table of the names the page renders
  (its ``::: name`` blocks, in order), each linked to its entry, with its docstring's first line.
- Code blocks of interactive examples (``>>>`` prompts) get a ``data-copy`` attribute holding
  only their code, prompts and output removed, which the theme's copy button copies: pasted
  examples run.
- ``SphinxRoles`` renders the reST roles of the docstrings (``:class:`Dataset```,
  ``:meth:`~arrowmix.Dataset.map```...) as links to the API reference when the name is
  documented there, and as code otherwise; the docstrings stay as written.
"""

from __future__ import annotations

import argparse
import functools
import html
import importlib
import inspect
import os
import re
from collections.abc import Iterator
from typing import Any

import griffe

MARKER = "<!-- cli-help -->"
SUMMARY = "<!-- api-summary -->"
FACADES = ("arrowmix", "arrowmix.stream", "arrowmix.testing", "arrowmix.exceptions")
_ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|mod|exc|data|obj|const):`([^`]+)`")
_DIRECTIVE = re.compile(r"^::: (\S+)", re.M)
_INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.M)


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
    """Fill the CLI reference and API summary markers."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, cli_reference())
    if "<!-- include: " in markdown:
        docs = config["docs_dir"]

        def include(m: re.Match[str]) -> str:
            path = m.group(1)
            with open(os.path.join(docs, path), encoding="utf-8") as f:
                lang = "python" if path.endswith(".py") else "text"
                return f'```{lang} title="{os.path.basename(path)}"\n{f.read()}```'

        markdown = _INCLUDE.sub(include, markdown)
    if SUMMARY in markdown:
        markdown = markdown.replace(SUMMARY, api_summary(_DIRECTIVE.findall(markdown)))
    return markdown


_BLOCK = re.compile(
    r'<div class="(language-[\w-]+ )?highlight"(?P<attrs>[^>]*)>(?P<body>.*?</code></pre>)', re.S
)
_TAG = re.compile(r"<[^>]+>")


def runnable(text: str) -> str | None:
    """The code of an interactive example (``>>>``/``...`` lines, prompts removed).

    ``None`` when ``text`` has no prompt: a plain code block is copied as it is.

    >>> runnable(">>> x = [1,\n...      2]\n>>> x\n[1, 2]\n")
    'x = [1,\n     2]\nx'
    """
    lines = text.splitlines()
    if not any(line.startswith(">>>") for line in lines):
        return None
    code = [
        line[4:] for line in lines if line.startswith((">>> ", "... ")) or line in (">>>", "...")
    ]
    return "\n".join(code).rstrip()


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> str:
    """Give each interactive example's block a ``data-copy`` of its runnable code."""

    def mark(m: re.Match[str]) -> str:
        code = runnable(html.unescape(_TAG.sub("", m.group("body"))))
        if code is None or "data-copy" in m.group("attrs"):
            return m.group(0)
        start = m.group(0)[: m.start("attrs") - m.start(0)]
        copy = html.escape(code, quote=True).replace("\n", "&#10;")
        return f'{start} data-copy="{copy}"{m.group(0)[m.start("attrs") - m.start(0) :]}'

    return _BLOCK.sub(mark, html_text)


def api_summary(names: list[str]) -> str:
    """A Markdown table: each documented name, linked to its entry, and its first line."""
    rows = ["| name | what it is |", "| --- | --- |"]
    for path in names:
        module, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        doc = inspect.getdoc(obj) or ""
        first = _ROLE.sub(lambda m: f"`{_display(m.group(1), m.group(2))}`", doc.split("\n\n")[0])
        first = " ".join(first.split()).replace("|", "\\|")
        kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
        rows.append(f"| [`{name}`](#{path}) | {first} *({kind})* |")
    return "\n".join(rows) + "\n"


# ---- reST roles in docstrings -----------------------------------------------------------------


@functools.cache
def _public_ids() -> tuple[dict[str, str], set[str]]:
    """``(alias -> documented id, every documented id)`` of the API reference.

    A documented id is ``<facade>.<name>`` for each name of a facade's ``__all__``, and
    ``<facade>.<Class>.<member>`` for each public member of those classes. Aliases: the
    id itself, the object's defining path (``arrowmix._dataset.dataset.Dataset``), the bare
    name, and the defining path of each base class a facade class inherits members from.
    """
    alias: dict[str, str] = {}
    ids: set[str] = set()
    for facade in FACADES:
        module = importlib.import_module(facade)
        for name in module.__all__:
            if name.startswith("__"):
                continue
            obj = getattr(module, name)
            public = f"{facade}.{name}"
            ids.add(public)
            alias.setdefault(public, public)
            alias.setdefault(name, public)
            where = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
            alias.setdefault(where, public)
            if inspect.isclass(obj):
                ids.update(f"{public}.{m}" for m in dir(obj) if not m.startswith("_"))
                for base in obj.__mro__[1:]:
                    if base.__module__.startswith("arrowmix"):
                        alias.setdefault(f"{base.__module__}.{base.__qualname__}", public)
    return alias, ids


def resolve_role(target: str, context: str | None) -> str | None:
    """The documented id ``target`` names (written in the docstring of ``context``), or None.

    ``context`` is the defining path of the object whose docstring holds the role; a bare
    member name (``:meth:`shuffle```) is looked up on its class first.

    Example:
        >>> resolve_role("~arrowmix._dataset.column.Column", None)
        'arrowmix.Column'
        >>> resolve_role("shuffle", "arrowmix._dataset.dataset.Dataset.select")
        'arrowmix.Dataset.shuffle'
        >>> resolve_role("arrowmix._stream.elastic", None) is None
        True
    """
    alias, ids = _public_ids()
    name = target.lstrip("~!.").removesuffix("()")
    candidates = [name]
    head, _, member = name.rpartition(".")
    if head:
        candidates.append(f"{alias.get(head, head)}.{member}")
    scopes = context.split(".") if context else []
    for i in range(len(scopes), 0, -1):  # the enclosing class, then outwards
        scope = ".".join(scopes[:i])
        if scope in alias:
            candidates.append(f"{alias[scope]}.{name}")
    for candidate in candidates:
        found = alias.get(candidate, candidate)
        if found in ids:
            return found
    return None


def _display(role: str, target: str) -> str:
    text = target.lstrip("!.")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if role in ("meth", "func") and not text.endswith(")"):
        text += "()"
    return text


def render_roles(text: str, context: str | None) -> str:
    """``text`` with each reST role as a link to the API reference, or as code."""

    def one(m: re.Match[str]) -> str:
        role, target = m.group(1), m.group(2)
        shown = _display(role, target)
        found = resolve_role(target, context)
        if found is None:
            return f"`{shown}`"
        return f'<autoref identifier="{found}" optional><code>{shown}</code></autoref>'

    return _ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Render ``:class:`` / ``:meth:`` / ``:func:`` ... roles of every docstring (see above)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the roles before the docstring is parsed."""
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = render_roles(obj.docstring.value, obj.path)
