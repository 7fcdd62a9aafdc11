"""Dataset.column(name): a lazy, list-like column view that reads block by block."""

from __future__ import annotations

import pytest

import arrowmix as am
from arrowmix._dataset import column as column_mod
from arrowmix._dataset import state as state_mod


@pytest.fixture
def ds() -> am.Dataset:
    return am.Dataset.from_dict({"x": list(range(100)), "t": [f"r{i}" for i in range(100)]})


def test_values_match_the_list_column(ds: am.Dataset) -> None:
    col = ds.column("t")
    assert isinstance(col, am.Column) and col.name == "t" and len(col) == 100
    assert col[3] == "r3" and col[98:] == ["r98", "r99"] and col[[5, 1]] == ["r5", "r1"]
    assert col[::40] == ["r0", "r40", "r80"]
    assert list(col) == ds["t"] and col == ds["t"] and col == ds.column("t")
    assert col != ds.column("x") and col != ds["t"][:-1]
    assert repr(col) == "Column('t', num_rows=100, ['r0', 'r1', 'r2', 'r3', 'r4'], ...)"


def test_views_and_formats(ds: am.Dataset) -> None:
    view = ds.shuffle(seed=1).select(range(10))
    assert view.column("x") == view["x"] and view.column("x")[0] == view[0]["x"]
    arr = ds.with_format("numpy").column("x")[2:5]
    assert arr.tolist() == [2, 3, 4] and type(arr).__name__ == "ndarray"


def test_errors_name_the_column_or_index(ds: am.Dataset) -> None:
    with pytest.raises(KeyError, match=r"'nope'.*available columns"):
        ds.column("nope")
    assert ds.column("x")[-1] == 99 and ds.column("x")[[-1, 0]] == [99, 0]
    with pytest.raises(IndexError, match="-101"):
        ds.column("x")[-101]
    with pytest.raises(IndexError, match="100"):
        ds.column("x")[100]
    with pytest.raises(TypeError, match="row positions"):
        ds.column("x")["t"]
    with pytest.raises(TypeError):
        hash(ds.column("x"))


def test_reads_lazily_block_by_block(ds: am.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    spans: list[int] = []
    original = state_mod.view_range

    def recording(
        s: state_mod.DatasetState, start: int, stop: int, columns: object = None
    ) -> object:
        spans.append(stop - start)
        return original(s, start, stop, columns)  # type: ignore[arg-type]

    monkeypatch.setattr(state_mod, "view_range", recording)
    monkeypatch.setattr(column_mod, "BLOCK_ROWS", 16)
    col = ds.column("x")
    assert spans == []  # making the view reads nothing
    it = iter(col)
    assert [next(it) for _ in range(3)] == [0, 1, 2] and spans == [16]
    assert sum(col) == sum(range(100)) and max(spans) == 16
