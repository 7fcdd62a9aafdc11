"""TableReader.take gathers exactly what ``pyarrow.Table.take`` gathers, across record batches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowmix as am
from arrowmix._dataset.reader import TableReader
from arrowmix._dataset.state import state_of


def _table(sizes: list[int]) -> pa.Table:
    """A table whose record batches have ``sizes`` rows (empty batches included)."""
    batches, start = [], 0
    for size in sizes:
        ids = list(range(start, start + size))
        batches.append(
            pa.record_batch(
                {
                    "id": pa.array(ids, pa.int64()),
                    "text": pa.array(
                        [None if i % 7 == 3 else "x" * (i % 5) + str(i) for i in ids], pa.string()
                    ),
                    "tags": pa.array([[i, i + 1][: i % 3] for i in ids], pa.list_(pa.int32())),
                }
            )
        )
        start += size
    return pa.Table.from_batches(batches)


@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=5).filter(lambda s: sum(s) > 0),
    data=st.data(),
)
def test_take_matches_pyarrow_take(sizes, data):
    table = _table(sizes)
    n = table.num_rows
    positions = data.draw(
        st.one_of(
            st.lists(st.integers(0, n - 1), max_size=20),  # any order, repeats
            st.lists(st.integers(0, n - 1), max_size=20).map(sorted),  # sorted
            st.integers(0, n - 1).flatmap(  # contiguous
                lambda lo: st.integers(lo, n).map(lambda hi: list(range(lo, hi)))
            ),
        )
    )
    got = TableReader(table).take(np.array(positions, dtype=np.int64))
    expected = table.take(pa.array(positions, pa.int64()))
    assert got.schema == table.schema
    assert got.to_pylist() == expected.to_pylist()


def test_take_many_batches_random_order_and_repeats():
    table = _table([50] * 20)
    rng = np.random.default_rng(0)
    positions = rng.integers(0, table.num_rows, size=2000)  # every batch, many repeats
    got = TableReader(table).take(positions)
    assert got.column("id").to_pylist() == positions.tolist()
    assert got.to_pylist() == table.take(pa.array(positions)).to_pylist()


def test_take_single_batch_any_order():
    table = _table([30])
    positions = np.array([29, 0, 5, 5, 17])
    assert TableReader(table).take(positions).column("id").to_pylist() == [29, 0, 5, 5, 17]


def test_take_sorted_contiguous_is_zero_copy_slice():
    table = _table([10, 10])
    got = TableReader(table).take(np.arange(3, 15))
    assert got.column("id").to_pylist() == list(range(3, 15))
    text = got.column("text")
    source = table.column("text")
    # A slice shares the source buffers: the first chunk's data buffer is the same memory.
    assert text.chunk(0).buffers()[2].address == source.chunk(0).buffers()[2].address


def test_take_empty():
    table = _table([4, 4])
    got = TableReader(table).take(np.array([], dtype=np.int64))
    assert got.num_rows == 0
    assert got.schema == table.schema


@pytest.mark.parametrize("bad", [-1, 8, 100])
def test_take_out_of_range_raises_index_error_naming_it(bad):
    reader = TableReader(_table([4, 4]))
    with pytest.raises(IndexError, match=f"Row {bad} is out of range for a table of 8 rows"):
        reader.take(np.array([0, 5, bad, 2]))


def test_shuffled_dataset_over_chunk_files_reads_the_permutation(tmp_path):
    rows = [{"id": i, "text": f"row {i}"} for i in range(5000)]
    am.write_chunks(rows, tmp_path / "c", rows_per_chunk=1200)
    ds = am.Dataset.from_chunks(tmp_path / "c")
    assert state_of(ds).reader.table.column("id").num_chunks > 3
    perm = np.random.default_rng(7).permutation(5000)
    shuffled = ds.shuffle(seed=7)
    got = [i for batch in shuffled.iter(batch_size=1000) for i in batch["id"]]
    assert got == perm.tolist()
    assert shuffled[123] == rows[int(perm[123])]
    assert shuffled.select([4, 4, 0])["text"] == [
        f"row {perm[4]}",
        f"row {perm[4]}",
        f"row {perm[0]}",
    ]


@pytest.mark.parametrize("positions", [[0, 0, 2], [1, 1, 3], [2, 2, 3, 3], [0, 0]])
def test_sorted_positions_with_repeats_are_not_a_slice(positions):
    # Regression: sorted positions spanning exactly len(positions) values were read as a range.
    ds = am.Dataset.from_dict({"n": [0, 1, 2, 3]})
    assert ds.select(positions)["n"] == positions
    assert ds[positions] == {"n": positions}
    assert (
        TableReader(state_of(ds).table).take(np.array(positions)).column("n").to_pylist()
        == positions
    )
