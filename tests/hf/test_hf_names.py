"""HF datasets' names of the third wave, each compared with HF value by value where installed:
add_column/add_item/repeat/cast_column/class_encode_column, pandas, exporters, Json()."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")
pd = pytest.importorskip("pandas")

D = {"a": [3, 1, 2, 1], "s": ["x", "y", None, "x"], "f": [1.5, 2.5, 3.5, 4.5]}


def _both(build):
    return build(am.Dataset), build(datasets.Dataset)


@pytest.fixture(autouse=True)
def _quiet_hf(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    datasets.disable_progress_bars()


def test_add_column_and_item_match_hf():
    cases = [
        lambda C: C.from_dict(D).add_column("n", [9, 8, 7, 6]),
        lambda C: C.from_dict(D).select([3, 0]).add_column("n", np.array([1, 2])),
        lambda C: C.from_dict(D).add_item({"a": 5, "s": "z", "f": 0.5}),
        lambda C: C.from_dict(D).select([2, 0]).add_item({"a": 5, "s": "z", "f": 1}),
        lambda C: C.from_dict(D).add_column(
            "n", [0, 1, 0, 1], feature=datasets.ClassLabel(names=["no", "yes"])
        ),
    ]
    for case in cases:
        ours, hf = _both(case)
        assert ours[:] == hf[:]
        assert ours.features == hf.features


def test_add_column_errors_and_fingerprints():
    ds = am.Dataset.from_dict(D)
    with pytest.raises(ValueError, match="duplicated"):
        ds.add_column("a", [1, 2, 3, 4])
    with pytest.raises(ValueError, match="one value a row"):
        ds.add_column("n", [1, 2])
    one, other = ds.add_column("n", [1, 2, 3, 4]), ds.add_column("n", [1, 2, 3, 5])
    assert one.fingerprint == ds.add_column("n", [1, 2, 3, 4]).fingerprint
    assert one.fingerprint != other.fingerprint != ds.fingerprint
    assert ds.add_column("n", [1, 2, 3, 4], new_fingerprint="mine").fingerprint == "mine"
    with pytest.raises(am.exceptions.SchemaMismatchError):
        ds.add_item({"a": "not a number", "s": "z", "f": 1.0})


def test_repeat_matches_hf_and_is_a_view():
    for n in (0, 1, 3):
        ours, hf = _both(lambda C, n=n: C.from_dict(D).shuffle(seed=1).repeat(n))
        assert ours[:] == hf[:]
    ds = am.Dataset.from_dict(D)
    assert ds.repeat(2).fingerprint != ds.repeat(3).fingerprint
    assert ds.repeat(2).cache_files == ds.cache_files  # no column data written
    with pytest.raises(ValueError, match="indefinite"):
        ds.repeat(None)  # type: ignore[arg-type]


def test_cast_column_matches_hf():
    for feature in (datasets.Value("float32"), datasets.Value("string")):
        ours, hf = _both(lambda C, f=feature: C.from_dict(D).cast_column("a", f))
        assert ours[:] == hf[:] and ours.features == hf.features
    ds = am.Dataset.from_dict(D).cast_column("a", pa.int8())
    assert ds.schema.field("a").type == pa.int8() and ds["a"] == D["a"]
    with pytest.raises(am.exceptions.SchemaMismatchError):
        am.Dataset.from_dict(D).cast_column("f", datasets.Value("int64"))  # 1.5 would change


@pytest.mark.parametrize("column", ["s", "a"])
@pytest.mark.parametrize("include_nulls", [False, True])
def test_class_encode_column_matches_hf(column, include_nulls):
    ours, hf = _both(lambda C: C.from_dict(D).class_encode_column(column, include_nulls))
    assert ours[:] == hf[:]
    assert ours.features == hf.features
    assert ours.features[column].names == sorted(ours.features[column].names)


def test_class_encode_column_refuses_lists():
    ds = am.Dataset.from_dict({"l": [[1], [2]]})
    with pytest.raises(ValueError, match="only supported for Value"):
        ds.class_encode_column("l")


def test_pandas_in_and_out_match_hf():
    df = pd.DataFrame(D)
    for frame in (df, df.iloc[[2, 0]]):
        ours, hf = _both(lambda C, fr=frame: C.from_pandas(fr))
        assert ours[:] == hf[:] and ours.features == hf.features
    feats = datasets.Features({"a": datasets.Value("int32"), "s": datasets.Value("string"),
                               "f": datasets.Value("float64")})  # fmt: skip
    ours, hf = _both(lambda C: C.from_pandas(df, features=feats))
    assert ours.features == hf.features
    ours, hf = _both(lambda C: C.from_dict(D).select([3, 1, 0]))
    pd.testing.assert_frame_equal(ours.to_pandas(), hf.to_pandas())
    for a, b in zip(ours.to_pandas(batched=True, batch_size=2),
                    hf.to_pandas(batched=True, batch_size=2), strict=True):  # fmt: skip
        pd.testing.assert_frame_equal(a, b)


def test_pandas_format_matches_hf():
    ours, hf = _both(lambda C: C.from_dict(D).with_format("pandas"))
    pd.testing.assert_frame_equal(ours[0], hf[0])
    pd.testing.assert_frame_equal(ours[1:3], hf[1:3])
    pd.testing.assert_series_equal(ours["a"], hf["a"])
    pd.testing.assert_frame_equal(next(iter(ours)), next(iter(hf)))
    assert ours.format["type"] == "pandas"


def test_polars_format_needs_polars():
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="polars"):
            am.Dataset.from_dict(D).with_format("polars")
    else:  # pragma: no cover - polars is not installed in CI
        assert am.Dataset.from_dict(D).to_polars().shape == (4, 3)


def _export(C, tmp_path, kind, **kw):
    path = tmp_path / f"{C.__module__.split('.')[0]}.{kind}"
    written = getattr(C.from_dict(D).select([3, 1, 0]), f"to_{kind}")(str(path), **kw)
    return written, path


@pytest.mark.parametrize(
    ("kind", "kw"),
    [
        ("csv", {}),
        ("csv", {"batch_size": 2, "num_proc": 2}),
        ("csv", {"sep": ";", "index": True}),
        ("json", {}),
        ("json", {"batch_size": 1, "num_proc": 2}),
        ("json", {"orient": "split", "lines": False}),
    ],
)
def test_text_exporters_match_hf_byte_for_byte(tmp_path, kind, kw):
    (n, ours), (m, theirs) = _both(lambda C: _export(C, tmp_path, kind, **kw))
    assert ours.read_bytes() == theirs.read_bytes()
    assert n == m == len(ours.read_bytes())


def test_to_json_gzip_and_json_feature(tmp_path):
    feats = datasets.Features({"j": datasets.Json()})
    rows = {"j": [{"k": [1, 2]}, "text", None]}
    outs = []
    for C in (am.Dataset, datasets.Dataset):
        path = tmp_path / f"{C.__module__.split('.')[0]}.jsonl.gz"
        n = C.from_dict(rows, features=feats).to_json(str(path))
        import gzip

        outs.append((n, gzip.decompress(path.read_bytes())))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("batch_size", [None, 1])
def test_to_parquet_matches_hf(tmp_path, batch_size):
    (n, ours), (m, theirs) = _both(lambda C: _export(C, tmp_path, "parquet", batch_size=batch_size))
    a, b = pq.ParquetFile(ours), pq.ParquetFile(theirs)
    assert a.read().equals(b.read())
    assert a.schema_arrow.metadata == b.schema_arrow.metadata
    assert a.metadata.num_row_groups == b.metadata.num_row_groups
    assert a.metadata.metadata == b.metadata.metadata  # content-defined chunking recorded
    if batch_size == 1:
        assert n == m  # HF's count: the Arrow size of the batches written


def test_to_parquet_keeps_class_labels_for_hf(tmp_path):
    path = str(tmp_path / "l.parquet")
    am.Dataset.from_dict(D).class_encode_column("s").to_parquet(path)
    back = datasets.Dataset.from_parquet(path)
    assert back.features["s"] == datasets.ClassLabel(names=["x", "y"])
    assert back["s"] == [0, 1, None, 0]


class _Boom(Exception):
    pass


@pytest.mark.parametrize("kind", ["csv", "json", "parquet"])
def test_exporters_never_leave_a_partial_file(tmp_path, kind, monkeypatch):
    path = tmp_path / f"out.{kind}"
    ds = am.Dataset.from_dict({"x": list(range(50))})
    getattr(ds, f"to_{kind}")(str(path), batch_size=10)
    before = path.read_bytes()
    import arrowmix._dataset.export as export

    real = export._table
    calls = []

    def failing(d, start, stop):
        calls.append(start)
        if len(calls) > 2:
            raise _Boom
        return real(d, start, stop)

    monkeypatch.setattr(export, "_table", failing)
    with pytest.raises(_Boom):
        getattr(ds.map(lambda r: {"x": r["x"] + 1}), f"to_{kind}")(str(path), batch_size=10)
    assert path.read_bytes() == before  # the old file, whole
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left beside it
    path.unlink()
    calls.clear()
    with pytest.raises(_Boom):
        getattr(ds, f"to_{kind}")(str(path), batch_size=10)
    assert os.listdir(tmp_path) == []  # none


def test_exporters_write_to_a_file_object(tmp_path):
    import io

    buf = io.BytesIO()
    n = am.Dataset.from_dict(D).to_csv(buf)
    theirs = io.BytesIO()
    datasets.Dataset.from_dict(D).to_csv(theirs)
    assert buf.getvalue() == theirs.getvalue()
    assert n == len(buf.getvalue()) and buf.getvalue().startswith(b"a,s,f\n3,x,1.5\n")


def test_from_dict_with_json_features_matches_hf():
    feats = datasets.Features({"a": datasets.Json(), "b": datasets.List(datasets.Json())})
    rows = {"a": [{"b": 0}, {"c": [1, 2]}, None, "x", 3],
            "b": [[{"x": 1}, 2], [], None, ["s"], [None]]}  # fmt: skip
    ours, hf = _both(lambda C: C.from_dict(rows, features=feats))
    assert ours[:] == hf[:] == rows
    assert ours.features == hf.features
    assert ours.map(lambda r: r)[:] == rows


def test_num_proc_validated():
    with pytest.raises(ValueError, match="num_proc"):
        am.Dataset.from_dict(D).to_csv(os.devnull, num_proc=0)


def test_exports_run_in_a_fresh_interpreter(tmp_path):
    """num_proc=2 export from a script (forked workers see the dataset)."""
    script = textwrap.dedent(
        f"""
        import arrowmix as am
        ds = am.Dataset.from_dict({{"x": list(range(2500))}})
        n = ds.to_json({str(tmp_path / "o.jsonl")!r}, num_proc=2)
        print(n)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    text = (tmp_path / "o.jsonl").read_text()
    assert int(out.stdout) == len(text.encode())
    assert text.splitlines()[2499] == '{"x":2499}'


@pytest.mark.parametrize("batched", [True, False])
def test_map_on_a_pandas_view_returns_what_hf_returns(batched):
    """HF: a data frame input is not merged into the output; what the function returns is all."""
    ours, hf = _both(
        lambda C: (
            C.from_dict(D)
            .with_format("pandas")
            .map(lambda b: {"c": b["a"] * 2}, batched=batched)
            .with_format(None)
        )
    )
    assert ours[:] == hf[:]
    assert ours.column_names == ["c"]
