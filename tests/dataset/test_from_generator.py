"""Dataset.from_generator: HF's values, cached by the generator's fingerprint across processes,
nothing taken for finished after a generator raised, bounded memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import arrowmix as am


def rows(n, tag="r"):
    for i in range(n):
        yield {"i": i, "t": f"{tag}{i}", "l": i % 2}


def test_rows_types_and_gen_kwargs():
    ds = am.Dataset.from_generator(rows, gen_kwargs={"n": 3, "tag": "q"})
    assert ds[:] == {"i": [0, 1, 2], "t": ["q0", "q1", "q2"], "l": [0, 1, 0]}
    other = am.Dataset.from_generator(rows, gen_kwargs={"n": 3, "tag": "z"})
    assert other["t"] == ["z0", "z1", "z2"]
    assert other.fingerprint != ds.fingerprint
    typed = am.Dataset.from_generator(
        rows, gen_kwargs={"n": 2}, features=pa.schema([("i", pa.int8()), ("t", pa.string()),
                                                       ("l", pa.int16())])
    )  # fmt: skip
    assert typed.schema.field("i").type == pa.int8() and typed["i"] == [0, 1]


def test_matches_hf_with_features(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    datasets.disable_progress_bars()
    f = datasets.Features(
        {
            "i": datasets.Value("int32"),
            "t": datasets.Value("string"),
            "l": datasets.ClassLabel(names=["a", "b"]),
        }
    )
    kw = {"n": 5, "tag": "q"}
    ours = am.Dataset.from_generator(rows, gen_kwargs=kw, features=f)
    hf = datasets.Dataset.from_generator(rows, gen_kwargs=kw, features=f, cache_dir=str(tmp_path))
    assert ours[:] == hf[:]
    assert ours.features == hf.features


_SCRIPT = """
import os, sys, arrowmix as am
calls = sys.argv[1]
def gen(n):
    with open(calls, "a") as f:
        f.write("x")
    for i in range(n):
        yield {{"i": i, "sq": i * i}}
ds = am.Dataset.from_generator(gen, gen_kwargs={{"n": {n}}})
print(ds.fingerprint, sum(ds["sq"]), len(ds.cache_files))
"""


def _run(tmp_path, n):
    script = tmp_path / "gen_script.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(n=n)))
    calls = tmp_path / "calls"
    out = subprocess.run(
        [sys.executable, str(script), str(calls)], capture_output=True, text=True, check=True
    )
    return out.stdout.split(), calls.read_text() if calls.exists() else ""


def test_a_rerun_in_a_new_process_reads_the_cache(tmp_path):
    first, calls = _run(tmp_path, 100)
    assert calls == "x" and first[1] == str(sum(i * i for i in range(100)))
    second, calls = _run(tmp_path, 100)
    assert calls == "x"  # the generator was not called again
    assert second == first
    third, calls = _run(tmp_path, 50)  # other gen_kwargs: generated again
    assert calls == "xx" and third[0] != first[0]


class _Boom(Exception):
    pass


def test_a_generator_that_raises_leaves_nothing_taken_for_finished():
    state = {"fail": True}

    def flaky(n):
        for i in range(n):
            if state["fail"] and i == 2500:
                raise _Boom
            yield {"i": i}

    with pytest.raises(_Boom):
        am.Dataset.from_generator(flaky, gen_kwargs={"n": 3000})
    state["fail"] = False  # state is read at run time: same fingerprint
    ds = am.Dataset.from_generator(flaky, gen_kwargs={"n": 3000})
    assert ds["i"] == list(range(3000))  # written again, whole


def _bytes_under(directory):
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(directory) for f in files
    )


def test_rows_are_streamed_to_the_files_while_generating(tmp_path, monkeypatch):
    """Memory stays bounded: rows reach the disk before the generator is finished.

    The writer holds at most ``_BATCH_BYTES`` (128 MB) before writing; made 1 MB here so the
    test stays small.
    """
    from arrowmix._storage import chunks

    monkeypatch.setattr(chunks, "_BATCH_BYTES", 2**20)
    root = str(tmp_path)
    on_disk = []

    def big():
        for i in range(20_000):
            if i == 19_999:
                on_disk.append(_bytes_under(root))
            yield {"i": i, "pad": "x" * 400}

    ds = am.Dataset.from_generator(big, cache_dir=root)
    assert len(ds) == 20_000 and ds[19_999]["i"] == 19_999
    assert on_disk[0] > 4_000_000  # most of the ~8 MB were written before the last row


def test_empty_and_bad_generators():
    def nothing():
        yield from ()

    with pytest.raises(ValueError, match="no rows"):
        am.Dataset.from_generator(nothing)
    empty = am.Dataset.from_generator(nothing, features=pa.schema([("x", pa.int64())]))
    assert len(empty) == 0 and empty.column_names == ["x"]
    with pytest.raises(TypeError, match="callable"):
        am.Dataset.from_generator([{"x": 1}])  # type: ignore[arg-type]
