from __future__ import annotations

import os
import subprocess
import sys

import filelock
import pytest

import arrowmix as am
from arrowmix._cache import inuse
from arrowmix._cli.main import main

FP = [f"{i:x}" * 16 for i in range(1, 8)]
DAY = 86400


def dead_pid():
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out)


@pytest.fixture
def populated(tmp_path, make_cache):
    """Chunks, three cache entries, lock/foreign files and two temporary files."""
    am.write_chunks(({"n": i} for i in range(5)), tmp_path)
    files = {
        "old": make_cache(FP[0], segments=3, age=10 * DAY),
        "mid": make_cache(FP[1], kind="indices", age=3 * DAY),
        "new": make_cache(FP[2], age=60),
    }
    stale = tmp_path / f"tmp-{dead_pid()}-0a1b2c3d-cache-{FP[3]}.arrow.partial"
    live = tmp_path / f"tmp-{os.getpid()}-0a1b2c3d-cache-{FP[4]}.arrow.partial"
    stale.write_bytes(b"s" * 100)
    live.write_bytes(b"l" * 100)
    (tmp_path / f"cache-{FP[5]}.lock").write_bytes(b"")
    (tmp_path / "cache-notes.txt").write_bytes(b"x")
    files["stale"], files["live"] = [str(stale)], [str(live)]
    return files


def lines(out, prefix):
    return [line.split("  ")[1] for line in out.splitlines() if line.startswith(prefix + "  ")]


def size(paths):
    return sum(os.path.getsize(p) for p in paths)


def test_no_filter_removes_every_cache_file_and_stale_temp(tmp_path, populated, capsys):
    doomed = populated["old"] + populated["mid"] + populated["new"] + populated["stale"]
    freed = size(doomed)
    assert main(["cleanup-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert sorted(lines(out, "removed")) == sorted(doomed)
    sizes = f"{freed / 1024:.1f} KiB = {freed / 1000:.1f} KB ({freed} bytes)"
    assert out.splitlines()[-1] == f"Freed {sizes} by removing 6 files."
    assert lines(out, "removed lock") == [str(tmp_path / f"cache-{FP[5]}.lock")]  # idle
    assert sorted(os.listdir(tmp_path)) == sorted(
        [
            "_manifest.json",
            "cache-notes.txt",
            "chunk-00000.arrow",
            os.path.basename(populated["live"][0]),
        ]
    )


def test_dry_run_prints_the_same_and_removes_nothing(tmp_path, populated, capsys):
    before = sorted(os.listdir(tmp_path))
    assert main(["cleanup-cache", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert sorted(lines(out, "would remove")) == sorted(
        populated["old"] + populated["mid"] + populated["new"] + populated["stale"]
    )
    assert "Would free" in out.splitlines()[-1] and not lines(out, "removed")
    assert sorted(os.listdir(tmp_path)) == before


def test_older_than(tmp_path, populated, capsys):
    assert main(["cleanup-cache", str(tmp_path), "--older-than", "7d"]) == 0
    out = capsys.readouterr().out
    assert sorted(lines(out, "removed")) == sorted(populated["old"] + populated["stale"])
    assert "(last used 10d ago, older than 7d)" in out
    assert main(["cleanup-cache", str(tmp_path), "--older-than", "1d12h"]) == 0
    assert lines(capsys.readouterr().out, "removed") == populated["mid"]
    assert os.path.exists(populated["new"][0])


def test_max_size_removes_least_recently_used_first(tmp_path, populated, capsys):
    budget = size(populated["new"]) + size(populated["mid"])
    assert main(["cleanup-cache", str(tmp_path), "--max-size", str(budget)]) == 0
    assert sorted(lines(capsys.readouterr().out, "removed")) == sorted(
        populated["stale"] + populated["old"]
    )
    assert main(["cleanup-cache", str(tmp_path), "--max-size", f"{budget - 1}B"]) == 0
    assert lines(capsys.readouterr().out, "removed") == populated["mid"]
    assert main(["cleanup-cache", str(tmp_path), "--max-size", "1GB"]) == 0
    assert lines(capsys.readouterr().out, "removed") == []
    assert os.path.exists(populated["new"][0])


def test_keep(tmp_path, populated, capsys):
    args = ["cleanup-cache", str(tmp_path), "--keep", FP[0].upper(), "--keep", FP[2]]
    assert main(args) == 0
    assert sorted(lines(capsys.readouterr().out, "removed")) == sorted(
        populated["mid"] + populated["stale"]
    )
    assert all(os.path.exists(p) for p in populated["old"] + populated["new"])


def test_keep_takes_several_fingerprints(tmp_path, populated, capsys):
    assert main(["cleanup-cache", str(tmp_path), "--dry-run", "--keep", FP[0], FP[1]]) == 0
    assert sorted(lines(capsys.readouterr().out, "would remove")) == sorted(
        populated["new"] + populated["stale"]
    )


def test_locked_and_held_entries_are_kept_and_said_so(tmp_path, populated, capsys):
    with filelock.FileLock(str(tmp_path / f"cache-{FP[0]}.lock")), inuse.hold(populated["mid"][0]):
        assert main(["cleanup-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert sorted(lines(out, "removed")) == sorted(populated["new"] + populated["stale"])
    assert sorted(lines(out, "kept")) == sorted(populated["old"] + populated["mid"])
    assert f"kept  {populated['mid'][0]}  (in use by an open dataset)" in out
    assert f"kept  {populated['old'][0]}  (locked by a writer)" in out


def test_a_budget_that_cannot_be_met_is_reported(tmp_path, populated, capsys):
    with inuse.hold(populated["new"][0]):
        assert main(["cleanup-cache", str(tmp_path), "--max-size", "0"]) == 0
    out = capsys.readouterr().out
    assert "Note:" in out and "above --max-size 0 B" in out


def test_failed_removal_exits_1(tmp_path, make_cache, capsys, monkeypatch):
    (path,) = make_cache(FP[0])

    def refuse(p, *args, **kwargs):
        raise PermissionError(13, "Permission denied", p)

    monkeypatch.setattr(os, "unlink", refuse)
    assert main(["cleanup-cache", str(tmp_path)]) == 1
    monkeypatch.undo()
    captured = capsys.readouterr()
    assert f"skipped  {path}  (cannot remove: Permission denied)" in captured.out
    assert "1 file(s) could not be removed" in captured.err
    assert os.path.exists(path)


def test_default_directory_is_the_cache_root(tmp_path, make_cache, monkeypatch, capsys):
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path))
    (path,) = make_cache(FP[0])
    assert main(["cleanup-cache"]) == 0
    assert lines(capsys.readouterr().out, "removed") == [path]


def test_default_directory_names_the_corpora_here_it_leaves(quickstart_dir, capsys):
    """After the quickstart, a cleanup of the cache root says where the map results are."""
    assert main(["cleanup-cache", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == (
        "results beside the corpora in the current directory "
        "(not included: `arrowmix cleanup-cache --dry-run DIR` for one):"
    )
    assert out[-1].strip().startswith("1 entry, 1 file, ") and out[-1].endswith(" in web_chunks")
    assert main(["cleanup-cache", "--dry-run", "web_chunks"]) == 0  # named: no hint
    out = capsys.readouterr().out
    assert "web_chunks/cache-" in out and "current directory" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "7x"], "invalid duration '7x'"),
        (["--older-than", "7"], "invalid duration '7'"),
        (["--max-size", "big"], "invalid size 'big'"),
        (["--max-size", "20XB"], "invalid size '20XB'"),
        (["--keep", "cache-1111111111111111.arrow"], "invalid fingerprint"),
        (["--keep"], "expected at least one argument"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_usage_errors_exit_2(tmp_path, populated, capsys, args, message):
    before = sorted(os.listdir(tmp_path))
    assert main(["cleanup-cache", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == before


def test_missing_directory_exits_1(tmp_path, capsys):
    assert main(["cleanup-cache", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_help_has_examples(capsys):
    assert main(["cleanup-cache", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "--older-than 7d" in out and "--max-size 20GB" in out


def test_recursive_cleanup_reaches_subdirectories(tmp_path, make_cache, capsys):
    nested = tmp_path / "ingested" / FP[6]
    nested.mkdir(parents=True)
    am.write_chunks(({"n": i} for i in range(5)), nested)
    (top,) = make_cache(FP[0], age=10 * DAY)
    (below,) = make_cache(FP[1], directory=str(nested), age=10 * DAY)
    (recent,) = make_cache(FP[2], directory=str(nested))
    assert main(["cleanup-cache", str(tmp_path), "--older-than", "7d"]) == 0
    assert lines(capsys.readouterr().out, "removed") == [top]
    assert main(["cleanup-cache", str(tmp_path), "-r", "--older-than", "7d"]) == 0
    assert lines(capsys.readouterr().out, "removed") == [below]
    assert sorted(os.listdir(nested)) == [
        "_manifest.json",
        "cache-" + FP[2] + ".arrow",
        "chunk-00000.arrow",
    ]
    assert os.path.exists(recent)
