"""Opening a corpus while another process rewrites it: the fingerprint describes the mapped bytes.

``write_chunks(..., overwrite=True)`` replaces a corpus file by file. An open that overlaps
it must return one complete version under that version's fingerprint, or raise an arrowmix
error saying that a rewrite is in progress: never one version's rows under the other's
fingerprint, a mix of both, or a bare ``KeyError``/``FileNotFoundError``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage import ipc
from arrowmix.exceptions import ArrowmixError

ROWS = 4000
PER_CHUNK = 200  # 20 chunks: a long window for a rewrite to overlap an open
ROOT = Path(__file__).resolve().parents[2]


def _version(v: int) -> pa.Table:
    # Same shape and byte size for both versions, different values.
    return pa.table({"x": pa.array([i * 10 + v for i in range(ROWS)], pa.int64())})


def _fingerprints(tmp_path: Path) -> dict[str, int]:
    """Fingerprint -> version of each corpus version (content-defined, any directory)."""
    out = {}
    for v in (1, 2):
        d = tmp_path / f"ref{v}"
        am.write_chunks(_version(v), str(d), rows_per_chunk=PER_CHUNK)
        out[am.Dataset.from_chunks(str(d)).fingerprint] = v
    return out


def _check(ds: Any, fps: dict[str, int]) -> None:
    """``ds`` holds exactly the version its fingerprint names."""
    assert ds.fingerprint in fps, "the fingerprint describes neither version"
    want = _version(fps[ds.fingerprint]).column("x").to_pylist()
    assert ds["x"] == want, f"rows of another version under version {fps[ds.fingerprint]}"


def test_rewrite_at_the_first_manifest_read_is_never_mislabelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps = _fingerprints(tmp_path)
    d = str(tmp_path / "corpus")
    am.write_chunks(_version(1), d, rows_per_chunk=PER_CHUNK)
    real_open = open
    fired = []

    def hooked(file: Any, *args: Any, **kwargs: Any) -> Any:
        if not fired and str(file).endswith("_manifest.json") and "rb" in args[:1]:
            fired.append(file)
            am.write_chunks(_version(2), d, rows_per_chunk=PER_CHUNK, overwrite=True)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", hooked)
    ds = am.Dataset.from_chunks(d)
    monkeypatch.undo()
    assert fired, "the hook never ran: the manifest was not read"
    _check(ds, fps)


def test_rewrite_after_the_first_chunk_is_mapped_is_never_mixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps = _fingerprints(tmp_path)
    d = str(tmp_path / "corpus")
    am.write_chunks(_version(1), d, rows_per_chunk=PER_CHUNK)
    real_map = ipc.map_file  # how chunk files are mapped (advised random)
    fired = []

    def hooked(path: Any, *args: Any, **kwargs: Any) -> Any:
        mapped = real_map(path, *args, **kwargs)
        if not fired and str(path).startswith(d) and str(path).endswith(".arrow"):
            fired.append(path)
            am.write_chunks(_version(2), d, rows_per_chunk=PER_CHUNK, overwrite=True)
        return mapped

    monkeypatch.setattr(ipc, "map_file", hooked)
    ds = am.Dataset.from_chunks(d)
    monkeypatch.undo()
    assert fired
    _check(ds, fps)
    assert fps[ds.fingerprint] == 2  # the open retried and got the new version


def test_open_of_a_corpus_mid_rewrite_says_a_rewrite_is_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite that never finishes (its manifest never comes back) is named as such."""
    d = str(tmp_path / "corpus")
    am.write_chunks(_version(1), d, rows_per_chunk=PER_CHUNK)
    os.unlink(os.path.join(d, "_manifest.json"))
    for name in sorted(os.listdir(d))[10:]:
        os.unlink(os.path.join(d, name))
    # A live writer's temporary file is there: a rewrite is under way.
    Path(d, f"tmp-{os.getpid()}-0123abcd-chunk-00010.arrow.partial").write_bytes(b"ARROW1")
    with pytest.raises(ArrowmixError, match="rewrit"):
        am.Dataset.from_chunks(d)


_REWRITER = textwrap.dedent(
    """
    import os, sys, time
    import pyarrow as pa
    import arrowmix as am
    d, rows, per, stop, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:6]
    tables = [pa.table({"x": pa.array([i * 10 + v for i in range(rows)], pa.int64())})
              for v in (1, 2)]
    n = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        am.write_chunks(tables[n % 2], d, rows_per_chunk=per, overwrite=True)
        n += 1
        with open(count + ".tmp", "w") as f:
            f.write(str(n))
        os.replace(count + ".tmp", count)  # how many rewrites so far, for the test
        time.sleep(0.3)
    print(n)
    """
)


def _rewrites(count: Path) -> int:
    """How many rewrites the rewriter has finished (0 before its first)."""
    try:
        return int(count.read_text())
    except FileNotFoundError:
        return 0


def test_opens_racing_a_rewriting_process_are_never_mislabelled(tmp_path: Path) -> None:
    fps = _fingerprints(tmp_path)
    d = str(tmp_path / "corpus")
    am.write_chunks(_version(1), d, rows_per_chunk=PER_CHUNK)
    script = tmp_path / "rewriter.py"
    script.write_text(_REWRITER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stop, count = tmp_path / "stop", tmp_path / "count"
    child = subprocess.Popen(
        [sys.executable, str(script), d, str(ROWS), str(PER_CHUNK), str(stop), str(count)],
        env=env,
        stdout=subprocess.PIPE,
    )
    opened = refused = 0
    wrong: list[str] = []
    unexplained: list[str] = []
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        # Until the rewriter has rewritten the corpus several times and several opens
        # succeeded, however fast either side runs (the deadline only stops a hung test).
        deadline = time.monotonic() + 300
        while (_rewrites(count) < 6 or opened < 3) and time.monotonic() < deadline:
            try:
                ds = am.Dataset.from_chunks(d)
                rows = ds["x"]
            except ArrowmixError as exc:
                unexplained.extend([] if "rewrit" in str(exc) else [repr(exc)])
                refused += 1
                continue
            opened += 1
            v = fps.get(ds.fingerprint)
            if v is None or rows != _version(v).column("x").to_pylist():
                wrong.append(ds.fingerprint)
    finally:
        stop.touch()
        out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    assert int(out) >= 3, "the rewriter did not race"
    assert opened >= 3, f"{opened} opened, {refused} refused"
    assert not wrong, f"{len(wrong)} of {opened} opens mislabelled ({refused} refused)"
    assert not unexplained, f"errors that do not say a rewrite is in progress: {unexplained}"


def test_cache_files_written_beside_the_corpus_during_an_open_are_not_a_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A map in another process writes cache files beside the chunks: the open is not torn."""
    fps = _fingerprints(tmp_path)
    d = str(tmp_path / "corpus")
    am.write_chunks(_version(1), d, rows_per_chunk=PER_CHUNK)
    real_map = ipc.map_file  # how chunk files are mapped (advised random)
    calls = []

    def hooked(path: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        # Every mapping: another cache file (and its temporary file) appears beside the chunks.
        n = len(calls)
        Path(d, f"tmp-{os.getpid()}-{n:08x}-cache-{n:016x}.arrow.partial").write_bytes(b"x")
        Path(d, f"cache-{n:016x}-00000-of-00001.arrow").write_bytes(b"x")
        return real_map(path, *args, **kwargs)

    monkeypatch.setattr(ipc, "map_file", hooked)
    ds = am.Dataset.from_chunks(d)
    monkeypatch.undo()
    _check(ds, fps)
    assert len(calls) == ROWS // PER_CHUNK  # opened once: no retry
