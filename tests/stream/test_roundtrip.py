"""Every stream class through the shared checkpoint round-trip suite."""

from __future__ import annotations

from typing import Any

from arrowmix._stream.mixing.mix import WeightedMixIterator, ZipIterator
from arrowmix._stream.replay import AnchoredStage
from arrowmix._stream.sources.blocks import BlockShape
from arrowmix._stream.sources.chunks import ChunkSource
from arrowmix._stream.sources.iterable import IterableSource
from arrowmix._stream.sources.rows import ArrowSource
from arrowmix._stream.stages.batch import BatchIterator
from arrowmix._stream.stages.bucket import LengthBucketIterator
from arrowmix._stream.stages.flat_map import FlatMapIterator
from arrowmix._stream.stages.limit import LimitIterator
from arrowmix._stream.stages.map import FilterIterator, MapIterator, ParallelMapIterator
from arrowmix._stream.stages.prefetch import PrefetchIterator
from arrowmix._stream.stages.shuffle import BufferShuffleIterator
from arrowmix._stream.stages.window import WindowIterator
from arrowmix.stream import Stream, from_chunks, from_iterable, mix, zip
from arrowmix.testing import CheckpointRoundTripTests
from tests.stream.helpers import arrow, budget, double, ident, is_even, n_tokens, repeat_mod3

CHUNKS = [list(range(i * 10, i * 10 + (i % 4) * 5)) for i in range(12)]


def read_chunk(i: int) -> list[int]:
    return CHUNKS[i]


class TestIterableSource(CheckpointRoundTripTests):
    iterator_cls = IterableSource
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(60))


class TestArrowSourceGlobal(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return arrow(90, shuffle="global", seed=seed).map(ident)


class TestArrowSourceChunksSharded(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        src = arrow(150, shuffle="chunks", seed=seed, num_instances=3, instance_rank=1)
        return src.map(ident)


class TestArrowSourceBlocks(CheckpointRoundTripTests):
    """Blocks of 7 rows in windows of 3 blocks; the tail block (150 % 7 rows) in one window."""

    iterator_cls = ArrowSource
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0, n: int = 1, r: int = 0) -> Stream[Any]:
        shard = {"num_instances": n, "instance_rank": r}
        return arrow(150, shuffle="blocks", seed=seed, blocks=BlockShape(7, 3), **shard).map(ident)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return self.make_iterator(0, num_instances, instance_rank)


class TestArrowSourceBlocksInfinite(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(23, shuffle="blocks", seed=seed, infinite=True, blocks=BlockShape(4, 2))
        return s.shuffle(5, seed=seed).map(ident).take(80)


class TestArrowSourceInfinite(CheckpointRoundTripTests):
    iterator_cls = ArrowSource
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return arrow(23, shuffle="global", seed=seed, infinite=True).map(ident).take(80)


class TestArrowSourceSequential(CheckpointRoundTripTests):
    iterator_cls = ArrowSource

    def make_iterator(self) -> Stream[Any]:
        return arrow(40, shuffle=None, infinite=True).map(ident).take(100)


class TestChunkSource(CheckpointRoundTripTests):
    iterator_cls = ChunkSource
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return from_chunks(range(12), read_chunk, seed=seed, infinite=False)


class TestChunkSourceInfiniteSharded(CheckpointRoundTripTests):
    iterator_cls = ChunkSource
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = from_chunks(range(12), read_chunk, seed=seed, num_instances=2, instance_rank=1)
        return s.take(150)


class TestMap(CheckpointRoundTripTests):
    iterator_cls = MapIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(50)).map(double)


class TestFilter(CheckpointRoundTripTests):
    iterator_cls = FilterIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(80)).filter(is_even).batch(3)


class TestParallelMap(CheckpointRoundTripTests):
    iterator_cls = ParallelMapIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(70)).map(double, num_workers=2)


class TestFlatMap(CheckpointRoundTripTests):
    iterator_cls = FlatMapIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(60)).flat_map(repeat_mod3)


class TestWindow(CheckpointRoundTripTests):
    iterator_cls = WindowIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(40)).window(4)


class TestShuffle(CheckpointRoundTripTests):
    iterator_cls = BufferShuffleIterator
    seeded = True
    picklable = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return from_iterable(range(100)).shuffle(16, seed=seed)


class TestBatch(CheckpointRoundTripTests):
    iterator_cls = BatchIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(50)).batch(4, drop_last=True)


class TestBucketColumn(CheckpointRoundTripTests):
    iterator_cls = LengthBucketIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(150, shuffle="global", seed=3)
        return s.bucket("n_tokens", budget, 40, seed=seed).map(lambda b: [ident(r) for r in b])


class TestBucketColumnar(CheckpointRoundTripTests):
    iterator_cls = LengthBucketIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(150, shuffle="global", seed=3).shuffle(30, seed=seed)
        b = s.bucket("n_tokens", budget, 40, boundary_key="lang", seed=seed, columnar=True)
        return b.map(lambda t: t.column("id").to_pylist())


class TestBucketBoundary(CheckpointRoundTripTests):
    iterator_cls = LengthBucketIterator

    def make_iterator(self) -> Stream[Any]:
        s = arrow(120, shuffle=None)
        b = s.bucket(n_tokens, 5, 32, boundary_key="lang", shuffle=False)
        return b.map(lambda batch: [ident(r) for r in batch])


class TestLimit(CheckpointRoundTripTests):
    iterator_cls = LimitIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(50)).take(30)


class TestMixDeterministic(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator

    def make_iterator(self) -> Stream[Any]:
        return mix(
            [
                from_iterable(range(60)),
                from_iterable(range(100, 130)),
                from_iterable("xyz"),
            ],
            [0.5, 0.3, 0.2],
        )


class TestMixSeededShortest(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return mix(
            [from_iterable(range(80)), from_iterable(range(100, 170))],
            [0.6, 0.4],
            stopping="shortest",
            seed=seed,
        )


class TestMixCycle(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator
    picklable = True
    late_state_keys = frozenset({"epochs"})  # recorded once an input has cycled

    def make_iterator(self) -> Stream[Any]:
        return mix(
            [
                from_iterable(range(20)),
                from_iterable(range(100, 150)),
                from_iterable([]),
            ],
            [1, 2, 1],
            stopping="longest_cycle",
        )


class TestZip(CheckpointRoundTripTests):
    iterator_cls = ZipIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return zip([from_iterable(range(40)), from_iterable(range(100, 130))])


class TestCompositeRows(CheckpointRoundTripTests):
    iterator_cls = AnchoredStage
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        return self.build(seed, 1, 0)

    def build(self, seed: int, n: int, r: int) -> Stream[Any]:
        shard = {"num_instances": n, "instance_rank": r}
        a = arrow(80, shuffle="chunks", seed=seed, **shard).shuffle(10, seed=seed)
        b = arrow(80, shuffle="global", seed=seed + 1, **shard)
        c = arrow(60, shuffle="blocks", seed=seed + 2, blocks=BlockShape(5, 2), **shard)
        m = mix([a, b.filter(lambda r: r["id"] % 3 == 0), c], [0.6, 0.3, 0.1], seed=seed)
        return m.bucket("n_tokens", 4, 24, seed=seed).map(lambda bt: [ident(r) for r in bt])

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return self.build(0, num_instances, instance_rank)

    def units(self, item: list[int]) -> list[int]:
        return item


class TestCompositeNested(CheckpointRoundTripTests):
    iterator_cls = FlatMapIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = from_iterable(range(40)).shuffle(7, seed=seed).flat_map(repeat_mod3)
        return s.map(double, num_workers=3).shuffle(5, seed=seed).window(2).batch(3)


class TestPrefetchThread(CheckpointRoundTripTests):
    iterator_cls = PrefetchIterator
    picklable = True

    def make_iterator(self) -> Stream[Any]:
        return from_iterable(range(70)).map(double).prefetch(12)


class TestPrefetchComposite(CheckpointRoundTripTests):
    iterator_cls = PrefetchIterator
    seeded = True

    def make_iterator(self, seed: int = 0, n: int = 1, r: int = 0) -> Stream[Any]:
        s = arrow(90, shuffle="global", seed=seed, num_instances=n, instance_rank=r)
        return s.prefetch(8).shuffle(9, seed=seed).map(ident).prefetch(5).batch(4)

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        return self.make_iterator(0, num_instances, instance_rank)

    def units(self, item: list[int]) -> list[int]:
        return item


class TestIndexStreamShuffleBucket(CheckpointRoundTripTests):
    iterator_cls = BufferShuffleIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        s = arrow(70, shuffle="chunks", seed=seed, infinite=True).shuffle(16, seed=seed)
        b = s.bucket("n_tokens", budget, 24, boundary_key="lang", seed=seed)
        return b.map(lambda batch: [ident(r) for r in batch]).take(60)


class TestMixBulk(CheckpointRoundTripTests):
    iterator_cls = WeightedMixIterator
    seeded = True

    def make_iterator(self, seed: int = 0) -> Stream[Any]:
        streams = [
            arrow(40, seed=seed).map(ident),
            from_iterable(range(100, 160)).shuffle(9, seed=seed),
            from_iterable(range(200, 230)),
        ]
        return mix(streams, [2, 3, 1], seed=seed).batch(17)
