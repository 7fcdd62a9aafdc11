"""Calls of HF ``datasets``' own test suite where arrowmix differed, compared value by value.

Streaming ``csv``/``text`` features, ``IterableDatasetDict.cast``/``cast_column``, the
``DatasetInfo`` texts of a ``map`` result, the CSV reader's options (``column_names``,
``usecols``...), the builder options ``from_json``/``from_csv``/``from_parquet`` take, the
errors of an impossible ``from_pandas`` cast and NumPy images in an ``Image()`` column.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
hf.disable_progress_bar()


def _files(tmp_path: Path) -> dict[str, str]:
    paths = {
        "csv": tmp_path / "t.csv",
        "text": tmp_path / "t.txt",
        "json": tmp_path / "t.jsonl",
    }
    paths["csv"].write_text("a,b,c\n1,x,2.5\n3,y,4.5\n")
    paths["text"].write_text("l1\nl2\n")
    paths["json"].write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')
    return {k: str(v) for k, v in paths.items()}


def _description(it: Any) -> tuple[Any, ...]:
    return (it.features, it.column_names, it.info.features, it.num_columns, repr(it))


@pytest.mark.parametrize("builder", ["csv", "text", "json"])
def test_streaming_features_are_unknown_where_hf_s_are(tmp_path: Path, builder: str) -> None:
    path = _files(tmp_path)[builder]
    ours = am.load_dataset(builder, data_files=path, split="train", streaming=True)
    theirs = hf.load_dataset(builder, data_files=path, split="train", streaming=True)
    assert _description(ours) == _description(theirs)
    assert list(ours) == list(theirs)
    assert list(ours.with_format("numpy")) == list(theirs.with_format("numpy"))
    splits = am.load_dataset(builder, data_files=path, streaming=True)
    assert splits["train"].features == theirs.features
    if builder == "json":
        assert ours.features == hf.Features({"a": hf.Value("int64"), "b": hf.Value("string")})
        return
    assert ours.features is None
    column = "a" if builder == "csv" else "text"
    for lib, ds in ((am, ours), (hf, theirs)):
        with pytest.raises(TypeError, match="item assignment"):
            ds.cast_column(column, lib.Value("string"))


@pytest.mark.slow
def test_streaming_csv_with_features_knows_them(tmp_path: Path) -> None:
    path = _files(tmp_path)["csv"]
    feats = hf.Features({"a": hf.Value("int32"), "b": hf.Value("string"), "c": hf.Value("float64")})
    ours = am.load_dataset("csv", data_files=path, split="train", streaming=True, features=feats)
    theirs = hf.load_dataset("csv", data_files=path, split="train", streaming=True, features=feats)
    assert ours.features == theirs.features == feats
    assert list(ours) == list(theirs)


def test_iterable_dataset_dict_cast_and_cast_column(tmp_path: Path) -> None:
    path = _files(tmp_path)["json"]
    files = {"train": path, "test": path}
    feats = hf.Features({"a": hf.Value("float64"), "b": hf.Value("string")})
    out = []
    for lib in (am, hf):
        dd = lib.load_dataset("json", data_files=files, streaming=True)
        one = dd.cast_column("a", lib.Value("float32"))
        every = dd.cast(feats)
        out.append(
            (
                type(one).__name__,
                sorted(one),
                one["test"].features,
                list(one["train"]),
                every["train"].features,
                list(every["test"]),
            )
        )
    assert out[0] == out[1]
    assert out[0][3] == [{"a": 1.0, "b": "x"}, {"a": 2.0, "b": "y"}]
    assert all(type(r["a"]) is float for r in out[0][3])


def _texts(ds: Any) -> tuple[Any, ...]:
    i = ds.info
    names = (i.dataset_name, i.config_name, i.version, i.builder_name)
    return (i.description, i.citation, i.homepage, i.license, *names, ds.features)


def test_map_result_keeps_the_info_texts(tmp_path: Path) -> None:
    out = []
    for lib in (am, hf):
        info = lib.DatasetInfo(
            description="desc",
            citation="cit",
            homepage="hp",
            license="mit",
            dataset_name="nm",
            config_name="cfg",
            version="1.2.3",
        )
        ds = lib.Dataset.from_dict({"a": [1, 2]}, info=info)
        ds.save_to_disk(str(tmp_path / lib.__name__))
        ds = lib.load_from_disk(str(tmp_path / lib.__name__))
        first = ds.map(lambda r: {"b": r["a"] + 1})
        again = ds.map(lambda r: {"b": r["a"] + 1})  # arrowmix: read from its cache
        cast = ds.cast_column("a", lib.Value("int32"))
        other = lib.Dataset.from_dict({"a": [3]}, info=lib.DatasetInfo(description="other"))
        out.append(
            [
                _texts(x)
                for x in (
                    ds,
                    first,
                    again,
                    cast,
                    first.filter(lambda r: r["b"] > 2),
                    lib.concatenate_datasets([ds, ds.select([0])]),
                    lib.concatenate_datasets([ds, other]),  # names differ: dropped
                )
            ]
        )
    assert out[0] == out[1]
    assert out[0][2][:6] == ("desc", "cit", "hp", "mit", "nm", "cfg")
    assert str(out[0][2][6]) == "1.2.3"
    assert out[0][6][:5] == ("desc\n\nother", "cit", "hp", "mit", None)


def _rows(ds: Any) -> tuple[Any, ...]:
    return (ds.column_names, ds[:], ds.features, ds.split)


@pytest.mark.slow  # the fast tier: test_csv_usecols_with_features_and_its_errors
@pytest.mark.parametrize(
    "options",
    [
        {"usecols": ["c", "a"]},
        {"usecols": [2, 0]},
        {"column_names": ["p", "q", "r"]},
        {"names": ["p", "q", "r"], "header": 0},
        {"header": None},
        {"column_names": ["p", "q", "r"], "usecols": ["r"], "sep": ","},
    ],
)
def test_csv_reader_options_as_hf(tmp_path: Path, options: dict[str, Any]) -> None:
    path = _files(tmp_path)["csv"]
    ours = am.load_dataset("csv", data_files=path, split="train", **options)
    theirs = hf.load_dataset("csv", data_files=path, split="train", **options)
    assert _rows(ours) == _rows(theirs)
    assert _rows(am.Dataset.from_csv(path, **options)) == _rows(
        hf.Dataset.from_csv(path, **options)
    )
    streamed = am.load_dataset("csv", data_files=path, split="train", streaming=True, **options)
    assert list(streamed) == theirs.to_list()


def test_csv_usecols_with_features_and_its_errors(tmp_path: Path) -> None:
    path = _files(tmp_path)["csv"]
    feats = hf.Features({"a": hf.Value("float32")})
    ours = am.Dataset.from_csv(path, usecols=["a"], features=feats)
    theirs = hf.Dataset.from_csv(path, usecols=["a"], features=feats)
    assert _rows(ours) == _rows(theirs)
    assert ours["a"] == [1.0, 3.0] and type(ours["a"][0]) is float
    with pytest.raises(ValueError, match=r"`usecols` names \['zz'\]"):
        am.Dataset.from_csv(path, usecols=["a", "zz"])  # HF: DatasetGenerationError
    with pytest.raises(ValueError, match="`column_names` names 2 column"):
        am.Dataset.from_csv(path, column_names=["p", "q"])  # pandas: the first is an index
    with pytest.raises(ValueError, match="does not take 'skiprows'"):
        am.Dataset.from_csv(path, skiprows=1)


@pytest.mark.parametrize(
    ("method", "key", "options"),
    [
        ("from_json", "json", {"encoding": "utf-8", "chunksize": 10, "block_size": 64}),
        ("from_json", "json", {"num_proc": 2, "field": None}),
        ("from_text", "text", {"encoding": "utf-8", "chunksize": 10, "num_proc": 2}),
        ("from_csv", "csv", {"encoding": "utf8", "chunksize": 10}),
    ],
)
def test_from_files_take_hf_builder_options(
    tmp_path: Path, method: str, key: str, options: dict[str, Any]
) -> None:
    path = _files(tmp_path)[key]
    ours = getattr(am.Dataset, method)(path, **options)
    assert _rows(ours) == _rows(getattr(hf.Dataset, method)(path, **options))


@pytest.mark.slow
def test_from_parquet_takes_hf_builder_options(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), path)
    for options in ({"batch_size": 10, "num_proc": 2}, {"columns": ["b"], "batch_size": 1}):
        ours = am.Dataset.from_parquet(path, **options)
        assert _rows(ours) == _rows(hf.Dataset.from_parquet(path, **options))


def test_from_files_refuse_options_hf_does_not_have(tmp_path: Path) -> None:
    files = _files(tmp_path)
    with pytest.raises(ValueError, match="json builder of arrowmix's from_json does not take 'x'"):
        am.Dataset.from_json(files["json"], x=1)  # HF: TypeError from JsonConfig
    with pytest.raises(ValueError, match="UTF-8 text only"):
        am.Dataset.from_text(files["text"], encoding="utf-16")


def _build(lib: Any, how: str, values: list[Any], feature: Any) -> None:
    import pandas as pd

    feats = lib.Features({"a": feature})
    if how == "from_pandas":
        lib.Dataset.from_pandas(pd.DataFrame({"a": values}), features=feats)
    elif how == "from_dict":
        lib.Dataset.from_dict({"a": values}, features=feats)
    else:
        lib.Dataset.from_dict({"a": values}).cast(feats)


@pytest.mark.parametrize("how", ["from_pandas", "from_dict", "cast"])
@pytest.mark.parametrize(
    ("values", "feature", "hf_class"),
    [
        (["x", "y"], "int64", pa.ArrowInvalid),
        ([1000, 2], "int8", pa.ArrowInvalid),
        ([[1], [2]], "int64", TypeError),
        ([{"x": 1}], "int64", TypeError),
        ([1, 2], "list", TypeError),
    ],
)
def test_impossible_casts_raise_what_hf_raises(
    how: str, values: list[Any], feature: str, hf_class: type[Exception]
) -> None:
    def feat(lib: Any) -> Any:
        return lib.List(lib.Value("int64")) if feature == "list" else lib.Value(feature)

    if how == "from_dict" and values == ["x", "y"]:
        hf_class = ValueError  # HF's own ValueError here (an ArrowInvalid is one)
    with pytest.raises(hf_class):
        _build(hf, how, values, feat(hf))
    with pytest.raises(hf_class, match="'a'") as ours:
        _build(am, how, values, feat(am))
    assert isinstance(ours.value, am.exceptions.SchemaMismatchError)  # as before, a ValueError
    assert isinstance(ours.value, ValueError)


def _stored(lib: Any, ds: Any) -> dict[str, list[Any]]:
    if lib is hf:
        return ds.data.table.to_pydict()  # type: ignore[no-any-return]
    return ds.with_format("arrow")[:].to_pydict()  # type: ignore[no-any-return]


def _media_calls(lib: Any, arr: Any) -> list[Any]:
    feats = lib.Features({"img": lib.Image()})
    both = lib.Features({"a": lib.Value("int64"), "img": lib.Image()})
    base = lib.Dataset.from_dict({"a": [1, 2]})
    gray = arr[:, :, 0]
    return [
        lib.Dataset.from_dict({"img": [arr, None, gray]}, features=feats),
        lib.Dataset.from_list([{"img": arr}], features=feats),
        base.map(lambda r: {"img": arr}, features=both),
        base.map(lambda b: {"img": [arr] * len(b["a"])}, batched=True, features=both),
        lib.Dataset.from_dict({"img": [arr]}).cast_column("img", lib.Image()),
        lib.Dataset.from_dict(
            {"img": [[arr, arr]]}, features=lib.Features({"img": lib.List(lib.Image())})
        ),
    ]


@pytest.mark.filterwarnings("ignore:Downcasting array dtype int64")  # HF's map reads lists
def test_numpy_images_are_stored_as_hf_stores_them() -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("PIL")
    arr = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    ours = [(_stored(am, d), d.features) for d in _media_calls(am, arr)]
    theirs = [(_stored(hf, d), d.features) for d in _media_calls(hf, arr)]
    assert ours == theirs
    first = ours[0][0]["img"]
    assert first[0]["bytes"].startswith(b"\x89PNG") and first[0]["path"] is None
    assert first[1] is None
    with pytest.raises(TypeError, match="Unsupported array dtype float32"):  # HF's error
        am.Dataset.from_dict(
            {"img": [arr.astype("float32")]}, features=hf.Features({"img": hf.Image()})
        )


@pytest.mark.slow
def test_pil_images_are_stored_as_hf_stores_them() -> None:
    np = pytest.importorskip("numpy")
    pil = pytest.importorskip("PIL.Image")
    image = pil.fromarray(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
    out = []
    for lib in (am, hf):
        feats = lib.Features({"a": lib.Value("int64"), "img": lib.Image()})
        base = lib.Dataset.from_dict({"a": [1, 2]})
        mapped = base.map(lambda r: {"img": image}, features=feats)
        given = lib.Dataset.from_dict({"img": [image]}, features=lib.Features({"img": lib.Image()}))
        out.append((_stored(lib, mapped), mapped.features, _stored(lib, given)))
    assert out[0] == out[1]
    # without `features=`: the same stored values; HF also calls the column Image()
    plain = am.Dataset.from_dict({"a": [1, 2]}).map(lambda r: {"img": image})
    assert _stored(am, plain)["img"] == out[1][0]["img"]


def test_features_fill_json_columns_name_text_and_subset_parquet(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    files = _files(tmp_path)
    parquet = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5]}), parquet)
    out = []
    for lib in (am, hf):
        wider = lib.Features(
            {"z": lib.Value("string"), "a": lib.Value("int64"), "b": lib.Value("string")}
        )
        line = lib.Features({"line": lib.Value("string")})
        full = lib.Features(
            {"a": lib.Value("int32"), "b": lib.Value("string"), "c": lib.Value("float64")}
        )
        load = lib.load_dataset
        streamed = load(
            "json", data_files=files["json"], features=wider, split="train", streaming=True
        )
        out.append(
            [
                _rows(load("json", data_files=files["json"], features=wider, split="train")),
                _rows(lib.Dataset.from_json(files["json"], features=wider)),
                (list(streamed), streamed.features),
                _rows(load("text", data_files=files["text"], features=line, split="train")),
                _rows(lib.Dataset.from_text(files["text"], features=line)),
                _rows(
                    load(
                        "parquet",
                        data_files=parquet,
                        columns=["c", "a"],
                        features=full,
                        split="train",
                    )
                ),
            ]
        )
    assert out[0] == out[1]
    assert out[0][0][1] == {"z": [None, None], "a": [1, 2], "b": ["x", "y"]}
    assert out[0][0][0] == ["z", "a", "b"]
    with pytest.raises(ValueError, match="must be identical"):  # HF: DatasetGenerationError
        am.load_dataset("csv", data_files=files["csv"], features=wider, split="train")


def test_csv_on_bad_lines_as_hf(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("header1,header2\n1,2\n10,20,\n3,4\n")
    for mode in ("skip", "warn"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' ParserWarning
            theirs = hf.Dataset.from_csv(
                str(path), on_bad_lines=mode, cache_dir=str(tmp_path / mode)
            )
        if mode == "warn":
            with pytest.warns(am.exceptions.DroppedDataWarning, match=r"bad.csv:3: a row of 3"):
                ours = am.Dataset.from_csv(str(path), on_bad_lines=mode)
        else:
            ours = am.load_dataset("csv", data_files=str(path), on_bad_lines=mode, split="train")
        assert _rows(ours) == _rows(theirs)
        assert ours.to_dict() == {"header1": [1, 3], "header2": [2, 4]}
    with pytest.raises(ValueError, match="expected 2 fields as in the header, got 3"):
        am.Dataset.from_csv(str(path))
    with pytest.raises(ValueError, match="`on_bad_lines` must be"):
        am.Dataset.from_csv(str(path), on_bad_lines="drop")


def test_a_cached_load_says_so_as_hf(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    path = _files(tmp_path)["json"]
    first = am.load_dataset("json", data_files=path, split="train", cache_dir=str(tmp_path / "c"))
    with caplog.at_level(logging.INFO, logger="arrowmix"):
        again = am.load_dataset(
            "json", data_files=path, split="train", cache_dir=str(tmp_path / "c")
        )
    assert "Found cached dataset" in caplog.text  # HF's words (its logger is datasets')
    assert again.fingerprint == first.fingerprint
