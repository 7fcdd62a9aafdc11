"""``train_test_split``: sizes as HF ``datasets`` (and scikit-learn) define them; stratified.

The permutation is HF's: ``np.random.default_rng(seed).permutation(n)``, the test rows first,
so the same seed splits the same rows in both libraries. A stratified split keeps each label's
share in both splits and draws exactly as HF does (scikit-learn's ``StratifiedShuffleSplit``
order): per-label train counts, then test counts of the rest, one permutation per label, then
each split permuted, all from the one seeded generator.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from arrowmix._dataset.indices import IndexMap
from arrowmix._dataset.state import state_of, view_range
from arrowmix._dataset.views.view_options import ViewOptions, view_options

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "SplitResult",
    "split_options",
    "split_sizes",
    "stratified_indices",
    "train_test_split",
]

_SHARED_OPTIONS = ("keep_in_memory", "load_from_cache_file", "writer_batch_size")


class SplitResult(NamedTuple):
    """``(train, test)``; unpack it or index it by ``"train"``/``"test"`` as in HF datasets."""

    train: Dataset
    test: Dataset

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key not in self._fields:
                raise KeyError(f"Unknown split {key!r}; available splits: ['train', 'test'].")
            return getattr(self, key)
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The split names."""
        return list(self._fields)


def split_options(hf_options: dict[str, Any]) -> tuple[ViewOptions, ViewOptions]:
    """The train and test :class:`ViewOptions` from HF's ``train_test_split`` arguments.

    Raises:
        TypeError: an argument HF's ``train_test_split`` does not have.
    """
    opts = dict(hf_options)
    shared = {k: opts.pop(k) for k in _SHARED_OPTIONS if k in opts}
    per_split = []
    for split in ("train", "test"):
        per_split.append(
            view_options(
                **shared,
                indices_cache_file_name=opts.pop(f"{split}_indices_cache_file_name", None),
                new_fingerprint=opts.pop(f"{split}_new_fingerprint", None),
            )
        )
    if opts:
        raise TypeError(f"train_test_split() got unexpected keyword argument(s) {sorted(opts)}.")
    return per_split[0], per_split[1]


def _check_size(name: str, size: float | int | None, n: int) -> None:
    if size is None:
        return
    if isinstance(size, float) and 0.0 < size < 1.0:
        return
    if isinstance(size, int) and not isinstance(size, bool) and 0 < size < n:
        return
    if isinstance(size, bool) or not isinstance(size, (int, float)):
        raise TypeError(
            f"`{name}` must be a float in (0, 1) or an int row count, got "
            f"{type(size).__name__} {size!r:.80}."
        )
    raise ValueError(
        f"`{name}`={size!r} must be a float in (0, 1) or an int in [1, {n - 1}] for a dataset "
        f"of {n} rows."
    )


def split_sizes(
    n: int, test_size: float | int | None, train_size: float | int | None
) -> tuple[int, int]:
    """``(n_train, n_test)`` by HF's rules: test rounds up, train down, ``None`` is the rest."""
    if test_size is None and train_size is None:
        test_size = 0.25
    _check_size("test_size", test_size, n)
    _check_size("train_size", train_size, n)
    n_test = math.ceil(test_size * n) if isinstance(test_size, float) else test_size
    n_train = math.floor(train_size * n) if isinstance(train_size, float) else train_size
    if n_train is None:
        n_train = n - n_test  # type: ignore[operator]  # n_test is set when n_train is not
    if n_test is None:
        n_test = n - n_train
    if n_train + n_test > n:
        raise ValueError(
            f"`train_size`={train_size!r} and `test_size`={test_size!r} ask for "
            f"{n_train} + {n_test} rows, more than the dataset's {n}."
        )
    if n_train == 0 or n_test == 0:
        raise ValueError(
            f"`test_size`={test_size!r}, `train_size`={train_size!r} give {n_train} train and "
            f"{n_test} test rows out of {n}: both splits must be non-empty."
        )
    return int(n_train), int(n_test)


def _rounded_shares(counts: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integer shares of ``total`` in proportion to ``counts`` that sum to ``total``.

    Each class gets the floor of its exact share; the rows still missing go to the classes
    with the largest remainders, ties broken at random (seeded).
    """
    exact = counts / counts.sum() * total
    shares = np.floor(exact).astype(np.int64)
    missing = int(total - shares.sum())
    remainder = exact - shares
    for value in np.unique(remainder)[::-1]:
        if missing <= 0:
            break
        tied = np.flatnonzero(remainder == value)
        chosen = rng.choice(tied, size=min(len(tied), missing), replace=False)
        shares[chosen] += 1
        missing -= len(chosen)
    return np.asarray(np.minimum(shares, counts), dtype=np.int64)


def stratified_indices(
    labels: np.ndarray, n_train: int, n_test: int, rng: np.random.Generator, column: str
) -> tuple[np.ndarray, np.ndarray]:
    """Train and test positions keeping each label's share; raises if a label is too rare."""
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse)
    if counts.min() < 2:
        rare = classes[int(np.argmin(counts))]
        rare = rare.item() if isinstance(rare, np.generic) else rare
        raise ValueError(
            f"Cannot stratify by {column!r}: label {rare!r} has only 1 row; every label needs "
            "at least 2 (one for each split)."
        )
    if n_train < len(classes) or n_test < len(classes):
        raise ValueError(
            f"Cannot stratify by {column!r}: {len(classes)} labels need at least "
            f"{len(classes)} rows in each split, got {n_train} train and {n_test} test rows."
        )
    # HF's draw order (its ``stratified_shuffle_split_generate_indices``): train shares, then
    # test shares of what is left, then one permutation per label, then each split permuted.
    train_counts = _rounded_shares(counts, n_train, rng)
    test_counts = _rounded_shares(counts - train_counts, n_test, rng)
    by_class = np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])
    train: list[int] = []
    test: list[int] = []
    for rows, k_train, k_test in zip(by_class, train_counts, test_counts, strict=True):
        perm = rows.take(rng.permutation(len(rows)))
        train.extend(perm[:k_train].tolist())
        test.extend(perm[k_train : k_train + k_test].tolist())
    return (
        np.asarray(rng.permutation(np.asarray(train, dtype=np.int64)), dtype=np.int64),
        np.asarray(rng.permutation(np.asarray(test, dtype=np.int64)), dtype=np.int64),
    )


def train_test_split(
    ds: Dataset,
    test_size: float | int | None,
    train_size: float | int | None,
    seed: int | None,
    shuffle: bool,
    stratify_by_column: str | None,
    options: tuple[ViewOptions, ViewOptions] | None = None,
    generator: np.random.Generator | None = None,
) -> SplitResult:
    """HF's split; ``generator`` (HF's) draws the rows instead of ``seed``, advancing it."""
    from arrowmix._dataset.views.view_ops import check_seed, drawn_permutation, with_selection

    n = len(ds)
    n_train, n_test = split_sizes(n, test_size, train_size)
    if stratify_by_column is not None:
        if stratify_by_column not in ds.column_names:  # a ValueError, as in HF
            raise ValueError(
                f"Unknown `stratify_by_column` {stratify_by_column!r}; available columns: "
                f"{ds.column_names}."
            )
        if not shuffle:
            raise ValueError("A stratified split (`stratify_by_column`) needs `shuffle=True`.")
    if shuffle:
        if generator is not None:
            drawn_permutation(generator, 0)  # checks its type as HF does
            rng, seed = generator, None
        else:
            seed = check_seed(seed)
            rng = np.random.default_rng(seed)
        if stratify_by_column is not None:
            labels = np.asarray(
                view_range(state_of(ds), 0, n, [stratify_by_column]).column(0).to_numpy()
            )
            train_ix, test_ix = stratified_indices(labels, n_train, n_test, rng, stratify_by_column)
        else:
            perm = rng.permutation(n)
            test_ix, train_ix = perm[:n_test], perm[n_test : n_test + n_train]
        train_sel, test_sel = IndexMap(array=train_ix), IndexMap(array=test_ix)
    else:
        train_sel = IndexMap.from_range(0, n_train)
        test_sel = IndexMap.from_range(n_train, n_train + n_test)
    kw: dict[str, Any] = {"test_size": test_size, "seed": seed, "shuffle": shuffle}
    if train_size is not None:
        kw["train_size"] = train_size
    if shuffle and generator is not None:  # the rows drawn are the key, not a seed
        kw["drawn"] = (train_sel.array, test_sel.array)
    if stratify_by_column is not None:
        kw["stratify_by_column"] = stratify_by_column
        # HF's draw order: an indices file stored by the earlier draw is never reused.
        kw["stratified_draw"] = "hf"
    train_opts, test_opts = options or (None, None)
    train = with_selection(ds, train_sel, "train_test_split", {**kw, "split": "train"}, train_opts)
    test = with_selection(ds, test_sel, "train_test_split", {**kw, "split": "test"}, test_opts)
    return SplitResult(train, test)
