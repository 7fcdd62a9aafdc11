"""The documentation site: built strictly with MkDocs, complete, and working in a real browser.

The site is built once per test run (shared by the xdist workers) with
``scripts/build_docs.py``. The browser test drives Debian's Chromium through its chromedriver
(``scripts/test`` installs both with apt-get when they are missing).
"""

from __future__ import annotations

import ast
import functools
import http.server
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

import arrowmix

ROOT = Path(__file__).resolve().parents[1]
FACADES = [
    "arrowmix",
    "arrowmix.stream",
    "arrowmix.testing",
    "arrowmix.exceptions",
    "arrowmix.iterable_dataset",
]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def nav_pages() -> list[str]:
    """The ``.md`` files named in the ``nav:`` of mkdocs.yml, in order."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.search(r"^nav:\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    assert nav is not None, "mkdocs.yml has no nav"
    return re.findall(r":\s*(\S+\.md)\s*$", nav.group(1), re.M)


def test_nav_lists_every_page_once() -> None:
    pages = nav_pages()
    on_disk = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(set(pages)) == on_disk, (
        f"pages missing from the nav of mkdocs.yml: {sorted(set(on_disk) - set(pages))}; "
        f"nav entries without a file: {sorted(set(pages) - set(on_disk))}"
    )
    assert len(pages) == len(set(pages)), "a page is listed twice in the nav"


# Building the site costs a minute of CPU, so the tests reading it run in the CI tier
# (ARROWMIX_TEST_SLOW=1 scripts/test); the fast tier checks the nav and the roles on the sources.
@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site; built once per run, whichever xdist worker asks first."""
    pytest.importorskip("mkdocs", reason="the docs group is not installed (scripts/docs does)")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of this run only
    out = base / "docs-site"
    with FileLock(str(base / "docs-site.lock")):
        if not (out / "index.html").exists():
            shutil.rmtree(out, ignore_errors=True)
            res = subprocess.run(
                [sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--out", str(out)],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            assert res.returncode == 0, f"docs build failed:\n{res.stdout}\n{res.stderr}"
    return out


def html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


@pytest.mark.slow  # reads the built site: see `site`
def test_every_nav_page_is_built(site: Path) -> None:
    built = {p.relative_to(site).as_posix() for p in html_pages(site)}
    assert {p.removesuffix(".md") + ".html" for p in nav_pages()} == built


@pytest.mark.slow  # reads the built site: see `site`
def test_api_reference_has_every_public_name(site: Path) -> None:
    for module_name in FACADES:
        module = importlib.import_module(module_name)
        page = site / "api" / f"{module_name.rsplit('.', 1)[-1]}.html"
        ids = set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
        missing = [
            n for n in module.__all__ if n != "__version__" and f"{module_name}.{n}" not in ids
        ]
        assert not missing, f"{page.name} does not document {missing}"
    dataset = (site / "api" / "arrowmix.html").read_text(encoding="utf-8")
    for method in ("map", "filter", "to_stream", "column"):
        assert f'id="arrowmix.Dataset.{method}"' in dataset, method


@pytest.mark.slow  # reads the built site: see `site`
def test_cli_reference_is_the_real_help(site: Path) -> None:
    from arrowmix._cli.main import build_parser

    text = (site / "api" / "cli.html").read_text(encoding="utf-8")
    assert "cli-help" not in text
    for command in ("chunk", "cache ls", "cleanup-cache", "fingerprint"):
        assert f"<code>arrowmix {command}</code>" in text, command
    assert "--older-than" in text and "--chunk-size" in text
    assert build_parser().prog == "arrowmix"


@pytest.mark.slow  # reads the built site: see `site`
def test_local_links_and_anchors_resolve(site: Path) -> None:
    pages = html_pages(site)
    ids = {p: set(re.findall(r'id="([^"]+)"', p.read_text(encoding="utf-8"))) for p in pages}
    checked = 0
    for page in pages:
        for href in re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", href) or href.startswith("//"):
                continue
            target, _, anchor = href.partition("#")
            dest = (page.parent / target).resolve() if target else page
            assert dest.exists(), f"{page.relative_to(site)}: broken link {href}"
            if anchor and dest.suffix == ".html" and dest in ids:
                assert anchor in ids[dest], f"{page.relative_to(site)}: no #{anchor} in {dest}"
            checked += 1
    assert checked > 200


def test_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """The strict build, not only the checker, rejects a page linking a missing one."""
    pytest.importorskip("mkdocs")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[gone](gone.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nnav:\n  - index.md\n")
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "s")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode != 0 and "gone.md" in res.stderr


# ---- in a real browser ----------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(
            f"{CHROMIUM} or {CHROMEDRIVER} is missing: `ARROWMIX_INSTALL_BROWSER=1 "
            "ARROWMIX_TEST_SLOW=1 scripts/test` installs them (apt-get, as root) and runs this"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument("--window-size=1280,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(predicate: object, timeout: float = 30.0) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()  # type: ignore[operator]
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


@pytest.mark.integration
@pytest.mark.slow  # the CI tier: ARROWMIX_TEST_SLOW=1 scripts/test
def test_site_in_a_browser(site: Path, served: str, browser: object) -> None:
    """Every page loads without console errors and links the repository; search finds the
    main names when the site is opened from the file system; code is coloured."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver: object = browser
    errors = []
    for page in html_pages(site):
        rel = page.relative_to(site).as_posix()
        driver.get(f"{served}/{rel}")  # type: ignore[attr-defined]
        ready = _wait(
            lambda: driver.execute_script("return document.readyState") == "complete"  # type: ignore[attr-defined]
        )
        assert ready, f"{rel} did not finish loading"
        assert driver.find_elements(By.CSS_SELECTOR, "nav.md-nav"), f"{rel}: no navigation"  # type: ignore[attr-defined]
        assert driver.find_elements(By.CSS_SELECTOR, "a.md-social__link[href*='github.com']"), (  # type: ignore[attr-defined]
            f"{rel}: no link to the repository"
        )
        errors += [
            f"{rel}: {e['message']}"
            for e in driver.get_log("browser")  # type: ignore[attr-defined]
            if e["level"] == "SEVERE"
        ]
    assert not errors, "console errors:\n" + "\n".join(errors)

    # Opened from the file system, as the README says (build/docs/index.html): search works.
    driver.get(site.joinpath("index.html").as_uri())  # type: ignore[attr-defined]
    for query, expected in (
        ("map", "caching.html"),
        ("mix", "mixing.html"),
        ("cleanup-cache", "cli.html"),
    ):
        box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")  # type: ignore[attr-defined]
        if not box.is_displayed():  # narrow window: the search box opens from a button
            driver.find_element(By.CSS_SELECTOR, "label[for='__search']").click()  # type: ignore[attr-defined]
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(query)

        def hrefs() -> list[str]:
            return list(
                driver.execute_script(  # type: ignore[attr-defined]
                    "return [...document.querySelectorAll('.md-search-result__item a')]"
                    ".map(a => a.href)"
                )
            )

        found = _wait(lambda: [h for h in hrefs() if expected in h])  # noqa: B023
        assert found, f"search for {query!r} found no {expected}: {hrefs()[:10]}"
        assert all(h.startswith("file://") for h in found)
        box.send_keys(Keys.ESCAPE)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]  # type: ignore[attr-defined]
    assert not errors, f"console errors from the file system: {errors}"

    driver.get(f"{served}/quickstart.html")  # type: ignore[attr-defined]
    colours = driver.execute_script(  # type: ignore[attr-defined]
        "const code = document.querySelector('.highlight pre code');"
        "const kw = code.querySelector('span.k, span.kn');"
        "const name = code.querySelector('span.n');"
        "return [getComputedStyle(kw).color, getComputedStyle(name).color,"
        " code.querySelectorAll('span[class]').length];"
    )
    keyword, name, spans = colours
    assert spans > 20 and keyword != name, f"code blocks are not highlighted: {colours}"


_COPY_CAPTURE = (
    "window.__copied = [];"
    "document.addEventListener('copy', e => window.__copied.push(e.target.value), true);"
)


@pytest.mark.integration
@pytest.mark.slow  # the CI tier: ARROWMIX_TEST_SLOW=1 scripts/test
def test_copy_buttons_copy_runnable_code(
    site: Path, served: str, browser: object, tmp_path: Path
) -> None:
    """The copy button of every Quickstart example copies its code alone (no ``>>>``, no
    ``...``, no output), and the copied blocks, pasted in order into a script, run."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    driver: Any = browser
    driver.get(f"{served}/quickstart.html")
    _wait(lambda: driver.execute_script("return document.readyState") == "complete")
    driver.execute_script(_COPY_CAPTURE)
    blocks = [
        b
        for b in driver.find_elements(By.CSS_SELECTOR, "div.highlight")
        if b.text.lstrip().startswith(">>>")
    ]
    assert len(blocks) >= 3
    for block in blocks:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", block)
        button = block.find_element(By.CSS_SELECTOR, "button.md-code__button")
        ActionChains(driver).move_to_element(block).pause(0.2).click(button).perform()
        n = len(blocks[: blocks.index(block) + 1])
        _wait(lambda n=n: len(driver.execute_script("return window.__copied")) == n, 10)
    copied: list[str] = driver.execute_script("return window.__copied")
    assert len(copied) == len(blocks)
    for text in copied:
        lines = text.splitlines()
        assert not [x for x in lines if x.startswith((">>>", "..."))], text
    script = tmp_path / "pasted.py"
    script.write_text("\n".join(copied) + "\n")
    res = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.slow  # reads the built site: see `site`
def test_interactive_examples_carry_their_code_for_the_copy_button(site: Path) -> None:
    """Each ``>>>`` block of the built site has a ``data-copy`` (what Material's copy button
    copies) that holds valid Python without prompts."""
    import html as html_lib

    blocks = 0
    for page in html_pages(site):
        for attrs in re.findall(r'<div class="[^"]*highlight"([^>]*)>', page.read_text("utf-8")):
            m = re.search(r'data-copy="([^"]*)"', attrs)
            if m is None:
                continue
            code = html_lib.unescape(m.group(1))
            assert ">>>" not in code.splitlines()[0], code[:200]
            compile(code, str(page), "exec")
            blocks += 1
    assert blocks > 50


@pytest.mark.slow  # reads the built site: see `site`
def test_site_works_from_the_file_system(site: Path) -> None:
    """Opened as build/docs/index.html: search index inlined, a local Worker shim, no CDN."""
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index = {") and '"location":"caching.html' in index
    assert (site / "javascripts" / "iframe-worker-shim.js").is_file()
    for page in html_pages(site):
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(site).as_posix()
        scripts = re.findall(r'<script[^>]* src="([^"]+)"', text)
        assert not [s for s in scripts if re.match(r"(https?:)?//", s)], f"{rel}: {scripts}"
        assert any(s.endswith("javascripts/iframe-worker-shim.js") for s in scripts), rel
        assert re.search(r'class="md-social__link"', text), f"{rel}: no repository link"


def _hooks() -> object:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_roles_resolve_to_documented_names() -> None:
    pytest.importorskip("griffe", reason="the docs group is not installed (scripts/docs does)")
    hooks: Any = _hooks()
    assert hooks.resolve_role("~arrowmix._dataset.column.Column", None) == "arrowmix.Column"
    assert hooks.resolve_role("FingerprintRecord", None) == "arrowmix.FingerprintRecord"
    assert hooks.resolve_role("RowSource", "x.TableRowSource") == "arrowmix.stream.RowSource"
    dataset = f"{arrowmix.Dataset.__module__}.Dataset"
    assert hooks.resolve_role("shuffle", f"{dataset}.select") == "arrowmix.Dataset.shuffle"
    assert hooks.resolve_role("arrowmix._stream.elastic", None) is None  # private: code only
    text = hooks.render_roles("Like :meth:`shuffle`; see :mod:`arrowmix._x`.", f"{dataset}.sort")
    assert text == (
        'Like <autoref identifier="arrowmix.Dataset.shuffle" optional><code>shuffle()</code>'
        "</autoref>; see `arrowmix._x`."
    )


def _blocks(page: str) -> list[str]:
    return re.findall(r"^::: (\S+)", (ROOT / "docs" / "api" / page).read_text(), re.M)


def test_api_pages_put_what_users_call_first() -> None:
    for module_name in FACADES:
        module = importlib.import_module(module_name)
        blocks = _blocks(f"{module_name.rsplit('.', 1)[-1]}.md")
        names = [b.rsplit(".", 1)[-1] for b in blocks]
        assert sorted(names) == sorted(n for n in module.__all__ if n != "__version__"), module
        page = (ROOT / "docs" / "api" / f"{module_name.rsplit('.', 1)[-1]}.md").read_text()
        # the built page's summary table of the names goes where this marker is
        assert ("<!-- api-summary -->" in page) == (len(module.__all__) > 1), module_name
    stream = _blocks("stream.md")
    assert stream[:2] == ["arrowmix.stream.Stream", "arrowmix.stream.mix"]
    text = (ROOT / "docs" / "api" / "stream.md").read_text()
    kit = text.split("## Writing your own stages and sources", 1)[1]
    for name in ("RowSource", "PassThrough", "WindowReplayStage", "ElasticRole", "SeedHolder"):
        assert f"::: arrowmix.stream.{name}\n" in kit and name not in text.split("## Writing")[0]
    assert _blocks("arrowmix.md")[:2] == ["arrowmix.Dataset", "arrowmix.write_chunks"]


def test_the_integrations_page_has_every_public_name() -> None:
    # read statically: the modules import torch and Ray, which the docs build does not install
    blocks = set(_blocks("integrations.md"))
    for path in sorted((ROOT / "arrowmix" / "integrations").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = next(
            (
                ast.literal_eval(node.value)
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "__all__" for t in node.targets)
            ),
            [],
        )
        module = f"arrowmix.integrations.{path.stem}"
        assert {f"{module}.{n}" for n in names} <= blocks, module
    assert "api/integrations.md" in nav_pages()


@pytest.mark.slow  # reads the built site: see `site`
def test_api_pages_render_roles_and_a_summary_once(site: Path) -> None:
    for module_name in FACADES:
        page = site / "api" / f"{module_name.rsplit('.', 1)[-1]}.html"
        text = page.read_text(encoding="utf-8")
        raw = re.findall(r":(?:class|meth|func|attr|mod|exc|data):(?:<code>|`)", text)
        assert not raw, f"{page.name}: raw reST roles {raw[:5]}"
        module_doc = (importlib.import_module(module_name).__doc__ or "").strip().split("\n")[0]
        assert text.count(module_doc) <= 1, f"{page.name} repeats the module summary"
        tables = 1 if len(importlib.import_module(module_name).__all__) > 1 else 0
        assert text.count("<th>what it is</th>") == tables, page.name
    dataset = (site / "api" / "arrowmix.html").read_text(encoding="utf-8")
    assert re.search(r'href="#arrowmix\.Dataset\.shuffle"[^>]*><code>shuffle\(\)</code>', dataset)
    summary = dataset.split("<th>what it is</th>", 1)[1].split("</table>", 1)[0]
    assert re.findall(r'href="#(arrowmix\.[A-Za-z_]+)"', summary)[:2] == [
        "arrowmix.Dataset",
        "arrowmix.write_chunks",
    ]


@pytest.mark.slow  # reads the built site: see `site`
def test_first_hour_pages(site: Path) -> None:
    """The tutorial shows the script the tests run; concepts, FAQ and changelog are there."""
    tutorial = (site / "tutorial.html").read_text(encoding="utf-8")
    script = (ROOT / "docs" / "examples" / "train_and_resume.py").read_text(encoding="utf-8")
    assert "include:" not in tutorial and "StatefulDataLoader" in tutorial
    assert "os.kill(os.getpid(), signal.SIGKILL)" in re.sub(r"<[^>]+>", "", tutorial)
    assert (site / "examples" / "train_and_resume.py").read_text(encoding="utf-8") == script
    concepts = (site / "concepts.html").read_text(encoding="utf-8")
    for svg in ("img/concepts-cache.svg", "img/concepts-stream.svg"):
        assert f'src="{svg}"' in concepts and (site / svg).is_file()
    faq = (site / "faq.html").read_text(encoding="utf-8")
    for anchor in (
        "why-did-it-recompute",
        "where-is-my-disk-going",
        "how-do-i-resume-on-another-world-size",
    ):
        assert f'id="{anchor}"' in faq
    assert "Checkpoint format" in (site / "changelog.html").read_text(encoding="utf-8")
    install = (site / "install.html").read_text(encoding="utf-8")
    assert all(x in install for x in ("download.pytorch.org/whl/cpu", "[ray]", "[s3]"))
