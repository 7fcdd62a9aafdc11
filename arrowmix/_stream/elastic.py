"""Elastic resume: restore the checkpoints of N instances on M instances.

An *instance* is one reader of the pipeline: a rank, or a DataLoader worker of a rank
(instance ``rank * workers + worker``). ``merge_states`` bundles the ``state_dict()``
of every old instance, in instance order; ``load_state_dict`` of the bundle on a
pipeline whose row sources are sharded as instance ``j`` of ``M`` makes it run a list
of *tasks*:

1. **Drains.** An old instance had read rows that it had not yielded yet (shuffle
   buffers, bucketing read-aheads, prefetch queues). Its *frontier* is where each row
   source stood once its pipeline is restored and every partially emitted window is
   replayed (the rows it had read to produce what it yielded). Draining old instance
   ``k`` restores its state with its old sharding, stops the sources at that frontier
   and yields everything that comes out: exactly its read-but-not-yielded rows. Old
   instance ``k``'s drain runs on new instance ``k mod M``. ``mix`` drops an input that
   ends during a drain (``"longest_drop"``), whatever its stopping rule.
2. **Main.** The rows no old instance had read (the remainder of the epoch, see
   :mod:`arrowmix._stream.dealing`) are dealt round-robin to the M instances, then the
   following epochs are dealt as usual. ``from_chunks`` sources deal chunks the same
   way; the drain of an old instance finishes the chunk it had begun.

With ``budget_bucket`` every instance reads the same rows: nothing is drained, the window
the old instances stood in is planned again and the batches none of them yielded are
dealt to the new instances (equal counts are kept; all old instances must stand in the
same window).

Guarantee: over the epochs in progress, the rows yielded before the checkpoint by all
old instances plus the rows yielded after it by all new instances are every row
exactly once (with pipelines whose stages neither drop nor duplicate rows: ``take``,
``filter``, ``batch(drop_last=True)`` and ``window`` change what "every row" means).
The order is not the order of an uninterrupted run. Cost: loading computes every old
instance's frontier, i.e. replays one window per old instance.

A checkpoint taken during a drain holds the remaining tasks, so it can be merged and
resized again.

A transparent stage's own state (``take``'s count, a user stage's) is merged by the
stage's hooks: ``elastic_state()`` is read from each old instance once restored,
``merge_elastic_states(states, M)`` gives each new instance its share, held by
``load_elastic_state`` across the instance's tasks and saved in its checkpoint
(``"own"``). ``take`` thus keeps the run's total (N -> M instances yield what N would
have). Below a dealer nothing is merged: every instance reads the same rows.

The pipeline is read only through its declared elastic roles
(:class:`~arrowmix._stream.topology.ElasticRole`): sources deal positions, buffering
stages replay their open window, transparent stages pass through, a dealer stage deals
its outputs, and a stage that refuses (or declares nothing) makes loading raise
:class:`~arrowmix.exceptions.ElasticResumeError`. The run talks to the nodes through
their protocol methods only (``reshard``, ``deal``, ``deal_remaining``,
``set_elastic_mode``, ``replay_open_window``); the pipeline's root
(:class:`~arrowmix._stream.root.PipelineRoot`) holds the run and iterates it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from arrowmix._stream.base import FORMAT_VERSION, PLAIN, ElasticMode, State, Stream
from arrowmix._stream.dealing import Generation
from arrowmix._stream.hooks import offers
from arrowmix._stream.identity import describe_mismatch
from arrowmix._stream.mixing.changes import check_changes
from arrowmix._stream.mixing.mix_elastic import refuse_chains
from arrowmix._stream.root import root_of
from arrowmix._stream.stages.map import adopt_map_forms
from arrowmix._stream.topology import (
    ElasticRole,
    elastic_sources,
    merges,
    open_for_changes,
    own_entries,
    replay_open_windows,
    source_keys,
    walk,
)
from arrowmix.exceptions import StateError

__all__ = ["ElasticRun", "merge_states"]

MERGED_KEY = "merged"
ELASTIC_KEY = "elastic"
_TASK_KEYS = ("pipeline", "state", "sharding", "sources", "override")
STEPS_KEY = "steps"  # optional: where the weight schedules of a main task start


def merge_states(states: Sequence[State]) -> State:
    """Bundle the checkpoints of all instances into one elastic checkpoint.

    Args:
        states: ``state_dict()`` of every old instance, in instance order (rank-major,
            then DataLoader worker: instance ``rank * num_workers + worker``).

    Returns:
        A JSON-able checkpoint that ``load_state_dict`` accepts on any number of
        instances (see the module docstring for what is guaranteed).

    Example:
        >>> import pyarrow as pa
        >>> from arrowmix._stream.row_source import TableRowSource
        >>> from arrowmix._stream.sources.rows import from_row_source
        >>> rows = TableRowSource(pa.table({"x": list(range(10))}))
        >>> def build(n, r):
        ...     s = from_row_source(rows, seed=1, infinite=False, num_instances=n,
        ...                         instance_rank=r)
        ...     return s.shuffle(3, seed=2)
        >>> old = [build(2, r) for r in range(2)]
        >>> seen = [next(s)["x"] for s in old for _ in range(2)]
        >>> merged = merge_states([s.state_dict() for s in old])
        >>> new = [build(3, r) for r in range(3)]
        >>> for s in new:
        ...     s.load_state_dict(merged)
        >>> sorted(seen + [row["x"] for s in new for row in s]) == list(range(10))
        True
    """
    states = list(states)
    if not states:
        raise ValueError("merge_states needs the state of at least one instance.")
    for k, st in enumerate(states):
        if not isinstance(st, dict) or st.get("format") != FORMAT_VERSION:
            raise StateError(f"merge_states: states[{k}] is not a stream checkpoint: {st!r:.80}.")
        if MERGED_KEY in st:
            raise StateError(f"merge_states: states[{k}] is already merged; load it first.")
        missing = {"pipeline", "state"} - st.keys()
        if missing:
            raise StateError(f"merge_states: states[{k}] lacks keys {sorted(missing)}.")
    return {"format": FORMAT_VERSION, MERGED_KEY: copy.deepcopy(states)}


def _plain_task(st: State, n: int, k: int, num_sources: int) -> dict[str, Any]:
    src: list[dict[str, Any]] = [
        {"generations": [], "limit": None, "seed": None} for _ in range(num_sources)
    ]
    return {
        "pipeline": st["pipeline"],
        "state": st["state"],
        "sharding": [n, k],
        "sources": src,
        "override": None,
    }


def _fresh_spec(draining: bool) -> dict[str, Any]:
    """A source the checkpoint did not have: from its beginning (nothing, in a drain)."""
    return {"generations": [], "limit": [0, 0] if draining else None, "seed": None}


def rekey(task: dict[str, Any], keys: list[str] | None) -> dict[str, Any]:
    """``task`` with its sources matched to this pipeline's by key (named mixes).

    A kept source keeps its dealing; a source the task lacks starts at its beginning
    (in a drain, it yields nothing); a source this pipeline lacks is left out (the mix
    reports it). Tasks without keys stay positional.
    """
    specs = task["sources"]
    if keys is None or not specs or not all("key" in spec for spec in specs):
        return task
    by_key = {spec["key"]: {k: v for k, v in spec.items() if k != "key"} for spec in specs}
    draining = any(spec["limit"] is not None for spec in specs)
    return {**task, "sources": [by_key.get(k) or _fresh_spec(draining) for k in keys]}


def _old_tasks(
    merged: list[State], num_sources: int, keys: list[str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(drains, mains)``: the old instances' pending drain tasks and their main tasks."""
    n = len(merged)
    drains: list[dict[str, Any]] = []
    mains: list[dict[str, Any]] = []
    for k, st in enumerate(merged):
        if ELASTIC_KEY in st:
            tasks = [rekey(_check_task(x), keys) for x in st[ELASTIC_KEY]["tasks"]]
            tasks[0] = {**tasks[0], "state": st["state"], "pipeline": st["pipeline"]}
        else:
            tasks = [_plain_task(st, n, k, num_sources)]
        *pending, main = tasks
        if main["sharding"] != [n, k]:
            raise StateError(
                f"merge_states: states[{k}] belongs to instance {main['sharding'][1]} "
                f"of {main['sharding'][0]}, expected {k} of {n}; pass the states of "
                "every instance in instance order."
            )
        drains.extend(pending)
        mains.append(main)
    return drains, mains


def _role_of(node: Any) -> ElasticRole | None:
    role = type(node).ELASTIC_ROLE
    return None if role is None else ElasticRole(role)


def _unseeded(state: Any) -> Any:
    """``state`` without its ``seed`` entries (at any depth)."""
    if isinstance(state, dict):
        return {k: _unseeded(v) for k, v in state.items() if k != "seed"}
    if isinstance(state, list):
        return [_unseeded(v) for v in state]
    return state


def _check_task(task: Any) -> dict[str, Any]:
    if not isinstance(task, dict) or set(task) - {STEPS_KEY} != set(_TASK_KEYS):
        raise StateError(f"elastic checkpoint: bad task {task!r:.120}.")
    return task


def _common_epoch(merged: list[State]) -> int:
    """The ``set_epoch`` epoch all instances were in (refused if they differ)."""
    epochs = {int(st.get("epoch", 0)) for st in merged}
    if len(epochs) > 1:
        raise StateError(
            f"merge_states: the instances were in different set_epoch epochs {sorted(epochs)}."
        )
    return epochs.pop()


def _next_generation(
    chain: list[Any], frontiers: list[list[list[int]]], seeds: list[int], ns: int
) -> list[dict[str, Any]]:
    """The new main task's sources: each old instance's frontier appended as a generation."""
    return [
        {
            "generations": [*chain[i], [f[i] for f in frontiers]],
            "limit": None,
            "seed": seeds[i],
        }
        for i in range(ns)
    ]


class ElasticRun:
    """The task list of one instance after an elastic load (held by the root stream)."""

    def __init__(self, root: Stream[Any], tasks: list[dict[str, Any]]) -> None:
        self.root = root
        self.pipeline = root_of(root)  # the run: epoch, checkpoint identity, reset
        self.sources, dealers = elastic_sources(root)
        self.keys = source_keys(root)
        # With budget_bucket every instance reads the same rows and the stage deals
        # batches: it carries the instance sharding, the sources stay unsharded.
        self.shared = bool(dealers)
        self.dealers: list[Any] = dealers if dealers else list(self.sources)
        self.home = tuple(self.dealers[0].sharding) if self.dealers else (1, 0)
        self.tasks = tasks
        self.nodes = walk(root)
        self.epoch = 0  # the epoch chosen by set_epoch on the old instances
        self.nodes_of: dict[Any, Any] = {}  # pipeline hash -> its checkpoint's "nodes"
        self.allow_changes = False  # load_state_dict(..., allow_changes=True)
        self.steps: list[list[int | None]] = []  # schedule steps of the old instances
        # Stages that merge their own state (take): the old instances' states while
        # planning, then this instance's share, held across its tasks.
        # Below a dealer every instance reads the same stream: the dealer's window start
        # carries their state, nothing is merged there.
        below = {id(x) for d in dealers for x in walk(d)}
        self.merging = [n for n in self.nodes if merges(n) and id(n) not in below]
        self.olds: list[list[Any]] = []
        self.own: list[Any] | None = None
        self.mode = PLAIN

    def set_mode(self, mode: ElasticMode) -> None:
        self.mode = mode
        for node in self.nodes:
            node.set_elastic_mode(mode)

    def _hold_own(self) -> None:
        """Give the merging stages this instance's share, once the task's windows replayed.

        Replaying first keeps what an old instance had read before its checkpoint out
        of the share (a ``take`` below a ``shuffle`` counted its buffer then).
        """
        if self.own is None or not self.merging:
            return
        for node in self.merging:  # the replay reads as the old instance did
            node.load_elastic_state(None)
        mode = self.mode
        self.set_mode(ElasticMode(draining=mode.draining, synchronous=True))
        try:
            replay_open_windows(self.root)
        finally:
            self.set_mode(mode)
        for node, state in zip(self.merging, self.own, strict=True):
            node.load_elastic_state(state)

    def _record_own(self) -> None:
        """Note the merging stages' own state as an old instance left it."""
        if self.merging:
            self.olds.append([n.elastic_state() for n in self.merging])

    def _merge_own(self, merged: list[State]) -> None:
        """This instance's share of the merging stages' states (old instances' merged)."""
        if not self.merging:
            return
        t, j = self.home
        olds = [
            st[ELASTIC_KEY].get("own") or mine if ELASTIC_KEY in st else mine
            for st, mine in zip(merged, self.olds, strict=True)
        ]
        self.own = []
        for i, node in enumerate(self.merging):
            shares = type(node).merge_elastic_states([o[i] for o in olds], t)
            if not isinstance(shares, list) or len(shares) != t:
                raise StateError(
                    f"{type(node).__qualname__}.merge_elastic_states must return one state "
                    f"per new instance ({t}), got {shares!r:.80}."
                )
            self.own.append(shares[j])

    # -------------------------------------------------------------- configuration
    def configure(self, task: dict[str, Any]) -> None:
        """Shard the sources as ``task`` says and restore its state (lazily)."""
        n, r = task["sharding"]
        self.root.close()  # background workers must not read while sources change
        if len(task["sources"]) != len(self.sources):
            raise StateError(
                f"elastic checkpoint has {len(task['sources'])} row sources, this "
                f"pipeline {len(self.sources)}."
            )
        for dealer in self.dealers:
            dealer.reshard(n, r)
        for src, spec in zip(self.sources, task["sources"], strict=True):
            gens = [Generation(g) for g in spec["generations"]]
            limit = None if spec["limit"] is None else tuple(spec["limit"])
            src.deal(gens, limit, None if spec["seed"] is None else int(spec["seed"]))
        mine = self.root.pipeline_fingerprint()
        changed = task["state"] is not None and task["pipeline"] != mine
        if changed and adopt_map_forms(
            self.root, task["pipeline"], self.nodes_of.get(task["pipeline"])
        ):
            changed = False  # only maps' worker counts differ
        if changed and self.allow_changes:
            check_changes(self.nodes_of.get(task["pipeline"]), self.root)
            open_for_changes(self.root)
        elif changed:
            nodes = self.nodes_of.get(task["pipeline"])
            raise StateError(
                f"checkpoint of instance {r} of {n} was taken from a different pipeline "
                f"({task['pipeline']!r}): {describe_mismatch(nodes, self.root)}."
            )
        draining = any(s["limit"] is not None for s in task["sources"])
        override = task["override"]
        if self.shared:
            plan, limit = None, None
            if override is not None:
                start = override["start"]
                if start is not None:
                    # A main task starts the dealer inside the window being re-dealt.
                    begin = start if task["state"] is None else None
                    plan = (start["window"], override["generations"], begin)
                limit = override.get("limit")
            self.dealers[0].deal_remaining(plan)
            self.dealers[0].stop_at(limit)
            draining = draining or limit is not None
        self.set_mode(ElasticMode(draining=draining))
        if self.epoch != self.pipeline.epoch:
            self.pipeline.apply_epoch(self.epoch)
        if task["state"] is None and task.get(STEPS_KEY):
            for node, step in zip(self._scheduled(), task[STEPS_KEY], strict=False):
                if step is not None:
                    node.start_schedule_at(int(step))
        self.pipeline.reset(task["state"])
        self._hold_own()

    def _scheduled(self) -> list[Any]:
        """The nodes whose weights follow a schedule of their step (mixes), in walk order."""
        return [n for n in self.nodes if offers(n, "schedule_step")]

    def replay(self, task: dict[str, Any]) -> None:
        """Restore ``task`` and replay its partially emitted windows (synchronously)."""
        self.configure(task)
        draining = any(s["limit"] is not None for s in task["sources"]) or bool(
            self.shared and task["override"] and task["override"].get("limit")
        )
        # Frontiers must not depend on a background thread's progress.
        self.set_mode(ElasticMode(draining=draining, synchronous=True))
        try:
            replay_open_windows(self.root)
        finally:
            self.set_mode(ElasticMode(draining=draining))

    def frontier(self, task: dict[str, Any]) -> list[list[int]]:
        """Where the sources of ``task`` stand once its windows are replayed."""
        if task["state"] is None:
            if self.merging:  # its own state as a fresh start leaves it
                self.configure(task)
                self._record_own()
            return [[0, 0] for _ in self.sources]
        self.replay(task)
        self._record_own()
        self.steps.append([n.schedule_step() for n in self._scheduled()])
        return [list(s.frontier()) for s in self.sources]

    def plan_shared(
        self, mains: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """``(drains, main)`` of a budget_bucket pipeline: re-deal the current window.

        Every instance read the same rows: the window the old instances stood in is
        planned again and the batches none of them had dealt are dealt to the new
        instances (same remainder rule, equal counts). Batches an old instance had
        dealt but that a stage after the dealer still held (a shuffle buffer, a
        parallel map's chunk) come out of that instance's drain: its checkpoint
        restored, its dealer stopped where it stood (``stop_at``).
        """
        dealer = self.dealers[0]
        start: State | None = None
        emitted: list[int] = []
        carried: list[Any] = []
        drains: list[dict[str, Any]] = []
        buffering = self._buffering_after_dealer()
        for k, main in enumerate(mains):
            if main["state"] is None:
                raise StateError(f"merge_states: instance {k} had not started.")
            self.replay(main)
            self._record_own()
            ds = dealer.get_state()
            if buffering:
                own = main["override"] or {"start": None, "generations": []}
                limit = [int(ds["window"]), int(ds["emitted"])]
                drains.append({**main, "override": {**own, "limit": limit}})
            here = {**ds, "emitted": 0}
            # Seeds may differ where nothing is drawn from them (no shuffle, seed=None
            # on each rank): the step is what must agree.
            if start is not None and _unseeded(here) != _unseeded(start):
                raise StateError(
                    f"budget_bucket: instance {k} was checkpointed in another read-ahead "
                    "window than instance 0; checkpoint every rank at the same step."
                )
            start = here
            emitted.append(ds["emitted"])
            old = main["override"]
            if old is not None and old["start"]["window"] == ds["window"]:
                if k and old["generations"] != carried:
                    raise StateError(
                        "merge_states: the instances come from different elastic restores."
                    )
                carried = old["generations"]
        assert start is not None
        t, j = self.home
        sources: list[dict[str, Any]] = [
            {"generations": [], "limit": None, "seed": None} for _ in self.sources
        ]
        override = {"start": start, "generations": [*carried, [len(mains), emitted]]}
        main_task = {
            "pipeline": "",
            "state": None,
            "sharding": [t, j],
            "sources": sources,
            "override": override,
        }
        return drains, main_task

    def _buffering_after_dealer(self) -> bool:
        """Whether a stage between the root and the dealer may hold dealt batches."""
        below = {id(n) for n in walk(self.dealers[0])}
        return any(_role_of(n) is ElasticRole.BUFFERING for n in self.nodes if id(n) not in below)

    @classmethod
    def from_merged(
        cls, root: Stream[Any], merged: list[State], allow_changes: bool = False
    ) -> ElasticRun:
        """Plan this instance's tasks from the checkpoints of all old instances."""
        run = cls(root, [])
        run.allow_changes = allow_changes
        run.epoch = _common_epoch(merged)
        run.nodes_of = {st.get("pipeline"): st.get("nodes") for st in merged}
        ns = len(run.sources)
        drains, mains = _old_tasks(merged, ns, run.keys)
        if run.shared:
            new_drains, main_task = run.plan_shared(mains)
            run._merge_own(merged)
            t, j = run.home
            run.tasks = [*[*drains, *new_drains][j::t], main_task]
            run.configure(run.tasks[0])
            return run
        chain = [s["generations"] for s in mains[0]["sources"]]
        if any([s["generations"] for s in m["sources"]] != chain for m in mains):
            refuse_chains(mains)
        frontiers: list[list[list[int]]] = [run.frontier(m) for m in mains]
        main_drains, seeds = run._drain_mains(mains, frontiers)
        drains.extend(main_drains)
        if seeds is None:
            seeds = [spec["seed"] for spec in mains[0]["sources"]]
        t, j = run.home
        main: dict[str, Any] = {
            "pipeline": "",
            "state": None,
            "sharding": [t, j],
            "sources": _next_generation(chain, frontiers, seeds, ns),
            "override": None,
        }
        steps = [
            max((x for x in col if x is not None), default=None)
            for col in zip(*run.steps, strict=True)
        ]
        if any(x is not None for x in steps):  # schedules continue where the old ones were
            main[STEPS_KEY] = steps
        run.tasks = [*drains[j::t], main]
        run._merge_own(merged)
        run.configure(run.tasks[0])
        return run

    def _drain_mains(
        self, mains: list[dict[str, Any]], frontiers: list[list[list[int]]]
    ) -> tuple[list[dict[str, Any]], list[int] | None]:
        """Drain tasks finishing each started old main task up to the common frontier.

        Also the sources' order seeds the started mains share (None if none started).
        """
        drains: list[dict[str, Any]] = []
        seeds: list[int] | None = None
        for k, main in enumerate(mains):
            if main["state"] is None:
                continue
            self.configure(main)
            mine = [s.order_seed for s in self.sources]
            if seeds is not None and mine != seeds:
                raise StateError(
                    f"merge_states: instance {k} reads the rows in another order than "
                    "instance 0 (different source seeds); give every rank the same seed."
                )
            seeds = mine
            sources = [
                {**spec, "limit": f, "seed": seed}
                for spec, f, seed in zip(main["sources"], frontiers[k], mine, strict=True)
            ]
            drains.append({**main, "sources": sources})
        return drains, seeds

    @classmethod
    def from_instance(
        cls, root: Stream[Any], state: State, allow_changes: bool = False
    ) -> ElasticRun:
        """Resume an elastic run from the checkpoint of the same instance."""
        run = cls(root, [])
        tasks = [rekey(_check_task(x), run.keys) for x in state[ELASTIC_KEY]["tasks"]]
        tasks[0] = {**tasks[0], "state": state["state"], "pipeline": state["pipeline"]}
        run.tasks = tasks
        run.allow_changes = allow_changes
        run.nodes_of = {state["pipeline"]: state.get("nodes")}
        run.epoch = int(state.get("epoch", 0))
        run.home = tuple(tasks[-1]["sharding"])
        if run.merging:
            run.own = own_entries(run.merging, state[ELASTIC_KEY].get("own"))
        run.configure(tasks[0])
        return run

    # ------------------------------------------------------------------ running
    def next(self) -> Any:
        while True:
            try:
                return self.root.next()
            except StopIteration:
                if len(self.tasks) == 1:
                    raise
                if self.own is not None:  # carried into the next task
                    self.own = [n.elastic_state() for n in self.merging]
                self.tasks.pop(0)
                self.configure(self.tasks[0])

    def state_dict(self) -> State:
        state = self.root.get_state()
        tasks = copy.deepcopy(self.tasks)
        if len(tasks) == 1 and not self.shared:  # a mix may have begun a full pass since
            for spec, src in zip(tasks[0]["sources"], self.sources, strict=True):
                spec["generations"] = src.dealt_generations()
        tasks[0]["state"] = None
        tasks[0]["pipeline"] = ""
        if self.keys is not None:  # sources matched by key on the next resume
            for task in tasks:
                for spec, key in zip(task["sources"], self.keys, strict=True):
                    spec["key"] = key
        elastic: dict[str, Any] = {"tasks": tasks}
        if self.own is not None and self.merging:
            elastic["own"] = [n.elastic_state() for n in self.merging]
        fingerprint, nodes = self.pipeline.identity()
        out = {
            "format": FORMAT_VERSION,
            "pipeline": fingerprint,
            "state": state,
            "nodes": nodes,
            ELASTIC_KEY: elastic,
        }
        if self.epoch:
            out["epoch"] = self.epoch
        return out

    def leave(self) -> None:
        """Back to the home sharding without elastic dealing (then a plain reset)."""
        for dealer in self.dealers:
            dealer.reshard(*self.home)
        for src in self.sources:
            src.deal([], None, None)
        if self.shared:
            self.dealers[0].deal_remaining(None)
        for node in self.merging:
            node.load_elastic_state(None)
        self.set_mode(PLAIN)
