"""``cache ls`` and ``cleanup-cache`` own every cache arrowmix keeps: the corpora of
``from_generator`` and the records of verified files, with in-use protection."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import arrowmix as am
from arrowmix._cache.listing import scan
from arrowmix._cli.main import main
from arrowmix._dataset.state import state_of


def gen(n, log):
    with open(log, "a") as f:
        f.write("x")
    for i in range(n):
        yield {"i": i}


def generated(tmp_path, n=100):
    kwargs = {"n": n, "log": str(tmp_path / "calls")}
    return am.Dataset.from_generator(gen, gen_kwargs=kwargs, cache_dir=tmp_path / "c")


def calls(tmp_path):
    log = tmp_path / "calls"
    return log.read_text() if log.exists() else ""


def corpora(root):
    return {e.fingerprint: e for e in scan(str(root)) if e.kind == "generated"}


def test_cache_ls_lists_generated_corpora_with_rows_and_size(tmp_path, capsys):
    ds = generated(tmp_path)
    found = corpora(tmp_path / "c")
    (entry,) = found.values()
    assert entry.rows == 100 and entry.busy == "in use by an open dataset"
    assert entry.size == sum(
        os.path.getsize(os.path.join(entry.paths[0], n)) for n in os.listdir(entry.paths[0])
    )
    assert main(["cache", "ls", str(tmp_path / "c"), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["entries"]
    assert any(e["kind"] == "generated" and e["fingerprint"] == entry.fingerprint for e in listed)
    del ds


def test_cleanup_max_size_0_removes_unused_corpora_and_keeps_one_in_use(tmp_path, capsys):
    kept = generated(tmp_path, 100)
    generated(tmp_path, 200)  # dropped at once: not in use
    assert calls(tmp_path) == "xx"
    assert main(["cleanup-cache", str(tmp_path / "c"), "--max-size", "0"]) == 0
    out = capsys.readouterr().out
    left = corpora(tmp_path / "c")
    assert list(left) == [os.path.basename(os.path.dirname(state_of(kept).files[0]))]
    assert "in use by an open dataset" in out
    assert kept["i"] == list(range(100))  # the kept corpus is whole
    assert generated(tmp_path, 200)["i"] == list(range(200))  # generated again
    assert calls(tmp_path) == "xxx"
    del kept
    assert main(["cleanup-cache", str(tmp_path / "c")]) == 0
    assert corpora(tmp_path / "c") == {}


def test_cleanup_leaves_a_corpus_being_generated(tmp_path):
    from arrowmix._cache.lock import fingerprint_lock

    generated(tmp_path)
    (entry,) = corpora(tmp_path / "c").values()
    with fingerprint_lock(str(tmp_path / "c" / "generated"), entry.fingerprint):
        assert main(["cleanup-cache", str(tmp_path / "c")]) == 0
        assert list(corpora(tmp_path / "c")) == [entry.fingerprint]
    assert main(["cleanup-cache", str(tmp_path / "c")]) == 0
    assert corpora(tmp_path / "c") == {}


def dead_pid():
    return int(subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True, capture_output=True, text=True,
    ).stdout)  # fmt: skip


def test_verified_records_are_listed_and_stale_ones_and_dead_temporaries_removed(
    tmp_path, monkeypatch
):
    root = tmp_path / "root"
    monkeypatch.setenv("ARROWMIX_CACHE", str(root))
    corpus = tmp_path / "corpus"
    am.write_chunks(({"n": i} for i in range(10)), corpus)
    live_dir = tmp_path / "live"
    gone_dir = tmp_path / "gone"
    for d in (live_dir, gone_dir):
        am.Dataset.from_dict({"n": [1, 2]}).save_to_disk(str(d))
        am.load_from_disk(str(d)).map(lambda r: {"m": r["n"]})
    verified = root / "verified"
    records = sorted(os.listdir(verified))
    assert records, "the checks above record what they verified"
    shutil.rmtree(gone_dir)
    dead = verified / f"dir-{'0' * 16}.json.{dead_pid()}.0a1b2c3d.tmp"
    live = verified / f"dir-{'1' * 16}.json.{os.getpid()}.0a1b2c3d.tmp"
    dead.write_text("{")
    live.write_text("{")
    listed = [e for e in scan(str(root)) if e.key.startswith("verified/")]
    assert {e.key.split("/", 1)[1] for e in listed} == {*records, dead.name, live.name}
    stale = {os.path.basename(e.paths[0]) for e in listed if e.stale}
    assert stale and all(name in records for name in stale)
    # --older-than spares fresh entries, never stale records or dead temporaries
    assert main(["cleanup-cache", str(root), "--older-than", "100d"]) == 0
    left = set(os.listdir(verified))
    assert dead.name not in left and live.name in left
    assert not (stale & left) and (set(records) - stale) <= left
    assert main(["cleanup-cache", str(root), "--max-size", "0"]) == 0
    assert set(os.listdir(verified)) == {live.name}  # records are a cache too
