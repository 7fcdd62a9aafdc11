"""Reusable checkpoint round-trip tests for streams (shipped with the package).

Apply :class:`CheckpointRoundTripTests` to your own pipelines to check that they resume
exactly. It works under pytest and unittest (plain ``assert`` with messages naming the
step and the state). A check that does not apply to the pipeline (``seeded`` or
``picklable`` not set, no ``make_sharded``, a pipeline that refuses elastic resume)
raises :class:`unittest.SkipTest` with the reason, which both runners report as a
skip, instead of passing silently::

    import unittest
    from arrowmix.stream import Stream, from_iterable
    from arrowmix.testing import CheckpointRoundTripTests

    class TestMyPipeline(CheckpointRoundTripTests, unittest.TestCase):
        iterator_cls = Stream
        def make_iterator(self):
            return from_iterable(range(50)).shuffle(8, seed=0).batch(3)

:func:`rows_seen` answers "which rows did step N see" from a checkpoint (the pipeline
built again with provenance on), and :func:`fetch_rows` reads those rows back.
"""

from __future__ import annotations

import copy
import json
import pickle
import unittest
import warnings
from collections import Counter
from typing import Any, ClassVar

import numpy as np

from arrowmix._stream.rows_seen import fetch_rows, rows_seen
from arrowmix.exceptions import DroppedDataWarning, ElasticResumeError
from arrowmix.stream import ElasticRole, Stream, merge_states

__all__ = ["CheckpointRoundTripTests", "fetch_rows", "rows_seen"]

_MAX_ITEMS = 100_000


def _canon(x: Any) -> Any:
    """Comparable form of an item (numpy arrays and tuples become lists)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [_canon(v) for v in x]
    if isinstance(x, dict):
        return {k: _canon(v) for k, v in x.items()}
    return x


def _drain(it: Stream[Any]) -> list[Any]:
    out = []
    for item in it:
        out.append(_canon(item))
        assert len(out) <= _MAX_ITEMS, "make_iterator() must build a finite pipeline"
    return out


def _structure(state: Any, late: frozenset[str] = frozenset()) -> Any:
    if isinstance(state, dict):
        return {k: _structure(v, late) for k, v in sorted(state.items()) if k not in late}
    if isinstance(state, list):
        return [_structure(v, late) for v in state]
    return type(state).__name__


def _held_streams(node: Stream[Any]) -> list[tuple[str, Stream[Any]]]:
    """``(attribute, stream)`` for every stream ``node`` holds, in lists and tuples too."""
    out: list[tuple[str, Stream[Any]]] = []
    for name, value in vars(node).items():
        items = value if isinstance(value, (list, tuple)) else (value,)
        out.extend((name, v) for v in items if isinstance(v, Stream) and v is not node)
    return out


def _nodes(it: Stream[Any]) -> list[Stream[Any]]:
    out = [it]
    for c in it.children():
        out.extend(_nodes(c))
    return out


class CheckpointRoundTripTests:
    """Mixin of checkpoint round-trip tests; subclasses provide the pipeline.

    Attributes:
        iterator_cls: the stream class under test (must occur in the pipeline).
        checkpoint_stride: test every n-th step only (for long pipelines).
        seeded: ``make_iterator`` accepts ``seed=`` and seeds change the output.
        picklable: the pipeline pickles (its functions are module-level).
        elastic_grid: ``(old, new)`` instance counts checked by
            ``test_elastic_resume_exactly_once`` (with ``make_sharded``).
        elastic_steps: items each old instance yields before the checkpoint.
        elastic_exact: elastic resume delivers exactly the units of the uninterrupted
            run. ``False`` for a pipeline that stops after a number of items (``take``):
            the new dealing decides which units come after the resize, so the check is
            their number, and that none comes twice.
        elastic_drop_tail: units one instance may drop at the end of its run (a stage
            that drops a last partial output: ``pack(tail="drop")``, ``batch_size *
            seq_len`` tokens). Each instance drops its own, so N and M instances drop
            different units: the check is then that none comes twice, that fewer than
            this many per new instance are missing and fewer than this many per old
            instance (the uninterrupted run's own tails) are new.
        late_state_keys: state keys a stage adds only once it needs them, so that its
            checkpoints taken before keep an older form (an uncapped ``"longest_cycle"``
            mix records ``epochs`` once an input has cycled); the structure check
            ignores them.
    """

    iterator_cls: ClassVar[type[Any]] = Stream
    checkpoint_stride: ClassVar[int] = 1
    seeded: ClassVar[bool] = False
    picklable: ClassVar[bool] = False
    elastic_grid: ClassVar[tuple[tuple[int, int], ...]] = ((1, 2), (2, 3), (3, 2), (2, 1))
    elastic_steps: ClassVar[tuple[int, ...]] = (0, 1, 3)
    elastic_exact: ClassVar[bool] = True
    elastic_drop_tail: ClassVar[int] = 0
    late_state_keys: ClassVar[frozenset[str]] = frozenset()

    def make_iterator(self, **kwargs: Any) -> Stream[Any]:
        """A fresh, finite pipeline (about 200 items at most) on every call."""
        raise TypeError(f"{type(self).__name__} must define make_iterator()")

    def make_sharded(self, num_instances: int, instance_rank: int) -> Stream[Any]:
        """The same finite pipeline, built as instance ``instance_rank`` of ``num_instances``.

        Define it (sources built with ``num_instances`` / ``instance_rank``) to check
        elastic resume; without it ``test_elastic_resume_exactly_once`` is skipped.
        """
        raise unittest.SkipTest(
            f"{type(self).__name__} defines no make_sharded(num_instances, instance_rank): "
            "elastic resume is not checked"
        )

    def units(self, item: Any) -> list[Any]:
        """The units of an output that elastic resume must deliver exactly once.

        Default: the item itself. Override for outputs that group rows, e.g. the row
        ids of a batch or the tokens of a packed sequence.
        """
        return [item]

    # ------------------------------------------------------------------ helpers
    def _reference(self) -> tuple[list[Any], list[dict[str, Any]]]:
        """Items of one uninterrupted run and the state before each of them."""
        it = self.make_iterator()
        items: list[Any] = []
        states = [it.state_dict()]
        for item in it:
            items.append(_canon(item))
            states.append(it.state_dict())
            assert len(items) <= _MAX_ITEMS, "make_iterator() must build a finite pipeline"
        return items, states

    def _steps(self, n: int) -> range:
        return range(0, n + 1, max(1, self.checkpoint_stride))

    # -------------------------------------------------------------------- tests
    def test_pipeline_contains_iterator_cls(self) -> None:
        """The pipeline really contains the class under test."""
        it = self.make_iterator()
        assert any(isinstance(n, self.iterator_cls) for n in _nodes(it)), (
            f"no {self.iterator_cls.__name__} in the pipeline {it.explain()}"
        )

    def test_children_declared(self) -> None:
        """Every stream a stage holds is among its ``children()``.

        The epoch (``set_epoch``), the pipeline fingerprint (which refuses a checkpoint
        of a differently configured pipeline), ``close`` and elastic resume reach the
        stages below a node only through ``children()``.
        """
        for node in _nodes(self.make_iterator()):
            declared = node.children()
            for name, held in _held_streams(node):
                assert any(held is c for c in declared), (
                    f"{type(node).__name__}.{name} holds {type(held).__name__}, which its "
                    "children() does not return: set_epoch and the pipeline fingerprint "
                    "would not reach it. Return every stream the stage reads (or drop the "
                    "children() override: the default finds them)."
                )

    def test_resume_same_instance(self) -> None:
        """Resume at every step on the same instance."""
        ref, _ = self._reference()
        it = self.make_iterator()
        for step in self._steps(len(ref)):
            it.load_state_dict(None)
            for _ in range(step):
                next(it)
            state = it.state_dict()
            first = _drain(it)
            it.load_state_dict(state)
            again = _drain(it)
            assert first == again == ref[step:], (
                f"resume mismatch at step {step} from state {state}"
            )

    def test_resume_fresh_instance(self) -> None:
        """Resume at every step on a fresh instance."""
        ref, states = self._reference()
        for step in self._steps(len(ref)):
            it = self.make_iterator()
            it.load_state_dict(states[step])
            got = _drain(it)
            assert got == ref[step:], (
                f"fresh-instance resume mismatch at step {step} from state {states[step]}"
            )

    def test_json_round_trip(self) -> None:
        """States survive JSON, and the decoded state resumes identically."""
        ref, states = self._reference()
        for step in self._steps(len(ref)):
            decoded = json.loads(json.dumps(states[step]))
            assert decoded == states[step], f"state at step {step} changes through JSON"
            it = self.make_iterator()
            it.load_state_dict(decoded)
            assert _drain(it) == ref[step:], (
                f"resume from JSON state failed at step {step}: {decoded}"
            )

    def test_state_after_load_equals_state(self) -> None:
        """``state_dict()`` right after ``load_state_dict(s)`` equals ``s``."""
        ref, states = self._reference()
        for step in self._steps(len(ref)):
            it = self.make_iterator()
            it.load_state_dict(states[step])
            got = it.state_dict()
            assert got == states[step], (
                f"state after load differs at step {step}: loaded {states[step]}, got {got}"
            )

    def test_state_structure_constant(self) -> None:
        """The state keeps the same structure at every step."""
        _, states = self._reference()
        first = _structure(states[0], self.late_state_keys)
        for step, state in enumerate(states):
            assert _structure(state, self.late_state_keys) == first, (
                f"state structure changed at step {step}: {state} vs {states[0]}"
            )

    def test_earlier_state_unchanged(self) -> None:
        """A state handed out is never mutated by later iteration."""
        it = self.make_iterator()
        snapshots = []
        for step, _ in enumerate(it):
            state = it.state_dict()
            snapshots.append((step, state, copy.deepcopy(state)))
            assert step <= _MAX_ITEMS, "make_iterator() must build a finite pipeline"
        for step, state, copied in snapshots:
            assert state == copied, f"state handed out at step {step} was mutated: {state}"

    def test_resume_at_end(self) -> None:
        """A state taken at the end resumes to an immediate StopIteration."""
        _, states = self._reference()
        it = self.make_iterator()
        it.load_state_dict(states[-1])
        try:
            item = next(it)
        except StopIteration:
            return
        raise AssertionError(f"resume at end yielded {item!r} from state {states[-1]}")

    def test_restore_reverse_order_with_reset(self) -> None:
        """Restore states in reverse order, with resets in between."""
        ref, states = self._reference()
        it = self.make_iterator()
        for n, step in enumerate(reversed(self._steps(len(ref)))):
            if n % 2:
                it.load_state_dict(None)
                next(it, None)
            it.load_state_dict(states[step])
            got = _drain(it)
            assert got == ref[step:], (
                f"reverse-order restore mismatch at step {step} from state {states[step]}"
            )

    def test_reset_replays_and_second_epoch(self) -> None:
        """Reset replays; a second epoch after a resume matches a fresh run."""
        ref, states = self._reference()
        it = self.make_iterator()
        _drain(it)
        it.load_state_dict(None)
        assert _drain(it) == ref, "load_state_dict(None) does not replay from the start"
        step = len(ref) // 2
        other = self.make_iterator()
        other.load_state_dict(states[step])
        assert _drain(other) == ref[step:], f"resume mismatch at step {step}"
        other.load_state_dict(None)
        assert _drain(other) == ref, (
            f"second epoch after a resume at step {step} differs from a fresh run"
        )

    def test_seeds(self) -> None:
        """Same seed, same output; different seeds, different output."""
        if not self.seeded:
            raise unittest.SkipTest("seeded = False: seeds are not checked")
        a = _drain(self.make_iterator(seed=1))
        b = _drain(self.make_iterator(seed=1))
        c = _drain(self.make_iterator(seed=2))
        assert a == b, "two pipelines with the same seed differ"
        assert a != c, "pipelines with seeds 1 and 2 give the same output"

    def test_pickle_resumes(self) -> None:
        """An unpickled stream resumes where the original stood."""
        if not self.picklable:
            raise unittest.SkipTest("picklable = False: pickling is not checked")
        ref, _ = self._reference()
        for step in self._steps(len(ref)):
            it = self.make_iterator()
            for _ in range(step):
                next(it)
            clone = pickle.loads(pickle.dumps(it))
            assert _drain(clone) == ref[step:], f"unpickled stream differs at step {step}"

    def _unit_counts(self, items: list[Any]) -> Counter[str]:
        return Counter(
            json.dumps(_canon(u), sort_keys=True, default=repr)
            for item in items
            for u in self.units(item)
        )

    def test_elastic_resume_exactly_once(self) -> None:
        """Checkpoints of N instances resumed on M: every unit exactly once.

        For each ``(N, M)`` of ``elastic_grid`` and each step count of
        ``elastic_steps``: the units yielded by the N old instances before the
        checkpoint plus those yielded by the M new instances after loading
        ``merge_states`` of their checkpoints are the units of one uninterrupted run of
        the N instances, each exactly once. Skipped when the pipeline refuses elastic
        resume (the reason is the skip message).
        """
        self._check_elastic(self.make_sharded, "")

    def test_elastic_resume_behind_buffering_stages(self) -> None:
        """Elastic resume with a buffering stage after each dealer (``budget_bucket``).

        A dealer hands its batches to whatever follows it; a ``shuffle`` or a
        ``map(fn, num_workers=2)`` appended to the pipeline holds batches the dealer
        already dealt. For each ``(N, M)`` of ``elastic_grid`` and each step count of
        ``elastic_steps``, the units the N old instances yielded plus those the M new
        ones yield after an elastic resume must be exactly what the pipeline without the
        appended stage delivers when its checkpoints are taken where the dealer stood:
        the appended stage loses and repeats nothing (whatever the dealer's own
        remainder rule drops or repeats). Skipped when the pipeline has no dealer.
        """
        probe = self.make_sharded(1, 0)
        if not any(n.ELASTIC_ROLE is ElasticRole.DEALER for n in _nodes(probe)):
            raise unittest.SkipTest("the pipeline has no dealer stage (budget_bucket)")
        probe.close()
        behind: dict[str, Any] = {
            "shuffle(3)": lambda s: s.shuffle(3, seed=0),
            "map(num_workers=2)": lambda s: s.map(_same, num_workers=2),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)  # the dealer's own rule
            for name, wrap in behind.items():
                for n, m in self.elastic_grid:
                    for steps in self.elastic_steps:
                        self._check_behind(wrap, name, n, m, steps)

    def _resume_on(self, make: Any, merged: Any, m: int) -> list[Any]:
        rest: list[Any] = []
        for r in range(m):
            new = make(m, r)
            try:
                new.load_state_dict(merged)
            except ElasticResumeError as exc:
                raise unittest.SkipTest(f"elastic resume is refused: {exc}") from exc
            rest.extend(_drain(new))
            new.close()
        return rest

    def _check_behind(self, wrap: Any, name: str, n: int, m: int, steps: int) -> None:
        inner = [self.make_sharded(n, r) for r in range(n)]
        outer = [wrap(s) for s in inner]
        seen = [_canon(x) for s in outer for x in _take(s, steps)]
        merged = json.loads(json.dumps(merge_states([s.state_dict() for s in outer])))
        # where the dealer's side stood: what the plain pipeline had yielded to the stage
        inner_states = json.loads(json.dumps([s.state_dict() for s in inner]))
        for s in outer:
            s.close()
        rest = self._resume_on(lambda k, r: wrap(self.make_sharded(k, r)), merged, m)
        dealt: list[Any] = []
        for r, state in enumerate(inner_states):
            full = _drain(self.make_sharded(n, r))
            tail = self.make_sharded(n, r)
            tail.load_state_dict(state)
            dealt.extend(full[: len(full) - len(_drain(tail))])
        plain = self._resume_on(self.make_sharded, merge_states(inner_states), m)
        want = self._unit_counts(dealt + plain)
        got = self._unit_counts(seen + rest)
        lost = sorted((want - got).elements())[:5]
        twice = sorted((got - want).elements())[:5]
        assert got == want, (
            f"elastic resume {n} -> {m} instances behind {name} after {steps} items each: "
            f"{sum((want - got).values())} units lost (e.g. {lost}), "
            f"{sum((got - want).values())} extra or duplicated (e.g. {twice})"
        )

    def _check_elastic(self, make: Any, behind: str) -> None:
        where = f" behind {behind}" if behind else ""
        for n, m in self.elastic_grid:
            want = self._unit_counts([x for r in range(n) for x in _drain(make(n, r))])
            for steps in self.elastic_steps:
                old = [make(n, r) for r in range(n)]
                seen = [_canon(x) for s in old for x in _take(s, steps)]
                merged = json.loads(json.dumps(merge_states([s.state_dict() for s in old])))
                for s in old:
                    s.close()
                rest: list[Any] = []
                for r in range(m):
                    new = make(m, r)
                    try:
                        new.load_state_dict(merged)
                    except ElasticResumeError as exc:
                        raise unittest.SkipTest(f"elastic resume is refused: {exc}") from exc
                    rest.extend(_drain(new))
                    new.close()
                got = self._unit_counts(seen + rest)
                if self.elastic_drop_tail:
                    _check_tails(self, want, got, n, m, f"{where} after {steps} items each")
                    continue
                if not self.elastic_exact:
                    twice = sorted(k for k, c in got.items() if c > max(1, want[k]))[:5]
                    assert (got.total(), twice) == (want.total(), []), (
                        f"elastic resume {n} -> {m} instances{where} after {steps} items "
                        f"each: {got.total()} units where the uninterrupted run has "
                        f"{want.total()}, duplicated: {twice}"
                    )
                    continue
                lost = sorted((want - got).elements())[:5]
                twice = sorted((got - want).elements())[:5]
                assert got == want, (
                    f"elastic resume {n} -> {m} instances{where} after {steps} items each: "
                    f"{sum((want - got).values())} units lost (e.g. {lost}), "
                    f"{sum((got - want).values())} extra or duplicated (e.g. {twice})"
                )


def _check_tails(self: Any, want: Counter[str], got: Counter[str], n: int, m: int, at: str) -> None:
    """Elastic resume of a pipeline that drops each instance's tail (``elastic_drop_tail``)."""
    tail = self.elastic_drop_tail
    twice = sorted(k for k, c in got.items() if c > max(1, want[k]))[:5]
    lost, new = (want - got).total(), (got - want).total()
    ok = not twice and lost <= m * (tail - 1) and new <= n * (tail - 1)
    assert ok, (
        f"elastic resume {n} -> {m} instances{at}: {lost} units missing (at most "
        f"{m * (tail - 1)}: one partial tail per new instance), {new} not in the "
        f"uninterrupted run (at most {n * (tail - 1)}), duplicated: {twice}"
    )


def _same(item: Any) -> Any:
    return item


def _take(it: Stream[Any], n: int) -> list[Any]:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out
