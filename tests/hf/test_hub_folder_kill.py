"""A ``to_hub_folder`` cut short leaves no shard set that looks complete, and is redone.

Shards are written into a staging directory and renamed into place together, the README
last: a failure or a ``kill -9`` while writing leaves no shard under ``data/`` (HF's
``load_dataset`` and arrowmix's would otherwise read the shards written so far as the whole
split), and the next call on the folder removes the dead staging directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import arrowmix as am
from arrowmix._dataset.dataset import Dataset


def _visible(folder: Any) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(r, f), folder)
        for r, _, fs in os.walk(folder)
        for f in fs
        if not os.path.relpath(r, folder).startswith(".")
    )


def test_a_failing_shard_leaves_no_shard_and_the_folder_can_be_written_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = am.Dataset.from_dict({"x": list(range(30))})
    real, calls = Dataset.to_parquet, []

    def failing(self: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(Dataset, "to_parquet", failing)
    with pytest.raises(OSError, match="No space left"):
        ds.to_hub_folder(tmp_path / "hub", num_shards=3)
    assert _visible(tmp_path / "hub") == []  # not two shards of three
    monkeypatch.undo()
    ds.to_hub_folder(tmp_path / "hub", num_shards=3)
    assert len(am.load_dataset(str(tmp_path / "hub"), split="train")) == 30
    assert sorted(os.listdir(tmp_path / "hub")) == ["README.md", "data"]


@pytest.mark.slow
def test_a_kill_while_writing_leaves_no_shard_and_its_staging_is_removed(tmp_path: Any) -> None:
    hub = tmp_path / "hub"
    script = textwrap.dedent(
        f"""
        import os, signal
        import arrowmix as am
        from arrowmix._dataset.dataset import Dataset
        real, calls = Dataset.to_parquet, []
        def killed(self, path, *a, **k):
            calls.append(path)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, path, *a, **k)
        Dataset.to_parquet = killed
        am.Dataset.from_dict({{"x": list(range(30))}}).to_hub_folder({str(hub)!r}, num_shards=3)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False)
    assert done.returncode == -signal.SIGKILL
    assert _visible(hub) == []
    assert [n for n in os.listdir(hub) if n.startswith(".arrowmix-hub-writing-")]  # dead
    am.Dataset.from_dict({"x": list(range(30))}).to_hub_folder(hub, num_shards=3)
    assert sorted(os.listdir(hub)) == ["README.md", "data"]
    assert len(am.load_dataset(str(hub), split="train")) == 30
