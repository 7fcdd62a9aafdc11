"""The window-replay base: stages that turn a run of source items into a window of outputs.

Shuffle windows, bucketing read-aheads, parallel-map chunks and flat-map expansions
all follow one rule: *replay a window, never the past*.

Checkpointing: the state holds the source's state when the current window began
(``source``), the window number (``window``, which also seeds its generator) and how
many outputs of the window were already emitted (``emitted``). Restoring rewinds the
source to the anchor, recomputes that one window and skips the emitted outputs. Neither
the buffer nor a random-generator state is ever stored.

This is the public base for buffering stages (``arrowmix.stream.WindowReplayStage``):
a subclass implements ``compute(window)`` only, and gets exact resume, pickling and
elastic resume (its role is ``ElasticRole.BUFFERING``) by construction.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, TypeVar

import numpy as np

from arrowmix._stream.base import State, Stream
from arrowmix._stream.rng import derive_rng
from arrowmix._stream.topology import ElasticRole
from arrowmix.exceptions import StateError

__all__ = ["AnchoredStage", "WindowReplayStage"]

T = TypeVar("T")
U = TypeVar("U")


class WindowReplayStage(Stream[U]):
    """Outputs computed window by window from ``source`` (public stage kit).

    Subclasses call ``super().__init__(source)`` and implement ``compute(window)``: read
    one window from ``self.source`` (``self.source.pull(n)`` or ``self.source.next()``),
    return its outputs as a list, or ``None`` when the source is exhausted. ``compute``
    must be a pure function of the items it reads and of ``window`` (random choices come
    from ``self.window_rng(seed, window)``) and must not carry items over to the next window:
    restoring calls it again for the open window. Configuration goes in
    ``describe()``; extra state (a seed) in ``extra_state``/``load_extra`` with the
    keys listed in ``STATE_KEYS``.

    State:
        ``source``: the source's state at the start of the current window. ``window``:
        the window number. ``emitted``: outputs of the window already yielded.
        Subclasses may add keys through ``extra_state``/``load_extra``.

    Example:
        >>> from arrowmix.stream import WindowReplayStage, from_iterable
        >>> class Reverse(WindowReplayStage):
        ...     def compute(self, window):
        ...         items = self.source.pull(3)
        ...         return items[::-1] if items else None
        >>> list(Reverse(from_iterable(range(7))))
        [2, 1, 0, 5, 4, 3, 6]
    """

    SOURCE_KEY = "source"
    WINDOW_KEY = "window"
    EMITTED_KEY = "emitted"
    BASE_KEYS = (SOURCE_KEY, WINDOW_KEY, EMITTED_KEY)
    STATE_KEYS: ClassVar[tuple[str, ...] | None] = BASE_KEYS
    TRANSIENT = ("_buf",)
    ELASTIC_ROLE = ElasticRole.BUFFERING

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass lists only its own keys in ``STATE_KEYS``; the base keys are added."""
        super().__init_subclass__(**kwargs)
        keys = cls.__dict__.get("STATE_KEYS")
        if keys is not None:
            own = tuple(k for k in keys if k not in WindowReplayStage.BASE_KEYS)
            cls.STATE_KEYS = (*WindowReplayStage.BASE_KEYS, *own)

    def __init__(self, source: Stream[Any]) -> None:
        super().__init__()
        if not isinstance(source, Stream):
            raise TypeError(f"`source` must be a Stream, got {type(source).__name__}.")
        self.source: Stream[Any] = source

    def children(self) -> list[Stream[Any]]:
        return [self.source]

    def compute(self, window: int) -> list[U] | None:
        """Read one window from the source and return its outputs (None at the end)."""
        raise StopIteration

    def extra_state(self) -> State:
        """Additional state entries (e.g. the seed)."""
        return {}

    def load_extra(self, state: State) -> None:
        """Load the entries of ``extra_state``."""

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self._buf: Any = None  # outputs, or an array of row positions
        self._pos = 0
        self._skip = 0
        self._window = 0
        if state is None:
            self.source.reset(None)
            self._anchor: State = {}
            return
        self.load_extra(state)
        window, emitted = state[self.WINDOW_KEY], state[self.EMITTED_KEY]
        for name, v in ((self.WINDOW_KEY, window), (self.EMITTED_KEY, emitted)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise StateError(f"{type(self).__name__}: bad `{name}` {v!r} in state.")
        self.source.reset(state[self.SOURCE_KEY])
        self._window, self._skip = window, emitted

    def begin_epoch(self, epoch: int) -> None:
        """Mix ``epoch`` (from ``set_epoch``) into :meth:`window_rng`."""
        self._draw_epoch = epoch

    @property
    def pending_skip(self) -> int:
        """Outputs of the open window a restore still has to skip (0 when running)."""
        skip: int = self._skip
        return skip

    def window_rng(self, seed: int, window: int) -> np.random.Generator:
        """The generator of ``window``: ``derive_rng(seed, window)`` (and the epoch).

        Use it for every random choice of ``compute``; after ``set_epoch(e)`` with
        ``e > 0`` it is ``derive_rng(seed, window, e)``, so each epoch draws anew.
        """
        epoch = self.__dict__.get("_draw_epoch", 0)
        return derive_rng(seed, window, epoch) if epoch else derive_rng(seed, window)

    def replay_open_window(self) -> None:
        """Recompute the window a restored state stands in (no output is yielded)."""
        if self._buf is None and self._skip > 0:
            self._fill()

    def get_state(self) -> State:
        if self._buf is not None and self._pos < len(self._buf):
            state = {
                self.SOURCE_KEY: copy.deepcopy(self._anchor),
                self.WINDOW_KEY: self._window,
                self.EMITTED_KEY: self._pos,
            }
        else:
            state = {
                self.SOURCE_KEY: self.source.get_state(),
                self.WINDOW_KEY: self._window + (self._buf is not None),
                self.EMITTED_KEY: self._skip,
            }
        state.update(self.extra_state())
        return state

    def _fill(self) -> None:
        # Loop: a window may legitimately produce no outputs (e.g. flat_map -> []).
        while self._buf is None or self._pos >= len(self._buf):
            if self._buf is not None:
                self._window += 1
                self._buf = None
            anchor = self.source.get_state()
            out = self.compute(self._window)
            if out is None:
                raise StopIteration
            if self._skip > len(out):
                raise StateError(
                    f"{type(self).__name__}: the state skips {self._skip} outputs but "
                    f"window {self._window} has only {len(out)}."
                )
            self._anchor, self._buf, self._pos, self._skip = anchor, out, self._skip, 0

    def next(self) -> U:
        if self._buf is None or self._pos >= len(self._buf):
            self._fill()
        assert self._buf is not None
        item: U = self._buf[self._pos]
        self._pos += 1
        self.yielded(self._pos - 1, self._pos)
        return item

    def yielded(self, first: int, stop: int) -> None:
        """Hook: outputs ``first`` to ``stop - 1`` of the current window were just yielded.

        Called by ``next`` and ``pull`` (not ``pull_positions``); does nothing by default.
        Stages that count what they yield (``bucket``, ``budget_bucket``) override it.
        """

    def pull_positions(self, n: int) -> np.ndarray:
        """Like ``pull`` for stages whose windows are arrays of row positions."""
        parts: list[np.ndarray] = []
        got = 0
        while got < n:
            if self._buf is None or self._pos >= len(self._buf):
                try:
                    self._fill()
                except StopIteration:
                    break
            assert isinstance(self._buf, np.ndarray)
            part = self._buf[self._pos : self._pos + n - got]
            self._pos += len(part)
            got += len(part)
            parts.append(part)
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def pull(self, n: int) -> list[U]:
        out: list[U] = []
        while len(out) < n:
            if self._buf is None or self._pos >= len(self._buf):
                try:
                    self._fill()
                except StopIteration:
                    break
            assert self._buf is not None
            part = self._buf[self._pos : self._pos + n - len(out)]
            self._pos += len(part)
            self.yielded(self._pos - len(part), self._pos)
            out.extend(part)
        return out


#: The internal name of :class:`WindowReplayStage`.
AnchoredStage = WindowReplayStage
