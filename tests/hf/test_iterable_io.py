"""``IterableDataset``'s exporters, file constructors, ``decode``, ``reshard`` and info fields.

Each is called on the same recipe built with ``arrowmix`` and with HF ``datasets`` 5.2; the
values (and their types) must be equal, and the files written must hold the same rows.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am
from arrowmix._hf.info import INFO_FIELDS

hf = pytest.importorskip("datasets")

DATA = {"a": [1, 2, 3, 4, 5], "t": ["x", "y", None, "w", "v"], "f": [0.5, 1.0, 1.5, 2.0, 2.5]}
#: HF 5.2 cannot gather the rows a function made when a batch holds only None in a column.
FULL = {**DATA, "t": ["x", "y", "z", "w", "v"]}


@pytest.fixture(autouse=True)
def _quiet():
    logging.getLogger("datasets").setLevel(logging.ERROR)
    hf.disable_progress_bars()


def both(make):
    """``make(lib)`` for arrowmix and for HF."""
    return make(am), make(hf)


def twice(row):
    return {"g": row["a"] * 1.5}


RECIPES = {
    "plain": lambda lib: lib.Dataset.from_dict(DATA).to_iterable_dataset(num_shards=2),
    "mapped": lambda lib: lib.Dataset.from_dict(FULL).to_iterable_dataset(2).map(twice),
    "filtered": lambda lib: (
        lib.Dataset.from_dict(FULL).to_iterable_dataset(2).filter(lambda r: r["a"] != 2)
    ),
}


def typed(value):
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_to_dict_to_list_to_pandas_as_hf(recipe):
    ours, theirs = both(RECIPES[recipe])
    assert typed(ours.to_dict()) == typed(theirs.to_dict())
    assert typed(ours.to_list()) == typed(theirs.to_list())
    got = list(ours.to_dict(batched=True, batch_size=2))
    assert typed(got) == typed(list(theirs.to_dict(batched=True, batch_size=2)))
    a, b = ours.to_pandas(), theirs.to_pandas()
    assert list(a.columns) == list(b.columns)
    assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes]
    assert a.equals(b)
    frames = [f.to_dict("list") for f in ours.to_pandas(batched=True, batch_size=3)]
    assert frames == [f.to_dict("list") for f in theirs.to_pandas(batched=True, batch_size=3)]


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_file_exporters_write_what_hf_writes(recipe, tmp_path):
    ours, theirs = both(RECIPES[recipe])
    for name in ("csv", "json"):
        sizes = []
        for lib, ds in (("am", ours), ("hf", theirs)):
            sizes.append(getattr(ds, f"to_{name}")(str(tmp_path / f"{lib}.{name}")))
        assert sizes[0] == sizes[1]
        assert (tmp_path / f"am.{name}").read_bytes() == (tmp_path / f"hf.{name}").read_bytes()
    assert ours.to_parquet(str(tmp_path / "am.parquet")) > 0
    theirs.to_parquet(str(tmp_path / "hf.parquet"))
    a, b = pq.read_table(tmp_path / "am.parquet"), pq.read_table(tmp_path / "hf.parquet")
    assert a.schema.remove_metadata() == b.schema.remove_metadata()
    assert a.to_pydict() == b.to_pydict()
    written = []
    for lib, ds in (("am", ours), ("hf", theirs)):
        with sqlite3.connect(tmp_path / f"{lib}.db") as con:
            written.append(ds.to_sql("rows", con, batch_size=2))
            written.append(con.execute("SELECT * FROM rows").fetchall())
    assert written[:2] == written[2:]


def test_dataset_to_sql_as_hf(tmp_path):
    out = []
    for lib in (am, hf):
        with sqlite3.connect(tmp_path / f"{lib.__name__}.db") as con:
            n = lib.Dataset.from_dict(DATA).select([4, 0, 2]).to_sql("t", con, batch_size=2)
            out.append((n, con.execute("SELECT * FROM t").fetchall()))
    assert out[0] == out[1]


def test_exporting_no_rows_raises_as_hf():
    ours, theirs = both(lambda lib: RECIPES["plain"](lib).filter(lambda r: False))
    with pytest.raises(pa.ArrowInvalid):
        theirs.to_dict()
    with pytest.raises(ValueError, match="no rows"):
        ours.to_dict()


def write_files(tmp_path):
    ds = hf.Dataset.from_dict(DATA)
    ds.to_csv(str(tmp_path / "d.csv"))
    ds.to_json(str(tmp_path / "d.jsonl"))
    pq.write_table(pa.table({"a": list(range(10))}), tmp_path / "p1.parquet", row_group_size=3)
    pq.write_table(pa.table({"a": list(range(10, 15))}), tmp_path / "p2.parquet")
    (tmp_path / "t.txt").write_text("one\ntwo\n\nthree\n")
    return tmp_path


def test_from_files_as_hf(tmp_path):
    d = write_files(tmp_path)
    calls = [
        ("from_csv", (str(d / "d.csv"),), {}),
        ("from_json", (str(d / "d.jsonl"),), {"split": "test"}),
        ("from_parquet", ([str(d / "p1.parquet"), str(d / "p2.parquet")],), {}),
        ("from_parquet", (str(d / "p1.parquet"),), {"columns": ["a"]}),
        ("from_text", (str(d / "t.txt"),), {"keep_linebreaks": True}),
    ]
    for name, args, kwargs in calls:
        ours = getattr(am.IterableDataset, name)(*args, **kwargs)
        theirs = getattr(hf.IterableDataset, name)(*args, cache_dir=str(d / "hf"), **kwargs)
        assert isinstance(ours, am.IterableDataset)
        assert typed(list(ours)) == typed(list(theirs)), name
        assert str(ours.split) == str(theirs.split), name


def test_from_pandas_and_from_file_as_hf(tmp_path):
    df = hf.Dataset.from_dict(DATA).to_pandas()
    ours, theirs = both(lambda lib: lib.IterableDataset.from_pandas(df, num_shards=2))
    assert typed(list(ours)) == typed(list(theirs))
    assert ours.num_shards == theirs.num_shards == 2
    path = str(tmp_path / "data.arrow")
    hf.Dataset.from_dict(DATA).map(lambda r: r, cache_file_name=path)
    ours, theirs = both(lambda lib: lib.IterableDataset.from_file(path))
    assert typed(list(ours)) == typed(list(theirs))
    assert ours.features == theirs.features


def test_decode_sets_the_media_flag_as_hf():
    def make(lib):
        features = hf.Features({"im": hf.Image(), "n": hf.Value("int64")})
        rows = {"im": [{"bytes": None, "path": "a.png"}], "n": [1]}
        return lib.Dataset.from_dict(rows, features=features).to_iterable_dataset()

    ours, theirs = both(make)
    for enable in (False, True):
        assert ours.decode(enable).features == theirs.decode(enable).features
    assert list(ours.decode(False)) == list(theirs.decode(False))
    plain = both(RECIPES["plain"])
    assert plain[0].decode(False).features == plain[1].decode(False).features
    for ds in both(RECIPES["mapped"]):
        with pytest.raises(ValueError, match="known features"):
            ds.decode(False)


def test_reshard_keeps_the_shards_of_a_dataset_as_hf():
    ours, theirs = both(RECIPES["plain"])
    assert ours.reshard().num_shards == theirs.reshard().num_shards == 2
    assert list(ours.reshard()) == list(theirs.reshard())


def _parquet_streams(tmp_path, monkeypatch):
    """Three Parquet files (row groups of 6, 4 and 1 rows) streamed by both libraries."""
    import datasets.distributed  # noqa: F401  (hf.distributed)

    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)

    files = []
    for i, (n, group) in enumerate([(20, 6), (10, 4), (3, 1)]):
        files.append(str(tmp_path / f"p{i}.parquet"))
        rows = {"x": list(range(100 * i, 100 * i + n)), "s": [f"r{j}" for j in range(n)]}
        pq.write_table(pa.table(rows), files[-1], row_group_size=group)
    theirs = hf.load_dataset(
        "parquet", data_files=files, split="train", streaming=True, cache_dir=str(tmp_path / "h")
    )
    return am.load_dataset("parquet", data_files=files, split="train", streaming=True), theirs


def test_reshard_counts_parquet_row_groups_as_hf(tmp_path, monkeypatch):
    ours, theirs = _parquet_streams(tmp_path, monkeypatch)
    assert ours.reshard().num_shards == theirs.reshard().num_shards == 4 + 3 + 3
    assert list(ours.reshard()) == list(ours)
    assert ours.reshard().info.builder_name == "parquet"


@pytest.mark.slow  # HF streams the files a dozen times
def test_reshard_cuts_parquet_files_at_row_groups_as_hf(tmp_path, monkeypatch):
    ours, theirs = _parquet_streams(tmp_path, monkeypatch)
    assert ours.num_shards == theirs.num_shards == 3
    for o, t in [
        (ours.reshard(), theirs.reshard()),
        (ours.reshard().reshard(), theirs.reshard().reshard()),
        (ours.reshard().map(twice_x).select_columns("x"), theirs.reshard().map(twice_x)),
    ]:
        assert o.num_shards == t.num_shards == 4 + 3 + 3
        assert [r["x"] for r in o] == [r["x"] for r in t]
    for rank in range(4):  # the node split now has row groups to share, as HF's
        mine = am.split_dataset_by_node(ours.reshard(), rank=rank, world_size=4)
        hfs = hf.distributed.split_dataset_by_node(theirs.reshard(), rank=rank, world_size=4)
        assert mine.num_shards == hfs.num_shards
        assert [r["x"] for r in mine] == [r["x"] for r in hfs]
    # the shard order a seed gives is HF's (the rows of a shuffle buffer are arrowmix's own)
    starts = {0, 6, 12, 18, 100, 104, 108, 200, 201, 202}  # each row group's first row
    mine, hfs = (list(d.reshard().shuffle(seed=3, buffer_size=1)) for d in (ours, theirs))
    assert [r["x"] for r in mine if r["x"] in starts] == [r["x"] for r in hfs if r["x"] in starts]
    assert sorted(r["x"] for r in mine) == sorted(r["x"] for r in hfs)


def twice_x(row):
    return {"x": row["x"] * 2}


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_resharded_stream_resumes_exactly(tmp_path, monkeypatch, shuffled):
    ours, _ = _parquet_streams(tmp_path, monkeypatch)
    ds = ours.reshard().shuffle(seed=5, buffer_size=4) if shuffled else ours.reshard()
    full = [r["x"] for r in ds]
    it = iter(ds)
    head = [next(it)["x"] for _ in range(13)]
    state = json.loads(json.dumps(ds.state_dict()))
    again, _ = _parquet_streams(tmp_path, monkeypatch)
    again = again.reshard().shuffle(seed=5, buffer_size=4) if shuffled else again.reshard()
    again.load_state_dict(state)
    assert head + [r["x"] for r in again] == full
    if not shuffled:  # the rows are the files' in order: a state taken before the cut
        whole = ours.reshard()  # fits the cut stream
        it = iter(ours)
        head = [next(it)["x"] for _ in range(13)]
        whole.load_state_dict(ours.state_dict())
        assert head + [r["x"] for r in whole] == full


def test_info_fields_as_hf():
    def make(lib):
        info = hf.DatasetInfo(description="d", citation="c", homepage="h", license="l")
        return lib.Dataset.from_dict(DATA, info=info)

    ours, theirs = both(make)
    mixin = vars(hf.arrow_dataset.DatasetInfoMixin)
    hf_names = {n for n, v in mixin.items() if isinstance(v, property)}
    assert set(INFO_FIELDS) == hf_names - {"features", "info", "split"}
    for name in INFO_FIELDS:
        assert getattr(ours, name) == getattr(theirs, name), name
        a, b = ours.to_iterable_dataset(), theirs.to_iterable_dataset()
        assert getattr(a, name) == getattr(b, name), name
    assert json.dumps(ours.description) == '"d"'


def test_every_public_name_of_hfs_iterable_dataset_is_there():
    """Except the Hub and Spark ones, which need the network or pyspark."""
    theirs = {n for n in dir(hf.IterableDataset) if not n.startswith("_")}
    ours = {n for n in dir(am.IterableDataset) if not n.startswith("_")}
    assert sorted(theirs - ours) == ["from_spark", "push_to_hub"]
