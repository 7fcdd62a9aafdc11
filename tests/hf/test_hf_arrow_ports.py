"""HF ``datasets``' own ``Dataset`` calls that arrowmix lacked, compared with HF 5.2 value by value.

``Dataset.from_sql`` (a query or table through ``pandas.read_sql``), ``from_buffer``,
``batch(by_column=)``, ``__getitems__`` (torch's ``DataLoader`` reads a batch in one gather)
``new_fingerprint=`` on ``batch`` and the column operations, and ``flatten`` keeping HF's
features (a decoded media column stays one column, class names are kept).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
hf.disable_progress_bar()


@pytest.fixture
def sqlite_con(tmp_path: Path) -> Any:
    con = sqlite3.connect(tmp_path / "rows.db")
    con.execute("CREATE TABLE t(a text, b int, c real)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [("x", 1, 0.5), ("y", None, 1.5)])
    con.commit()
    yield con
    con.close()


def test_from_sql_reads_hfs_values_and_types(sqlite_con: Any, tmp_path: Path) -> None:
    theirs = hf.Dataset.from_sql("SELECT * FROM t", sqlite_con, cache_dir=str(tmp_path / "hf"))
    ours = am.Dataset.from_sql("SELECT * FROM t", sqlite_con, cache_dir=str(tmp_path / "am"))
    assert ours[:] == theirs[:] == {"a": ["x", "y"], "b": [1.0, None], "c": [0.5, 1.5]}
    assert ours.features == theirs.features  # pandas' types: large_string, float64 (a null)
    assert ours.split == theirs.split == "train"
    assert all(str(f).startswith(str(tmp_path / "am")) for f in ours.cache_files)


def test_from_sql_features_params_and_memory(sqlite_con: Any, tmp_path: Path) -> None:
    feats = am.Features({"a": am.Value("string"), "b": am.Value("int32"), "c": am.Value("float32")})
    query = "SELECT * FROM t WHERE b = ?"
    theirs = hf.Dataset.from_sql(
        query, sqlite_con, features=feats, params=(1,), cache_dir=str(tmp_path)
    )
    ours = am.Dataset.from_sql(query, sqlite_con, features=feats, params=(1,), keep_in_memory=True)
    assert ours[:] == theirs[:] == {"a": ["x"], "b": [1], "c": [0.5]}
    assert ours.features == theirs.features == feats
    assert ours.cache_files == []
    sqlite_con.execute("INSERT INTO t VALUES ('z', 1, 2.5)")  # each call reads the rows again
    assert am.Dataset.from_sql(query, sqlite_con, params=(1,))["a"] == ["x", "z"]


def test_from_sql_bad_arguments_raise_as_hf(sqlite_con: Any, tmp_path: Path) -> None:
    for lib in (hf, am):
        with pytest.raises(TypeError, match="Supported types for 'sql' are string"):
            lib.Dataset.from_sql(3, sqlite_con)
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            lib.Dataset.from_sql("t", sqlite_con, chunk_size=2)
    with pytest.raises(ValueError, match="no rows"):
        am.Dataset.from_sql("SELECT * FROM t WHERE b = 7", sqlite_con, cache_dir=str(tmp_path))
    assert list((tmp_path / "generated").iterdir()) == []  # no empty corpus left behind
    two = am.Features({"a": am.Value("string"), "b": am.Value("int64")})
    with pytest.raises(ValueError, match=r"columns \['a', 'b', 'c'\] are not the columns"):
        am.Dataset.from_sql("SELECT * FROM t", sqlite_con, features=two)  # c would be lost


def test_batch_by_column_gives_hfs_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from arrowmix._hf import batch_runs

    monkeypatch.setattr(batch_runs, "_READ_ROWS", 2)  # runs carried across read batches
    data = {"k": ["A", "A", "B", "B", "B", "C", "B"], "s": list("xxyyzxy"), "v": list(range(7))}
    feats = hf.Features(
        {"k": hf.Value("string"), "s": hf.ClassLabel(names=list("xyz")), "v": hf.Value("int32")}
    )
    data["s"] = [feats["s"].str2int(s) for s in data["s"]]
    ours, theirs = (
        am.Dataset.from_dict(data, features=feats),
        hf.Dataset.from_dict(data, features=feats),
    )
    for by in ("k", ["k", "s"], ["v"]):
        got, want = ours.batch(by_column=by), theirs.batch(by_column=by)
        assert got[:] == want[:] and got.features == want.features
        assert len(got) == len(want)
    assert ours.batch(by_column="k")["v"] == [[0, 1], [2, 3, 4], [5], [6]]
    assert ours.select([]).batch(by_column="k")[:] == theirs.select([]).batch(by_column="k")[:]
    assert ours.with_format("numpy").batch(by_column="k").format["type"] == "numpy"


def test_batch_by_column_errors() -> None:
    ds = am.Dataset.from_dict({"k": ["A", None, None, "A"], "v": [1, 2, 3, 4]})
    assert ds.batch(by_column="k")["v"] == [[1], [2, 3], [4]]  # a null is a key of its own
    with pytest.raises(ValueError, match="misses `batch_size` or `by_column`"):
        ds.batch()
    with pytest.raises(NotImplementedError, match="Multiprocessed batching by column"):
        ds.batch(by_column="k", num_proc=2)
    with pytest.raises(ValueError, match="drop_last_batch"):
        ds.batch(by_column="k", drop_last_batch=True)
    with pytest.raises(ValueError, match="`by_column` must name columns"):
        ds.batch(by_column="nope")


def _ragged() -> dict[str, list[Any]]:
    return {"t": ["a", "b", "c", "d"], "x": [1, 2, 3, 4], "l": [[1], [2, 3], [], [4]]}


@pytest.mark.parametrize("fmt", [None, "numpy", "pandas"])
def test_getitems_cuts_one_gather_into_hfs_rows(fmt: str | None) -> None:
    ours = am.Dataset.from_dict(_ragged()).with_format(fmt)
    theirs = hf.Dataset.from_dict(_ragged()).with_format(fmt)
    got = ours.__getitems__([3, 0, 1])
    assert [str(r) for r in got] == [str(ours[k]) for k in (3, 0, 1)]
    if fmt != "pandas":  # HF cuts a DataFrame by its column labels
        assert [str(r) for r in got] == [str(r) for r in theirs.__getitems__([3, 0, 1])]


@pytest.mark.slow  # imports torch; test_getitems_cuts_one_gather_into_hfs_rows is the fast cover
def test_dataloader_reads_each_batch_in_one_gather() -> None:
    torch_data = pytest.importorskip("torch.utils.data")
    data = {"x": [1, 2, 3, 4, 5], "v": [[1.0, 0.0]] * 5}
    ours = am.Dataset.from_dict(data).with_format("torch")
    theirs = hf.Dataset.from_dict(data).with_format("torch")
    calls: list[Any] = []
    real = type(ours).__getitem__

    def counted(self: Any, key: Any) -> Any:
        calls.append(key)
        return real(self, key)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(ours), "__getitem__", counted)
        got = list(torch_data.DataLoader(ours, batch_size=2))
    assert calls == [[0, 1], [2, 3], [4]]
    want = list(torch_data.DataLoader(theirs, batch_size=2))
    assert [{k: v.tolist() for k, v in b.items()} for b in got] == [
        {k: v.tolist() for k, v in b.items()} for b in want
    ]


def _stream(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def test_from_buffer_reads_hfs_stream_with_indices() -> None:
    feats = hf.Features({"t": hf.Value("string"), "l": hf.ClassLabel(names=["a", "b"])})
    data = hf.Dataset.from_dict({"t": ["x", "y", "z"], "l": [0, 1, 1]}, features=feats).data
    buf = _stream(data.table)
    indices = _stream(pa.table({"indices": pa.array([2, 0], pa.uint64())}))
    for kwargs in ({}, {"split": "test", "indices_buffer": indices}):
        ours, theirs = am.Dataset.from_buffer(buf, **kwargs), hf.Dataset.from_buffer(buf, **kwargs)
        assert ours[:] == theirs[:]
        assert ours.features == theirs.features == feats
        assert ours.split == theirs.split
    assert ours["t"] == ["z", "x"] and ours.split == "test"


def test_new_fingerprint_names_column_ops_and_batches_as_hf() -> None:
    def calls(lib: Any) -> list[Any]:
        ds = lib.Dataset.from_dict({"a": [1, 2], "b": [3, 4]})
        return [
            ds.select_columns(["a"], new_fingerprint="fp1"),
            ds.remove_columns("a", new_fingerprint="fp2"),
            ds.rename_column("a", "c", new_fingerprint="fp3"),
            ds.rename_columns({"a": "c"}, new_fingerprint="fp4"),
            ds.batch(1, new_fingerprint="fp5"),
            ds.batch(by_column="a", new_fingerprint="fp6"),
        ]

    ours, theirs = calls(am), calls(hf)
    assert [d._fingerprint for d in ours] == [d._fingerprint for d in theirs]
    assert [d._fingerprint for d in ours] == ["fp1", "fp2", "fp3", "fp4", "fp5", "fp6"]
    assert [d[:] for d in ours] == [d[:] for d in theirs]
    for lib in (am, hf):
        with pytest.raises(ValueError, match="a/b"):
            lib.Dataset.from_dict({"a": [1]}).remove_columns("a", new_fingerprint="a/b")


def test_flatten_indices_features_and_num_proc_as_hf() -> None:
    feats = hf.Features({"a": hf.Value("int32")})

    def flat(lib: Any, **kwargs: Any) -> Any:
        view = lib.Dataset.from_dict({"a": [1, 2, 3]}).select([2, 0])
        return view.flatten_indices(features=feats, new_fingerprint="flat1", **kwargs)

    ours, theirs = flat(am, num_proc=2), flat(hf)  # HF's num_proc starts processes
    assert ours[:] == theirs[:] == {"a": [3, 1]}
    assert ours.features == theirs.features == feats
    assert ours._indices is theirs._indices is None
    assert ours._fingerprint == theirs._fingerprint == "flat1"


@pytest.mark.parametrize("max_depth", [16, 2])
def test_flatten_keeps_media_columns_and_features_as_hf(max_depth: int) -> None:
    feats = hf.Features(
        {
            "s": {"x": hf.ClassLabel(names=["p", "q"]), "y": {"z": hf.Value("int32")}},
            "img": hf.Image(),
            "raw": hf.Image(decode=False),
        }
    )
    data = {
        "s": [{"x": 1, "y": {"z": 3}}],
        "img": [{"bytes": b"png", "path": None}],
        "raw": [{"bytes": b"z", "path": "p.png"}],
    }
    ours = am.Dataset.from_dict(data, features=feats).flatten(max_depth=max_depth)
    theirs = hf.Dataset.from_dict(data, features=feats).flatten(max_depth=max_depth)
    assert ours.column_names == theirs.column_names
    assert ours.features == theirs.features
    plain = [c for c in ours.column_names if c != "img"]  # HF decodes img with PIL on access
    assert ours.select_columns(plain)[:] == theirs.select_columns(plain)[:]
    assert ours["img"] == [{"bytes": b"png", "path": None}]  # arrowmix reads media undecoded


def test_numpy_images_inside_a_struct_are_encoded_as_hf() -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("PIL")
    feats = hf.Features({"a": {"b": hf.Image()}, "foo": hf.Value("int64")})
    data = {"a": [{"b": np.arange(12, dtype=np.uint8).reshape(2, 2, 3)}] * 2, "foo": [1, 2]}
    ours = am.Dataset.from_dict(data, features=feats)
    theirs = hf.Dataset.from_dict(data, features=feats)
    assert ours.features == theirs.features
    assert ours.data.table.column("a").to_pylist() == theirs.data.table.column("a").to_pylist()
    assert ours.flatten().column_names == theirs.flatten().column_names == ["a.b", "foo"]
