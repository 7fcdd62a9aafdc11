"""Parquet read in place equals pyarrow's own reads of the same files, value for value."""

from __future__ import annotations

import datetime
import decimal
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import arrowmix as am

N = 1000


def every_type(n: int = N) -> pa.Table:
    """One column of each type arrowmix reads from Parquet, with nulls where Arrow allows."""
    rng = np.random.default_rng(0)
    i = np.arange(n)
    null = i % 7 == 3
    day0 = datetime.datetime(2024, 1, 1)
    struct = pa.struct([("a", pa.int64()), ("b", pa.string())])
    return pa.table({
        "i8": pa.array((i % 100).astype(np.int8)), "i16": pa.array(i.astype(np.int16)),
        "i32": pa.array(i.astype(np.int32), mask=null), "i64": pa.array(i * 10**9),
        "u8": pa.array((i % 200).astype(np.uint8)), "u16": pa.array(i.astype(np.uint16)),
        "u32": pa.array(i.astype(np.uint32)), "u64": pa.array(i.astype(np.uint64) * 2**40),
        "f16": pa.array(rng.random(n).astype(np.float16)),
        "f32": pa.array(rng.random(n, np.float32)),
        "f64": pa.array(rng.random(n), mask=null), "b": pa.array(i % 3 == 0),
        "s": pa.array([f"row {k} é" for k in i], mask=null),
        "ls": pa.array([f"L{k}" for k in i], pa.large_string()),
        "bin": pa.array([bytes([k % 256]) * (k % 5) for k in i], pa.binary()),
        "ids": pa.array([list(range(k % 9)) for k in i], pa.list_(pa.int32())),
        "nested": pa.array(
            [[[k], []] if k % 2 else None for k in i], pa.list_(pa.list_(pa.int64()))
        ),
        "st": pa.array([{"a": int(k), "b": str(k)} for k in i], struct),
        "dict": pa.array([["x", "y", "z"][k % 3] for k in i]).dictionary_encode(),
        "ts": pa.array(
            [day0 + datetime.timedelta(seconds=int(k)) for k in i], pa.timestamp("us")
        ),
        "date": pa.array(
            [day0.date() + datetime.timedelta(days=int(k)) for k in i], pa.date32()
        ),
        "dec": pa.array([decimal.Decimal(int(k)) / 100 for k in i], pa.decimal128(10, 2)),
        "m": pa.array([[("k", int(k))] for k in i], pa.map_(pa.string(), pa.int64())),
    })  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("pq")
    t = every_type()
    paths = [str(d / "a.parquet"), str(d / "b.parquet")]
    pq.write_table(t.slice(0, 600), paths[0], row_group_size=128)
    pq.write_table(t.slice(600), paths[1], row_group_size=100)
    return paths


def _arrow(ds: am.Dataset) -> pa.Table:
    return ds.with_format("arrow")[:].replace_schema_metadata(None)


def _ref(paths: list[str], **kwargs: object) -> pa.Table:
    return pa.concat_tables([pq.read_table(p, **kwargs) for p in paths]).replace_schema_metadata(
        None
    )


def test_every_column_equals_pyarrow(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True)
    ref = _ref(files)
    assert len(ds) == ref.num_rows and ds.column_names == ref.column_names
    got = _arrow(ds)
    assert got.schema.equals(ref.schema)
    for name in ref.column_names:
        assert got.column(name).equals(ref.column(name)), name
    # Python rows as well (what ds[i] returns)
    assert ds[637] == ref.slice(637, 1).to_pylist()[0]


def test_random_rows_and_slices_equal_pyarrow(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, cache_size=64 << 10)  # a few columns
    ref = _ref(files)
    rng = np.random.default_rng(1)
    pos = rng.integers(0, N, 300).tolist()
    assert ds.with_format("arrow")[pos].replace_schema_metadata(None).equals(ref.take(pos))
    # a slice across row groups and files
    assert (
        ds.with_format("arrow")[550:777].replace_schema_metadata(None).equals(ref.slice(550, 227))
    )
    for i in rng.integers(0, N, 20).tolist():
        assert ds[int(i)]["s"] == ref.column("s")[int(i)].as_py()


def test_columns_projection_equals_pyarrow(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, columns=["ids", "s", "i64"])
    assert _arrow(ds).equals(_ref(files, columns=["ids", "s", "i64"]))


@pytest.mark.parametrize(
    "filters",
    [
        [("i64", ">=", 300 * 10**9), ("i64", "<", 720 * 10**9)],
        [[("u8", "<", 5)], [("s", "==", "row 901 é")]],
        [("dict", "in", ["x", "z"])],
    ],
)
def test_dnf_filters_equal_pyarrow(files: list[str], filters: list) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, filters=filters)
    assert _arrow(ds).equals(_ref(files, filters=filters))


def test_expression_filter_equals_pyarrow_dataset(files: list[str]) -> None:
    expr = (pc.field("i16") > 250) & (pc.field("i16") < 800) & pc.field("f64").is_valid()
    ds = am.Dataset.from_parquet(files, in_place=True, filters=expr, columns=["i16", "ts"])
    ref = pads.dataset(files, format="parquet").to_table(filter=expr, columns=["i16", "ts"])
    assert _arrow(ds).equals(ref.replace_schema_metadata(None))


def test_filters_skip_row_groups_by_statistics(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, filters=[("i16", "<", 100)])
    from arrowmix._dataset.state import state_of

    assert len(state_of(ds).reader.groups) == 1  # the first row group only
    assert ds["i16"] == list(range(100))


def test_fingerprint_names_content_columns_and_filters(files: list[str], tmp_path: Path) -> None:
    a = am.Dataset.from_parquet(files, in_place=True)
    assert am.Dataset.from_parquet(files, in_place=True).fingerprint == a.fingerprint
    assert am.Dataset.from_parquet(files, in_place=True, columns=["s"]).fingerprint != a.fingerprint
    f = am.Dataset.from_parquet(files, in_place=True, filters=[("u8", "<", 5)])
    assert f.fingerprint != a.fingerprint
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(Path(files[0]).read_bytes())  # same bytes elsewhere: same content
    one = am.Dataset.from_parquet(files[0], in_place=True).fingerprint
    assert am.Dataset.from_parquet(str(copy), in_place=True).fingerprint == one
    pq.write_table(every_type().slice(1, 600), copy, row_group_size=128)
    assert am.Dataset.from_parquet(str(copy), in_place=True).fingerprint != one


def test_pickled_dataset_reads_the_same(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, filters=[("u8", "<", 50)])
    back = pickle.loads(pickle.dumps(ds))
    assert back.fingerprint == ds.fingerprint
    assert _arrow(back).equals(_arrow(ds))
    assert len(pickle.dumps(ds)) < 100_000  # a description, not the rows


def test_decoded_cache_stays_within_its_budget(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, cache_size="64KB")
    for start in range(0, N, 50):
        ds[start : start + 50]
    from arrowmix._dataset.state import state_of

    stats = state_of(ds).reader.stats()
    assert stats["evicted"] > 0 and stats["cached_bytes"] <= 64 * 1024 + max(
        c.nbytes
        for c in pq.read_table(files[0]).columns  # one column over the budget at most
    )


def test_map_result_is_a_cache_file_of_what_it_derives(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, columns=["ids", "i64"])

    def lengths(b: dict) -> dict:
        return {"n": [len(x) for x in b["ids"]]}

    out = ds.map(lengths, batched=True, remove_columns=["ids"])
    assert out["n"] == [k % 9 for k in range(N)] and out["i64"] == [k * 10**9 for k in range(N)]
    again = ds.map(
        lambda b: {"n": [len(x) for x in b["ids"]]}, batched=True, remove_columns=["ids"]
    )
    assert again.cache_files == out.cache_files  # the rerun loads the cache
    stored = pa.ipc.open_file(out.cache_files[0]).schema.names
    assert "ids" not in stored
    kept = ds.filter(lambda b: [x // 10**9 % 2 == 0 for x in b["i64"]], batched=True)
    assert kept["i64"] == [k * 10**9 for k in range(0, N, 2)]


def test_streams_deliver_every_row_once(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, columns=["i32", "i16"])
    for shuffle in ("global", "chunks", "blocks", None):
        got = sorted(r["i16"] for r in ds.to_stream(shuffle=shuffle, seed=3, infinite=False))
        assert got == list(range(N)), shuffle


def test_chunks_of_the_stream_are_row_groups(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True)
    meta = [pq.read_metadata(p) for p in files]
    rows = [m.row_group(g).num_rows for m in meta for g in range(m.num_row_groups)]
    from arrowmix._dataset.rows import DatasetRows

    assert DatasetRows(ds).chunk_offsets().tolist() == np.cumsum([0, *rows]).tolist()
    # two ranks reading in chunk order each read row groups of their own (equal shares of
    # rows: one row group may be split between them)
    ranks = [
        [r["i16"] for r in ds.to_stream(shuffle="chunks", seed=0, infinite=False,
                                        num_instances=2, instance_rank=k)]
        for k in range(2)
    ]  # fmt: skip
    assert sorted(ranks[0] + ranks[1]) == list(range(N))
    owner = np.searchsorted(np.cumsum(rows), ranks[0], side="right")
    other = np.searchsorted(np.cumsum(rows), ranks[1], side="right")
    assert len(set(owner.tolist()) & set(other.tolist())) <= 1


def test_views_read_the_same_rows_as_pyarrow(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True, columns=["i16", "s"])
    ref = _ref(files, columns=["i16", "s"])
    shuffled = ds.shuffle(seed=4)
    order = shuffled["i16"]
    assert sorted(order) == list(range(N))
    assert _arrow(shuffled).equals(ref.take(order))
    picked = ds.select([5, 999, 0]).rename_column("s", "text")
    assert picked[:] == {
        "i16": [5, 999, 0],
        "text": [ref.column("s")[k].as_py() for k in (5, 999, 0)],
    }
    assert ds.flatten_indices()["i16"] == list(range(N))


def test_concatenation_is_refused_naming_the_kind(files: list[str]) -> None:
    ds = am.Dataset.from_parquet(files, in_place=True)
    with pytest.raises(ValueError, match="in_place=True"):
        am.concatenate_datasets([ds, ds])


def test_hf_data_of_an_in_place_dataset_names_how_it_was_opened(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "x.parquet")
    ds = am.Dataset.from_parquet(str(tmp_path / "x.parquet"), in_place=True)
    with pytest.raises(TypeError, match=r"Parquet files read in place.*to_table\(\)"):
        ds.data
    assert ds.to_table().column("a").to_pylist() == [1, 2]
