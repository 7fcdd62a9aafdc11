"""Tables described by reference into their memory-mapped files, and reopened from them."""

from __future__ import annotations

import pickle
import sys

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._storage.mapped import TableRef, table_ref

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/maps")


@pytest.fixture
def ds(tmp_path):
    rows = ({"n": i, "s": f"r{i}", "l": [i, i + 1], "st": {"a": i}} for i in range(100))
    am.write_chunks(rows, tmp_path / "c", rows_per_chunk=30)
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def test_chunked_table_round_trips_through_its_files(ds):
    ref = table_ref(state_of(ds).table)
    assert isinstance(ref, TableRef) and len(ref.files) == 4
    again = pickle.loads(pickle.dumps(ref)).open()
    assert again.equals(state_of(ds).table) and again.schema.equals(state_of(ds).table.schema)
    assert len(pickle.dumps(ref)) < 4096


def test_derived_views_keep_their_references(ds):
    mapped = ds.map(lambda r: {"k": r["n"] * 2})  # "n", "s"... come from the chunk files
    view = mapped.rename_column("n", "m").select_columns(["st", "k", "m"])
    table = state_of(view).table.slice(25, 50)
    ref = table_ref(table)
    assert ref is not None and any("cache-" in f for f in ref.files)
    got = ref.open()
    assert got.schema.names == ["st", "k", "m"] and got.to_pydict() == table.to_pydict()


def test_in_memory_or_copied_data_has_no_reference(ds):
    assert table_ref(state_of(am.Dataset.from_dict({"a": [1, 2]})).table) is None
    assert table_ref(state_of(ds).table.combine_chunks()) is None
    nulls = pa.table({"z": pa.nulls(3)})
    assert table_ref(nulls) is None
