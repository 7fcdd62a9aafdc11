"""``interleave_datasets``: HF ``datasets``' interleaving of map-style datasets, in HF's order.

The result is an index view over the datasets concatenated: no rows are copied. For the same
``seed`` and ``probabilities`` the rows come in the order HF 5.2 gives:

- no ``probabilities``: round robin, one row of each dataset in turn, until the first runs out
  (``"first_exhausted"``), cycling the shorter ones until the longest is done
  (``"all_exhausted"``), or skipping the finished ones (``"all_exhausted_without_replacement"``);
- with ``probabilities``: a source drawn at random for each row (numpy's ``default_rng(seed)``,
  ``choice`` in blocks of 1,000, as HF draws), each source read in order, until a source has
  given all its rows (``"first_exhausted"``, stopping after that row), every source has
  (``"all_exhausted"``, a finished source starting over), or every source has without any
  starting over (``"all_exhausted_without_replacement"``: a finished source's draws give no row).

Iterable datasets (:class:`~arrowmix.IterableDataset`, all of the same kind, as HF requires)
interleave in the order HF gives *iterable* datasets, which differs from the map-style order:
HF reads each source one row ahead and counts a source as exhausted right after its last row,
so round robin with ``"all_exhausted"`` stops after the longest source's last row
(:mod:`arrowmix._hf.interleave_stream`). The result resumes exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from arrowmix._hf.iterable import IterableDataset

__all__ = ["interleave_datasets"]

STRATEGIES = ("first_exhausted", "all_exhausted", "all_exhausted_without_replacement")
#: Sources drawn per ``choice`` call (HF draws in blocks of this size; the order depends on it).
_BLOCK = 1000


def interleave_datasets(
    datasets: Sequence[Any],
    probabilities: Sequence[float] | None = None,
    seed: int | None = None,
    info: Any = None,
    split: str | None = None,
    stopping_strategy: str = "first_exhausted",
    **select_kwargs: Any,
) -> Any:
    """Interleave datasets in HF ``datasets``' order: map-style into one index view.

    Iterable datasets (all of them) give an :class:`~arrowmix.IterableDataset` in the order HF
    gives iterable datasets (see the module docs).

    Args:
        datasets: Datasets with the same columns.
        probabilities: Chance of each dataset for each row; ``None`` for round robin.
        seed: Seed of the draws (``numpy.random.default_rng``).
        info: Accepted for HF's signature; arrowmix keeps the first dataset's info.
        split: The result's split name.
        stopping_strategy: ``"first_exhausted"``, ``"all_exhausted"`` or
            ``"all_exhausted_without_replacement"`` (see the module docs).
        **select_kwargs: Passed to :meth:`~arrowmix.Dataset.select` (HF's ``**kwargs``).

    Example:
        >>> import arrowmix as am
        >>> a = am.Dataset.from_dict({"x": [0, 1, 2]})
        >>> b = am.Dataset.from_dict({"x": [10, 11]})
        >>> am.interleave_datasets([a, b])["x"]
        [0, 10, 1, 11]
        >>> am.interleave_datasets([a, b], stopping_strategy="all_exhausted")["x"]
        [0, 10, 1, 11, 2, 10]
    """
    from arrowmix._dataset.state import derive, state_of
    from arrowmix._dataset.views.concatenate import concatenate_datasets

    if not datasets:
        raise ValueError("interleave_datasets needs at least one dataset.")
    if stopping_strategy not in STRATEGIES:
        raise ValueError(
            f"stopping_strategy must be one of {list(STRATEGIES)}, got {stopping_strategy!r}."
        )
    if _same_kind(datasets):
        return _interleave_iterables(datasets, probabilities, seed, split, stopping_strategy)
    lengths = np.array([len(d) for d in datasets], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    if probabilities is None:
        order = _round_robin(lengths, stopping_strategy)
    else:
        if len(probabilities) != len(datasets):
            raise ValueError(
                f"probabilities has {len(probabilities)} values for {len(datasets)} datasets."
            )
        order = _drawn(lengths, probabilities, seed, stopping_strategy)
    sources, ranks = order
    indices = offsets[sources] + ranks
    out = concatenate_datasets(list(datasets)).select(indices, **select_kwargs)
    if split is not None:
        out = type(out)(derive(state_of(out), split=str(split)))
    return out


def _round_robin(lengths: np.ndarray, strategy: str) -> tuple[np.ndarray, np.ndarray]:
    """``(source, row in source)`` of each output row, without probabilities."""
    n = len(lengths)
    if strategy == "first_exhausted":
        rounds = int(lengths.min())
        return np.tile(np.arange(n), rounds), np.repeat(np.arange(rounds), n)
    if strategy == "all_exhausted":
        rounds = int(lengths.max())
        ranks = np.repeat(np.arange(rounds), n)
        sources = np.tile(np.arange(n), rounds)
        return sources, ranks % np.maximum(lengths[sources], 1)
    # Without replacement: round r visits the sources that still have a row r.
    rounds = int(lengths.max())
    sources = np.tile(np.arange(n), rounds)
    ranks = np.repeat(np.arange(rounds), n)
    keep = ranks < lengths[sources]
    return sources[keep], ranks[keep]


def _drawn(
    lengths: np.ndarray, probabilities: Sequence[float], seed: int | None, strategy: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(source, row in source)`` of each output row, sources drawn by ``probabilities``."""
    n = len(lengths)
    p = np.asarray(probabilities, dtype=np.float64)
    live = p > 0
    empty = np.flatnonzero((lengths == 0) & live).tolist()
    if empty:
        raise ValueError(
            f"interleave_datasets: datasets {empty} are empty but have a probability above 0, "
            "so they can never be read to their end; give them probability 0 or leave them out."
        )
    if strategy != "first_exhausted" and not live.all():
        never = np.flatnonzero(~live).tolist()
        raise ValueError(
            f"interleave_datasets(stopping_strategy={strategy!r}): datasets {never} have "
            "probability 0, so they are never read to their end; leave them out."
        )
    if not live.any():
        raise ValueError("interleave_datasets: every probability is 0.")
    rng = np.random.default_rng(seed)
    blocks: list[np.ndarray] = []
    seen = np.zeros(n, dtype=np.int64)
    done = seen >= lengths
    while not (done[live].any() if strategy == "first_exhausted" else done[live].all()):
        block = rng.choice(n, size=_BLOCK, p=p)
        blocks.append(block)
        seen += np.bincount(block, minlength=n)
        done = seen >= lengths
    draws = np.concatenate(blocks)
    # Where each source gives its last row (its lengths[s]-th draw).
    last = np.full(n, -1, dtype=np.int64)
    ranks = np.empty(len(draws), dtype=np.int64)
    for s in range(n):
        at = np.flatnonzero(draws == s)
        ranks[at] = np.arange(len(at))
        if live[s] and len(at) >= lengths[s]:
            last[s] = at[lengths[s] - 1]
    ends = last[last >= 0]
    stop = int(ends.min() if strategy == "first_exhausted" else ends.max()) + 1
    sources, ranks = draws[:stop], ranks[:stop]
    if strategy == "all_exhausted_without_replacement":
        keep = ranks < lengths[sources]
        return sources[keep], ranks[keep]
    return sources, ranks % lengths[sources]


def _same_kind(datasets: Sequence[Any]) -> bool:
    """True for iterable datasets, False for map-style ones; a mix raises as in HF."""
    from arrowmix._hf.iterable import IterableDataset

    kinds = [isinstance(d, IterableDataset) for d in datasets]
    for i, kind in enumerate(kinds):
        if kind != kinds[0]:
            raise ValueError(
                f"Unable to interleave a {type(datasets[0]).__name__} (at position 0) with a "
                f"{type(datasets[i]).__name__} (at position {i}). Expected a list of Dataset "
                "objects or a list of IterableDataset objects."
            )
    return kinds[0]


def _interleave_iterables(
    datasets: Sequence[IterableDataset],
    probabilities: Sequence[float] | None,
    seed: int | None,
    split: Any,
    stopping_strategy: str,
) -> IterableDataset:
    from arrowmix._hf.iterable import IterableDataset
    from arrowmix._hf.iterable_cast import make_cast
    from arrowmix._hf.iterable_concat import joined_features
    from arrowmix._hf.iterable_plan import Interleave, Op
    from arrowmix._stream.rng import SeedHolder

    if probabilities is not None and len(probabilities) != len(datasets):
        raise ValueError(
            f"probabilities has {len(probabilities)} values for {len(datasets)} datasets."
        )
    datasets = [d._resolve_features() for d in datasets]  # HF's: features of the first rows
    features = joined_features([d.features for d in datasets])
    first = datasets[0]
    for i, d in enumerate(datasets):
        if d._distributed != first._distributed:  # the same class
            raise ValueError(
                "Datasets should be identically split_by_node before interleaving, but got "
                f"{first._distributed}!={d._distributed} at index 0 and {i}"
            )
    node: Any = Interleave(
        children=tuple(d._node for d in datasets),  # the same class
        probabilities=None if probabilities is None else tuple(float(p) for p in probabilities),
        seeds=(SeedHolder(seed).value,),
        stopping_strategy=stopping_strategy,
    )
    if not node.typed or any(d.features != features for d in datasets):
        node = Op(node, "cast", make_cast, {"features": features})  # a missing column: None
    return IterableDataset(
        node,
        features=features,
        split=split,
        info=first.info,
        distributed=first._distributed,
    )
