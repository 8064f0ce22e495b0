# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1, levels of reordered packets searched by their *moves*: three reordered
packets (no loss), one loss with one or two reordered packets, two losses with two
(``docs/SPEC.md`` §8.5).

Estimators layer, used by :mod:`host_sw.estimators.opa.search` (which turns what is found
here into mappings); the prefix sums of the terms ``x**r · h(P, x)`` per shift are
:class:`host_sw.estimators.opa.terms.Terms`.

Slots. With one lost position ``l`` the received packets, in arrival order, fill the
``n = w − 1`` positions other than ``l``: slot ``t`` (0-based) is position ``t + 1`` below
``l``, ``t + 2`` from it on (without a loss, ``t + 1``; with two, up to ``t + 3``). A *move* ``(e, t)`` puts the
received packet ``e`` at slot ``t ≠ e`` (``|t − e| ≤ d``, the reordering shift bound of
§V-B) and the packets between one slot over; it changes only the slots of its range
``[min(e, t), max(e, t)]``, so its change ``Δ(e, t)`` of the CAH is read from prefix sums
in O(k), and moves whose ranges are disjoint change the CAH by the sum of their ``Δ``.

* three moves (``w = n``): ``Δ1 + Δ2 + Δ3 = B − K0`` on every row (``K0`` the CAH of the
  arrival order) — the pairs of disjoint moves summed on row 0 and looked up in the
  sorted table of single moves, the few hits checked on every row; a pair of moves whose
  ranges overlap is one compound move (its change from the general known part) looked up
  the same way. Three moves whose ranges chain together are not searched here.
* a loss at ``l`` and one move (:func:`loss_one_move`): ``A_l(Δ) = A_l(B − K0_l)``
  (below), every move tested for every ``l``;
* a loss at ``l`` and two moves: the lost hash is unknown, so the residual
  ``B − K0_l − Δ1 − Δ2`` must be a multiple of the node column ``(1, l, l², …)``; the
  operator ``A_l(v)_r = v_{r+1} − l·v_r`` is linear and annihilates that column, so for
  each ``l`` the condition ``A_l(Δ1) + A_l(Δ2) = A_l(B − K0_l)`` (``k − 1`` rows) is a
  two-sum over the moves in ``l``'s slots. A compound move with ``l`` outside its range
  is tested against every ``l`` on row 0 (:func:`loss_compounds`); one whose range holds
  ``l`` is :func:`host_sw.estimators.opa.compound.straddling`'s.
* two losses ``l1 < l2`` and two moves (:func:`two_losses_two_moves`): the same with the
  operator annihilating both lost columns (``k − 2`` rows), a two-sum per pair of lost
  positions; compound moves are not searched.
"""

from __future__ import annotations

import numpy as np

from host_sw.contracts.opa.words import OPA_PRIME, augmented_hash, modmul, node_powers

__all__ = ["MoveTable", "three_moves", "loss_one_move", "loss_two_moves", "loss_compounds",
           "two_losses_two_moves", "move_count"]


def move_count(n: int, d: int) -> int:
    """Moves ``(e, t)`` of ``n`` slots with ``1 ≤ |t − e| ≤ d`` (an upper bound)."""
    return n * 2 * d


class MoveTable:
    """Every move ``(e, t)`` of a group's ``n`` received packets, ``1 ≤ |t − e| ≤ d``, and
    the terms it needs with up to ``losses`` lost positions below a slot: the moved
    packet's term at position ``t + 1 + s`` and the per-packet terms ``x**r h(P_i, x)`` at
    ``x = i + 1 + s``, for the shifts ``s`` a slot and its neighbours can have."""

    def __init__(self, terms, d: int, losses: int = 1):
        n, rows = len(terms.packets), terms.rows
        self.n, self.rows = n, rows
        e = np.repeat(np.arange(n), 2 * d)
        off = np.tile(np.concatenate([np.arange(-d, 0), np.arange(1, d + 1)]), n)
        t = e + off
        ok = (t >= 0) & (t < n)
        self.e, self.t = e[ok], t[ok]
        self.lo, self.hi = np.minimum(self.e, self.t), np.maximum(self.e, self.t)
        placed = []
        for s in range(losses + 1):     # the moved packet's term at position t + 1 + s
            x = np.minimum(self.t + 1 + s, terms.w)
            h = augmented_hash(terms.packets[self.e], x, terms.seed)
            placed.append(modmul(node_powers(x, rows), h[None, :]).T.astype(np.int64))
        self.placed = np.stack(placed)                                   # (S+1, M, rows)
        # per-packet terms at shift s = −1 … losses + 1, row s + 1
        self.term = np.stack([np.diff(terms.prefix(s), axis=0)
                              for s in range(-1, losses + 2)])           # (S+3, n, rows)

    def deltas(self, shift: np.ndarray, idx=slice(None)) -> np.ndarray:
        """``Δ`` (M, rows, int64 mod p) of every move (or of the moves ``idx``) when
        slot ``t`` is position ``t + 1 + shift[t]`` (``shift`` non-decreasing, at most
        the table's ``losses``)."""
        n, term = self.n, self.term
        i = np.arange(n)
        own = term[shift + 1, i]
        up = np.zeros_like(own)            # packet i one slot later, i ≤ n − 2
        up[:-1] = term[shift[1:] + 2, i[:-1]] - own[:-1]
        dn = np.zeros_like(own)            # packet i one slot earlier, i ≥ 1
        dn[1:] = term[shift[:-1], i[1:]] - own[1:]
        cum_up = np.zeros((n + 1, self.rows), np.int64)
        cum_dn = np.zeros((n + 1, self.rows), np.int64)
        np.cumsum(up, axis=0, out=cum_up[1:])
        np.cumsum(dn, axis=0, out=cum_dn[1:])
        e, t = self.e[idx], self.t[idx]
        early = (t < e)[:, None]
        placed = self.placed[shift[t], np.arange(len(self.e))[idx]]
        run = np.where(early, cum_up[e] - cum_up[t], cum_dn[t + 1] - cum_dn[e + 1])
        return (placed - own[e] + run) % OPA_PRIME


class _Index:
    """Equal-value lookup in a set of row-0 keys (values below p): a bitmap of the keys'
    top bits (about 16 per key, at most 2^22) rejects almost every query in one gather
    (a few ns, against a binary search's hundreds), the rest are found by binary search
    in the sorted keys."""

    def __init__(self, keys: np.ndarray):
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.shift = 31 - min(22, max(8, len(keys).bit_length() + 4))
        self.bitmap = np.zeros(1 << (31 - self.shift), dtype=bool)
        self.bitmap[self.keys >> self.shift] = True

    def find(self, targets: np.ndarray):
        """``(query index, key index)`` of every equal pair."""
        q = np.flatnonzero(self.bitmap[targets >> self.shift])
        first = np.searchsorted(self.keys, targets[q], side="left")
        last = np.searchsorted(self.keys, targets[q], side="right")
        for i in np.flatnonzero(last > first):
            for s in range(first[i], last[i]):
                yield int(q[i]), int(self.order[s])


def three_moves(table: MoveTable, resid: np.ndarray, pairs=()) -> list[tuple]:
    """Three moves with pairwise disjoint ranges, or a compound of two overlapping moves
    and one more disjoint from it, whose changes sum to ``resid`` (``B − K0``, int64
    ``(rows,)``) on every row: ``[(e1, t1), (e2, t2), (e3, t3)]`` each.
    ``pairs`` yields ``(moves (C, 4) [e1, t1, e2, t2], Δ (C, rows), lo (C,), hi (C,))`` of
    compound moves. Each triple is found once per order of its ranges."""
    delta = table.deltas(np.zeros(table.n, np.int64))
    index = _Index(delta[:, 0])
    lo, hi = table.lo, table.hi
    found = []
    m = len(delta)
    step = max(1, (1 << 20) // max(m, 1))
    for start in range(0, m, step):          # pairs i, j with hi_i < lo_j, on row 0
        i = np.arange(start, min(m, start + step))
        ii, jj = np.nonzero(hi[i][:, None] < lo[None, :])
        ii = i[ii]
        target = (resid[0] - delta[ii, 0] - delta[jj, 0]) % OPA_PRIME
        for q, c in index.find(target):
            a, b = int(ii[q]), int(jj[q])
            if lo[c] > hi[b] and np.array_equal((delta[a] + delta[b] + delta[c])
                                                % OPA_PRIME, resid):
                found.append(tuple((int(table.e[x]), int(table.t[x])) for x in (a, b, c)))
    for moves, pd, plo, phi in pairs:       # a compound move and a single one
        target = (resid[0] - pd[:, 0]) % OPA_PRIME
        for q, c in index.find(target):
            if (hi[c] < plo[q] or lo[c] > phi[q]) and np.array_equal(
                    (pd[q] + delta[c]) % OPA_PRIME, resid):
                e1, t1, e2, t2 = (int(v) for v in moves[q])
                found.append(((e1, t1), (e2, t2), (int(table.e[c]), int(table.t[c]))))
    return found


def _annihilated(b: np.ndarray, prefix0: np.ndarray, prefix1: np.ndarray,
                 w: int) -> np.ndarray:
    """``A_l(B − K0_l)`` for ``l = 1 … w`` (``(w, rows − 1)`` int64): ``K0_l`` the CAH of
    the arrival order in ``l``'s slots."""
    n = w - 1
    ls = np.arange(1, w + 1)
    k0 = prefix0[ls - 1] + prefix1[n] - prefix1[ls - 1]
    r = (b.astype(np.int64)[None, :] - k0) % OPA_PRIME
    return (r[:, 1:] - ls[:, None] * r[:, :-1]) % OPA_PRIME


def loss_compounds(chunks, b: np.ndarray, prefix0: np.ndarray, prefix1: np.ndarray,
                   w: int) -> list[tuple]:
    """One lost position ``l`` outside a compound move (two moves whose ranges overlap):
    ``(l, (e1, t1), (e2, t2))`` whose change ``Δ`` — ``Δ0`` below the lost position,
    ``Δ1`` from it on — satisfies ``A_l(Δ) = A_l(B − K0_l)`` on every row. ``chunks``
    yields ``(moves (C, 4), Δ0, Δ1, lo, hi)``. Every (compound, ``l``) is tested on row 0
    (about ``C·w`` products), the few that pass on every row."""
    alpha = _annihilated(b, prefix0, prefix1, w)
    ls = np.arange(1, w + 1, dtype=np.int64)
    found = []
    for moves, d0, d1, lo, hi in chunks:
        step = max(1, (1 << 18) // w)
        for s in range(0, len(moves), step):
            sl = slice(s, s + step)
            below = hi[sl, None] < ls[None, :] - 1           # the compound's slots
            above = lo[sl, None] >= ls[None, :] - 1
            z0 = (d0[sl, 1, None] - ls[None, :] * d0[sl, 0, None]) % OPA_PRIME
            z1 = (d1[sl, 1, None] - ls[None, :] * d1[sl, 0, None]) % OPA_PRIME
            hit = (below & (z0 == alpha[None, :, 0])) | (above & (z1 == alpha[None, :, 0]))
            for c, li in zip(*np.nonzero(hit)):
                c, l = s + int(c), int(li) + 1
                delta = d0[c] if below[c - s, li] else d1[c]
                if np.array_equal((delta[1:] - l * delta[:-1]) % OPA_PRIME, alpha[li]):
                    e1, t1, e2, t2 = (int(v) for v in moves[c])
                    found.append((l, (e1, t1), (e2, t2)))
    return found


def _deltas_per_loss(table: MoveTable, w: int):
    """``(l, Δ in l's slots)`` for ``l = 1 … w``. A move wholly below the lost position or
    wholly from it on has the same ``Δ`` for every such ``l`` (one table each); only
    those across it are recomputed per ``l``."""
    n = table.n
    flat = [table.deltas(np.full(n, s, np.int64)) for s in (0, 1)]
    for l in range(1, w + 1):
        across = np.flatnonzero((table.lo < l - 1) & (table.hi >= l - 1))
        delta = np.where((table.hi < l - 1)[:, None], flat[0], flat[1])
        delta[across] = table.deltas((np.arange(n) >= l - 1).astype(np.int64), across)
        yield l, delta


def loss_one_move(table: MoveTable, b: np.ndarray, prefix0: np.ndarray,
                  prefix1: np.ndarray, w: int) -> list[tuple]:
    """One lost position ``l`` and one move in ``l``'s slots: ``(l, (e, t))`` whose
    ``A_l(Δ)`` equals ``A_l(B − K0_l)`` on every row (``k − 1`` checks)."""
    alpha = _annihilated(b, prefix0, prefix1, w)
    found = []
    for l, delta in _deltas_per_loss(table, w):
        z0 = (delta[:, 1] - l * delta[:, 0]) % OPA_PRIME
        for i in np.flatnonzero(z0 == alpha[l - 1, 0]):
            if np.array_equal((delta[i, 1:] - l * delta[i, :-1]) % OPA_PRIME, alpha[l - 1]):
                found.append((l, (int(table.e[i]), int(table.t[i]))))
    return found


def loss_two_moves(table: MoveTable, b: np.ndarray, prefix0: np.ndarray,
                   prefix1: np.ndarray, w: int) -> list[tuple]:
    """One lost position ``l`` and two moves with disjoint ranges in ``l``'s slots (module
    docstring): ``(l, (e1, t1), (e2, t2))`` that pass on all ``k − 1`` rows of ``A_l``.
    ``prefix0``/``prefix1``: the prefix sums of the terms at shifts 0 and 1 (the CAH of
    the arrival order below and from ``l``)."""
    lo, hi = table.lo, table.hi
    alpha = _annihilated(b, prefix0, prefix1, w)
    found = []
    for l, delta in _deltas_per_loss(table, w):
        target = alpha[l - 1]                                   # A_l(B − K0_l)
        z = (delta[:, 1:] - l * delta[:, :-1]) % OPA_PRIME      # A_l(Δ), l < 2**21
        for q, c in _Index(z[:, 0]).find((target[0] - z[:, 0]) % OPA_PRIME):
            if hi[q] < lo[c] and np.array_equal((z[q] + z[c]) % OPA_PRIME, target):
                found.append((l, (int(table.e[q]), int(table.t[q])),
                              (int(table.e[c]), int(table.t[c]))))
    return found


def two_losses_two_moves(table: MoveTable, b: np.ndarray, prefixes, w: int) -> list[tuple]:
    """Two lost positions ``l1 < l2`` and two moves with disjoint ranges in their slots:
    ``(l1, l2, (e1, t1), (e2, t2))`` whose changes satisfy ``A(Δ1) + A(Δ2) = A(B − K0)``
    with ``A(v)_r = v_{r+2} − (l1 + l2)·v_{r+1} + l1·l2·v_r`` (annihilating both lost
    columns: ``k − 2`` rows), a two-sum per pair of lost positions. ``prefixes``: the
    prefix sums of the terms at shifts 0, 1, 2. The table must allow two losses."""
    n, (p0, p1, p2) = table.n, prefixes
    lo, hi = table.lo, table.hi
    flat = np.stack([table.deltas(np.full(n, s, np.int64)) for s in (0, 1, 2)])
    i, every = np.arange(n), np.arange(len(lo))
    found = []
    for l1 in range(1, w):
        for l2 in range(l1 + 1, w + 1):
            c1, c2 = l1 - 1, l2 - 2                       # first slots at shift 1 and 2
            k0 = p0[c1] + p1[c2] - p1[c1] + p2[n] - p2[c2]
            s1, s2 = l1 + l2, (l1 * l2) % OPA_PRIME
            r = (b.astype(np.int64) - k0) % OPA_PRIME
            target = (r[2:] - s1 * r[1:-1] + s2 * r[:-2]) % OPA_PRIME
            region = (lo >= c1).astype(np.int64) + (lo >= c2)
            delta = flat[region, every]
            across = np.flatnonzero(((lo < c1) & (hi >= c1)) | ((lo < c2) & (hi >= c2)))
            shift = (i >= c1).astype(np.int64) + (i >= c2)
            delta[across] = table.deltas(shift, across)
            z = (delta[:, 2:] - s1 * delta[:, 1:-1] + s2 * delta[:, :-2]) % OPA_PRIME
            for q, c in _Index(z[:, 0]).find((target[0] - z[:, 0]) % OPA_PRIME):
                if hi[q] < lo[c] and np.array_equal((z[q] + z[c]) % OPA_PRIME, target):
                    found.append((l1, l2, (int(table.e[q]), int(table.t[q])),
                                  (int(table.e[c]), int(table.t[c]))))
    return found
