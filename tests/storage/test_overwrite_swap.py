"""``write_chunks(overwrite=True)`` swaps a complete new corpus in; the old one is never lost.

A failure at any point (exception in the rows, kill -9) leaves the old corpus or the new one,
complete and openable (the next ``from_chunks``, ``write_chunks`` or ``cleanup-cache`` finishes
or undoes an interrupted swap), and files arrowmix did not write survive.
Also the corpus-level errors: 0 rows, a damaged manifest, ``ARROWMIX_CACHE`` on a file.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cli.main import main as cli_main
from arrowmix.exceptions import ArrowmixError

ROOT = Path(__file__).resolve().parents[2]
OLD = list(range(30))  # three chunks of 10
NEW = list(range(100, 120))  # two chunks of 10
CORPUS = {"chunk-00000.arrow", "chunk-00001.arrow", "chunk-00002.arrow", "_manifest.json"}


def _old_corpus(out: Path) -> None:
    am.write_chunks(({"v": i} for i in OLD), out, rows_per_chunk=10)
    (out / "README.md").write_text("how this corpus was made")


def _rows(out: Path) -> list[int]:
    return list(am.Dataset.from_chunks(str(out))["v"])


def test_an_exception_in_the_rows_keeps_the_old_corpus(tmp_path):
    out = tmp_path / "c"
    _old_corpus(out)

    def rows():
        yield from ({"v": i} for i in range(100, 115))
        raise RuntimeError("tokenizer failed")

    with pytest.raises(RuntimeError, match="tokenizer failed"):
        am.write_chunks(rows(), out, rows_per_chunk=10, overwrite=True)
    assert _rows(out) == OLD
    assert set(os.listdir(out)) == CORPUS | {"README.md"}


def test_an_overwrite_keeps_the_users_files(tmp_path):
    out = tmp_path / "c"
    _old_corpus(out)
    (out / "notes").mkdir()
    ds = am.Dataset.from_chunks(str(out))
    cached = ds.map(lambda b: {"w": [v * 2 for v in b["v"]]}, batched=True).cache_files[-1]
    am.write_chunks(({"v": i} for i in NEW), out, rows_per_chunk=10, overwrite=True)
    assert _rows(out) == NEW
    assert (out / "README.md").read_text() == "how this corpus was made"
    assert (out / "notes").is_dir() and os.path.exists(cached)
    assert not (out / "chunk-00002.arrow").exists()  # the old corpus's third chunk is gone
    assert ds["v"] == OLD  # a dataset still mapping the old files reads them whole


def test_an_overwrite_from_the_corpus_itself(tmp_path):
    out = tmp_path / "c"
    _old_corpus(out)
    ds = am.Dataset.from_chunks(str(out))
    am.write_chunks(ds.select(range(5)), out, rows_per_chunk=2, overwrite=True)
    assert _rows(out) == OLD[:5]


def _foreign(path: Path) -> None:
    table = pa.table({"v": [1]})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def test_a_chunk_file_arrowmix_did_not_write_is_not_replaced(tmp_path):
    _foreign(tmp_path / "chunk-00000.arrow")
    before = (tmp_path / "chunk-00000.arrow").read_bytes()
    with pytest.raises(FileExistsError) as info:
        am.write_chunks(({"v": i} for i in NEW), tmp_path, overwrite=True)
    assert isinstance(info.value, ArrowmixError) and "chunk-00000.arrow" in str(info.value)
    assert (tmp_path / "chunk-00000.arrow").read_bytes() == before


# The child overwrites OLD with NEW. It kills itself with SIGKILL just before its ``kill_at``-th
# change (rename, replace or unlink) of a name directly in the corpus directory, or, with
# ``kill_at`` 0, while the rows are still being produced.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import arrowmix as am
    out, kill_at = sys.argv[1], int(sys.argv[2])
    seen = [0]

    def counted(real, at):
        def call(*args, **kwargs):
            path = os.fspath(args[at])
            if os.path.dirname(os.path.abspath(path)) == out:
                seen[0] += 1
                if seen[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return call

    os.rename, os.replace = counted(os.rename, 1), counted(os.replace, 1)
    os.unlink, os.remove = counted(os.unlink, 0), counted(os.remove, 0)

    def rows():
        for i in range(100, 120):
            if kill_at == 0 and i == 115:
                os.kill(os.getpid(), signal.SIGKILL)
            yield {"v": i}

    am.write_chunks(rows(), out, rows_per_chunk=10, overwrite=True)
    """
)


def _killed_overwrite(out: Path, kill_at: int) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(out), str(kill_at)], env=env, timeout=120, check=False
    )
    return proc.returncode


def _recover_by(how: str, out: Path) -> None:
    if how == "cleanup-cache":
        assert cli_main(["cleanup-cache", str(out)]) == 0
    elif how == "write_chunks":
        am.write_chunks(({"v": i} for i in range(7)), out.parent / "elsewhere")
        am.write_chunks(({"v": i} for i in NEW), out, rows_per_chunk=10, overwrite=True)


@pytest.mark.parametrize(
    ("kill_at", "how"),
    # each kill point once in the fast tier, cleanup-cache at 3 and write_chunks at 4; the
    # cleanup after a kill before the swap in the CI tier
    [(0, "from_chunks"), pytest.param(0, "cleanup-cache", marks=pytest.mark.slow)]
    + [(k, "from_chunks") for k in range(1, 6)]
    + [(3, "cleanup-cache"), (4, "write_chunks")],
)
def test_a_killed_overwrite_leaves_one_whole_corpus(tmp_path, kill_at, how, capsys):
    out = tmp_path / "c"
    _old_corpus(out)
    assert _killed_overwrite(out, kill_at) == -signal.SIGKILL
    _recover_by(how, out)
    rows = _rows(out)
    assert rows in (OLD, NEW)
    if kill_at == 0:
        assert rows == OLD
    assert (out / "README.md").read_text() == "how this corpus was made"
    names = set(os.listdir(out)) - {"README.md"}
    assert names == (CORPUS if rows == OLD else CORPUS - {"chunk-00002.arrow"}), names


BLOCKED = textwrap.dedent(
    """
    import os, sys, time
    import arrowmix as am
    out, gate = sys.argv[1:3]

    def rows():
        for i in range(100, 120):
            if i == 115:
                print("ready", flush=True)
                while not os.path.exists(gate):
                    time.sleep(0.02)
            yield {"v": i}

    am.write_chunks(rows(), out, rows_per_chunk=10, overwrite=True)
    """
)


def test_a_live_writer_is_left_alone(tmp_path, capsys):
    out, gate = tmp_path / "c", tmp_path / "gate"
    _old_corpus(out)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED, str(out), str(gate)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert _rows(out) == OLD  # the old corpus opens while the new one is written
        assert cli_main(["cleanup-cache", str(out)]) == 0
        gate.touch()
        assert proc.wait(timeout=60) == 0
    finally:
        gate.touch()
        if proc.poll() is None:
            time.sleep(1)
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert _rows(out) == NEW


# -- item 12: zero rows, the manifest, the cache root ------------------------------------------


def test_zero_rows_reopen_as_an_empty_dataset(tmp_path):
    am.write_chunks(iter([]), tmp_path / "none")
    assert len(am.Dataset.from_chunks(str(tmp_path / "none"))) == 0
    schema = pa.schema([("text", pa.string()), ("n", pa.int64())])
    am.write_chunks(schema.empty_table(), tmp_path / "typed")
    typed = am.Dataset.from_chunks(str(tmp_path / "typed"))
    assert len(typed) == 0 and typed.column_names == ["text", "n"]
    assert typed.schema.field("n").type == pa.int64()
    filtered = am.Dataset.from_dict({"n": [1, 2]}).filter(lambda r: False)
    am.write_chunks(filtered, tmp_path / "filtered")
    assert am.Dataset.from_chunks(str(tmp_path / "filtered")).column_names == ["n"]
    _old_corpus(tmp_path / "c")
    am.write_chunks(iter([]), tmp_path / "c", overwrite=True)
    assert len(am.Dataset.from_chunks(str(tmp_path / "c"))) == 0


def test_a_truncated_manifest_is_damaged_not_missing(tmp_path):
    am.write_chunks(({"v": i} for i in OLD), tmp_path, rows_per_chunk=10)
    manifest = tmp_path / "_manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:40])
    with pytest.raises(ArrowmixError) as info:
        am.Dataset.from_chunks(str(tmp_path))
    message = str(info.value)
    assert str(manifest) in message and "damaged" in message and "missing" not in message


def test_a_directory_in_the_manifests_place(tmp_path):
    am.write_chunks(({"v": i} for i in OLD), tmp_path, rows_per_chunk=10)
    os.unlink(tmp_path / "_manifest.json")
    (tmp_path / "_manifest.json").mkdir()
    with pytest.raises(ArrowmixError) as info:
        am.Dataset.from_chunks(str(tmp_path))
    assert str(tmp_path / "_manifest.json") in str(info.value)
    assert "directory" in str(info.value)
    with pytest.raises(ArrowmixError) as info:
        am.write_chunks(({"v": i} for i in NEW), tmp_path, overwrite=True)
    assert str(tmp_path / "_manifest.json") in str(info.value)
    assert (tmp_path / "_manifest.json").is_dir()


def test_arrowmix_cache_on_a_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "cachefile").write_text("not a directory")
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "cachefile"))
    with pytest.raises(ArrowmixError) as info:
        am.Dataset.from_dict({"v": [1, 2]}).map(lambda r: {"w": r["v"]})
    assert isinstance(info.value, NotADirectoryError)
    assert "ARROWMIX_CACHE" in str(info.value) and str(tmp_path / "cachefile") in str(info.value)
    assert (tmp_path / "cachefile").read_text() == "not a directory"


def test_a_full_disk_during_an_overwrite_keeps_the_old_corpus(small_disk):
    out = small_disk("512k") / "c"
    _old_corpus(out)
    with pytest.raises(OSError, match="chunk-0000") as info:
        am.write_chunks(({"v": i, "t": "x" * 1000} for i in range(2000)), out, overwrite=True)
    assert info.value.errno == errno.ENOSPC
    assert _rows(out) == OLD
    assert set(os.listdir(out)) == CORPUS | {"README.md"}
