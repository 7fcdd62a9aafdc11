"""scripts/check_docs.py: the repository's docs pass, and each check catches what it should."""

from __future__ import annotations

import glob
import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Pages linked before they are merged from other branches (e.g. "docs/multi-node.md"). A link
#: to one of them is tolerated only while the file is missing; remove the entry once merged.
PENDING: tuple[str, ...] = ()


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs", ROOT / "scripts" / "check_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_docs", module)  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


cd = _load()

FENCE = "```"


class Repo:
    """A fake repository in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "docs").mkdir()

    def write(self, rel: str, text: str) -> Path:
        """Write ``text`` (dedented; ``'''`` stands for a code fence) to ``rel``."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).replace("'''", FENCE), encoding="utf-8")
        return path

    def problems(self, pending: tuple[str, ...] = ()) -> list[str]:
        return [str(p) for p in cd.check(self.root, pending).problems]


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


# ---- the repository's own docs --------------------------------------------------------------


def test_repository_docs_have_no_broken_links_or_invalid_code() -> None:
    report = cd.check(ROOT, PENDING)
    assert report.problems == [], "\n".join(map(str, report.problems))
    pages = {p.relative_to(ROOT).as_posix() for p in cd.doc_files(ROOT)}
    assert {"README.md", "docs/index.md", "docs/quickstart.md"} <= pages
    assert report.links > 20 and report.python_blocks > 20


def test_index_links_every_page() -> None:
    index = cd.parse_page(ROOT / "docs" / "index.md")
    targets = {t.split("#")[0] for _, t in cd.links(index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= targets, f"docs/index.md does not link {sorted(pages - targets)}"


#: A repository path named in a page's text or code (``scripts/bench/bench_map.py``,
#: ``tests/test_layers.py``, ``arrowmix/_hf/``, ``scripts/bench/bench_*.py``).
REPO_PATH = re.compile(r"(?<![\w./-])((?:scripts|tests|arrowmix|docs)/[\w./*<>-]*[\w*/])")


def test_paths_the_pages_name_exist() -> None:
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for m in REPO_PATH.finditer(text):
            path = m.group(1).rstrip("/")
            if "<" not in path and not glob.glob(str(ROOT / path)):
                line = text.count("\n", 0, m.start()) + 1
                stale.append(f"{page.relative_to(ROOT)}:{line}: {path}")
    assert stale == [], "paths that do not exist (moved?):\n" + "\n".join(stale)


def test_pytest_runs_the_doc_examples() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = config["tool"]["pytest"]["ini_options"]
    assert "docs" in options["testpaths"]
    assert "--doctest-glob=*.md" in options["addopts"]


# ---- links ----------------------------------------------------------------------------------


def test_missing_file_is_reported_with_its_line(repo: Repo) -> None:
    repo.write("docs/a.md", "# A\n\nSee [b](b.md) and\n[the guide](guide/missing.md).\n")
    repo.write("docs/b.md", "# B\n")
    assert repo.problems() == [
        "docs/a.md:4: link 'guide/missing.md': docs/guide/missing.md does not exist"
    ]


def test_links_resolve_relative_to_the_page(repo: Repo) -> None:
    repo.write("README.md", "[docs](docs/a.md), [src](pkg/), [root](/docs/a.md)\n")
    repo.write("docs/a.md", "[readme](../README.md) ![logo](img/logo.png)\n[ref]: ../pkg/mod.py\n")
    repo.write("docs/img/logo.png", "")
    repo.write("pkg/mod.py", "")
    assert repo.problems() == []
    repo.write("docs/a.md", "[readme](README.md) ![logo](logo.png)\n[ref]: pkg/mod.py\n")
    assert repo.problems() == [
        "docs/a.md:1: link 'README.md': docs/README.md does not exist",
        "docs/a.md:1: link 'logo.png': docs/logo.png does not exist",
        "docs/a.md:2: link 'pkg/mod.py': docs/pkg/mod.py does not exist",
    ]


def test_external_links_are_not_checked_but_escapes_are(repo: Repo) -> None:
    repo.write(
        "docs/a.md",
        "[x](https://example.org/nope.md) [m](mailto:a@b.c) <https://x.y>\n"
        "[up](../../outside.md)\n",
    )
    assert repo.problems() == ["docs/a.md:2: link '../../outside.md' points outside the repository"]


def test_links_in_code_and_comments_are_ignored(repo: Repo) -> None:
    repo.write(
        "docs/a.md",
        """\
        Inline `[x](missing.md)` and ``a `[y](missing.md)` b``.
        <!-- [z](missing.md) -->
        '''text
        [w](missing.md)
        '''
        ~~~
        [v](missing.md)
        ~~~
        [real](gone.md)
        """,
    )
    assert repo.problems() == ["docs/a.md:9: link 'gone.md': docs/gone.md does not exist"]


def test_anchors_follow_github_slugs(repo: Repo) -> None:
    repo.write(
        "docs/b.md",
        """\
        # Streams: fast and *exactly* resumable
        ## `arrowmix cache ls`
        ## Usage
        ## Usage
        Setext title
        ------------
        <a id="custom"></a>
        '''bash
        # not a heading
        '''
        """,
    )
    good = [
        "b.md#streams-fast-and-exactly-resumable",
        "b.md#arrowmix-cache-ls",
        "b.md#usage",
        "b.md#usage-1",
        "b.md#setext-title",
        "b.md#custom",
    ]
    repo.write("docs/a.md", "\n".join(f"[{i}]({t})" for i, t in enumerate(good)) + "\n")
    assert repo.problems() == []
    repo.write("docs/a.md", "[a](b.md#usage-2)\n[b](b.md#not-a-heading)\n[c](#local)\n# Local\n")
    assert repo.problems() == [
        "docs/a.md:1: link 'b.md#usage-2': no heading #usage-2 in docs/b.md",
        "docs/a.md:2: link 'b.md#not-a-heading': no heading #not-a-heading in docs/b.md",
    ]
    repo.write("docs/a.md", "[c](#elsewhere)\n# Local\n")
    assert repo.problems() == ["docs/a.md:1: link '#elsewhere': no heading #elsewhere in this page"]


def test_pending_pages_are_notes_until_they_exist(repo: Repo) -> None:
    repo.write("README.md", "[bench](docs/benchmarks.md#results)\n")
    report = cd.check(repo.root, ["docs/benchmarks.md"])
    assert report.problems == []
    assert [str(n) for n in report.notes] == [
        "README.md:1: link 'docs/benchmarks.md#results': "
        "pending page docs/benchmarks.md is not written yet"
    ]
    repo.write("docs/benchmarks.md", "# Benchmarks\n")
    assert repo.problems(("docs/benchmarks.md",)) == [
        "README.md:1: link 'docs/benchmarks.md#results': no heading #results in docs/benchmarks.md"
    ]


# ---- Python blocks --------------------------------------------------------------------------


def test_python_block_syntax_error_names_the_line(repo: Repo) -> None:
    repo.write(
        "docs/a.md",
        """\
        Text.

        '''python
        import arrowmix as am
        ds = am.Dataset.from_dict({"a": [1]}
        '''
        """,
    )
    (problem,) = repo.problems()
    assert problem.startswith("docs/a.md:5: Python code does not compile:")


def test_skip_comment_and_other_languages_are_not_compiled(repo: Repo) -> None:
    repo.write(
        "docs/a.md",
        """\
        <!-- skip: pseudo-code -->

        '''python
        for each row: do something
        '''
        '''bash
        for x in $(ls); do echo $x; done
        '''
        '''python
        ok = True
        '''
        """,
    )
    assert repo.problems() == []
    assert cd.check(repo.root).python_blocks == 1


def test_doctest_blocks_compile_each_example(repo: Repo) -> None:
    repo.write(
        "docs/a.md",
        """\
        '''python
        >>> def f(x):
        ...     return x +
        >>> f(1)
        2

        '''
        """,
    )
    (problem,) = repo.problems()
    assert problem.startswith("docs/a.md:3: Python code does not compile:")


def test_doctest_block_needs_a_blank_line_before_the_fence(repo: Repo) -> None:
    repo.write("docs/a.md", "'''python\n>>> 1 + 1\n2\n'''\n")
    assert repo.problems() == [
        "docs/a.md:3: doctest block must end with a blank line before its closing fence "
        "(doctest would read the fence as expected output)"
    ]


def test_bad_doctest_prompt_and_unclosed_fence(repo: Repo) -> None:
    repo.write("docs/a.md", "'''python\n>>>x = 1\n\n'''\n\n~~~python\nx = (\n")
    problems = repo.problems()
    assert problems[0].startswith("docs/a.md:1: doctest block does not parse:")
    assert problems[1:] == [
        "docs/a.md:6: code fence is never closed",
        "docs/a.md:7: Python code does not compile: '(' was never closed",
    ]


# ---- command line ---------------------------------------------------------------------------


def test_main_exit_status_and_output(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write("docs/a.md", "# A\n[ok](#a)\n")
    assert cd.main([str(repo.root)]) == 0
    assert "check_docs: OK (1 files, 1 links, 0 Python blocks)" in capsys.readouterr().out
    repo.write("README.md", "[gone](docs/gone.md)\n")
    assert cd.main([str(repo.root)]) == 1
    out = capsys.readouterr().out
    assert "1 problem(s)" in out
    assert "README.md:1: link 'docs/gone.md': docs/gone.md does not exist" in out
    assert cd.main([str(repo.root), "--pending", "docs/gone.md"]) == 0
    assert "note: README.md:1:" in capsys.readouterr().out


def test_slugify_examples() -> None:
    assert cd.slugify("Streams: fast and exactly resumable") == "streams-fast-and-exactly-resumable"
    explain = "`arrowmix fingerprint --explain A B`"
    assert cd.slugify(explain) == "arrowmix-fingerprint---explain-a-b"
    assert cd.slugify("[Link](x.md) & <b>tag</b>") == "link--tag"
