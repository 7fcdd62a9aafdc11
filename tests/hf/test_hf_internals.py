"""HF datasets' internals that code written against HF reads or calls.

``ds._fingerprint``, ``ds.data``/``ds._data``/``ds._indices``, ``Dataset(table, ...)``,
``from_dict(info=)``, ``from_file(in_memory=, indices_filename=)``, the views' storage
options (``indices_cache_file_name``, ``keep_in_memory``, ``new_fingerprint``...),
``to_dict(batched=True)``, ``_getitem``, ``unique`` and HF datasets in ``concatenate_datasets``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.indices import INDICES_FILE_MIN_ROWS
from arrowmix._dataset.state import state_of
from arrowmix.exceptions import FingerprintError


def _ds(n: int = 10) -> am.Dataset:
    return am.Dataset.from_dict({"id": list(range(n)), "s": [str(i) for i in range(n)]})


def test_private_fingerprint_is_the_fingerprint():
    ds = _ds()
    assert ds._fingerprint == ds.fingerprint
    assert ds.shuffle(seed=0)._fingerprint != ds._fingerprint


def test_data_and_indices_as_hf_keeps_them():
    ds = _ds()
    assert ds._indices is None
    assert isinstance(ds.data.table, pa.Table)
    assert ds.data.column_names == ["id", "s"] and len(ds.data) == 10
    assert ds._data == ds.data

    contiguous = ds.select(range(2, 5))  # HF: a sliced table, no indices
    assert contiguous._indices is None
    assert contiguous.data.num_rows == 3
    assert contiguous.data["id"].to_pylist() == [2, 3, 4]

    view = ds.select([3, 1, 3])
    ix = view._indices
    assert ix["indices"].to_pylist() == [3, 1, 3]
    assert ix.schema.field("indices").type == pa.uint64()
    assert view.data.num_rows == 10  # the table under the mapping
    assert view._indices == ds.select([3, 1, 3])._indices
    assert view._indices != ds.select([1, 3])._indices

    empty = ds.filter(lambda row: False)
    assert empty._indices is not None and len(empty._indices) == 0


def test_assigning_the_wrapped_table_leaves_the_dataset_alone():
    ds = _ds()
    view = ds.data
    view.table = pa.table({"other": [1]})
    assert ds.data.column_names == ["id", "s"]
    assert ds[0] == {"id": 0, "s": "0"}


def test_data_schema_carries_hf_features():
    datasets = pytest.importorskip("datasets")
    meta = _ds().data.schema.metadata
    info = json.loads(meta[b"huggingface"])["info"]
    features = datasets.DatasetInfo.from_dict(info).features
    assert features == datasets.Features(
        {"id": datasets.Value("int64"), "s": datasets.Value("string")}
    )


def test_dataset_of_an_arrow_table():
    table = pa.table({"x": [1, 2, 3]})
    ds = am.Dataset(table)
    assert ds[:] == {"x": [1, 2, 3]}
    assert ds.fingerprint == am.Dataset.from_arrow(table).fingerprint


def test_dataset_of_a_table_wrapper_with_indices_and_fingerprint():
    class Wrapper:  # the shape of HF's InMemoryTable / MemoryMappedTable
        def __init__(self, table):
            self.table = table

    indices = pa.table({"indices": pa.array([2, 0], type=pa.uint64())})
    ds = am.Dataset(Wrapper(pa.table({"x": [1, 2, 3]})), indices_table=Wrapper(indices))
    assert ds["x"] == [3, 1]
    assert ds._indices["indices"].to_pylist() == [2, 0]
    plain = am.Dataset(pa.table({"x": [1, 2, 3]}))
    assert ds.fingerprint != plain.fingerprint
    named = am.Dataset(pa.table({"x": [1]}), fingerprint="my-data")
    assert named.fingerprint == "my-data"


def test_dataset_of_something_else_names_the_argument():
    with pytest.raises(TypeError, match=r"Dataset\(arrow_table\).*dict"):
        am.Dataset({"x": [1]})
    with pytest.raises(IndexError, match="Index 5"):
        am.Dataset(pa.table({"x": [1]}), indices_table=pa.table({"indices": [5]}))


def test_from_dict_takes_the_features_of_an_hf_info():
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"x": datasets.Value("float32")})
    info = datasets.DatasetInfo(description="kept by HF only", features=features)
    ds = am.Dataset.from_dict({"x": [1, 2]}, info=info, split="train")
    assert ds.schema.field("x").type == pa.float32()
    assert am.Dataset.from_list([{"x": 1}], info=info).schema.field("x").type == pa.float32()
    other = datasets.Features({"x": datasets.Value("int8")})
    with pytest.raises(ValueError, match="can't be different"):
        am.Dataset.from_dict({"x": [1]}, features=other, info=info)


def test_from_file_in_memory_copies_the_rows(tmp_path):
    (path,) = am.write_chunks(pa.table({"x": list(range(20_000))}), tmp_path / "c")
    mapped = am.Dataset.from_file(path)
    before = pa.total_allocated_bytes()
    copied = am.Dataset.from_file(path, in_memory=True)
    assert pa.total_allocated_bytes() - before >= 20_000 * 8
    assert copied[:] == mapped[:]
    assert copied.fingerprint == mapped.fingerprint
    assert copied.cache_files == []
    assert copied.cache_dir == mapped.cache_dir  # results still go beside the file


def test_from_file_with_an_indices_file(tmp_path):
    (path,) = am.write_chunks(pa.table({"x": [10, 11, 12]}), tmp_path / "c")
    ix_path = str(tmp_path / "indices.arrow")
    indices = pa.table({"indices": pa.array([2, 1], type=pa.uint64())})
    with pa.OSFile(ix_path, "wb") as sink, pa.ipc.new_stream(sink, indices.schema) as w:
        w.write_table(indices)  # the stream format, as HF writes it
    assert am.Dataset.from_file(path, indices_filename=ix_path)["x"] == [12, 11]
    bad = str(tmp_path / "bad.arrow")
    am.write_chunks(pa.table({"a": [0], "b": [1]}), tmp_path / "b")
    os.replace(tmp_path / "b" / "chunk-00000.arrow", bad)
    with pytest.raises(TypeError, match=r"bad\.arrow"):
        am.Dataset.from_file(path, indices_filename=bad)


def test_indices_cache_file_name_stores_any_mapping_there(tmp_path):
    ds = _ds()
    path = str(tmp_path / "mine.arrow")
    view = ds.select([5, 1], indices_cache_file_name=path)
    assert os.path.exists(path) and path in view.cache_files
    assert view["id"] == [5, 1]
    again = ds.select([5, 1], indices_cache_file_name=path)  # reused, same rows
    assert again["id"] == [5, 1] and again.fingerprint == view.fingerprint
    shuffled = ds.shuffle(seed=3, indices_cache_file_name=str(tmp_path / "s.arrow"))
    assert shuffled["id"] == ds.shuffle(seed=3)["id"]
    with pytest.raises(ValueError, match="extension"):
        ds.select([1, 0], indices_cache_file_name=str(tmp_path / "noext"))


def test_load_from_cache_file_false_writes_the_indices_file_again(tmp_path):
    ds = _ds()
    path = tmp_path / "s.arrow"
    ds.sort("id", reverse=True, indices_cache_file_name=str(path))
    first = path.stat().st_mtime_ns, path.stat().st_ino
    ds.sort("id", reverse=True, indices_cache_file_name=str(path))
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == first
    view = ds.sort(
        "id", reverse=True, indices_cache_file_name=str(path), load_from_cache_file=False
    )
    assert path.stat().st_ino != first[1]
    assert view["id"][:3] == [9, 8, 7]


def test_keep_in_memory_writes_no_indices_file():
    n = INDICES_FILE_MIN_ROWS  # large enough to be written to a file by default
    ds = am.Dataset.from_dict({"x": np.arange(n)})
    assert any("indices-" in f for f in ds.shuffle(seed=0).cache_files)
    kept = ds.shuffle(seed=0, keep_in_memory=True)
    assert kept.cache_files == []
    assert kept[:5] == ds.shuffle(seed=0)[:5]
    with pytest.raises(ValueError, match="not both"):
        ds.shuffle(seed=0, keep_in_memory=True, indices_cache_file_name="/tmp/x.arrow")


def test_new_fingerprint_names_a_view():
    ds = _ds()
    assert ds.select([1], new_fingerprint="pick-one").fingerprint == "pick-one"
    assert ds.shard(2, 0, new_fingerprint="half", writer_batch_size=2).fingerprint == "half"
    with pytest.raises(FingerprintError):
        ds.select([1], new_fingerprint="a/b")
    with pytest.raises(TypeError, match="unexpected keyword"):
        ds.select([1], indices_cache_file="x.arrow")


def test_train_test_split_options_per_split(tmp_path):
    ds = _ds(20)
    train_path = str(tmp_path / "train.arrow")
    train, test = ds.train_test_split(
        test_size=5,
        seed=1,
        train_indices_cache_file_name=train_path,
        test_new_fingerprint="held-out",
        writer_batch_size=10,
    )
    assert os.path.exists(train_path) and len(train) == 15
    assert test.fingerprint == "held-out"
    assert sorted(train["id"] + test["id"]) == list(range(20))
    drawn = ds.train_test_split(test_size=5, generator=np.random.default_rng(0))
    perm = np.random.default_rng(0).permutation(20)
    assert drawn["test"]["id"] == perm[:5].tolist() and drawn["train"]["id"] == perm[5:].tolist()


def test_flatten_indices_keep_in_memory():
    ds = _ds().shuffle(seed=2)
    flat = ds.flatten_indices(keep_in_memory=True)
    assert flat[:] == ds[:] and flat._indices is None
    assert flat.cache_files == []
    assert ds.flatten_indices(new_fingerprint="flat").fingerprint == "flat"


def test_to_dict_batched():
    ds = _ds(5)
    batches = list(ds.select([4, 3, 2, 1, 0]).to_dict(batch_size=2, batched=True))
    assert [b["id"] for b in batches] == [[4, 3], [2, 1], [0]]
    assert ds.to_dict() == ds[:]


def test_getitem_with_a_one_off_format_and_bool_keys():
    ds = _ds(3)
    out = ds._getitem(slice(0, 2), format_type="numpy", format_columns=["id"])
    assert isinstance(out["id"], np.ndarray) and list(out) == ["id"]
    assert ds._getitem(1) == ds[1]
    for key in (True, np.bool_(False)):
        with pytest.raises(TypeError, match="not"):
            ds[key]
    with pytest.raises(TypeError, match="unexpected"):
        ds._getitem(0, format="numpy")


def test_unique():
    ds = am.Dataset.from_dict({"x": [3, 1, 3, None, 1]})
    assert ds.unique("x") == [3, 1, None]
    assert ds.select([1, 4]).unique("x") == [1]
    with pytest.raises(KeyError, match="y"):
        ds.unique("y")


def test_ingesting_constructors_keep_in_memory(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(1000)))
    mapped = am.Dataset.from_csv(str(path))
    kept = am.Dataset.from_csv(str(path), keep_in_memory=True)
    assert kept[:] == mapped[:] and kept.fingerprint == mapped.fingerprint
    assert mapped.cache_files and kept.cache_files == []


def test_concatenate_takes_hf_datasets():
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"x": [1, 2, 3]}).select([2, 0])
    ours = am.Dataset.from_dict({"x": [7]})
    out = am.concatenate_datasets([ours, hf])
    assert out["x"] == [7, 3, 1]
    with pytest.raises(ValueError, match="duplicated"):
        am.concatenate_datasets([hf, hf], axis=1)
    with pytest.raises(TypeError, match="item 1 is a list"):
        am.concatenate_datasets([ours, [1]])


def test_format_attributes_and_formatted_as():
    ds = _ds(3)
    assert (ds._format_type, ds._format_columns, ds._output_all_columns) == (None, None, False)
    fp = ds.fingerprint
    with ds.formatted_as("numpy", columns=["id"], dtype=np.int32):
        assert ds._format_type == "numpy" and ds._format_columns == ["id"]
        assert ds._format_kwargs == {"dtype": np.int32}
        assert ds["id"].dtype == np.int32 and list(ds[0]) == ["id"]
        assert ds.fingerprint != fp
    assert ds.fingerprint == fp and ds[0] == {"id": 0, "s": "0"}
    with pytest.raises(RuntimeError), ds.formatted_as("numpy"):
        raise RuntimeError("inside")
    assert ds._format_type is None  # restored on an exception too


def test_assigning_format_columns_sets_the_format():
    ds = _ds(3).with_format("numpy")
    fp = ds.fingerprint
    ds._format_columns = ["s"]
    assert ds.format["columns"] == ["s"] and ds.format["type"] == "numpy"
    assert list(ds[0]) == ["s"] and ds.fingerprint != fp
    assert ds.remove_columns("id")._format_columns == ["s"]
    with pytest.raises(KeyError, match="nope"):
        ds._format_columns = ["nope"]


def test_unknown_columns_are_key_and_value_errors():
    from arrowmix.exceptions import ColumnNotFoundError

    ds = _ds(3)
    for call in (
        lambda: ds.rename_columns({"nope": "x"}),
        lambda: ds.remove_columns("nope"),
        lambda: ds.select_columns(["nope"]),
        lambda: ds["nope"],
    ):
        with pytest.raises(ColumnNotFoundError, match="nope") as info:
            call()
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_cast_changes_types_through_a_cached_map():
    ds = am.Dataset.from_dict({"a": [1, 2, 300], "s": ["x", "y", "z"]}).select([2, 0])
    schema = pa.schema([("s", pa.large_string()), ("a", pa.int16())])
    out = ds.with_format("numpy").cast(schema)
    assert out.schema == schema and out.format["type"] == "numpy"
    assert out.with_format(None)[:] == {"s": ["z", "x"], "a": [300, 1]}
    assert any("cache-" in f for f in out.cache_files)
    assert ds.cast(schema).fingerprint == ds.cast(schema).fingerprint
    assert ds.cast(ds.schema) is ds


def test_cast_takes_hf_features():
    datasets = pytest.importorskip("datasets")
    ds = am.Dataset.from_dict({"a": [1, 2]})
    out = ds.cast(datasets.Features({"a": datasets.Value("float64")}))
    assert out["a"] == [1.0, 2.0] and out.schema.field("a").type == pa.float64()


def test_cast_never_changes_values():
    from arrowmix.exceptions import SchemaMismatchError

    ds = am.Dataset.from_dict({"a": [1, 300], "f": [1.0, 1.5]})
    with pytest.raises(SchemaMismatchError, match="'a'"):
        ds.cast(pa.schema([("a", pa.int8()), ("f", pa.float64())]))
    with pytest.raises(SchemaMismatchError, match="'f'"):
        ds.cast(pa.schema([("a", pa.int64()), ("f", pa.int64())]))
    with pytest.raises(ValueError, match="identical"):
        ds.cast(pa.schema([("a", pa.int64())]))


def test_flatten_splits_struct_columns():
    ds = am.Dataset.from_dict(
        {"id": [0, 1], "ans": [{"t": "a", "pos": {"i": 1}}, {"t": "b", "pos": {"i": 2}}]}
    ).select([1, 0])
    flat = ds.flatten()
    assert flat.column_names == ["id", "ans.t", "ans.pos.i"]
    assert flat[:] == {"id": [1, 0], "ans.t": ["b", "a"], "ans.pos.i": [2, 1]}
    assert ds.flatten(max_depth=2).column_names == ["id", "ans.t", "ans.pos"]
    assert flat.fingerprint != ds.fingerprint
    assert ds.flatten(new_fingerprint="flat").fingerprint == "flat"


def test_hf_files_open_with_their_features_entry(tmp_path):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"label": datasets.ClassLabel(names=["neg", "pos"])})
    path = str(tmp_path / "hf.arrow")
    datasets.Dataset.from_dict({"label": [1, 0, 1]}, features=features).map(
        cache_file_name=path
    )  # HF writes an IPC stream file with its features in the schema metadata
    for ds in (am.Dataset.from_file(path), am.Dataset.from_file(path, in_memory=True)):
        assert ds["label"] == [1, 0, 1]
        info = json.loads(ds.data.schema.metadata[b"huggingface"])["info"]
        assert datasets.DatasetInfo.from_dict(info).features == features
    kept = am.Dataset(am.Dataset.from_file(path).data.table).shuffle(seed=0)
    flat = kept.flatten_indices(keep_in_memory=True)
    assert b"huggingface" in flat.data.schema.metadata


def test_info_texts_are_kept_and_merged_as_hf_does():
    datasets = pytest.importorskip("datasets")
    a = am.Dataset.from_dict(
        {"id": [0, 1]}, info=datasets.DatasetInfo(description="first", license="mit")
    )
    b = am.Dataset.from_dict({"id": [2]}, info=datasets.DatasetInfo(description="second"))
    plain = am.Dataset.from_dict({"id": [3]})
    assert a.info.description == "first" and a.info.license == "mit"
    assert a.select([1]).shuffle(seed=0).info.description == "first"
    assert a.info.features == a.features
    merged = am.concatenate_datasets([a, b, plain])
    assert merged.info.description == "first\n\nsecond" and merged.info.license == "mit"
    assert am.concatenate_datasets([a, a]).info.description == "first"
    assert am.concatenate_datasets([a, plain]).info.description == "first"
    assert plain.info.description == ""
    assert a.fingerprint == am.Dataset.from_dict({"id": [0, 1]}).fingerprint  # texts only


def test_concatenation_keeps_the_features_entries_of_its_inputs():
    entry = {"label": {"names": ["a", "b"], "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": entry}}).encode()}
    x = am.Dataset(pa.table({"label": [0, 1]}).replace_schema_metadata(meta))
    y = am.Dataset.from_dict({"label": [1], "other": ["z"]})
    out = am.concatenate_datasets([y, x])
    kept = json.loads(state_of(out).table.schema.metadata[b"huggingface"])["info"]["features"]
    assert kept == entry
    side = am.concatenate_datasets([am.Dataset.from_dict({"s": ["p", "q"]}), x], axis=1)
    kept = json.loads(state_of(side).table.schema.metadata[b"huggingface"])["info"]["features"]
    assert kept == entry
    strings = am.Dataset.from_dict({"label": ["s"]})  # another type: not described so
    out = am.concatenate_datasets([strings, x.cast(pa.schema([("label", pa.string())]))])
    assert b"ClassLabel" not in (state_of(out).table.schema.metadata or {}).get(b"huggingface", b"")


def test_ingesting_constructors_take_features(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"a": str(i), "b": i, "c": i / 2}) + "\n" for i in range(4)))
    schema = pa.schema([("a", pa.int32()), ("b", pa.float32()), ("c", pa.float64())])
    ds = am.Dataset.from_json(str(path), features=schema, keep_in_memory=True)
    assert ds.schema == schema and ds["a"] == [0, 1, 2, 3] and ds.cache_files == []
    lossy = pa.schema([("a", pa.string()), ("b", pa.int64()), ("c", pa.int64())])
    with pytest.raises(am.exceptions.SchemaMismatchError, match="'c'"):
        am.Dataset.from_json(str(path), features=lossy)  # 0.5 is not an int
    text = tmp_path / "t.txt"
    text.write_text("x\ny\n")
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"text": datasets.Value("large_string")})
    assert am.Dataset.from_text(str(text), features=features).schema.field(0).type == (
        pa.large_string()
    )


def test_an_indices_file_is_used_only_when_it_holds_the_view(tmp_path):
    from arrowmix.exceptions import CacheWarning

    ds = _ds(10)
    path = str(tmp_path / "v.arrow")
    first = ds.select([2, 1], new_fingerprint="same-name", indices_cache_file_name=path)
    with pytest.warns(CacheWarning, match="other row positions"):
        other = ds.select([4, 3], new_fingerprint="same-name", indices_cache_file_name=path)
    assert first.fingerprint == other.fingerprint == "same-name"
    assert other["id"] == [4, 3]  # never the stale positions
    big = am.Dataset.from_dict({"x": np.arange(INDICES_FILE_MIN_ROWS)})
    a = big.shuffle(seed=1, new_fingerprint="mine")
    with pytest.warns(CacheWarning, match="other row positions"):
        b = big.shuffle(seed=2, new_fingerprint="mine")
    assert b[:3] == big.shuffle(seed=2)[:3] and a[:3] != b[:3]


def test_a_flattened_file_named_by_new_fingerprint_is_used_only_for_its_parent():
    from arrowmix.exceptions import CacheWarning

    ds = _ds(10)
    a = ds.shuffle(seed=1).flatten_indices(new_fingerprint="flat-name")
    assert a.fingerprint == "flat-name"
    with pytest.warns(CacheWarning, match="another dataset"):
        b = ds.shuffle(seed=2).flatten_indices(new_fingerprint="flat-name")
    assert b["id"] == ds.shuffle(seed=2)["id"] != a["id"]


def test_data_describes_every_column_even_when_the_entry_describes_some():
    datasets = pytest.importorskip("datasets")
    entry = {
        "label": {"names": ["a", "b"], "_type": "ClassLabel"},
        "gone": {"dtype": "int8", "_type": "Value"},
    }
    meta = {b"huggingface": json.dumps({"info": {"features": entry}}).encode()}
    x = am.Dataset(pa.table({"label": [0, 1], "s": ["p", "q"]}).replace_schema_metadata(meta))
    info = json.loads(x.data.schema.metadata[b"huggingface"])["info"]
    assert datasets.DatasetInfo.from_dict(info).features == datasets.Features(
        {"label": datasets.ClassLabel(names=["a", "b"]), "s": datasets.Value("string")}
    )


def test_assigning_the_private_fingerprint_as_hf_transforms_do():
    ds = _ds(3)
    view = ds.with_format("numpy")
    view._fingerprint = ds._fingerprint  # HF's transmit_format keeps the fingerprint so
    assert view.fingerprint == ds.fingerprint and view.format["type"] == "numpy"
    with pytest.raises(FingerprintError):
        view._fingerprint = "not/a/name"


def test_a_format_dict_sets_the_same_format():
    ds = _ds(3)
    numpy = ds.with_format("numpy", columns=["id"], dtype=np.int16)
    again = ds.with_format(**numpy.format)
    assert again.format == numpy.format and again.fingerprint == numpy.fingerprint
    assert again["id"].dtype == np.int16
    ds.set_format(**numpy.format)
    assert ds.format == numpy.format


def test_from_chunks_opens_a_directory_hf_saved(tmp_path):
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"x": list(range(10))})
    hf.save_to_disk(str(tmp_path / "saved"), num_shards=2)  # two IPC stream files
    ds = am.Dataset.from_chunks(str(tmp_path / "saved"))
    assert ds["x"] == list(range(10)) and len(ds.cache_files) == 2
    assert ds.fingerprint == am.Dataset.from_chunks(str(tmp_path / "saved")).fingerprint


class _Opaque(pa.ExtensionType):
    def __init__(self):
        super().__init__(pa.int64(), "arrowmix.test.opaque")

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


def test_data_of_a_column_type_hf_cannot_describe():
    pytest.importorskip("datasets")
    column = pa.ExtensionArray.from_storage(_Opaque(), pa.array([1, 2]))
    view = am.Dataset(pa.table({"e": column})).data
    assert view.num_rows == 2 and view.schema.field("e").type == _Opaque()


def test_cast_to_class_labels_keeps_and_checks_them():
    from arrowmix.exceptions import SchemaMismatchError

    datasets = pytest.importorskip("datasets")
    labels = datasets.Features({"y": datasets.ClassLabel(names=["neg", "pos"])})
    ds = am.Dataset.from_dict({"y": [1, 0, 1]})
    out = ds.cast(labels)
    assert out.features == labels and out["y"] == [1, 0, 1]
    names = am.Dataset.from_dict({"y": ["pos", "neg"]}).cast(labels)  # names become indices
    assert names["y"] == [1, 0] and names.features == labels
    with pytest.raises(SchemaMismatchError, match="'y'"):
        am.Dataset.from_dict({"y": [0, 2]}).cast(labels)  # 2 is not a class
    with pytest.raises(SchemaMismatchError, match="'y'"):
        am.Dataset.from_dict({"y": ["pos", "meh"]}).cast(labels)
    assert am.Dataset.from_dict({"y": [1]}).cast(
        datasets.Features({"y": datasets.Value("string")})
    )["y"] == ["1"]  # other types cast as Arrow (and HF) do


def test_renaming_keeps_the_info_texts():
    datasets = pytest.importorskip("datasets")
    info = datasets.DatasetInfo(description="reviews", citation="@r", license="mit")
    ds = am.Dataset.from_dict({"a": [1], "b": [2]}, info=info)
    for out in (ds.rename_column("a", "x"), ds.rename_columns({"a": "x", "b": "y"})):
        assert (out.info.description, out.info.citation, out.info.license) == (
            "reviews",
            "@r",
            "mit",
        )
        assert list(out.features) == out.column_names
