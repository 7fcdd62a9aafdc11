from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pyarrow as pa

import arrowmix as am

SCRIPT = textwrap.dedent(
    """
    import sys, arrowmix as am
    ds = am.Dataset.from_chunks(sys.argv[1])
    view = ds.shuffle(seed=7).select(range(5)).sort("n", reverse=True).shard(2, 1)
    mem = am.Dataset.from_dict({"n": [1, 2, 3]}).select_columns("n").rename_column("n", "m")
    print(ds.fingerprint, view.fingerprint, mem.fingerprint)
    """
)


def _fps(path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()


def test_fingerprints_equal_in_a_subprocess_and_after_moving_the_corpus(tmp_path):
    am.write_chunks(({"n": i, "t": str(i)} for i in range(20)), tmp_path / "a", rows_per_chunk=6)
    ds = am.Dataset.from_chunks(str(tmp_path / "a"))
    view = ds.shuffle(seed=7).select(range(5)).sort("n", reverse=True).shard(2, 1)
    mem = am.Dataset.from_dict({"n": [1, 2, 3]}).select_columns("n").rename_column("n", "m")
    here = [ds.fingerprint, view.fingerprint, mem.fingerprint]
    assert _fps(tmp_path / "a") == here
    shutil.move(str(tmp_path / "a"), str(tmp_path / "moved"))
    assert _fps(tmp_path / "moved") == here


def test_fingerprint_depends_on_content_not_chunking_of_memory_tables():
    a = am.Dataset.from_dict({"n": [1, 2, 3]})
    assert (
        a.fingerprint == am.Dataset.from_arrow(pa.table({"n": [1, 2, 3]}).to_batches(1)).fingerprint
    )
    assert a.fingerprint != am.Dataset.from_dict({"n": [1, 2, 4]}).fingerprint
    assert len(a.fingerprint) == 16 and int(a.fingerprint, 16) >= 0


def test_file_fingerprint_changes_with_content(tmp_path):
    am.write_chunks(({"n": i} for i in range(10)), tmp_path / "a")
    am.write_chunks(({"n": i + 1} for i in range(10)), tmp_path / "b")
    assert (
        am.Dataset.from_chunks(str(tmp_path / "a")).fingerprint
        != am.Dataset.from_chunks(str(tmp_path / "b")).fingerprint
    )


def test_transform_fingerprints_depend_on_arguments():
    ds = am.Dataset.from_dict({"n": list(range(10))})
    fps = {
        ds.shuffle(seed=0).fingerprint,
        ds.shuffle(seed=1).fingerprint,
        ds.select([1, 2]).fingerprint,
        ds.select([2, 1]).fingerprint,
        ds.sort("n").fingerprint,
        ds.sort("n", reverse=True).fingerprint,
        ds.shard(2, 0).fingerprint,
        ds.shard(2, 1).fingerprint,
        ds.shard(2, 0, contiguous=False).fingerprint,
    }
    assert len(fps) == 9
    assert ds.shuffle(seed=0).fingerprint == ds.shuffle(seed=0).fingerprint
    assert ds.sort("n").fingerprint == ds.sort("n", reverse=False).fingerprint
