"""What a killed job leaves in the digest cache is removed, and only when its writer is gone.

``save_to_disk`` hashes each data file it writes and remembers the digest in
``$ARROWMIX_CACHE/digests/<xx>/<key>``, written atomically through a ``tmp-<pid>-...partial``
file. A process killed during that write leaves the temporary file; the next process's digest
write in that directory, or ``arrowmix cleanup-cache`` of the cache root, removes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arrowmix._cli.main import main as cli_main
from arrowmix._storage.digests import file_digest

ROOT = Path(__file__).resolve().parents[2]

# The child saves a dataset and kills itself while writing the first digest-cache record.
KILLER = textwrap.dedent(
    """
    import contextlib, os, signal, sys
    import arrowmix as am
    import arrowmix._storage.digests as digests
    real = digests.atomic_sink

    @contextlib.contextmanager
    def dying(path, *args, **kwargs):
        with real(path, *args, **kwargs) as sink:
            sink.write(b"01234567")
            os.kill(os.getpid(), signal.SIGKILL)
            yield sink

    digests.atomic_sink = dying
    am.Dataset.from_dict({"x": list(range(10))}).save_to_disk(sys.argv[1])
    """
)


def _run(code: str, *args: str) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, timeout=120, check=False)
    return proc.returncode


def _leftovers() -> list[Path]:
    return sorted(Path(os.environ["ARROWMIX_CACHE"]).glob("digests/*/tmp-*.partial"))


def _killed_save(tmp_path: Path) -> list[Path]:
    assert _run(KILLER, str(tmp_path / "d")) == -signal.SIGKILL
    left = _leftovers()
    assert len(left) == 1, "the kill left no digest-cache temporary: the test kills too late"
    return left


def test_the_next_write_in_its_directory_removes_a_killed_saves_digest_temporary(
    tmp_path: Path,
) -> None:
    (left,) = _killed_save(tmp_path)
    shard = left.parent
    before = set(os.listdir(shard))
    # Hash new files in this process until one's record lands in the temporary's directory.
    for i in range(4000):
        f = tmp_path / f"f{i}"
        f.write_bytes(b"%d" % i)
        file_digest(str(f))
        if set(os.listdir(shard)) - before - {left.name}:
            break
    else:
        pytest.fail("no record was written in the temporary's directory")
    assert not left.exists()


@pytest.mark.parametrize("dry_run", [True, False])
def test_cleanup_cache_removes_a_killed_saves_digest_temporary(
    tmp_path: Path, dry_run: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    left = _killed_save(tmp_path)
    assert cli_main(["cleanup-cache", *(["--dry-run"] if dry_run else [])]) == 0
    out = capsys.readouterr().out
    assert str(left[0]) in out and "writer pid" in out
    assert _leftovers() == (left if dry_run else [])


def test_a_live_writers_digest_temporary_is_kept() -> None:
    shard = Path(os.environ["ARROWMIX_CACHE"]) / "digests" / "ab"
    shard.mkdir(parents=True)
    live = shard / f"tmp-{os.getpid()}-0a0b0c0d-ab{'0' * 30}.partial"
    live.write_bytes(b"0123")
    assert cli_main(["cleanup-cache"]) == 0
    assert live.exists()
