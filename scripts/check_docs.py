"""Check the Markdown documentation: relative links, anchors and Python code blocks.

Usage::

    python scripts/check_docs.py [ROOT] [--pending PATH ...]

Checks ``README.md`` and every ``docs/**/*.md`` under ``ROOT`` (default: the repository that
holds this script) and exits with status 1 and one ``path:line: problem`` line per problem:

- a relative link (``[text](other.md)``, ``![img](pic.png)``, ``[ref]: path``) must point to an
  existing file or directory inside the repository; external links (``https:``, ``mailto:``...)
  are not fetched;
- an anchor (``other.md#section`` or ``#section``) must name a heading of that Markdown page
  (GitHub's slugs: lower case, punctuation dropped, spaces to ``-``, ``-1``, ``-2``... for
  repeated headings) or an explicit ``<a id="...">`` / ``<a name="...">``;
- every fenced ````` ```python ````` block must compile (``compile()``). A block of ``>>>``
  examples is parsed as a doctest and each example compiled on its own; it must also end with a
  blank line before its closing fence, or doctest reads the fence as expected output.
  A block preceded by a ``<!-- skip -->`` comment (``<!-- skip: reason -->``) is not compiled;
- a code fence must be closed.

Running the doctests themselves is the test suite's job (``pytest --doctest-glob='*.md'``).
``--pending PATH`` (repeatable, relative to ``ROOT``) names pages that are announced but not
written yet: links to them are reported as notes while the file is missing, and checked like
any other link once it exists. Links and code inside fenced blocks, inline code spans and HTML
comments are ignored.
"""

from __future__ import annotations

import argparse
import doctest
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

PYTHON_LANGS = frozenset({"python", "py", "python3", "pycon"})

_FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_SKIP_RE = re.compile(r"^\s*<!--\s*skip\b.*-->\s*$")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_CODE_SPAN_RE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
_INLINE_LINK_RE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*)")
_REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
_HTML_ANCHOR_RE = re.compile(r"<a\s[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_MD_LINK_TEXT_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG_RE = re.compile(r"<[^>]+>")
_SLUG_DROP_RE = re.compile(r"[^\w\- ]")


@dataclass(frozen=True, order=True)
class Problem:
    """One problem found in one file, at a 1-based line number."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Block:
    """A fenced code block: its language, the line of its opening fence and its body."""

    lang: str
    fence_line: int
    body: list[str]
    skip: bool
    closed: bool


@dataclass
class Page:
    """A Markdown file split into fenced blocks and the text outside them."""

    path: Path
    blocks: list[Block] = field(default_factory=list)
    #: The file's lines with the lines of fenced blocks blanked (line numbers kept).
    prose: list[str] = field(default_factory=list)


@dataclass
class Report:
    """What :func:`check` found: problems (the check fails) and notes (it does not)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    files: int = 0
    links: int = 0
    python_blocks: int = 0


def parse_page(path: Path) -> Page:
    """Split ``path`` into fenced code blocks and prose (CommonMark fences, ``` or ~~~)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = Page(path)
    i = 0
    while i < len(lines):
        m = _FENCE_RE.match(lines[i])
        if m is None or (m.group(2)[0] == "`" and "`" in m.group(3)):
            page.prose.append(lines[i])
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        block = Block(
            lang=info.split()[0].lower() if info else "",
            fence_line=i + 1,
            body=[],
            skip=bool(_SKIP_RE.match(before)),
            closed=False,
        )
        page.prose.append("")
        i += 1
        while i < len(lines):
            page.prose.append("")
            if close.match(lines[i]):
                block.closed = True
                i += 1
                break
            line = lines[i]
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            block.body.append(line[strip:])
            i += 1
        page.blocks.append(block)
    return page


def _heading_text(raw: str) -> str:
    """The rendered text of a heading: no link targets, no tags, no code backticks."""
    text = _MD_LINK_TEXT_RE.sub(r"\1", raw)
    text = _TAG_RE.sub("", text)
    return text.replace("`", "")


def slugify(text: str) -> str:
    """GitHub's anchor for a heading text (before de-duplication).

    Example:
        >>> slugify("Streams: fast and exactly resumable")
        'streams-fast-and-exactly-resumable'
        >>> slugify("`arrowmix cache ls`")
        'arrowmix-cache-ls'
    """
    return _SLUG_DROP_RE.sub("", _heading_text(text).strip().lower()).replace(" ", "-")


def anchors(page: Page) -> set[str]:
    """Every anchor a link may name in ``page``: heading slugs and explicit HTML anchors."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    previous = ""
    for line in page.prose:
        text: str | None = None
        m = _ATX_RE.match(line)
        if m is not None:
            text = m.group(2) or ""
        elif _SETEXT_RE.match(line) and previous.strip() and not _is_block_line(previous):
            text = previous.strip()
        if text is not None:
            slug = slugify(text)
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
        out.update(_HTML_ANCHOR_RE.findall(line))
        previous = line
    return out


def _is_block_line(line: str) -> bool:
    """Lines that cannot be the text of a setext heading (tables, lists, headings...)."""
    s = line.lstrip()
    return s.startswith(("|", "#", "- ", "* ", "+ ", ">")) or bool(re.match(r"\d+[.)] ", s))


def _blank_keep_lines(match: re.Match[str]) -> str:
    return "\n" * match.group(0).count("\n")


def links(page: Page) -> list[tuple[int, str]]:
    """``(line, target)`` of every inline link, image and reference definition in the prose."""
    text = "\n".join(page.prose)
    text = _COMMENT_RE.sub(_blank_keep_lines, text)
    text = _CODE_SPAN_RE.sub(_blank_keep_lines, text)
    found: list[tuple[int, str]] = []
    for m in _INLINE_LINK_RE.finditer(text):
        found.append((text.count("\n", 0, m.start(3)) + 1, m.group(3)))
    for m in _REF_DEF_RE.finditer(text):
        found.append((text.count("\n", 0, m.start(2)) + 1, m.group(2)))
    return [(line, t[1:-1] if t.startswith("<") else t) for line, t in sorted(found)]


class Checker:
    """Checks pages of one repository, caching the anchors of the pages it reads."""

    def __init__(self, root: Path, pending: Iterable[str] = ()) -> None:
        self.root = root.resolve()
        self.pending = {self._norm(p) for p in pending}
        self.report = Report()
        self._anchors: dict[Path, set[str]] = {}

    @staticmethod
    def _norm(path: str) -> str:
        return Path(path).as_posix().lstrip("/")

    def rel(self, path: Path) -> str:
        """``path`` relative to the root, for messages."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def anchors_of(self, path: Path) -> set[str]:
        key = path.resolve()
        if key not in self._anchors:
            self._anchors[key] = anchors(parse_page(key))
        return self._anchors[key]

    def problem(self, page: Page, line: int, message: str) -> None:
        self.report.problems.append(Problem(self.rel(page.path), line, message))

    def check_page(self, page: Page) -> None:
        self.report.files += 1
        self._anchors[page.path.resolve()] = anchors(page)
        for line, target in links(page):
            self.report.links += 1
            self.check_link(page, line, target)
        for block in page.blocks:
            if not block.closed:
                self.problem(page, block.fence_line, "code fence is never closed")
            if block.lang in PYTHON_LANGS and not block.skip:
                self.report.python_blocks += 1
                self.check_python(page, block)

    def check_link(self, page: Page, line: int, target: str) -> None:
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not target:
            if not target:
                self.problem(page, line, "empty link target")
            return
        path_part, fragment = unquote(parts.path), unquote(parts.fragment)
        if not path_part:
            dest = page.path.resolve()
        elif path_part.startswith("/"):
            dest = (self.root / path_part.lstrip("/")).resolve()
        else:
            dest = (page.path.parent / path_part).resolve()
        shown = self.rel(dest)
        if not dest.is_relative_to(self.root):
            self.problem(page, line, f"link {target!r} points outside the repository")
            return
        if not dest.exists():
            if shown in self.pending:
                note = f"link {target!r}: pending page {shown} is not written yet"
                self.report.notes.append(Problem(self.rel(page.path), line, note))
            else:
                self.problem(page, line, f"link {target!r}: {shown} does not exist")
            return
        is_page = dest.is_file() and dest.suffix.lower() == ".md"
        if fragment and is_page and fragment not in self.anchors_of(dest):
            where = "this page" if dest == page.path.resolve() else shown
            self.problem(page, line, f"link {target!r}: no heading #{fragment} in {where}")

    def check_python(self, page: Page, block: Block) -> None:
        source = "\n".join(block.body) + "\n"
        first = block.fence_line + 1  # file line of the block's first body line
        name = f"{self.rel(page.path)}:{block.fence_line}"
        if not any(ln.lstrip().startswith(">>>") for ln in block.body):
            self._compile(page, source, name, "exec", first)
            return
        try:
            examples = doctest.DocTestParser().get_examples(source, name)
        except ValueError as exc:  # bad prompt spacing or indentation
            self.problem(page, block.fence_line, f"doctest block does not parse: {exc}")
            return
        for ex in examples:
            self._compile(page, ex.source, name, "single", first + ex.lineno)
        if block.body and block.body[-1].strip():
            self.problem(
                page,
                first + len(block.body) - 1,
                "doctest block must end with a blank line before its closing fence "
                "(doctest would read the fence as expected output)",
            )

    def _compile(self, page: Page, source: str, name: str, mode: str, first: int) -> None:
        try:
            compile(source, name, mode, dont_inherit=True)
        except SyntaxError as exc:
            line = first + (exc.lineno or 1) - 1
            self.problem(page, line, f"Python code does not compile: {exc.msg}")
        except ValueError as exc:  # e.g. a null byte
            self.problem(page, first, f"Python code does not compile: {exc}")


def doc_files(root: Path) -> list[Path]:
    """``README.md`` (when present) and every Markdown file under ``docs/``, sorted."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    if docs.is_dir():
        files += sorted(p for p in docs.rglob("*.md") if p.is_file())
    return files


def check(root: Path, pending: Iterable[str] = (), files: Sequence[Path] | None = None) -> Report:
    """Check ``files`` (default :func:`doc_files`) of the repository at ``root``."""
    checker = Checker(root, pending)
    for path in doc_files(checker.root) if files is None else files:
        checker.check_page(parse_page(path))
    checker.report.problems.sort()
    return checker.report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checks and print the problems; return the exit status (0 clean, 1 problems)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument(
        "--pending",
        action="append",
        default=[],
        metavar="PATH",
        help="a page announced but not written yet (relative to ROOT); repeatable",
    )
    args = parser.parse_args(argv)
    report = check(args.root, args.pending)
    for note in report.notes:
        print(f"note: {note}")
    summary = f"{report.files} files, {report.links} links, {report.python_blocks} Python blocks"
    if report.problems:
        print(f"check_docs: {len(report.problems)} problem(s) ({summary}):")
        for p in report.problems:
            print(f"  {p}")
        return 1
    print(f"check_docs: OK ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
