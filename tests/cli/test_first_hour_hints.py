"""The CLI's answers to what a new user types first: each points at the command that works."""

from __future__ import annotations

import pytest

import arrowmix as am
from arrowmix._cli.main import main
from arrowmix._storage.readers import FORMATS
from tests.test_docs import ROOT


@pytest.fixture
def parent_of_a_corpus(tmp_path):
    """A directory holding one corpus (with a cached map beside its chunks), nothing itself."""
    am.write_chunks(({"x": i} for i in range(10)), tmp_path / "web")
    am.Dataset.from_chunks(str(tmp_path / "web")).map(lambda r: {"y": r["x"] + 1})
    return tmp_path


def test_cache_ls_of_a_parent_says_to_add_r(parent_of_a_corpus, capsys):
    assert main(["cache", "ls", str(parent_of_a_corpus)]) == 0
    out = capsys.readouterr().out
    assert "0 entries" in out
    assert (
        "1 entry in 1 directory below it; add -r to include it: "
        f"`arrowmix cache ls -r {parent_of_a_corpus}`" in out
    )
    assert main(["cache", "ls", "-r", str(parent_of_a_corpus)]) == 0
    assert "add -r" not in capsys.readouterr().out


def test_cleanup_cache_dry_run_of_a_parent_says_to_add_r(parent_of_a_corpus, capsys):
    assert main(["cleanup-cache", "--dry-run", str(parent_of_a_corpus)]) == 0
    out = capsys.readouterr().out
    assert f"`arrowmix cleanup-cache --dry-run -r {parent_of_a_corpus}`" in out


def test_an_empty_directory_gets_no_hint(tmp_path, capsys):
    assert main(["cache", "ls", str(tmp_path)]) == 0
    assert "add -r" not in capsys.readouterr().out


@pytest.mark.parametrize("guess", ["cleanup", "clean", "rm"])
def test_cache_cleanup_names_cleanup_cache(guess, capsys):
    assert main(["cache", guess]) == 2
    assert "use `arrowmix cleanup-cache`" in capsys.readouterr().err


def test_unknown_fingerprint_mentions_cache_dir(tmp_path, capsys):
    code = main(["fingerprint", "--explain", "1" * 16, "2" * 16, "--cache-dir", str(tmp_path)])
    assert code == 1
    assert "--cache-dir DIR" in capsys.readouterr().err


def test_cli_page_lists_every_chunk_format():
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    listed = page.split("--format {", 1)[1].split("}", 1)[0].split(",")
    assert sorted(listed) == sorted(FORMATS)
