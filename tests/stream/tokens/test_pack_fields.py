"""Training-ready packed batches: labels, cu_seqlens, the segment mask and ids only.

Every field is checked against a reference derived from the default output's segment ids
(a run is a maximal span of one segment id in a row), against a small torch model (the
packed loss is the sum of the per-document losses) and through the round-trip harness.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, ClassVar

import numpy as np
import pytest

from arrowmix._stream.tokens.pack import BinPackIterator, ConcatPackIterator
from arrowmix.exceptions import StateError
from arrowmix.stream import Stream
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.tokens.token_helpers import token_source

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")

ALL = ("segment_ids", "position_ids", "cu_seqlens", "segment_mask")
PACKINGS = [
    {"strategy": "concat", "separator": None, "tail": "drop"},
    {"strategy": "concat", "separator": 0, "tail": "pad"},
    {"strategy": "concat", "separator": None, "tail": "pad"},
    {"strategy": "first_fit", "long_docs": "split"},
    {"strategy": "best_fit", "long_docs": "truncate"},
]


def reference(seg: np.ndarray, ids: np.ndarray) -> dict[str, Any]:
    """Labels and layouts from segment ids, one position at a time."""
    b, s = seg.shape
    shift = np.full((b, s), -100)
    copy = np.full((b, s), -100)
    starts = []
    for r in range(b):
        for t in range(s):
            new = t == 0 or seg[r, t] != seg[r, t - 1]
            if new:
                starts.append(r * s + t)
            if seg[r, t] > 0:
                if t + 1 < s and seg[r, t + 1] == seg[r, t]:
                    shift[r, t] = ids[r, t + 1]
                if not new:
                    copy[r, t] = ids[r, t]
    cu = [*starts, b * s]
    return {
        "shift": shift.tolist(),
        "copy": copy.tolist(),
        "cu_seqlens": cu,
        "max_seqlen": max(np.diff(cu)),
        "segment_mask": (seg[:, :, None] == seg[:, None, :]).tolist(),
    }


def pipeline(rows: int, read_ahead: int, **kw: Any) -> Stream[dict[str, Any]]:
    return token_source(40).pack("input_ids", 16, batch_size=rows, read_ahead=read_ahead, **kw)


@pytest.mark.parametrize("packing", PACKINGS, ids=lambda p: "-".join(map(str, p.values())))
@pytest.mark.parametrize(("rows", "read_ahead"), [(1, 1000), (3, 7)])
def test_fields_match_the_segment_ids(packing: dict[str, Any], rows: int, read_ahead: int) -> None:
    plain = list(pipeline(rows, read_ahead, **packing))
    assert plain
    for labels in ("shift", "copy"):
        got = list(pipeline(rows, read_ahead, labels=labels, outputs=ALL, **packing))
        assert len(got) == len(plain)
        for p, g in zip(plain, got, strict=True):
            ref = reference(p["segment_ids"], p["input_ids"])
            for key in ("input_ids", "segment_ids", "position_ids"):
                assert g[key].tolist() == p[key].tolist()
            assert g["labels"].dtype == np.int64 and g["labels"].tolist() == ref[labels]
            assert g["cu_seqlens"].dtype == np.int32
            assert g["cu_seqlens"].tolist() == ref["cu_seqlens"]
            assert type(g["max_seqlen"]) is int and g["max_seqlen"] == ref["max_seqlen"]
            assert g["segment_mask"].dtype == bool
            assert g["segment_mask"].tolist() == ref["segment_mask"]


@pytest.mark.parametrize("packing", PACKINGS[:2] + PACKINGS[3:4])
def test_ids_only_builds_no_segment_or_position_ids(packing: dict[str, Any]) -> None:
    plain = list(pipeline(2, 9, **packing))
    ids_only = list(pipeline(2, 9, outputs=(), **packing))
    assert [sorted(b) for b in ids_only] == [["input_ids"]] * len(plain)
    assert [b["input_ids"].tolist() for b in ids_only] == [b["input_ids"].tolist() for b in plain]
    with_labels = next(pipeline(2, 9, outputs=(), labels="shift", **packing))
    assert sorted(with_labels) == ["input_ids", "labels"]
    assert (
        with_labels["labels"].tolist()
        == reference(plain[0]["segment_ids"], plain[0]["input_ids"])["shift"]
    )


def test_labels_never_cross_a_document_or_a_separator() -> None:
    docs = [[5, 6, 7], [8], [9, 10, 11]]
    from arrowmix.stream import from_iterable

    b = next(from_iterable(docs).pack("ids", 9, separator=1, tail="pad", labels="shift"))
    assert b["input_ids"].tolist() == [[5, 6, 7, 1, 8, 1, 9, 10, 11]]
    # each document predicts its separator; a separator predicts nothing
    assert b["labels"].tolist() == [[6, 7, 1, -100, 1, -100, 10, 11, -100]]
    b = next(from_iterable(docs).pack("ids", 9, separator=1, tail="pad", labels="copy"))
    assert b["labels"].tolist() == [[-100, 6, 7, 1, -100, 1, -100, 10, 11]]


@pytest.mark.parametrize("sep", [None, 7])
def test_empty_and_one_token_documents(sep: int | None) -> None:
    from arrowmix.stream import from_iterable

    docs = [[], [1], [2, 3], [], [4, 5, 6], [8], [], [9, 10, 11, 12, 13]]
    for strategy in ("concat", "first_fit"):
        kw: dict[str, Any] = {"separator": sep, "tail": "pad"} if strategy == "concat" else {}
        if strategy != "concat" and sep is not None:
            continue
        plain = list(from_iterable(docs).pack("ids", 4, batch_size=2, strategy=strategy, **kw))
        got = list(
            from_iterable(docs).pack(
                "ids", 4, batch_size=2, strategy=strategy, labels="shift", outputs=ALL, **kw
            )
        )
        for p, g in zip(plain, got, strict=True):
            ref = reference(p["segment_ids"], p["input_ids"])
            assert g["labels"].tolist() == ref["shift"]
            assert g["cu_seqlens"].tolist() == ref["cu_seqlens"]


def test_cu_seqlens_are_the_offsets_of_a_jagged_tensor() -> None:
    torch = pytest.importorskip("torch")
    b = next(pipeline(2, 9, outputs=("segment_ids", "cu_seqlens"), return_tensors="pt"))
    flat = b["input_ids"].reshape(-1)
    jagged = torch.nested.nested_tensor_from_jagged(flat, offsets=b["cu_seqlens"].long())
    seg = b["segment_ids"].reshape(-1)
    for run in jagged.unbind():  # each run is one segment of one row
        assert len(run) <= b["max_seqlen"]
    sizes = [len(run) for run in jagged.unbind()]
    rows = b["segment_ids"].tolist()
    expected = [sum(1 for _ in g) for row in rows for _, g in itertools.groupby(row)]
    assert sizes == expected and sum(sizes) == len(seg)


def test_pack_field_argument_errors() -> None:
    s = token_source(10)
    with pytest.raises(ValueError, match="`labels` must be one of"):
        s.pack("input_ids", 8, labels="next")
    with pytest.raises(TypeError, match="`outputs` must be a list of names"):
        s.pack("input_ids", 8, outputs="cu_seqlens")
    with pytest.raises(ValueError, match="`outputs` holds 'attention_mask'"):
        s.pack("input_ids", 8, outputs=("attention_mask",))
    with pytest.raises(ValueError, match="names an output twice"):
        s.pack("input_ids", 8, strategy="best_fit", outputs=("cu_seqlens", "cu_seqlens"))
    with pytest.raises(TypeError, match="signed `dtype` to hold -100, got uint32"):
        s.pack("input_ids", 8, labels="shift", dtype=np.uint32)


def test_the_fields_enter_the_pipeline_fingerprint() -> None:
    def make(**kw: Any) -> Stream[Any]:
        return token_source(40).pack("input_ids", 16, batch_size=2, **kw)

    for kw in ({"labels": "shift"}, {"outputs": ("cu_seqlens",)}, {"outputs": ()}):
        s = make(**kw)
        for _ in range(2):
            next(s)
        state = json.loads(json.dumps(s.state_dict()))
        with pytest.raises(StateError, match="ConcatPackIterator"):
            make().load_state_dict(state)
        same = make(**kw)
        same.load_state_dict(state)
        assert next(same)["input_ids"].tolist() == next(s)["input_ids"].tolist()


# ---------------------------------------------------------------- torch: attention, loss


def attend(torch: Any, q: Any, k: Any, v: Any, mask: Any) -> Any:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("packing", [PACKINGS[0], PACKINGS[3]], ids=["concat", "first_fit"])
def test_block_mask_and_cu_seqlens_give_per_document_attention(packing: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    heads, dim = 2, 8
    for b in pipeline(
        3, 11, outputs=("segment_mask", "cu_seqlens"), return_tensors="pt", **packing
    ):
        rows, s = b["input_ids"].shape
        q, k, v = (torch.randn(rows, heads, s, dim) for _ in range(3))
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        packed = attend(torch, q, k, v, (b["segment_mask"] & causal)[:, None])
        # flash-attn's layout: (total_tokens, heads, dim) cut at cu_seqlens, causal per run
        flat = [x.transpose(1, 2).reshape(rows * s, heads, dim) for x in (q, k, v)]
        expected = torch.empty(rows * s, heads, dim)
        cu = b["cu_seqlens"].tolist()
        assert max(np.diff(cu)) == b["max_seqlen"]
        for lo, hi in itertools.pairwise(cu):
            qq, kk, vv = (x[lo:hi].transpose(0, 1) for x in flat)
            causal_run = torch.ones(hi - lo, hi - lo, dtype=torch.bool).tril()
            expected[lo:hi] = attend(torch, qq, kk, vv, causal_run).transpose(0, 1)
        got = packed.transpose(1, 2).reshape(rows * s, heads, dim)
        torch.testing.assert_close(got, expected)


class TinyLM:
    """Embedding + learned positions, one causal attention layer, a linear head."""

    def __init__(self, torch: Any, vocab: int, dim: int = 16, max_pos: int = 32) -> None:
        torch.manual_seed(0)
        self.torch = torch
        self.emb = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_pos, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.head = torch.nn.Linear(dim, vocab)

    def __call__(self, ids: Any, pos: Any, mask: Any) -> Any:
        x = self.emb(ids) + self.pos(pos)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        causal = self.torch.ones(ids.shape[1], ids.shape[1], dtype=self.torch.bool).tril()
        h = attend(self.torch, q, k, v, mask & causal)
        return self.head(x + h)

    def document_loss(self, doc: list[int]) -> Any:
        """Summed next-token loss of one document alone (positions 0, 1, ...)."""
        torch, n = self.torch, len(doc)
        ids = torch.tensor([doc])
        logits = self(ids, torch.arange(n)[None], torch.ones(1, n, n, dtype=torch.bool))
        return torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:], reduction="sum")


@pytest.mark.parametrize("strategy", ["first_fit", "best_fit"])
def test_packed_loss_is_the_sum_of_per_document_losses(strategy: str) -> None:
    torch = pytest.importorskip("torch")
    from arrowmix.stream import from_iterable

    docs = [[3, 1, 4, 1, 5], [9, 2, 6], [5, 3, 5, 8, 9, 7], [9], [3, 2, 3, 8], [4, 6]]
    ce = torch.nn.functional.cross_entropy
    model = TinyLM(torch, vocab=10)
    expected = sum(model.document_loss(d) for d in docs)

    def packed(labels: str) -> Stream[Any]:
        return from_iterable(docs).pack(
            "ids",
            8,
            strategy=strategy,
            batch_size=4,
            return_tensors="pt",
            labels=labels,
            outputs=("position_ids", "segment_mask"),
        )

    shift = copy = torch.zeros(())
    for b in packed("shift"):
        logits = model(b["input_ids"], b["position_ids"], b["segment_mask"])
        shift = shift + ce(logits.flatten(0, 1), b["labels"].flatten(), reduction="sum")
    for b in packed("copy"):  # the model shifts, as Hugging Face causal LMs do
        logits = model(b["input_ids"], b["position_ids"], b["segment_mask"])
        loss = ce(logits[:, :-1].flatten(0, 1), b["labels"][:, 1:].flatten(), reduction="sum")
        copy = copy + loss
    torch.testing.assert_close(shift, expected)
    torch.testing.assert_close(copy, expected)


# ---------------------------------------------------------------- the round-trip harness


class PackFieldCase:
    """A packing pipeline with training fields, for the round-trip harness."""

    picklable = True
    docs = 40
    shuffle = True  # a buffering stage before pack
    pack_kwargs: ClassVar[dict[str, Any]] = {}

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = token_source(self.docs, num_instances=num_instances, instance_rank=instance_rank)
        if self.shuffle:
            s = s.shuffle(7, seed=1)
        return s.pack("input_ids", batch_size=2, **self.pack_kwargs)

    def units(self, item: dict[str, Any]) -> list[int]:
        """The document tokens of a batch (the corpus's tokens are >= 100000; 0 pads)."""
        return [int(t) for t in np.asarray(item["input_ids"]).ravel() if t]


class TestConcatPackLabels(PackFieldCase, CheckpointRoundTripTests):
    iterator_cls = ConcatPackIterator
    pack_kwargs: ClassVar[dict[str, Any]] = {
        "seq_len": 12,
        "separator": 0,
        "tail": "pad",
        "read_ahead": 5,
        "labels": "shift",
        "outputs": ("cu_seqlens", "segment_mask"),
    }


class TestConcatPackIdsOnly(PackFieldCase, CheckpointRoundTripTests):
    iterator_cls = ConcatPackIterator
    shuffle = False
    pack_kwargs: ClassVar[dict[str, Any]] = {
        "seq_len": 12,
        "tail": "pad",
        "read_ahead": 5,
        "outputs": (),
    }


class TestBinPackFields(PackFieldCase, CheckpointRoundTripTests):
    iterator_cls = BinPackIterator
    docs, shuffle = 60, False
    pack_kwargs: ClassVar[dict[str, Any]] = {
        "seq_len": 24,
        "strategy": "best_fit",
        "read_ahead": 13,
        "labels": "copy",
        "outputs": ("position_ids", "cu_seqlens"),
    }


class TestBinPackIdsOnly(PackFieldCase, CheckpointRoundTripTests):
    iterator_cls = BinPackIterator
    docs = 60
    pack_kwargs: ClassVar[dict[str, Any]] = {
        "seq_len": 24,
        "strategy": "first_fit",
        "read_ahead": 13,
        "outputs": (),
    }
