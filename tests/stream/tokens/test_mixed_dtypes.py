"""Token files of different dtypes mixed in one stream, with no converted copy.

Four corpora, each as its writer leaves it: a Megatron pair written as ``uint16`` (a GPT-2
vocabulary) and one written as ``int32`` by megatron-core's own builder, a nanoGPT
``train.bin`` (``uint16``, blocks of ``seq_len`` tokens) and arrowmix chunks
(``list<int32>``). Their token ids are unique per corpus, and those of the ``int32`` corpora
lie above 65,535, so a value that wrapped through ``uint16`` would show. The token path over
their mix is compared with the same pipeline over ``int64`` tables built with numpy from the
files (megatron-core's reader, ``np.fromfile``, pyarrow's IPC reader).
"""

from __future__ import annotations

import functools
import glob
import os
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._dataset.state import state_of
from arrowmix._storage.mapped import _mappings
from arrowmix._stream.stages.budget_bucket import BudgetBucketIterator
from arrowmix._stream.tokens.collate import CollateIterator
from arrowmix._stream.tokens.pack import ConcatPackIterator
from arrowmix.exceptions import SchemaMismatchError
from arrowmix.stream import Stream, mix
from arrowmix.testing import CheckpointRoundTripTests
from tests.dataset.megatron_helpers import build_with_megatron, read_with_megatron
from tests.stream.tokens.token_helpers import tokens_of

pytestmark = pytest.mark.filterwarnings("ignore::arrowmix.exceptions.DroppedDataWarning")

SEQ_LEN = 9  # nanoGPT blocks


def unique_docs(n: int, base: int, seed: int) -> list[list[int]]:
    """``n`` documents of 1..20 tokens: token ``j`` of document ``k`` is ``base + 25 k + j``."""
    rng = np.random.default_rng(seed)
    return [(base + 25 * k + np.arange(int(rng.integers(1, 21)))).tolist() for k in range(n)]


@functools.cache
def corpora() -> str:
    """The four corpora, written once (under the test session's home directory)."""
    d = tempfile.mkdtemp(prefix="mixed-dtypes-", dir=os.path.expanduser("~"))
    build_with_megatron(f"{d}/web_uint16", unique_docs(50, 1_000, 0), np.uint16)
    build_with_megatron(f"{d}/code_int32", unique_docs(40, 100_000, 1), np.int32)
    np.arange(40_000, 40_000 + 30 * SEQ_LEN, dtype=np.uint16).tofile(f"{d}/train.bin")
    chat = pa.table({"input_ids": pa.array(unique_docs(35, 200_000, 2), pa.list_(pa.int32()))})
    am.write_chunks(chat, f"{d}/chat", rows_per_chunk=12)
    return d


def sources() -> list[am.Dataset]:
    """The corpora opened in place: uint16, int32, uint16 and int32 token columns."""
    d = corpora()
    return [
        am.Dataset.from_megatron(f"{d}/web_uint16"),
        am.Dataset.from_megatron(f"{d}/code_int32"),
        am.Dataset.from_token_file(f"{d}/train.bin", np.uint16, seq_len=SEQ_LEN),
        am.Dataset.from_chunks(f"{d}/chat"),
    ]


def references() -> list[am.Dataset]:
    """The same documents as int64 tables, read from the files with numpy and pyarrow."""
    d = corpora()
    flat = np.fromfile(f"{d}/train.bin", dtype=np.uint16)
    chat = pa.concat_tables(
        pa.ipc.open_file(path).read_all() for path in sorted(glob.glob(f"{d}/chat/*.arrow"))
    )
    docs = [
        read_with_megatron(f"{d}/web_uint16"),
        read_with_megatron(f"{d}/code_int32"),
        flat.astype(np.int64).reshape(-1, SEQ_LEN).tolist(),
        chat.column("input_ids").to_pylist(),
    ]
    out = []
    for k, (rows, ds) in enumerate(zip(docs, sources(), strict=True)):
        table = pa.table({"input_ids": pa.array(rows, pa.list_(pa.int64()))})
        edges = state_of(ds).file_offsets  # the same chunks: the same shuffled order
        path = f"{d}/reference-{k}"
        if not os.path.isdir(path):
            am.write_chunks(table, path, rows_per_chunk=edges[1] - edges[0])
        ref = am.Dataset.from_chunks(path)
        assert state_of(ref).file_offsets == edges
        out.append(ref)
    return out


def mixed(datasets: list[am.Dataset], num_instances: int = 1, instance_rank: int = 0) -> Any:
    shard = {"num_instances": num_instances, "instance_rank": instance_rank}
    streams = [ds.to_stream(seed=k, infinite=False, shuffle="chunks", **shard)
               for k, ds in enumerate(datasets)]  # fmt: skip
    return mix(streams, [0.3, 0.3, 0.2, 0.2], seed=7)


PIPELINES = {
    "columnar_collate": lambda s: s.batch(6, columnar=True).collate(labels="shift"),
    "rows_collate": lambda s: s.batch(5).collate(pad_to_multiple_of=8),
    "pack": lambda s: s.pack("input_ids", 24, batch_size=2, separator=0, tail="pad"),
    "best_fit": lambda s: s.pack("input_ids", 24, strategy="best_fit", batch_size=2),
    "budget_bucket": lambda s: s.budget_bucket("input_ids", 60, 20, seed=1).collate(),
    "int32_collate": lambda s: s.batch(6, columnar=True).collate(dtype=np.int32),
}


def _plain(batches: Any) -> list[dict[str, Any]]:
    return [{k: (v.dtype.name, v.tolist()) for k, v in b.items()} for b in batches]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_token_path_equals_the_numpy_reference(pipeline: str) -> None:
    make = PIPELINES[pipeline]
    got = _plain(make(mixed(sources())))
    want = _plain(make(mixed(references())))
    assert got == want
    ids = {t for b in got for t in np.ravel(b["input_ids"][1]).tolist()}
    assert min(ids - {0}) < 2_000 and max(ids) > 200_000  # uint16 and int32 corpora both read
    dtype = "int32" if pipeline.startswith("int32") else "int64"
    assert {b["input_ids"][0] for b in got} == {dtype}


def test_mix_schema_is_the_smallest_type_holding_every_input() -> None:
    def schema(*types: pa.DataType) -> Any:
        streams = [
            am.Dataset.from_arrow(pa.table({"ids": pa.array([[1]], t), "n": pa.array([1], n)}))
            .to_stream(infinite=False)
            for t, n in zip(types, (pa.int8(), pa.int64(), pa.uint8()), strict=False)
        ]  # fmt: skip
        return mix(streams, seed=0).schema

    lists = pa.list_
    assert schema(lists(pa.uint16()), lists(pa.int32())).field("ids").type == lists(pa.int32())
    assert schema(lists(pa.uint16()), lists(pa.uint32())).field("ids").type == lists(pa.uint32())
    assert schema(lists(pa.uint32()), lists(pa.int32())).field("ids").type == lists(pa.int64())
    wide = schema(lists(pa.uint8()), pa.large_list(pa.int16()), lists(pa.uint16()))
    assert wide.field("ids").type == pa.large_list(pa.int32())
    assert wide.field("n").type == pa.int64()  # plain integer columns are widened too
    same = mix([s.to_stream(seed=0) for s in sources()[:1] * 2], seed=0).schema
    assert same.field("input_ids").type == lists(pa.uint16())  # agreeing types stay


def test_a_lossy_combination_is_refused_naming_both_inputs() -> None:
    big = pa.table({"input_ids": pa.array([[2**63 + 5]], pa.list_(pa.uint64()))})
    web = sources()[1].to_stream(seed=0)
    streams = {"huge": am.Dataset.from_arrow(big).to_stream(seed=0), "code": web}
    with pytest.raises(SchemaMismatchError) as err:
        mix(streams, {"huge": 0.5, "code": 0.5}, seed=0)
    msg = str(err.value)
    assert "'input_ids'" in msg and "0 ('huge'): list<item: uint64>" in msg
    assert "1 ('code'): list<item: int32>" in msg
    other = pa.table({"input_ids": pa.array([["a"]], pa.list_(pa.string()))})
    with pytest.raises(SchemaMismatchError, match=r"differing columns: \['input_ids'\]"):
        mix([web, am.Dataset.from_arrow(other).to_stream(seed=0)], seed=0)


def test_no_copy_of_a_column_is_written_and_agreeing_types_are_not_cast() -> None:
    d = corpora()
    references()
    before = sorted(os.listdir(d))
    web, code, flat, chat = sources()
    out = list(mixed([web, code, flat, chat]).pack("input_ids", 24, batch_size=2))
    assert out and sorted(os.listdir(d)) == before  # nothing written beside the corpora
    # a uint16 token file mixed with itself: the gathers read the memory map as it is
    same = mixed([web, web, flat, flat])
    rows = same.row_source()
    column = rows.token_column("input_ids")
    assert column.dtype == np.uint16 and not any(rows._cast)
    for values in column.buffers()[0]:
        address = values.__array_interface__["data"][0]
        owner = [p for lo, hi, _base, p in _mappings()[1] if lo <= address < hi]
        assert owner[0].endswith(("web_uint16.bin", "train.bin"))


def test_a_narrow_output_dtype_still_refuses_ids_it_cannot_hold() -> None:
    stream = mixed(sources()).batch(200, columnar=True).collate(dtype=np.uint16)
    with pytest.raises(ValueError, match=r"'input_ids' holds token id 1\d{5}.*uint16"):
        list(stream)


class MixedDtypes(CheckpointRoundTripTests):
    """The four corpora of three dtypes mixed, sharded over ranks."""

    picklable = True
    elastic_steps = (0, 2)

    def make_iterator(self) -> Stream[Any]:
        return self.make_sharded(1, 0)

    def units(self, item: dict[str, Any]) -> list[int]:
        return [t for t in tokens_of(item) if t]  # separators are not units


@pytest.mark.slow
class TestMixedDtypesColumnarCollate(MixedDtypes):
    iterator_cls = CollateIterator
    checkpoint_stride = 3

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = mixed(sources(), num_instances, instance_rank).shuffle(8, seed=0)
        return s.batch(5, columnar=True).collate(labels="shift")


@pytest.mark.slow
class TestMixedDtypesConcatPack(MixedDtypes):
    iterator_cls = ConcatPackIterator
    checkpoint_stride = 6

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        s = mixed(sources(), num_instances, instance_rank)
        return s.pack("input_ids", 16, batch_size=2, separator=0, tail="pad", read_ahead=9)


@pytest.mark.slow
class TestMixedDtypesBudgetBucket(MixedDtypes):
    iterator_cls = BudgetBucketIterator
    checkpoint_stride = 4
    # one window of the 155 documents, 4 a batch (at most 80 tokens): 39 batches, which
    # 1 and 3 instances divide (36 are left after 3 batches), so remainder="drop" drops none
    elastic_grid = ((1, 3), (3, 1))
    elastic_steps = (0, 3)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        shard = {"num_instances": num_instances, "instance_rank": instance_rank}
        s = mixed(sources())  # the same stream on every instance: the bucket deals
        b = s.budget_bucket("input_ids", 80, 200, max_batch_size=4, seed=1, **shard)
        return b.collate()
