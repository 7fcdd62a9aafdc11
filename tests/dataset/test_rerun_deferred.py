"""A cached rerun opens one segment file per result; the others when their rows are read."""

from __future__ import annotations

import os

import pytest

import arrowmix as am
from arrowmix._cache import inuse
from arrowmix._cache import segments as cache_segments
from arrowmix._dataset.state import DeferredTable, state_of, stored_table
from arrowmix._storage import integrity, trust
from arrowmix.exceptions import CacheCorruptedError

ROWS = 300_000  # three segments per result


def _lengths(batch):
    return {"m": [v % 7 for v in batch["v"]], "s": [str(v % 3) for v in batch["v"]]}


def _only_new(batch):
    return {"m": [v % 7 for v in batch["v"]]}


def _even(batch):
    return [v % 2 == 0 for v in batch["v"]]


@pytest.fixture
def corpus(tmp_path):
    am.write_chunks(({"v": i} for i in range(ROWS)), tmp_path / "c", rows_per_chunk=100_000)
    return str(tmp_path / "c"), str(tmp_path / "cache")


def _run(corpus, fn=_lengths, **kw):
    path, cache = corpus
    mapped = am.Dataset.from_chunks(path, cache_dir=cache).map(fn, batched=True, **kw)
    return mapped, mapped.filter(_even, batched=True)


def _new_process(monkeypatch):
    """Forget what this process checked and read, as a fresh process would."""
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.setattr(trust, "_records", {})
    monkeypatch.setattr(trust, "_changed", {})


def _count_opens(monkeypatch):
    opened = []
    open_table = cache_segments.open_table

    def counting(path, *args, **kwargs):
        opened.append(os.path.basename(path))
        return open_table(path, *args, **kwargs)

    monkeypatch.setattr(cache_segments, "open_table", counting)
    return opened


def _segments(cache, ds=None):
    """The segment files in ``cache`` (of the result ``ds`` only, when given)."""
    prefix = "cache-" if ds is None else f"cache-{state_of(ds).fingerprint}-"
    return sorted(os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(prefix))


@pytest.mark.parametrize("fn", [_lengths, _only_new], ids=["stored", "zero-copy"])
def test_rerun_opens_the_first_segment_of_each_result(corpus, monkeypatch, fn):
    model_map, model = _run(corpus, fn)
    model_rows = model_map[:]
    _new_process(monkeypatch)
    opened = _count_opens(monkeypatch)
    mapped, kept = _run(corpus, fn)
    assert len(opened) == 2, opened  # one segment of the map, one of the filter
    assert len(kept) == ROWS // 2 and len(mapped) == ROWS
    assert mapped.column_names == model_map.column_names
    table = stored_table(state_of(mapped))
    assert isinstance(table, DeferredTable)
    assert table.schema.equals(state_of(model_map).table.schema, check_metadata=True)
    assert all(inuse.in_use(p) for p in _segments(corpus[1]))  # no cleanup removes them
    assert kept[:] == model[:]  # now read: the other map segments are opened and checked
    later = [os.path.basename(p) for p in _segments(corpus[1], mapped)[1:]]
    assert sorted(opened[2:]) == later
    assert mapped[:] == model_rows
    assert state_of(mapped).table.schema.equals(table.schema, check_metadata=True)


def _flip_byte_in_place(path):
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(st.st_size // 2)  # a value: footer and schema intact
        byte = f.read(1)
        f.seek(st.st_size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and modification time


def test_a_segment_damaged_after_the_rerun_is_never_read(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    mapped, _ = _run(corpus)
    victim = _segments(corpus[1], mapped)[2]
    _flip_byte_in_place(victim)
    with pytest.raises(CacheCorruptedError, match="checksum mismatch") as err:
        mapped["m"]
    assert os.path.basename(victim) in str(err.value)


def test_a_segment_replaced_after_the_rerun_by_another_result_is_refused(corpus, monkeypatch):
    _run(corpus)
    _new_process(monkeypatch)
    mapped, _ = _run(corpus)
    first, victim = _segments(corpus[1], mapped)[:2]
    os.replace(first, victim)  # a valid file of the same result, but of other rows
    with pytest.raises(CacheCorruptedError, match="metadata segment=0, expected 1"):
        mapped["m"]


def test_a_rerun_after_a_change_checks_the_file_before_planning_with_it(corpus, monkeypatch):
    mapped = _run(corpus)[0]
    model = mapped["m"]
    victim = _segments(corpus[1], mapped)[1]
    _flip_byte_in_place(victim)
    _new_process(monkeypatch)
    with pytest.warns(am.exceptions.CacheWarning, match="checksum mismatch"):
        mapped, _ = _run(corpus)
    assert mapped["m"] == model
