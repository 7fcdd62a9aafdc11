from __future__ import annotations

import json
import os
import time

import filelock
import pytest

import arrowmix as am
from arrowmix._cache import inuse
from arrowmix._cli.main import main

FP1, FP2, FP3 = "1" * 16, "2" * 16, "3" * 16


def test_one_line_per_entry_aligned_newest_first_with_a_total(tmp_path, make_cache, capsys):
    am.write_chunks(({"n": i} for i in range(5)), tmp_path)
    seg = make_cache(FP1, rows=5, segments=4, present=3, age=10 * 86400, parent=FP2)
    ix = make_cache(FP2, kind="indices", rows=7, age=180)
    flat = make_cache(FP3, kind="flatten", rows=3, age=2 * 3600)
    assert main(["cache", "ls", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "FINGERPRINT", "KIND", "PARENT", "ROWS", "FILES", "SIZE", "LAST", "USED", "STATUS"
    ]  # fmt: skip
    assert [line.split()[:5] for line in out[1:4]] == [
        [FP2, "indices", "a" * 16, "7", "1"],
        [FP3, "flatten", "a" * 16, "3", "1"],
        [FP1, "map", FP2, "15", "3/4"],
    ]
    assert "3 min ago" in out[1] and "2 h ago" in out[2] and "10 days ago" in out[3]
    assert out[3].endswith("incomplete")
    for column, cells in (("KIND", ["indices", "flatten", "map"]), ("PARENT", ["a" * 16] * 2)):
        at = out[0].index(column)
        assert [line[at:].split()[0] for line in out[1 : 1 + len(cells)]] == cells
    total = sum(os.path.getsize(p) for p in seg + ix + flat)
    assert out[4] == (
        f"3 entries, 5 files, {total / 1024:.1f} KiB = {total / 1000:.1f} KB in {tmp_path}"
    )
    assert len(out) == 5


def test_status_column(tmp_path, make_cache, capsys):
    make_cache(FP1)
    (held,) = make_cache(FP2)
    (tmp_path / f"cache-{FP3}.arrow").write_bytes(b"garbage")
    (tmp_path / f"tmp-{os.getpid()}-0a1b2c3d-cache-{FP3}.arrow.partial").write_bytes(b"x")
    (tmp_path / f"tmp-999999999-0a1b2c3d-cache-{FP1}.arrow.partial").write_bytes(b"x")
    with filelock.FileLock(str(tmp_path / f"cache-{FP1}.lock")), inuse.hold(held):
        assert main(["cache", "ls", str(tmp_path)]) == 0
    rows = {
        (line.split()[0], line.split()[1]): line for line in capsys.readouterr().out.splitlines()
    }
    assert rows[(FP1, "map")].endswith("locked")
    assert rows[(FP2, "map")].endswith("in use")
    assert rows[(FP3, "?")].endswith("unreadable")
    assert rows[(FP3, "tmp")].endswith(f"writing (pid {os.getpid()})")
    assert rows[(FP1, "tmp")].endswith("locked")  # writer pid gone, but its lock is held


def test_json_output(tmp_path, make_cache, capsys):
    before = time.time()
    paths = make_cache(FP1, rows=4, segments=2, age=60)
    after = time.time()
    assert main(["cache", "ls", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cache_dir"] == str(tmp_path)
    (e,) = doc["entries"]
    assert e["fingerprint"] == FP1 and e["kind"] == "map" and e["parent"] == "a" * 16
    assert e["rows"] == 8 and e["files"] == paths and e["num_segments"] == 2
    assert e["size_bytes"] == doc["total_bytes"] == sum(os.path.getsize(p) for p in paths)
    assert doc["total_files"] == 2 and e["busy"] is None and e["problem"] is None
    assert before - 60 - 1 <= e["last_used"] <= after - 60 + 1  # however long it all took


def test_empty_directory(tmp_path, capsys):
    assert main(["cache", "ls", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"0 entries, 0 files, 0 B in {tmp_path}\n"


def test_default_directory_is_the_cache_root(tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    monkeypatch.setenv("ARROWMIX_CACHE", str(root))
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "ls"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"cache root {root} ($ARROWMIX_CACHE; set ARROWMIX_CACHE to move it)"
    assert out[1] == f"0 entries, 0 files, 0 B in {root}"
    assert "stored beside its chunk files" in out[2]


def test_default_listing_shows_the_cache_root_tree_and_corpora_here(quickstart_dir, capsys):
    """After the quickstart: what the cache root holds, and the corpora of the current dir."""
    import arrowmix as am

    root, web = quickstart_dir
    mem = am.Dataset.from_dict({"x": [1, 2, 3]}).map(lambda r: {"y": r["x"] * 2})
    os.mkdir("notes")  # a directory without results is not listed
    assert main(["cache", "ls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    records = [ln for ln in lines if ln.split()[:3] == ["verified", "-", "verified"]]
    assert len(records) == 1  # the records of checked files, one line
    out = [ln for ln in lines if ln not in records]
    assert out[0].startswith(f"cache root {root} ")
    assert out[1].split()[:2] == ["DIR", "FINGERPRINT"]
    assert out[2].split()[:3] == [".", mem.fingerprint, "map"]  # in-memory data: the cache root
    assert out[3].startswith("2 entries, ") and out[3].endswith(f" in {root}")  # with records
    assert out[4].startswith("results beside the corpora in the current directory")
    assert out[5].strip().startswith("1 entry, 1 file, ")
    assert out[5].endswith(" in web_chunks") and len(out) == 6
    assert main(["cache", "ls", "web_chunks"]) == 0
    assert web.fingerprint in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arg", "message"),
    [("missing", "does not exist"), ("file.txt", "is not a directory"), ("s3://b/c", "URL")],
)
def test_bad_directory_is_an_error(tmp_path, capsys, arg, message):
    (tmp_path / "file.txt").write_text("x")
    target = arg if "://" in arg else str(tmp_path / arg)
    assert main(["cache", "ls", target]) == 1
    err = capsys.readouterr().err
    assert err.startswith("arrowmix: error: CACHE_DIR") and message in err


def test_cache_needs_a_subcommand(capsys):
    assert main(["cache"]) == 2
    assert "required" in capsys.readouterr().err


def test_lists_what_real_transforms_write(tmp_path, monkeypatch, capsys):
    from arrowmix._dataset import indices as indices_mod

    monkeypatch.setattr(indices_mod, "INDICES_FILE_MIN_ROWS", 1)
    am.write_chunks(({"n": i} for i in range(12)), tmp_path, rows_per_chunk=5)
    ds = am.Dataset.from_chunks(str(tmp_path))
    shuffled = ds.shuffle(seed=0)
    flat = shuffled.select(range(6)).flatten_indices()
    assert main(["cache", "ls", str(tmp_path), "--json"]) == 0
    entries = {e["fingerprint"]: e for e in json.loads(capsys.readouterr().out)["entries"]}
    assert entries[shuffled.fingerprint]["kind"] == "indices"
    assert entries[shuffled.fingerprint]["parent"] == ds.fingerprint
    assert entries[shuffled.fingerprint]["rows"] == 12
    assert entries[flat.fingerprint]["kind"] == "flatten"
    assert entries[flat.fingerprint]["rows"] == 6
    assert entries[shuffled.fingerprint]["created"] is not None


def test_recursive_listing_has_a_dir_column(tmp_path, make_cache, capsys):
    nested = tmp_path / "ingested" / FP3
    nested.mkdir(parents=True)
    make_cache(FP1, age=60)
    make_cache(FP2, directory=str(nested))
    assert main(["cache", "ls", str(tmp_path)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:-1]] == [FP1]
    assert main(["cache", "ls", "-r", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["DIR", "FINGERPRINT"]
    assert [line.split()[:2] for line in out[1:3]] == [[f"ingested/{FP3}", FP2], [".", FP1]]
    assert out[3].startswith("2 entries, 2 files")
    assert main(["cache", "ls", "--recursive", "--json", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["dir"] for e in doc["entries"]] == [str(nested), str(tmp_path)]
