"""Streams over a random-access :class:`RowSource` (the head of Dataset pipelines).

``from_row_source`` is what ``Dataset.to_stream`` calls. The source computes the
positions of its rank's share of the epoch (see :mod:`arrowmix._stream.sources.order`) and
materialises them in blocks of ``block_rows`` with one vectorised ``take`` and one
conversion to row dicts, so the per-row cost is a list lookup.

``shard="chunks"`` deals whole chunks to the ranks instead of rows (each rank reads one
contiguous span of the epoch's chunk order: see :mod:`arrowmix._stream.sources.spans`), so that a
rank over remote chunks downloads only its own share.

Checkpointing: the state is ``(epoch, index, seed)``; restoring re-reads at most one
block. Infinite sources start a new epoch (with an epoch-derived order) when one ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from arrowmix._storage.distinct import distinct
from arrowmix._storage.gcpause import gc_paused
from arrowmix._stream.base import State, Stream
from arrowmix._stream.dealing import DealtSource, Generation
from arrowmix._stream.positions import Positions
from arrowmix._stream.provenance import SOURCE_KEY, SourcedRows, sources_reader
from arrowmix._stream.rng import SeedHolder
from arrowmix._stream.row_source import RowSource, optional_member
from arrowmix._stream.sources.blocks import BlockShape
from arrowmix._stream.sources.order import MODES, SHARDS, PositionOrder
from arrowmix._stream.topology import ElasticRole, check_sharding
from arrowmix._warn import warn
from arrowmix.exceptions import DroppedDataWarning, StateError

__all__ = ["ArrowSource", "Row", "Upcoming", "from_row_source", "row_builder", "table_to_rows"]

Row = dict[str, Any]


class RowFormat(Protocol):
    """How a source turns a block of rows into items (see ``NumpyRows``).

    A format may also have ``reader(rows) -> read(positions)``, giving the items at
    ``positions`` of the row source ``rows`` itself (``NumpyRows`` copies list columns
    straight out of the storage); without it, the block is taken as a table and called.
    """

    def __call__(self, table: pa.Table) -> list[Row]: ...

    def describe(self) -> dict[str, Any]: ...


@functools.lru_cache(maxsize=64)
def row_builder(arity: int) -> Callable[..., list[Row]]:
    """``build(*names, *columns)``: the row dicts of equal-length column value lists."""
    # A dict display with a fixed number of keys is ~4x faster than dict(zip(...)).
    # Only argument positions enter the generated code, never column names.
    xs = ", ".join(f"x{i}" for i in range(arity))
    cs = ", ".join(f"c{i}" for i in range(arity))
    ks = ", ".join(f"k{i}" for i in range(arity))
    body = ", ".join(f"k{i}: x{i}" for i in range(arity))
    src = (
        f"def build({ks}, {cs}):\n"
        f"    return [{{{body}}} for {xs}{',' if arity == 1 else ''} in zip({cs})]\n"
    )
    namespace: dict[str, Any] = {}
    exec(src, namespace)  # code generated from integers only, no user text
    fn: Callable[..., list[Row]] = namespace["build"]
    return fn


def table_to_rows(table: pa.Table) -> list[Row]:
    """Row dicts of ``table`` (column-wise conversion, ~2x faster than ``to_pylist``).

    Example:
        >>> table_to_rows(pa.table({"a": [1, 2], "b": ["x", None]}))
        [{'a': 1, 'b': 'x'}, {'a': 2, 'b': None}]
    """
    names = table.column_names
    if not names:
        return [{} for _ in range(table.num_rows)]
    # Building many containers triggers a cyclic-GC pass every 700 allocations; these
    # rows cannot form cycles, so collection is paused for the block (~1.4x faster).
    with gc_paused():
        cols = [c.to_pylist() for c in table.columns]
        return row_builder(len(names))(*names, *cols)


def _nonneg_int(owner: object, state: State, key: str) -> int:
    v = state[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise StateError(f"{type(owner).__name__}: `{key}` must be an int >= 0, got {v!r}.")
    return v


class ArrowSource(Stream[Row], DealtSource):
    """Row dicts of a :class:`RowSource` in sequential, global or chunk-shuffled order.

    State:
        ``epoch``: epoch number. ``index``: rows of this rank's share of the epoch
        already yielded. ``seed``: the order's seed. Replay cost: at most one block
        (``block_rows`` rows) is re-read on restore.
    """

    EPOCH_KEY = "epoch"
    INDEX_KEY = "index"
    SEED_KEY = "seed"
    ELASTIC_ROLE = ElasticRole.SOURCE
    STATE_KEYS = (EPOCH_KEY, INDEX_KEY, SEED_KEY)
    TRANSIENT = ("_block", "_reader")

    def __init__(
        self,
        rows: RowSource,
        *,
        shuffle: str | None = "global",
        seed: int | None = None,
        infinite: bool = True,
        num_instances: int = 1,
        instance_rank: int = 0,
        window_chunks: int = 4,
        block_rows: int = 1024,
        shard: str = "rows",
        row_format: RowFormat | None = None,
        blocks: BlockShape | None = None,
        provenance: bool | str = False,
    ) -> None:
        super().__init__()
        if shuffle not in MODES:
            raise ValueError(f"`shuffle` must be one of {MODES!r}, got {shuffle!r}.")
        if shard not in SHARDS:
            raise ValueError(f"`shard` must be one of {SHARDS!r}, got {shard!r}.")
        check_sharding(num_instances, instance_rank)
        if window_chunks < 1 or block_rows < 1:
            raise ValueError("`window_chunks` and `block_rows` must be positive ints.")
        self._block_shape = (blocks or BlockShape()).shape()
        if provenance is not False and provenance is not None:  # never in describe()
            rows = SourcedRows(rows, None if provenance is True else _name(provenance))
        self.rows = rows
        self._seed = SeedHolder(seed)
        self.shuffle_mode = shuffle
        self.infinite = infinite
        self.block_rows = block_rows
        self.shard = shard
        self.row_format = row_format
        self._sharding = (num_instances, instance_rank, window_chunks)
        # Elastic restores (see arrowmix._stream.elastic): past resizes of the epoch
        # order, and where a drain of an old instance's buffered rows stops.
        self._generations: list[Generation] = []
        self._limit: tuple[int, int] | None = None
        self._order = self._make_order()
        self._check_rows()

    def _read_ahead(self, wanted: int = 0) -> None:
        """Tell a row source that reads ahead where the stream stands.

        ``wanted``: how many rows the stream takes next at once, when it knows (0: a block).
        """
        hook = optional_member(self.rows, "read_ahead")
        if hook is not None:
            if "_chunk_bounds" not in self.__dict__:
                # Blocks that read chunks one after the other end at chunk boundaries, so
                # the rows of a chunk are served as soon as it is downloaded, while the
                # next ones download (see _first_chunk_run).
                self._chunk_bounds = np.asarray(self.rows.chunk_offsets(), dtype=np.int64)
            hook(Upcoming(self, (self._epoch, self._start), wanted))

    def stats(self) -> dict[str, Any]:
        """Where the source stands, plus its row source's counters (remote: downloads)."""
        if "_epoch" not in self.__dict__:  # not started: where it will start
            out: dict[str, Any] = {"epoch": self.__dict__.get("_first_epoch", 0), "index": 0}
        else:
            out = {"epoch": self._epoch, "index": self._start + self._pos}
        counters = optional_member(self.rows, "stats")
        if counters is not None:
            out.update(counters())
        return out

    def close(self) -> None:
        """Stop the row source's background downloads, if it has any."""
        stop = optional_member(self.rows, "close")
        if stop is not None:
            stop()
        super().close()

    def _check_rows(self) -> None:
        n, r, _ = self._sharding
        if self.infinite and self._order.count == 0:
            raise ValueError(
                f"an infinite stream needs rows for every rank: rank {r} of {n} gets "
                f"none of the {self.rows.num_rows} rows."
            )
        dropped = self._order.dropped
        if dropped and self.__dict__.get("_warned_drop") != n:
            self._warned_drop = n
            same = "the same rows" if self.shuffle_mode is None else "other rows"
            warn(
                f"shard='chunks' gives each of the {n} instances {self._order.count} of the "
                f"{self.rows.num_rows} rows per epoch: the last {dropped} rows of each "
                f"epoch's chunk order ({same} every epoch) are not read. Use shard='rows' to "
                "read every row (then every rank reads rows of every chunk), or a row count "
                f"divisible by {n}.",
                DroppedDataWarning,
            )

    @property
    def sharding(self) -> tuple[int, int]:
        """``(num_instances, instance_rank)``."""
        return self._sharding[0], self._sharding[1]

    def apply_share(self, num_instances: int, instance_rank: int) -> None:
        """Read another share of the rows (see ``ShareReader.reshard``)."""
        self._sharding = (num_instances, instance_rank, self._sharding[2])
        self._order = self._make_order()
        self._check_rows()

    def apply_deal(self) -> None:
        self._order = self._make_order()

    @property
    def order_seed(self) -> int:
        """The seed of the epoch orders (drawn once when none was given)."""
        return self._seed.value

    def begin_epoch(self, epoch: int) -> None:
        """A reset without state starts at ``epoch`` (``set_epoch``)."""
        self._first_epoch = epoch

    def frontier(self) -> tuple[int, int]:
        """``(epoch, index)``: rows of this rank's share handed out so far."""
        return self._epoch, self._start + self._pos

    def _make_order(self) -> PositionOrder:
        n, r, w = self._sharding
        return PositionOrder(
            self.rows.num_rows,
            self.rows.chunk_offsets(),
            self.shuffle_mode,
            self._seed.value,
            num_instances=n,
            instance_rank=r,
            window_chunks=w,
            generations=self._generations,
            shard=self.shard,
            block_shape=self._block_shape,
            prefetch=optional_member(self.rows, "prefetch"),
        )

    @property
    def schema(self) -> pa.Schema:
        return self.rows.schema

    def describe(self) -> dict[str, Any]:
        n, r, w = self._sharding
        out = {
            "rows": self.rows.fingerprint,
            "num_rows": self.rows.num_rows,
            "shuffle": self.shuffle_mode,
            "seed": self._seed.describe(),
            "infinite": self.infinite,
            "num_instances": n,
            "instance_rank": r,
            "window_chunks": w,
        }
        if self.shard != "rows" and n > 1:  # one instance reads the same order either way
            out["shard"] = self.shard
        if self.shuffle_mode == "blocks":  # absent in the other modes: their pins hold
            out["block_size"], out["window_blocks"] = self._block_shape
        if self.row_format is not None:  # absent by default: plain pipelines keep their pins
            out["format"] = self.row_format.describe()
        return out

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._epoch, self._start = self.__dict__.get("_first_epoch", 0), 0
        if state is not None:
            self._seed.load(self, state[self.SEED_KEY])
            self._epoch = _nonneg_int(self, state, self.EPOCH_KEY)
            self._start = _nonneg_int(self, state, self.INDEX_KEY)
            if self._start > self._order.count_for(self._epoch):
                raise StateError(
                    f"ArrowSource: `index` {self._start} exceeds the "
                    f"{self._order.count_for(self._epoch)} rows of this rank."
                )
        if self._order.seed != self._seed.value:
            self._order = self._make_order()
        self._block: list[Row] = []
        self._pos = 0

    def get_state(self) -> State:
        return {
            self.EPOCH_KEY: self._epoch,
            self.INDEX_KEY: self._start + self._pos,
            self.SEED_KEY: self._seed.value,
        }

    def row_source(self) -> RowSource:
        return self.rows

    def as_positions(self) -> Positions:
        return Positions(self.rows, self.pull_positions, self.to_rows)

    def to_rows(self, table: pa.Table) -> list[Row]:
        """The items of a block of rows: row dicts, in the row format if one is set."""
        if self.row_format is None:
            return table_to_rows(table)
        if SOURCE_KEY not in table.schema.names:
            return self.row_format(table)
        out = self.row_format(table.drop_columns([SOURCE_KEY]))
        return _with_refs(out, table.column(SOURCE_KEY).to_pylist())

    def _read(self, positions: np.ndarray) -> list[Row]:
        """The items of the block at ``positions``, read by the row format if one is set."""
        if self.row_format is None:
            return table_to_rows(self.rows.take(positions))
        refs = sources_reader(self.rows)
        if refs is not None:
            return _with_refs(self._read_format(positions), refs(positions))
        return self._read_format(positions)

    def _read_format(self, positions: np.ndarray) -> list[Row]:
        reader = self.__dict__.get("_reader")
        if reader is None:  # built on first read: it may hold views of the storage
            make = getattr(self.row_format, "reader", None)  # optional (see RowFormat)
            fmt, rows_of = self.row_format, self.rows
            assert fmt is not None
            if isinstance(rows_of, SourcedRows):  # the format reads the rows alone
                rows_of = rows_of.rows
            reader = self._reader = (
                make(rows_of) if make is not None else lambda pos: fmt(rows_of.take(pos))
            )
        rows: list[Row] = reader(positions)
        return rows

    def pull_positions(self, n: int) -> np.ndarray:
        """Advance by up to ``n`` rows and return their positions (no data is read).

        Index streams use this instead of rows; the current block of rows is dropped.
        """
        self._drop_block()
        parts: list[np.ndarray] = []
        got = 0
        if not self._finished():
            self._read_ahead(n)
        while got < n and not self._finished():
            stop = min(self._epoch_stop(), self._start + n - got)
            parts.append(self._order.positions(self._epoch, self._start, stop))
            got += stop - self._start
            self._start = stop
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def upcoming_positions(
        self, cursor: tuple[int, int], n: int
    ) -> tuple[np.ndarray, tuple[int, int]]:
        """Up to ``n`` positions from ``cursor`` on, and the cursor after (see ``Upcoming``)."""
        epoch, index = cursor
        for _ in range(1000):  # epochs holding no rows for this rank are skipped
            if self._limit is not None and (epoch, index) >= self._limit:
                break
            stop = self._epoch_stop(epoch)
            if index < stop:
                stop = min(stop, index + n)
                return self._order.positions(epoch, index, stop), (epoch, stop)
            if not self.infinite:
                break
            epoch, index = epoch + 1, 0
        return np.empty(0, dtype=np.int64), (epoch, index)

    def _drop_block(self) -> None:
        self._start += self._pos
        self._block, self._pos = [], 0

    def _epoch_stop(self, epoch: int | None = None) -> int:
        """End of the readable part of an epoch (its rows, or the drain limit)."""
        epoch = self._epoch if epoch is None else epoch
        stop = self._order.count_for(epoch)
        if self._limit is not None and self._limit[0] == epoch:
            stop = min(stop, self._limit[1])
        return stop

    def _finished(self) -> bool:
        """Start the next epoch when this one is over; True when a finite pass ended."""
        while True:
            if self._limit is not None and (self._epoch, self._start) >= self._limit:
                return True
            if self._start < self._epoch_stop():
                return False
            if not self.infinite:
                return True
            # An epoch resumed on a resized cluster may hold no rows for this rank.
            self._epoch += 1
            self._start = 0

    def _fill(self) -> None:
        self._drop_block()
        if self._finished():
            raise StopIteration
        # A block never spans two epochs, so (epoch, index) always names its rows.
        stop = min(self._epoch_stop(), self._start + self.block_rows)
        self._read_ahead()
        pos = self._order.positions(self._epoch, self._start, stop)
        if "_chunk_bounds" in self.__dict__:
            pos = _first_chunk_run(pos, self._chunk_bounds)
        self._block = self._read(pos)

    def next(self) -> Row:
        if self._pos >= len(self._block):
            self._fill()
        row = self._block[self._pos]
        self._pos += 1
        return row

    def pull(self, n: int) -> list[Row]:
        out: list[Row] = []
        while len(out) < n:
            if self._pos >= len(self._block):
                try:
                    self._fill()
                except StopIteration:
                    break
            take = self._block[self._pos : self._pos + n - len(out)]
            self._pos += len(take)
            out.extend(take)
        return out


def _name(provenance: object) -> str:
    if not isinstance(provenance, str) or not provenance:
        raise TypeError(f"`provenance` must be True, False or a source name, got {provenance!r}.")
    return provenance


def _with_refs(rows: list[Row], refs: list[Any]) -> list[Row]:
    """``rows`` (formatted items of a block) with their source references added."""
    for row, ref in zip(rows, refs, strict=True):
        row[SOURCE_KEY] = ref
    return rows


def _first_chunk_run(pos: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``pos`` up to where it leaves its first chunk, when it reads chunks one at a time.

    Positions that visit each chunk in one run (sequential order, a span of whole chunks)
    are cut at the first chunk boundary; positions that go back and forth between chunks
    (a shuffled window) need every chunk at once and are returned whole.
    """
    if len(pos) < 2:
        return pos
    owner = np.searchsorted(bounds, pos, side="right")
    changes = np.flatnonzero(owner[1:] != owner[:-1])
    if len(changes) == 0 or len(changes) + 1 != len(distinct(owner)):
        return pos
    return pos[: int(changes[0]) + 1]


class Upcoming:
    """The order a source will read its rows in from ``cursor`` on (its read-ahead hint).

    A row source with a ``read_ahead(upcoming)`` method (remote chunks read through a
    bounded cache) is called with one before every block the source reads, and may ask for
    the positions of the rows that follow, epoch after epoch, to download what comes next.
    Cursors are ``(epoch, index in this rank's share of the epoch)``.

    ``ranges_announced``: the order hands the row ranges it reads next to the row source's
    ``prefetch`` itself (``shuffle="blocks"``), so a read-ahead of local pages can leave
    them to it.

    ``wanted``: how many rows the reader takes from ``cursor`` on right now (an index
    stream's window of positions, whose lengths it looks up at once), 0 when it reads a
    block at a time.
    """

    def __init__(self, source: ArrowSource, cursor: tuple[int, int], wanted: int = 0) -> None:
        self._source = source
        self.cursor = cursor
        self.wanted = wanted
        self.ranges_announced = source.shuffle_mode == "blocks"

    def positions(self, cursor: tuple[int, int], n: int) -> tuple[np.ndarray, tuple[int, int]]:
        """Up to ``n`` positions from ``cursor`` on (within one epoch), and the cursor after.

        Empty when the stream ends there (a finite pass, or a drain's limit).
        """
        return self._source.upcoming_positions(cursor, n)


def from_row_source(
    rows: RowSource,
    *,
    shuffle: str | None = "global",
    seed: int | None = None,
    infinite: bool = True,
    num_instances: int = 1,
    instance_rank: int = 0,
    window_chunks: int = 4,
    block_rows: int = 1024,
    shard: str = "rows",
    row_format: RowFormat | None = None,
    blocks: BlockShape | None = None,
    provenance: bool | str = False,
) -> ArrowSource:
    """The stream of a random-access row source (what ``Dataset.to_stream`` returns).

    ``shard``: ``"rows"`` deals the rows of the epoch's order to the ranks in turn;
    ``"chunks"`` gives each rank one contiguous span of the epoch's chunk order (whole
    chunks but the two at its ends, ``num_rows // num_instances`` rows each, the rest of
    the epoch unread with a ``DroppedDataWarning``); it needs ``shuffle="chunks"`` or None.
    ``row_format``: turns each block of rows into items (``NumpyRows``: numpy values), in
    place of plain row dicts; the order and the state are the same.
    ``blocks``: the block and window sizes of ``shuffle="blocks"`` (:class:`BlockShape`).
    ``provenance``: ``True`` or a source name: every item carries the source reference
    of its row (see :mod:`arrowmix._stream.provenance`); the order and the state are
    the same.

    Example:
        >>> import pyarrow as pa
        >>> from arrowmix._stream.row_source import TableRowSource
        >>> src = TableRowSource(pa.table({"x": list(range(6))}))
        >>> s = from_row_source(src, shuffle=None, infinite=False, num_instances=2,
        ...                     instance_rank=1)
        >>> [r["x"] for r in s]
        [1, 3, 5]
    """
    return ArrowSource(
        rows,
        shuffle=shuffle,
        seed=seed,
        infinite=infinite,
        num_instances=num_instances,
        instance_rank=instance_rank,
        window_chunks=window_chunks,
        block_rows=block_rows,
        shard=shard,
        row_format=row_format,
        blocks=blocks,
        provenance=provenance,
    )
