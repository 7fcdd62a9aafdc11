"""A load killed (kill -9) while it writes its chunks leaves nothing a later load takes as done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import arrowmix as am

ROOT = Path(__file__).resolve().parents[2]
ROWS = 2_000

# The child loads SRC into CACHE and kills itself with SIGKILL: at "sync", in the thread that
# syncs the chunk just renamed into place; at "rename-K", just before the K-th rename into the
# ingested corpus's directory (1: the chunk, 2: the manifest, 3: the marker).
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import arrowmix as am
    from arrowmix._storage import writeback

    src, cache, at = sys.argv[1:4]
    renames = [0]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if at == "sync":
        writeback.fsync_file = lambda path: die()
    else:
        replace = os.replace

        def counted(a, b, *args, **kwargs):
            if os.path.basename(os.path.dirname(os.path.dirname(b))) == "ingested":
                renames[0] += 1
                if f"rename-{renames[0]}" == at:
                    die()
            return replace(a, b, *args, **kwargs)

        os.replace = counted
    am.load_dataset("json", data_files=src, split="train", cache_dir=cache)
    """
)


def _corpus_dirs(cache: Path) -> list[Path]:
    return [p for p in (cache / "ingested").iterdir() if p.is_dir()]


@pytest.mark.slow  # a child process per kill point
@pytest.mark.parametrize("at", ["sync", "rename-1", "rename-2", "rename-3"])
def test_a_killed_load_is_done_again_by_the_next(tmp_path: Path, at: str) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text("".join(f'{{"id": {i}, "text": "row {i}"}}\n' for i in range(ROWS)))
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(src), str(cache), at], env=env, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    (out,) = _corpus_dirs(cache)
    assert not (out / "_COMPLETE.json").exists()  # nothing claims the chunks are done
    if at != "rename-1":
        assert (out / "chunk-00000.arrow").exists()  # renamed into place, maybe not durable
    ds = am.load_dataset("json", data_files=str(src), split="train", cache_dir=str(cache))
    assert ds["id"] == list(range(ROWS))
    assert ds["text"][-1] == f"row {ROWS - 1}"
    assert (out / "_COMPLETE.json").exists()
    clean = am.load_dataset(
        "json", data_files=str(src), split="train", cache_dir=str(tmp_path / "clean")
    )
    assert ds.fingerprint == clean.fingerprint
