"""Provenance per sample: every item names the rows it holds, and they read back the same."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._stream.provenance import _FORWARDED, SOURCE_KEY, SourcedRows
from arrowmix._stream.row_source import OPTIONAL_MEMBERS, TableRowSource
from arrowmix.stream import Stream, from_row_source, mix
from arrowmix.testing import fetch_rows, rows_seen


def corpus(n: int, base: int, seed: int) -> am.Dataset:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 14, size=n)
    ids = [list(range(base + 100 * i, base + 100 * i + int(k))) for i, k in enumerate(lengths)]
    return am.Dataset.from_dict({"ids": ids, "doc": [f"{base}-{i}" for i in range(n)]})


A, B, C = corpus(40, 10_000, 0), corpus(25, 20_000, 1), corpus(30, 30_000, 2)
DATASETS = {"": A, "a": A, "b": B, "c": C, "ab/a": A, "ab/b": B}


def src(ds: am.Dataset, **kwargs: Any) -> Stream[Any]:
    kwargs.setdefault("provenance", True)
    return ds.to_stream(seed=3, infinite=False, **kwargs)


def mixed(**kwargs: Any) -> Stream[Any]:
    inner = mix({"a": src(A, **kwargs), "b": src(B, **kwargs)}, seed=1)
    return mix({"ab": inner, "c": src(C, **kwargs)}, {"ab": 2, "c": 1})


def keep_long(row: dict[str, Any]) -> bool:
    return len(row["ids"]) > 3


def renamed(row: dict[str, Any]) -> dict[str, Any]:
    return {"tokens": row["ids"], "doc": row["doc"]}


def split(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"ids": row["ids"][:2]}, {"ids": row["ids"][2:]}]


def check_rows(rows: list[dict[str, Any]]) -> None:
    """Each row dict equals the row its reference reads back (plus the reference)."""
    assert rows
    back = fetch_rows([r[SOURCE_KEY] for r in rows], DATASETS)
    assert [{k: v for k, v in r.items() if k != SOURCE_KEY} for r in rows] == back


def check_collated(out: dict[str, Any]) -> None:
    """Row ``i`` of ``input_ids`` holds the tokens of the row ``sources[i]`` names."""
    back = fetch_rows(out["sources"], DATASETS)
    assert len(back) == len(out["input_ids"])
    for ids, mask, row in zip(out["input_ids"], out["attention_mask"], back, strict=True):
        assert ids[mask.astype(bool)].tolist() == row["ids"]


def check_packed(out: dict[str, Any], separator: int | None = None) -> None:
    """Segment ``k`` of a packed row holds tokens ``start:`` of the document its reference names."""
    for ids, seg, refs in zip(
        out["input_ids"], out["segment_ids"], out["segment_sources"], strict=True
    ):
        assert len(refs) == int(seg.max())
        for k, ref in enumerate(refs, start=1):
            doc = fetch_rows([ref], DATASETS)[0]["ids"]
            if separator is not None:
                doc = [*doc, separator]
            piece = ids[seg == k].tolist()
            assert piece == doc[ref["start"] : ref["start"] + len(piece)], (k, ref)


ROW_PIPELINES = {
    "source": lambda: src(A, shuffle=None),
    "shuffle+filter": lambda: src(A).shuffle(8, seed=0).filter(keep_long),
    "mix of mixes": lambda: mixed(),
    "mix+shuffle": lambda: mixed().shuffle(16, seed=2),
    "filter+shuffle": lambda: mixed().filter(keep_long).shuffle(5, seed=4),
    "flat_map": lambda: src(A).flat_map(split),
}


@pytest.mark.parametrize("name", list(ROW_PIPELINES))
def test_row_dicts_name_the_rows_they_hold(name: str) -> None:
    rows = list(ROW_PIPELINES[name]())
    if name == "flat_map":  # pieces of rows: each is a piece of the row it names
        back = fetch_rows([r[SOURCE_KEY] for r in rows], DATASETS)
        pairs = zip(rows[::2], rows[1::2], back[::2], strict=True)
        assert all(x["ids"] + y["ids"] == b["ids"] for x, y, b in pairs)
        return
    check_rows(rows)
    want = 95 if "mix" in name or "filter+" in name else 40
    if "filter" not in name:
        assert len(rows) == want


def test_a_map_returning_new_dicts_keeps_the_source() -> None:
    for s in (mixed().map(renamed), mixed().map(renamed, num_workers=2)):
        rows = list(s)
        back = fetch_rows([r[SOURCE_KEY] for r in rows], DATASETS)
        assert [r["tokens"] for r in rows] == [b["ids"] for b in back]


def test_mix_names_each_input_outer_first() -> None:
    names = {r[SOURCE_KEY]["source"] for r in mixed()}
    assert names == {"ab/a", "ab/b", "c"}
    listed = {r[SOURCE_KEY]["source"] for r in mix([src(A), src(B)])}
    assert listed == {"0", "1"}
    given = {r[SOURCE_KEY]["source"] for r in mix({"x": src(A, provenance="web")})}
    assert given == {"web"}  # a name given at the source is kept


def test_columnar_batches_carry_a_source_column() -> None:
    for table in mixed().shuffle(8, seed=0).batch(7, columnar=True):
        assert isinstance(table, pa.Table)
        check_rows(table.to_pylist())


COLLATED = {
    "batch": lambda: mixed().batch(4).collate("ids"),
    "columnar": lambda: mixed().shuffle(8, seed=0).batch(4, columnar=True).collate("ids"),
    "filter": lambda: src(A).filter(keep_long).batch(3, columnar=True).collate("ids"),
    "bucket": lambda: (
        mixed()
        .bucket("ids", 4, read_ahead=16, seed=0, columnar=True)
        .collate("ids", return_tensors="np")
    ),
    "budget_bucket": lambda: mixed().budget_bucket("ids", 40, read_ahead=16, seed=0).collate("ids"),
    "rows": lambda: mixed().map(renamed).map(renamed_back).batch(5).collate("ids"),
}


def renamed_back(row: dict[str, Any]) -> dict[str, Any]:
    return {"ids": row["tokens"]}


@pytest.mark.parametrize("name", list(COLLATED))
def test_collate_names_the_row_of_every_batch_row(name: str) -> None:
    seen = []
    for out in COLLATED[name]():
        check_collated(out)
        seen += [(r["source"], r["index"]) for r in out["sources"]]
    if name not in ("filter",):
        assert len(seen) == len(set(seen)) == 95  # every row once


@pytest.mark.parametrize(
    ("strategy", "separator"),
    [("concat", None), ("concat", 7), ("first_fit", None), ("best_fit", None)],
)
def test_pack_segment_sources_align_with_segments(strategy: str, separator: int | None) -> None:
    extra = {} if separator is None else {"separator": separator}
    for pipe in (mixed().shuffle(8, seed=0), mixed().map(renamed).map(renamed_back)):
        out = list(
            pipe.pack("ids", 12, strategy=strategy, batch_size=3, read_ahead=9, tail="pad", **extra)
            if strategy == "concat"
            else pipe.pack("ids", 12, strategy=strategy, batch_size=3, read_ahead=9)
        )
        for batch in out:
            check_packed(batch, separator)
        starts = {
            (r["source"], r["index"])
            for b in out
            for row in b["segment_sources"]
            for r in row
            if r["start"] == 0
        }
        assert len(starts) == 95  # every document begins in some segment


@pytest.mark.slow  # imports torch
def test_pack_with_tensors_and_fields_keeps_a_list() -> None:
    s = src(A).pack("ids", 16, batch_size=2, return_tensors="pt", outputs=("cu_seqlens",))
    pytest.importorskip("torch")
    out = next(s)
    assert isinstance(out["segment_sources"], list) and len(out["segment_sources"]) == 2


def test_chunk_and_row_locate_the_row_in_its_chunk() -> None:
    rows = TableRowSource(pa.table({"x": list(range(50))}), chunk_rows=8)
    offsets = rows.chunk_offsets()
    got = [r[SOURCE_KEY] for r in from_row_source(rows, seed=0, infinite=False, provenance="t")]
    assert sorted(g["index"] for g in got) == list(range(50))
    assert all(offsets[g["chunk"]] + g["row"] == g["index"] and g["row"] < 8 for g in got)


def test_numpy_rows_carry_sources() -> None:
    rows = list(A.with_format("numpy").to_stream(seed=0, infinite=False, provenance="a"))
    back = fetch_rows([r[SOURCE_KEY] for r in rows], {"a": A})
    assert [r["ids"].tolist() for r in rows] == [b["ids"] for b in back]
    shuffled = A.with_format("numpy").to_stream(seed=0, infinite=False, provenance="a").shuffle(4)
    rows = list(shuffled)
    back = fetch_rows([r[SOURCE_KEY] for r in rows], {"a": A})
    assert [r["ids"].tolist() for r in rows] == [b["ids"] for b in back]


def test_off_by_default_and_the_same_items_otherwise() -> None:
    def strip(x: Any) -> Any:
        return {k: v for k, v in x.items() if k not in (SOURCE_KEY, "segment_sources")}

    plain = list(mixed(provenance=False).shuffle(8, seed=0))
    assert all(SOURCE_KEY not in r for r in plain)
    assert list(mixed(provenance=None).shuffle(8, seed=0)) == plain
    assert plain == [strip(r) for r in mixed().shuffle(8, seed=0)]
    packed = next(mixed(provenance=False).pack("ids", 12))
    assert "segment_sources" not in packed
    assert "sources" not in next(mixed(provenance=False).batch(3).collate("ids"))


def test_provenance_changes_neither_fingerprint_nor_state() -> None:
    def build(on: bool) -> Stream[Any]:
        return mixed(provenance=on).shuffle(8, seed=0).pack("ids", 12, batch_size=2)

    off, on = build(False), build(True)
    assert off.pipeline_fingerprint() == on.pipeline_fingerprint()
    for _ in range(3):
        next(off), next(on)
    assert off.state_dict() == on.state_dict()


def test_rows_seen_replays_a_checkpoint_taken_without_provenance() -> None:
    def build(on: bool) -> Stream[Any]:
        return mixed(provenance=on).shuffle(8, seed=0).batch(3).collate("ids")

    run = build(False)
    for _ in range(4):
        next(run)
    state = run.state_dict()
    after = [next(run) for _ in range(3)]
    seen = rows_seen(lambda: build(True), state, steps=2, skip=1)
    assert len(seen) == 2
    for refs, out in zip(seen, after[1:], strict=True):
        check_collated({**out, "sources": refs})
    again = run.state_dict()  # the run itself was not touched
    assert again == (run.load_state_dict(again) or run.state_dict())
    assert rows_seen(lambda: build(True), None, 1)[0] == next(build(True))["sources"]


def test_rows_seen_reads_packed_segments_and_ends_with_the_stream() -> None:
    def build() -> Stream[Any]:
        return src(A).pack("ids", 16, batch_size=2, tail="pad")

    n = len(list(build()))
    seen = rows_seen(build, None, steps=n + 5)
    assert len(seen) == n
    assert {r["index"] for refs in seen for r in refs} == set(range(40))


def test_rows_seen_needs_provenance() -> None:
    with pytest.raises(ValueError, match="provenance"):
        rows_seen(lambda: src(A, provenance=False), None, 1)
    with pytest.raises(TypeError, match="make_stream"):
        rows_seen(lambda: [1, 2], None, 1)  # type: ignore[arg-type,return-value]
    with pytest.raises(KeyError, match="no dataset for source 'z'"):
        fetch_rows([{"source": "z", "index": 0}], DATASETS)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match=r"inputs \['b'\] carry no provenance"):
        mix({"a": src(A), "b": src(B, provenance=False)})
    with pytest.raises(TypeError, match="`provenance` must be True, False or a source name"):
        src(A, provenance=3)
    with pytest.raises(TypeError, match="`provenance` must be"):
        src(A, provenance="")
    clash = TableRowSource(pa.table({SOURCE_KEY: [1]}))
    with pytest.raises(ValueError, match="already have a column '__source__'"):
        from_row_source(clash, provenance=True)


def test_wrapped_rows_forward_every_optional_member() -> None:
    assert _FORWARDED == OPTIONAL_MEMBERS
    rows = SourcedRows(TableRowSource(pa.table({"ids": [[1, 2], [3]]})), "t")
    assert rows.token_column("ids").lengths(np.array([1, 0])).tolist() == [1, 2]
    assert rows.take_column(np.array([1]), SOURCE_KEY).to_pylist()[0]["index"] == 1
    with pytest.raises(AttributeError):
        rows.something_else


def collated_pt() -> Stream[Any]:
    return mixed().batch(4).collate("ids", return_tensors="pt")


@pytest.mark.slow  # DataLoader worker processes
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_sources_cross_dataloader_workers(context: str) -> None:
    torch = pytest.importorskip("torch")
    loader = torch.utils.data.DataLoader(
        collated_pt().to_torch(), batch_size=None, num_workers=2, multiprocessing_context=context
    )
    seen = []
    for out in loader:
        check_collated({**out, "attention_mask": out["attention_mask"].numpy()})
        seen += [(r["source"], r["index"]) for r in out["sources"]]
    assert len(seen) == len(set(seen)) == 95
