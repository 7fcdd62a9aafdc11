from __future__ import annotations

import errno
import os
import pickle
import subprocess
import sys

import fsspec
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._storage.chunks import list_chunk_files
from arrowmix.exceptions import ChunkFileError, IncompleteCorpusError, SchemaMismatchError


def rows(n: int, start: int = 0):
    for i in range(start, start + n):
        yield {"id": i, "text": "x" * (i % 7)}


def test_rows_split_by_rows_with_sortable_names(tmp_path):
    paths = am.write_chunks(rows(25), tmp_path, rows_per_chunk=10)
    assert [os.path.basename(p) for p in paths] == [
        "chunk-00000.arrow",
        "chunk-00001.arrow",
        "chunk-00002.arrow",
    ]
    ds = am.Dataset.from_chunks(str(tmp_path))
    assert ds["id"] == list(range(25))
    assert [am.Dataset.from_file(p).num_rows for p in paths] == [10, 10, 5]


def test_split_by_bytes_bounds_every_chunk(tmp_path):
    table = pa.table({"text": ["y" * 1000] * 2000})
    paths = am.write_chunks(table, tmp_path, bytes_per_chunk=200_000)
    assert len(paths) >= 9
    sizes = [am.Dataset.from_file(p).num_rows for p in paths]
    assert sum(sizes) == 2000
    assert max(sizes) <= 201  # a chunk ends once it reaches the byte budget


def _foreign_chunk(path, table):
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def test_many_chunks_sort_naturally(tmp_path):
    for i in range(12):  # files of another writer, names without zero padding
        _foreign_chunk(tmp_path / f"chunk-{i}.arrow", pa.table({"id": [i]}))
    ids = am.Dataset.from_chunks(str(tmp_path))["id"]
    assert ids == list(range(12))


@pytest.mark.parametrize(
    "make",
    [
        lambda: pa.table({"id": list(range(30))}),
        lambda: (pa.record_batch({"id": list(range(i, i + 3))}) for i in range(0, 30, 3)),
        lambda: ({"id": i} for i in range(30)),
        lambda: am.Dataset.from_dict({"id": list(range(30))}),
        lambda: am.Dataset.from_dict({"id": list(range(30))[::-1]}).sort("id"),
    ],
    ids=["table", "batches", "row-dicts", "dataset", "dataset-view"],
)
def test_all_input_kinds(tmp_path, make):
    am.write_chunks(make(), tmp_path, rows_per_chunk=7)
    assert am.Dataset.from_chunks(str(tmp_path))["id"] == list(range(30))


def test_unbounded_generator_is_consumed_lazily(tmp_path):
    consumed = []

    def gen():
        for i in range(50_000):
            consumed.append(i)
            yield {"id": i}

    it = gen()
    paths = am.write_chunks(it, tmp_path, rows_per_chunk=20_000)
    assert len(paths) == 3 and len(consumed) == 50_000


def test_failure_mid_stream_leaves_only_complete_chunks(tmp_path):
    def gen():
        yield from rows(25)
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        am.write_chunks(gen(), tmp_path, rows_per_chunk=10)
    names = sorted(os.listdir(tmp_path))
    assert names == ["chunk-00000.arrow", "chunk-00001.arrow"]  # no manifest: unfinished
    with pytest.raises(IncompleteCorpusError, match=str(tmp_path)):
        am.Dataset.from_chunks(str(tmp_path))
    assert len(am.Dataset.from_chunks(str(tmp_path), allow_incomplete=True)) == 20


def test_refuses_to_mix_with_existing_chunks(tmp_path):
    am.write_chunks(rows(5), tmp_path)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        am.write_chunks(rows(5), tmp_path)
    am.write_chunks(rows(3, start=100), tmp_path, overwrite=True)
    assert am.Dataset.from_chunks(str(tmp_path))["id"] == [100, 101, 102]


def test_row_with_new_column_names_it(tmp_path):
    data = [{"a": 1}] * 8192 + [{"a": 2, "surprise": 3}]
    with pytest.raises(SchemaMismatchError, match="surprise"):
        am.write_chunks(iter(data), tmp_path)


def test_row_with_wrong_type_names_rows(tmp_path):
    data = [{"a": 1}] * 8192 + [{"a": "not an int"}]
    with pytest.raises(SchemaMismatchError, match="8192"):
        am.write_chunks(iter(data), tmp_path)


def test_non_dict_rows_rejected(tmp_path):
    with pytest.raises(TypeError, match="dicts"):
        am.write_chunks([1, 2, 3], tmp_path)
    with pytest.raises(TypeError, match="from_dict"):
        am.write_chunks({"a": [1]}, tmp_path)


@pytest.mark.parametrize("bad_at", [1, 5000, 8191, 8192, 20000])
def test_non_dict_row_among_rows_names_its_index_and_type(tmp_path, bad_at):
    data: list[object] = [{"a": i} for i in range(20001)]
    data[bad_at] = [bad_at]
    with pytest.raises(TypeError, match=rf"row {bad_at} is list"):
        am.write_chunks(iter(data), tmp_path / "out")


def test_bad_sizes_rejected(tmp_path):
    with pytest.raises(ValueError, match="rows_per_chunk"):
        am.write_chunks(rows(3), tmp_path, rows_per_chunk=0)


def test_empty_directory_error_names_it(tmp_path):
    with pytest.raises(ChunkFileError, match=str(tmp_path)):
        am.Dataset.from_chunks(str(tmp_path))
    with pytest.raises(ChunkFileError, match="No such file"):
        am.Dataset.from_chunks(str(tmp_path / "missing"))


def test_glob_and_list(tmp_path):
    paths = am.write_chunks(rows(9), tmp_path, rows_per_chunk=3)
    assert len(am.Dataset.from_chunks(str(tmp_path / "chunk-*.arrow"))) == 9
    assert am.Dataset.from_chunks([paths[2], paths[0]])["id"] == [6, 7, 8, 0, 1, 2]


def test_truncated_file_error_names_file(tmp_path):
    (path,) = am.write_chunks(rows(100), tmp_path)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(ChunkFileError, match=r"chunk-00000\.arrow"):
        am.Dataset.from_chunks(str(tmp_path))


def test_stream_format_file_opens_memory_mapped(tmp_path):
    # HF datasets writes its .arrow files in the IPC stream format
    table = pa.table({"a": list(range(50_000)), "s": ["x" * 20] * 50_000})
    path = tmp_path / "data.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    before = pa.total_allocated_bytes()
    ds = am.Dataset.from_file(str(path))
    assert pa.total_allocated_bytes() - before < 100_000  # mapped, not read into memory
    assert len(ds) == 50_000 and ds[-1] == {"a": 49_999, "s": "x" * 20}
    assert am.Dataset.from_chunks([str(path)]).fingerprint == ds.fingerprint
    again = pickle.loads(pickle.dumps(ds))
    assert again[12_345] == ds[12_345]


def test_damaged_stream_format_file_is_refused(tmp_path):
    table = pa.table({"s": ["abc", "de"]})
    path = tmp_path / "data.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    data = bytearray(path.read_bytes())
    data[-40:-8] = b"\xff" * 32  # offsets and characters of the last batch
    path.write_bytes(bytes(data))
    with pytest.raises(ChunkFileError, match=r"data\.arrow"):
        am.Dataset.from_file(str(path))


def test_mismatched_chunk_schemas_name_the_file(tmp_path):
    am.write_chunks(rows(3), tmp_path / "a")
    am.write_chunks(({"other": 1.5} for _ in range(2)), tmp_path / "b")
    files = [
        str(tmp_path / "a" / "chunk-00000.arrow"),
        str(tmp_path / "b" / "chunk-00000.arrow"),
    ]
    with pytest.raises(SchemaMismatchError, match=r"b/chunk-00000\.arrow"):
        am.Dataset.from_chunks(files)


def test_open_is_memory_mapped_not_read(tmp_path):
    table = pa.table({"text": ["z" * 1000] * 20_000})  # ~20 MB
    am.write_chunks(table, tmp_path)
    before = pa.total_allocated_bytes()
    ds = am.Dataset.from_chunks(str(tmp_path))
    assert len(ds) == 20_000
    assert pa.total_allocated_bytes() - before < 1_000_000


def test_memory_filesystem_round_trip():
    fs = fsspec.filesystem("memory")
    url = "memory://arrowmix-test/corpus"
    try:
        paths = am.write_chunks(rows(10), url, rows_per_chunk=4)
        assert all(p.startswith("memory://") for p in paths)
        assert not [f for f in fs.ls("/arrowmix-test/corpus", detail=False) if "tmp-" in f]
        ds = am.Dataset.from_chunks(url)
        assert ds["id"] == list(range(10))
        assert list_chunk_files(url + "/chunk-0000[01].arrow") == paths[:2]
    finally:
        fs.rm("/arrowmix-test", recursive=True)


def test_remote_chunks_are_copied_once_and_memory_mapped():
    fs = fsspec.filesystem("memory")
    url = "memory://arrowmix-rt/corpus"
    try:
        am.write_chunks(pa.table({"text": ["r" * 1000] * 5000}), url)
        before = pa.total_allocated_bytes()
        ds = am.Dataset.from_chunks(url)
        assert len(ds) == 5000 and ds[4999]["text"] == "r" * 1000
        assert pa.total_allocated_bytes() - before < 500_000  # mapped, not read into memory
        am.write_chunks(pa.table({"text": ["changed"]}), url, overwrite=True)
        assert am.Dataset.from_chunks(url)["text"] == ["changed"]  # a new version is fetched
    finally:
        fs.rm("/arrowmix-rt", recursive=True)


def test_out_dir_that_is_a_file_is_a_clear_error(tmp_path):
    path = tmp_path / "afile"
    path.write_text("x")
    with pytest.raises(NotADirectoryError, match=r"`out_dir` .*afile' is a file"):
        am.write_chunks(pa.table({"v": [1]}), path)
    with pytest.raises(NotADirectoryError, match=r"is below the file .*afile'"):
        am.write_chunks(pa.table({"v": [1]}), path / "sub")
    assert path.read_text() == "x"


_FULL_DISK = """
import resource, signal, sys
import pyarrow as pa
import arrowmix as am
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
try:
    am.write_chunks(pa.table({"s": ["x" * 1000] * 1000}), sys.argv[1])
except OSError as exc:
    print(exc.errno, exc)
"""


def test_a_failed_write_names_the_file(tmp_path):
    res = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(am.__file__))},
    )
    code, _, message = res.stdout.partition(" ")
    assert int(code) == errno.EFBIG
    assert f"Cannot write {str(tmp_path / 'c' / 'chunk-00000.arrow')!r}" in message
    assert os.listdir(tmp_path / "c") == []  # no temporary file left either
