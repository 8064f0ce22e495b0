# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1: *compound moves* — two reordered packets whose moves' ranges of slots
overlap, so that their changes of the CAH do not add (``docs/SPEC.md`` §8.5).

Estimators layer, used by :mod:`host_sw.estimators.opa.search` beside the single moves of
:mod:`host_sw.estimators.opa.moves`. A compound is two received packets ``e1 < e2`` placed
at slots ``t1 ≠ t2`` within ``d`` of their arrival slots, the others in arrival order
around them; its change ``Δ`` of the CAH comes from the general known part
(:func:`host_sw.estimators.opa.terms.known_part`), below a lost position (shift 0) or from
it on (shift 1, :class:`_Later`). They serve three levels: two reordered packets (``Δ``
equal to the residual), three (a compound and a single move met in the middle), and a
loss with two reordered packets — the loss outside the compound's range
(:func:`host_sw.estimators.opa.moves.loss_compounds`) or inside it (:func:`straddling`,
each lost position tested by the known part).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from host_sw.contracts.opa.words import OPA_PRIME
from host_sw.estimators.opa.levels import CHUNK
from host_sw.estimators.opa.terms import known_part

__all__ = ["pair_placements", "pair_count", "compound_pairs", "straddling"]


def pair_placements(n: int, d: int, crossed: bool = False):
    """Pairs of received packets ``e1 < e2`` placed at slots ``t1 ≠ t2`` (as positions
    ``t + 1``) each within ``d`` of its own arrival slot — or, ``crossed``, of either's
    (as the two-reordering level's candidates, whose set-aside packets match any unknown
    position) — whose moves' ranges of slots overlap: ``(aside (C, 2), x (C, 2))`` in
    chunks of about :data:`CHUNK`."""
    off = np.arange(-d, d + 1)
    gap, o1, o2 = (v.reshape(-1) for v in np.meshgrid(np.arange(1, 2 * d + 1), off, off,
                                                        indexing="ij"))
    step = max(1, CHUNK // len(gap))
    for start in range(0, n, step):
        e1 = np.repeat(np.arange(start, min(n, start + step)), len(gap))
        e2 = e1 + np.tile(gap, len(e1) // len(gap))
        near1 = e1 + np.tile(o1, len(e1) // len(gap))
        near2 = e2 + np.tile(o2, len(e1) // len(gap))
        valid = ((e2 < n) & (near1 >= 0) & (near1 < n) & (near2 >= 0) & (near2 < n)
                 & (near1 != near2))
        for t1, t2 in ((near1, near2), (near2, near1))[:1 + crossed]:
            # e1 < e2: the ranges overlap when e1's reaches e2's lowest slot
            ok = valid & (np.maximum(e1, t1) >= np.minimum(e2, t2))
            yield np.stack([e1[ok], e2[ok]], axis=1), np.stack([t1[ok], t2[ok]], axis=1) + 1


class _Later:
    """A group's terms one position later (the slots from a lost position on)."""

    def __init__(self, terms):
        self.base, self.packets = terms, terms.packets
        self.rows, self.seed = terms.rows, terms.seed

    def prefix(self, s: int) -> np.ndarray:
        return self.base.prefix(s + 1)


def _compound_delta(terms, aside: np.ndarray, x: np.ndarray, shift: int) -> np.ndarray:
    """The change of the CAH (C, rows, int64) when ``aside`` are placed at slots
    ``x − 1`` and the others keep their order, every slot at position ``t + 1 + shift``
    (the general known part, :func:`~host_sw.estimators.opa.terms.known_part`)."""
    view = _Later(terms) if shift else terms
    k0 = view.prefix(0)[len(terms.packets)] % OPA_PRIME
    known = known_part(view, aside, np.sort(x, axis=1)).T.astype(np.int64)
    return (known + _placed(terms, aside, x + shift).sum(axis=1) - k0) % OPA_PRIME


def _placed(terms, aside: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The set-aside packets' terms at their positions (C, 2, rows)."""
    span = -(-int(np.abs(x - aside - 1).max(initial=0)) // 8) * 8     # a few sizes cached
    return terms.term_at(aside, x, span)


@lru_cache(maxsize=64)
def pair_count(n: int, d: int, crossed: bool = False) -> int:
    """How many :func:`pair_placements` a group of ``n`` has (counted on up to ``8d``
    packets, scaled: the count per packet is constant away from the ends)."""
    small = min(n, 8 * d + 2)
    count = sum(len(x) for _, x in pair_placements(small, d, crossed))
    return count if small == n else -(-count * n // small)


def compound_pairs(terms, n: int, d: int, shifts=(0,), crossed: bool = False):
    """Pairs of moves whose ranges overlap as compound moves: ``(moves [e1, t1, e2, t2],
    Δ per shift …, lo, hi)`` in chunks (``Δ`` at each of ``shifts``: 0 without a loss
    or below it, 1 from it on)."""
    for aside, x in pair_placements(n, d, crossed):
        if len(x) == 0:
            continue
        t = x - 1
        deltas = [_compound_delta(terms, aside, x, s) for s in shifts]
        moves = np.stack([aside[:, 0], t[:, 0], aside[:, 1], t[:, 1]], axis=1)
        yield (moves, *deltas, np.minimum(aside, t).min(axis=1),
               np.maximum(aside, t).max(axis=1))


def straddling(terms, b, n: int, w: int, d: int) -> tuple[list, int]:
    """One lost position ``l`` inside the range of a compound move (two moves whose
    ranges overlap, :func:`pair_placements`): every such ``(pair, l)`` tested by the
    general known part, the residual annihilated by ``A_l`` on every row. Returns the
    ``(l, (e1, t1), (e2, t2))`` that pass and the candidates tested."""
    found, tested = [], 0
    bb = b.astype(np.int64)
    for aside, x in pair_placements(n, d):
        t = x - 1
        lo, hi = t.min(axis=1), t.max(axis=1)
        lo, hi = np.minimum(lo, aside.min(axis=1)), np.maximum(hi, aside.max(axis=1))
        count = np.maximum(hi - lo, 0)              # l − 1 in lo + 1 … hi
        idx = np.repeat(np.arange(len(t)), count)
        if len(idx) == 0:
            continue
        first = np.cumsum(count) - count
        l = lo[idx] + 2 + np.arange(len(idx)) - first[idx]
        tt = t[idx]
        xl = tt + 1 + (tt >= (l - 1)[:, None])
        lost = np.sort(np.concatenate([xl, l[:, None]], axis=1), axis=1)
        known = known_part(terms, aside[idx], lost).T.astype(np.int64)
        placed = _placed(terms, aside[idx], xl).sum(axis=1)
        r = (bb[None, :] - known - placed) % OPA_PRIME
        ok = ((r[:, 1:] - l[:, None] * r[:, :-1]) % OPA_PRIME == 0).all(axis=1)
        tested += len(idx)
        for i in np.flatnonzero(ok):
            j = idx[i]
            found.append((int(l[i]), (int(aside[j, 0]), int(t[j, 0])),
                          (int(aside[j, 1]), int(t[j, 1]))))
    return found, tested
