"""The records of checked files are shared by a process's threads (downloads run in a pool)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from arrowmix._storage import trust


@pytest.fixture
def own_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARROWMIX_CACHE", str(tmp_path / "root"))
    return tmp_path


def test_threads_recording_files_of_one_directory_lose_none(own_root: Path) -> None:
    files = own_root / "files"
    files.mkdir()
    paths = []
    for i in range(400):
        p = files / f"f{i}.bin"
        p.write_bytes(b"x" * (i + 1))
        paths.append(str(p))
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def record(mine: list[str]) -> None:
        start.wait()
        try:
            for p in mine:
                trust.remember(p, trust.identity(p))
        except BaseException as exc:  # noqa: BLE001  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(paths[k::8],)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    trust.flush()
    records = list((own_root / "root" / "verified").glob("dir-*.json"))
    assert len(records) == 1
    on_disk = json.loads(records[0].read_text())["files"]
    assert sorted(on_disk) == sorted(os.path.basename(p) for p in paths)
    assert all(trust.trusted(p, trust.identity(p)) for p in paths)
