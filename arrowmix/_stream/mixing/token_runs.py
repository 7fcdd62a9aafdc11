"""Runs of choices of the token rules over read-ahead token counts (the positions path).

Both functions choose exactly as the per-item rules of
:mod:`~arrowmix._stream.mixing.by_tokens` (``most_behind`` + ``charge``, ``draw``) would,
item after item; they only get there with less work per choice.

Deterministic rule: the deficits are kept as ``e_j + a_j * t`` (``t``: tokens given in
this call), so a choice changes one number instead of every input's.

Random rule: see :func:`run_draws`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["run_draws", "run_most_behind"]


def run_most_behind(
    cur: list[int],
    ints: Sequence[int],
    rank: Sequence[int],
    mask: Sequence[bool],
    cums: list[list[int]],
    used: list[int],
    n: int,
) -> list[int]:
    """Up to ``n`` choices of the deterministic rule over read-ahead token counts.

    ``cums[j]``: input ``j``'s cumulative token counts read ahead (``cums[j][0] == 0``;
    its next item has ``cums[j][used[j] + 1] - cums[j][used[j]]`` tokens). Stops early
    when the input chosen has nothing left. ``cur`` and ``used`` are updated in place.
    """
    order = [i for i in rank if mask[i]]
    total = sum(ints[j] for j in order)
    first, rest = order[0], order[1:]
    if not rest:  # one input: chosen every time, its deficit unchanged (ints[first] == total)
        k = min(n, len(cums[first]) - 1 - used[first])
        used[first] += k
        return [first] * k
    e = list(cur)  # the deficit of j is e[j] + ints[j] * t (t: tokens given so far)
    t = 0
    out: list[int] = []
    append = out.append
    for _ in range(n):
        best, bv = first, e[first] + ints[first] * t
        for i in rest:
            v = e[i] + ints[i] * t
            if v > bv:
                best, bv = i, v
        c = cums[best]
        u = used[best]
        if u == len(c) - 1:
            break
        given = c[u + 1] - c[u]
        used[best] = u + 1
        e[best] -= total * given
        t += given
        append(best)
    for j in order:
        cur[j] = e[j] + ints[j] * t
    return out


def run_draws(
    uniforms: Sequence[float],
    weights: Sequence[float],
    mask: Sequence[bool],
    tokens: list[int],
    counts: list[int],
    sizes: list[list[int]],
    used: list[int],
    arrays: list[np.ndarray] | None = None,
) -> list[int]:
    """Choices of the random rule for these draws over read-ahead token counts.

    Stops early when the input chosen has no item left; ``tokens``, ``counts`` and
    ``used`` are updated in place. ``arrays`` (the same token counts as int64 arrays):
    choose in blocks (:func:`_verified`), going item by item where a block is cut short.
    """
    on = [j for j in range(len(mask)) if mask[j] and weights[j] > 0]
    if len(on) == 1:  # one input: every draw chooses it
        got = [on[0]] * min(len(uniforms), len(sizes[on[0]]) - used[on[0]])
        _take(got, tokens, counts, sizes, used)
        return got
    out: list[int] = []
    at, n = 0, len(uniforms)
    # the block path's arithmetic is exact while token totals fit a float64's mantissa
    fast = arrays is not None and sum(tokens) < _EXACT
    while at < n:
        if fast and n - at >= _MIN_BLOCK and all(counts[j] for j in on):
            assert arrays is not None
            got = _verified(uniforms[at : at + _BLOCK], weights, on, tokens, counts, arrays, used)
            _take(got, tokens, counts, sizes, used)
            out.extend(got)
            at += len(got)
            if len(got) >= _MIN_BLOCK:
                continue
        stretch = uniforms[at : at + _STRETCH]
        got = _one_by_one(stretch, weights, on, tokens, counts, sizes, used)
        out.extend(got)
        at += len(got)
        if len(got) < len(stretch):  # the input chosen has no item left
            break
    return out


_EXACT = 2**52  # token totals below this convert to float64 exactly (as Python's int / int)
_BLOCK = 1024  # draws chosen in one block
_MIN_BLOCK = 32  # fewer draws than this go item by item
_STRETCH = 64  # draws chosen item by item after a block cut short


def _take(
    got: list[int], tokens: list[int], counts: list[int], sizes: list[list[int]], used: list[int]
) -> None:
    """Count the items of ``got`` (choices verified in a block) as taken."""
    if not got:
        return
    per = np.bincount(np.asarray(got, dtype=np.int64), minlength=len(used)).tolist()
    for j, c in enumerate(per):
        if c:
            tokens[j] += sum(sizes[j][used[j] : used[j] + c])
            counts[j] += c
            used[j] += c


def _verified(
    us: Sequence[float],
    weights: Sequence[float],
    on: list[int],
    tokens: list[int],
    counts: list[int],
    arrays: list[np.ndarray],
    used: list[int],
) -> list[int]:
    """The longest prefix of the choices for ``us`` found exactly in a block.

    A guess (the choices under the current weights by mean length, held fixed) is
    checked by computing, for every step, the counters the guess leads to and the
    choice the rule makes from them, with the same float operations, in the same order,
    as :func:`_one_by_one`. Up to the first step where they differ the guess is exact,
    and the rule's choice there is too (its counters are the true ones); the guess is
    then the rule's choices and the check runs again, a few times at most. Steps past the
    read-ahead of an input are left to the caller.
    """
    u = np.asarray(us, dtype=np.float64)
    guess = _choices(u, weights, on, tokens, counts)
    done: list[int] = []
    for _ in range(_ROUNDS):
        ch = guess
        for j in on:  # cut where an input's read-ahead ends
            left = len(arrays[j]) - used[j]
            where = np.flatnonzero(ch == j)
            if len(where) > left:
                ch = ch[: where[left]]
        if not len(ch):
            return done
        rule = _rule_choices(u[: len(ch)], ch, weights, on, (tokens, counts, arrays, used))
        if rule is None:  # token totals too large for exact float arithmetic
            return done
        bad = np.flatnonzero(rule != ch)
        if not len(bad):
            whole: list[int] = ch.tolist()
            return whole
        p = int(bad[0])
        done = ch[:p].tolist()
        j = int(rule[p])  # the rule's choice at p (from the true counters): keep it
        if int((ch[:p] == j).sum()) == len(arrays[j]) - used[j]:
            return done  # nothing left of it: the caller stops there
        done.append(j)
        guess = np.concatenate([ch[:p], rule[p:]])
    return done


_ROUNDS = 4


def _choices(
    u: np.ndarray,
    weights: Sequence[float],
    on: list[int],
    tokens: list[int],
    counts: list[int],
) -> np.ndarray:
    """The choices for draws ``u`` under the weights of the current counters, held fixed."""
    seen, total_tokens = sum(counts), sum(tokens)
    acc = 0.0
    edges = []
    for j in on:
        c = counts[j]
        mean = tokens[j] / c if c else (total_tokens / seen if seen else 1.0)
        acc += weights[j] / (mean if mean > 1e-3 else 1e-3)
        edges.append(acc)
    return _pick(u * acc, on, edges)


def _pick(x: np.ndarray, on: list[int], edges: list[Any]) -> np.ndarray:
    """The first input whose running total of weights passes ``x`` (else the last)."""
    pick = np.full(len(x), on[-1], dtype=np.int64)
    for j, edge in zip(reversed(on), reversed(edges), strict=True):
        pick[edge > x] = j
    return pick


Counters = tuple[list[int], list[int], list[np.ndarray], list[int]]


def _rule_choices(
    u: np.ndarray, ch: np.ndarray, weights: Sequence[float], on: list[int], now: Counters
) -> np.ndarray | None:
    """The rule's choice at every step, from the counters the choices ``ch`` lead to.

    ``now``: the tokens, counts, read-ahead token counts and items used of each input.

    Every input has been read (its mean length is its own). An input's weight by mean
    length changes only when it is chosen: the values after each of its items, looked
    up by how many it has given before each step. ``None`` when the token totals reach
    :data:`_EXACT`.
    """
    tokens, counts, arrays, used = now
    acc: np.ndarray | None = None
    edges = []
    for j in on:
        hit = ch == j
        before = np.cumsum(hit)
        m = int(before[-1])
        before -= hit
        t = np.empty(m + 1, dtype=np.int64)
        t[0] = tokens[j]
        np.cumsum(arrays[j][used[j] : used[j] + m], out=t[1:])
        t[1:] += tokens[j]
        if t[-1] >= _EXACT:
            return None
        mean = t / np.arange(counts[j], counts[j] + m + 1, dtype=np.int64)
        dw = weights[j] / np.where(mean > 1e-3, mean, 1e-3)
        step = dw[before]
        acc = step if acc is None else acc + step
        edges.append(acc)
    assert acc is not None
    return _pick(u * acc, on, edges)


def _one_by_one(
    uniforms: Sequence[float],
    weights: Sequence[float],
    on: list[int],
    tokens: list[int],
    counts: list[int],
    sizes: list[list[int]],
    used: list[int],
) -> list[int]:
    """The random rule item by item (stops when the input chosen has no item left)."""
    out: list[int] = []
    last = on[-1]
    seen, total_tokens = sum(counts), sum(tokens)
    dw = [0.0] * (max(on) + 1)  # weight / mean length, as draw() computes it

    def reweigh(j: int) -> None:
        c = counts[j]
        mean = tokens[j] / c if c else (total_tokens / seen if seen else 1.0)
        dw[j] = weights[j] / (mean if mean > 1e-3 else 1e-3)

    unseen = True
    for u in uniforms:
        if unseen:  # an input not read yet has the overall mean, which moves
            for j in on:
                reweigh(j)
            unseen = any(counts[j] == 0 for j in on)
        total = 0.0
        for j in on:
            total += dw[j]
        x = u * total
        acc = 0.0
        i = last
        for j in on:
            acc += dw[j]
            if acc > x:
                i = j
                break
        k = used[i]
        if k == len(sizes[i]):
            break
        used[i] = k + 1
        size = sizes[i][k]
        tokens[i] += size
        counts[i] += 1
        seen += 1
        total_tokens += size
        reweigh(i)
        out.append(i)
    return out
