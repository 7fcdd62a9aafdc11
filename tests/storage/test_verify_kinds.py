"""``arrowmix verify`` says what it found: a DatasetDict save, a damaged manifest, an overwrite.

An intact DatasetDict save verifies (each split it lists), a rotten file in one split is named;
a corpus whose manifest is damaged, or which a ``write_chunks(overwrite=True)`` is rewriting or
left mid-way when killed, is reported as that (naming the file and what to do), never as
"not a `write_chunks` output".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MARK = 777_777_777


def _verify(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["verify", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def _dict(d: Path) -> None:
    xs = list(range(1000))
    xs[700] = MARK
    am.DatasetDict(
        {
            "train": am.Dataset.from_arrow(pa.table({"x": pa.array(xs, pa.int64())})),
            "test": am.Dataset.from_dict({"x": [1, 2, 3]}),
        }
    ).save_to_disk(str(d))


def test_an_intact_dataset_dict_save_verifies(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _dict(tmp_path / "dd")
    code, out = _verify(tmp_path / "dd", capsys)
    assert code == 0, out
    assert "2 file(s) ok" in out


def test_a_rotten_file_of_a_dataset_dict_split_is_named(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _dict(tmp_path / "dd")
    (rotten,) = (tmp_path / "dd" / "train").glob("data-*.arrow")
    data = rotten.read_bytes()
    old = MARK.to_bytes(8, "little")
    st = os.stat(rotten)
    rotten.write_bytes(data.replace(old, (MARK + 1).to_bytes(8, "little")))
    os.utime(rotten, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, out = _verify(tmp_path / "dd", capsys)
    assert code == 1
    assert str(rotten) in out and "recorded when saved" in out
    assert "test" + os.sep not in out


def test_a_dataset_dict_with_a_missing_split_is_named(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _dict(tmp_path / "dd")
    (tmp_path / "dd" / "test" / "state.json").unlink()
    code, out = _verify(tmp_path / "dd", capsys)
    assert code == 1
    assert str(tmp_path / "dd" / "test") in out and "dataset_dict.json" in out


def _corpus(out: Path) -> None:
    am.write_chunks(({"v": i} for i in range(30)), out, rows_per_chunk=10)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda raw: raw[: len(raw) // 2], "not valid JSON"),
        (lambda raw: b"", "empty"),
        (lambda raw: raw.replace(b'"rows":10', b'"rows":11', 1), "checksum"),
    ],
    ids=["truncated", "empty", "edited"],
)
def test_a_damaged_manifest_is_named_as_damaged(tmp_path: Path, capsys, damage, why) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c"
    _corpus(out)
    manifest = out / "_manifest.json"
    raw = manifest.read_bytes().replace(b", ", b",").replace(b": ", b":")
    manifest.write_bytes(damage(raw))
    code, text = _verify(out, capsys)
    assert code == 1
    assert "damaged manifest" in text and str(manifest) in text and why in text
    assert "not a `write_chunks` output" not in text


def test_a_manifest_of_another_kind_is_named(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c"
    _corpus(out)
    (out / "_manifest.json").write_text(json.dumps({"kind": "other", "format": 1}))
    code, text = _verify(out, capsys)
    assert code == 1 and "not an arrowmix manifest" in text and "'other'" in text


# The child overwrites the corpus and kills itself at the first chunk renamed into place: the
# old manifest is gone, the new one not yet written.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import arrowmix as am
    out = sys.argv[1]
    real = os.replace

    def replace(src, dst, *a, **k):
        if os.path.dirname(os.path.abspath(os.fspath(dst))) == out:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **k)

    os.replace = replace
    am.write_chunks(({"v": i} for i in range(100, 120)), out, rows_per_chunk=10, overwrite=True)
    """
)


def test_a_corpus_left_mid_overwrite_says_what_to_do(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c"
    _corpus(out)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(out)], env=env, timeout=120, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "_manifest.json").exists(), "the kill came too early or too late"
    code, text = _verify(out, capsys)
    assert code == 1
    assert "killed" in text and f"arrowmix cleanup-cache {out}" in text
    assert "not a `write_chunks` output" not in text
    assert main(["cleanup-cache", str(out)]) == 0
    capsys.readouterr()
    assert _verify(out, capsys)[0] == 0


def test_a_corpus_being_overwritten_says_so(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c"
    _corpus(out)
    (out / f".arrowmix-writing-{os.getpid()}-0a0b0c0d").mkdir()  # a live writer: this process
    (out / "_manifest.json").unlink()
    code, text = _verify(out, capsys)
    assert code == 1
    assert "being overwritten" in text and str(os.getpid()) in text
