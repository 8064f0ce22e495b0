# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1, pure-loss levels (no packet set aside): every set ``L`` of ``a``
lost positions of one group tested at once, without solving the mapping equation.

Estimators layer, used by :mod:`host_sw.estimators.opa.search`; the prefix sums of the
terms ``x**r · h(P, x)`` per shift are :class:`host_sw.estimators.opa.terms.Terms`.
With ``l_1 < … < l_a`` lost, received packet of rank ``t`` sits at position
``t + 1 + s`` on the ``s``-th run, so the known part
of the CAH is ``Pre_a[n] + Σ_s D_s[l_s − s]`` with ``D_s = Pre_{s−1} − Pre_s``: the
residual ``R = B − known`` separates into one table per lost position. ``R`` is a
combination of the lost positions' columns ``(1, l, l², …)`` exactly when the
polynomial ``Π (X − l_s) = Σ c_i X^i`` annihilates it on every window of rows:
``Σ_i c_i R_{r+i} = 0`` for ``r = 0 … k − a − 1`` — the mapping and checking equations
of the paper without a division (``docs/SPEC.md`` §8.5).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from host_sw.contracts.opa.words import OPA_PRIME, augmented_hash, fold_mod_p, modmul, node_powers
from host_sw.estimators.opa.levels import combination_chunks

__all__ = ["pure_loss", "placed_two_losses", "two_moves"]

_P = np.uint64(OPA_PRIME)


def _tables(terms, b: np.ndarray, a: int):
    """``base`` (rows,) and ``D_s`` (n+1, rows) for s = 1 … a (uint64, mod p)."""
    n = len(terms.packets)
    pre = [terms.prefix(s) for s in range(a + 1)]
    base = ((b.astype(np.int64) - pre[a][n]) % OPA_PRIME).astype(np.uint64)
    d = [((pre[s - 1] - pre[s]) % OPA_PRIME).astype(np.uint64) for s in range(1, a + 1)]
    return base, d


def _deflate(v: np.ndarray, x: int) -> np.ndarray:
    """Apply the factor ``(X − x)`` along the last axis (rows): ``v_{r+1} − x·v_r``."""
    return fold_mod_p(v[..., 1:] + _P - modmul(np.uint64(x), v[..., :-1]))


def pure_loss(terms, b: np.ndarray, w: int, a: int) -> list[np.ndarray]:
    """The lost-position sets ``L`` of size ``a`` that pass (module docstring).

    For ``a ≥ 2`` the first ``a − 2`` positions (the head) are enumerated; the factors
    ``(X − l)`` of the head are applied to the residual and to the last two positions'
    tables (the annihilator is a product of linear factors), which leaves, per head, a
    two-position grid over ``k − a + 2`` rows (:func:`_two_grid`). (One head per
    numpy pass: for ``a ≥ 4`` the heads are many and small, and every subset in chunks,
    :func:`_pure_loss_chunks`, is faster.)"""
    if a == 1:
        return _one_loss(terms, b, w)
    if a >= 4:
        return _pure_loss_chunks(terms, b, w, a)
    n = len(terms.packets)
    base, d = _tables(terms, b, a)
    x = np.arange(1, w + 1)
    # tables of the last two lost positions (ranks a − 1 and a), by position x (row x − 1)
    last2 = d[a - 2][np.clip(x - (a - 1), 0, n)]
    last3 = d[a - 1][np.clip(x - a, 0, n)]
    found = []
    for head in combinations(range(1, w - 1), a - 2):
        r = base.copy()
        for s, l in enumerate(head):
            r = fold_mod_p(r + _P - d[s][min(l - (s + 1), n)])
        lo = head[-1] if head else 0                # the last two are in lo+1 … w
        e2, e3 = last2[lo:], last3[lo:]
        for l in head:
            r, e2, e3 = _deflate(r, l), _deflate(e2, l), _deflate(e3, l)
        xs = x[lo:].astype(np.uint64)
        found.extend(np.array([*head, int(xs[i]), int(xs[j])])
                     for i, j in _two_grid(r, e2, e3, xs))
    return found


def _two_grid(r: np.ndarray, e2: np.ndarray, e3: np.ndarray, xs: np.ndarray):
    """Pairs ``i < j`` of table rows whose residual ``r − e2[i] − e3[j]`` is a
    combination of the columns of the nodes ``xs[i]``, ``xs[j]``: the recurrence
    ``R_{t+2} − (x_i + x_j)·R_{t+1} + x_i·x_j·R_t = 0`` sieved on ``t = 0`` over the grid,
    the few survivors checked on every ``t``."""
    rows, m = len(r), len(xs)
    out = []
    # t = 0 expanded: F(i) + G(j) + x_j·U(i) + x_i·V(j) = 0 with
    a0, a1 = fold_mod_p(r[0] + _P - e2[:, 0]), fold_mod_p(r[1] + _P - e2[:, 1])
    f = fold_mod_p(r[2] + 2 * _P - e2[:, 2] - modmul(xs, a1))
    g = fold_mod_p(_P - e3[:, 2] + modmul(xs, e3[:, 1]))
    u = fold_mod_p(modmul(xs, a0) + _P - a1)
    v = fold_mod_p(e3[:, 1] + _P - modmul(xs, e3[:, 0]))
    step = max(1, (1 << 18) // max(m, 1))
    for start in range(0, m - 1, step):
        i = np.arange(start, min(m - 1, start + step))
        xi = xs[i][:, None]
        # positions < 2**21 and values < p: each product < 2**52, the sum < 2**54
        total = f[i][:, None] + g[None, :] + xs[None, :] * u[i][:, None] + xi * v[None, :]
        ok = (fold_mod_p(total) == 0) & (xs[None, :] > xi)
        for ii, jj in zip(*np.nonzero(ok)):
            ii = int(i[ii])
            full = [int(v) for v in fold_mod_p(r + 2 * _P - e2[ii] - e3[jj])]
            x1, x2 = int(xs[ii]), int(xs[jj])
            if all((full[t + 2] + x1 * x2 * full[t] - (x1 + x2) * full[t + 1])
                   % OPA_PRIME == 0 for t in range(rows - 2)):
                out.append((ii, int(jj)))
    return out


def _pure_loss_chunks(terms, b: np.ndarray, w: int, a: int) -> list[np.ndarray]:
    """Any ``a``: every ``a``-subset in chunks, the annihilator ``Π (X − l_s)`` of each
    applied to its residual on every window of rows."""
    n, rows = len(terms.packets), terms.rows
    base, d = _tables(terms, b, a)
    found = []
    for lost in combination_chunks(w, a):
        resid = np.broadcast_to(base[:, None], (rows, len(lost))).copy()
        for s in range(a):
            idx = np.minimum(lost[:, s] - (s + 1), n)
            resid = fold_mod_p(resid + _P - d[s][idx].T)
        # coefficients of Π (X − l_s), lowest first, c_a = 1
        coef = [np.ones(len(lost), dtype=np.uint64)]
        for s in range(a):
            x = lost[:, s].astype(np.uint64)
            nxt = [fold_mod_p(_P - modmul(x, coef[0]))]
            for i in range(1, len(coef)):
                nxt.append(fold_mod_p(coef[i - 1] + _P - modmul(x, coef[i])))
            nxt.append(coef[-1])
            coef = nxt
        ok = np.ones(len(lost), dtype=bool)
        for r in range(rows - a):
            acc = resid[r + a].copy()
            for i in range(a):
                acc = fold_mod_p(acc + modmul(coef[i], resid[r + i]))
            ok &= acc == 0
            if not ok.any():
                break
        found.extend(lost[i] for i in np.flatnonzero(ok))
    return found


def _one_loss(terms, b: np.ndarray, w: int) -> list[np.ndarray]:
    """One lost position ``l``: the residual ``R = B − Pre_1[n] − D_1[l − 1]`` must be a
    multiple of ``(1, l, l², …)``, i.e. ``R_{r+1} = l·R_r`` on every row."""
    n, rows = len(terms.packets), terms.rows
    base, (d1,) = _tables(terms, b, 1)
    x = np.arange(1, w + 1, dtype=np.uint64)
    resid = fold_mod_p(base[None, :] + _P - d1[np.minimum(x.astype(np.int64) - 1, n)])
    ok = np.ones(w, dtype=bool)
    for r in range(rows - 1):
        ok &= resid[:, r + 1] == modmul(x, resid[:, r])
    return [np.array([l]) for l in x[ok].astype(np.int64)]


class _Without:
    """The prefix sums of a group's received packets with packet ``e`` taken out (the
    others in arrival order), from the full sequence's: up to ``e`` unchanged, after it
    the next packet's terms one shift lower."""

    def __init__(self, terms, e: int):
        self.full, self.e = terms, e
        self.packets = np.delete(terms.packets, e)
        self._prefix = {}

    def prefix(self, s: int) -> np.ndarray:
        if s not in self._prefix:
            e, n = self.e, len(self.full.packets)
            pre, low = self.full.prefix(s), self.full.prefix(s - 1)
            out = np.empty((n, pre.shape[1]), dtype=np.int64)
            out[:e + 1] = pre[:e + 1]
            out[e + 1:] = pre[e] + low[e + 2:] - low[e + 1]
            self._prefix[s] = out
        return self._prefix[s]


def placed_two_losses(terms, b: np.ndarray, w: int, e: int,
                      homes: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Level ``m = 1``, ``|L| = 3`` with the set-aside packet matched: packet ``e``
    placed at each ``x`` of ``homes`` (its hash there known), two lost positions
    ``l1 < l2`` (not ``x``) anywhere. The in-order packets skip ``{x, l1, l2}``, so each
    position's table depends on its rank among them; ``x``'s own table depends only on
    how many of ``l1, l2`` lie below it, which splits into one term per lost position.
    What is left is the two-position grid on ``k − 2`` windows, for all homes at once
    (:func:`_two_grid_batch`). Returns ``(x, L)`` for each that passes."""
    n, rows = len(terms.packets), terms.rows
    base, d = _tables(_Without(terms, e), b, 3)
    last = n - 1                           # the tables' last index (n − 1 packets)
    pos = np.arange(1, w + 1)
    at = {c: np.clip(pos - c, 0, last) for c in (1, 2, 3)}
    hx = augmented_hash(terms.packets[e], homes, terms.seed)
    vx = modmul(node_powers(homes, rows), hx[None, :]).T            # (H, rows)
    xc = [fold_mod_p(d[c][np.clip(homes - (c + 1), 0, last)] + vx) for c in range(3)]
    below = (pos[None, :] < homes[:, None])[..., None]              # (H, w, 1)
    above = (pos[None, :] > homes[:, None])[..., None]
    e1 = np.where(above, d[1][at[2]][None], d[0][at[1]][None])
    e1 = fold_mod_p(e1 + np.where(below, fold_mod_p(xc[1] + _P - xc[0])[:, None, :], 0))
    e2 = np.where(above, d[2][at[3]][None], d[1][at[2]][None])
    e2 = fold_mod_p(e2 + np.where(below, fold_mod_p(xc[2] + _P - xc[1])[:, None, :], 0))
    keep = pos[None, :] != homes[:, None]                           # one position out
    h = len(homes)
    xs = np.broadcast_to(pos, (h, w))[keep].reshape(h, w - 1).astype(np.uint64)
    e1, e2 = e1[keep].reshape(h, w - 1, rows), e2[keep].reshape(h, w - 1, rows)
    r = fold_mod_p(base[None, :] + _P - xc[0])
    found = []
    step = max(1, (1 << 16) // (w * w))   # grids of about 64 Ki cells stay in cache
    for lo in range(0, h, step):
        sl = slice(lo, lo + step)
        found += [(int(homes[lo + q]), np.sort(np.array([int(homes[lo + q]), int(xs[lo + q, i]),
                                                         int(xs[lo + q, j])])))
                  for q, i, j in _two_grid_batch(r[sl], e1[sl], e2[sl], xs[sl])]
    return found


def _two_grid_batch(r: np.ndarray, e2: np.ndarray, e3: np.ndarray, xs: np.ndarray):
    """:func:`_two_grid` for ``H`` residuals at once: ``r`` (H, rows), ``e2``/``e3``
    (H, m, rows), ``xs`` (H, m) increasing per row; ``(h, i, j)`` that pass."""
    rows = r.shape[1]
    a0 = fold_mod_p(r[:, None, 0] + _P - e2[..., 0])
    a1 = fold_mod_p(r[:, None, 1] + _P - e2[..., 1])
    f = fold_mod_p(r[:, None, 2] + 2 * _P - e2[..., 2] - modmul(xs, a1))
    g = fold_mod_p(_P - e3[..., 2] + modmul(xs, e3[..., 1]))
    u = fold_mod_p(modmul(xs, a0) + _P - a1)
    v = fold_mod_p(e3[..., 1] + _P - modmul(xs, e3[..., 0]))
    total = (f[:, :, None] + g[:, None, :] + xs[:, None, :] * u[:, :, None]
             + xs[:, :, None] * v[:, None, :])          # < 2**54 (see _two_grid)
    ok = (fold_mod_p(total) == 0) & (xs[:, None, :] > xs[:, :, None])
    out = []
    for q, i, j in zip(*np.nonzero(ok)):
        full = [int(t) for t in fold_mod_p(r[q] + 2 * _P - e2[q, i] - e3[q, j])]
        x1, x2 = int(xs[q, i]), int(xs[q, j])
        if all((full[t + 2] + x1 * x2 * full[t] - (x1 + x2) * full[t + 1])
               % OPA_PRIME == 0 for t in range(rows - 2)):
            out.append((int(q), int(i), int(j)))
    return out


def two_moves(terms, b: np.ndarray, w: int, d: int) -> list[tuple[int, int, int, int]]:
    """Level ``m = 2``, ``|L| = 2`` (two reordered packets, no loss: ``w = n``) for moves
    that do not overlap, by meeting in the middle: ``(e1, x1, e2, x2)`` that pass.

    A move puts packet ``e`` at position ``x ≠ e + 1`` (``|x − e − 1| ≤ d``); the
    in-order packets between shift by one. Its change of the CAH, ``Δ(e, x)``, is its own
    term at ``x`` less the one at ``e + 1`` plus the shifted run's, from the prefix sums.
    When two moves' ranges of arrival indices are disjoint their changes add, so the pair
    passes exactly when ``Δ1 + Δ2 = B − K0`` on every row (``K0`` the CAH of the arrival
    order): row 0 is matched through a sorted table, the few hits checked on every row.
    Overlapping moves (packets within ``2d`` of each other) are the enumeration's."""
    n, rows = len(terms.packets), terms.rows
    pre = {s: terms.prefix(s) for s in (-1, 0, 1)}
    e = np.repeat(np.arange(n), 2 * d + 1)
    x = e + 1 + np.tile(np.arange(-d, d + 1), n)
    ok = (x >= 1) & (x <= w) & (x != e + 1)
    e, x = e[ok], x[ok]
    if len(e) == 0:
        return []
    hx = augmented_hash(terms.packets[e], x, terms.seed)
    tx = modmul(node_powers(x, rows), hx[None, :]).T.astype(np.int64)     # (M, rows)
    te = pre[0][e + 1] - pre[0][e]
    early = x < e + 1
    xe = np.where(early, x - 1, e + 1)                 # the shifted run is [xe, hi)
    hi = np.where(early, e, x)
    run = np.where(early[:, None], (pre[1][hi] - pre[1][xe]) - (pre[0][hi] - pre[0][xe]),
                   (pre[-1][hi] - pre[-1][xe]) - (pre[0][hi] - pre[0][xe]))
    delta = ((tx - te + run) % OPA_PRIME).astype(np.int64)
    lo_i, hi_i = np.minimum(e, x - 1), np.maximum(e, x - 1)               # index range
    r0 = (b.astype(np.int64) - pre[0][n]) % OPA_PRIME
    order = np.argsort(delta[:, 0], kind="stable")
    keys = delta[order, 0]
    target = (r0[0] - delta[:, 0]) % OPA_PRIME
    first = np.searchsorted(keys, target, side="left")
    last = np.searchsorted(keys, target, side="right")
    found = []
    for i in np.flatnonzero(last > first):
        for j in order[first[i]:last[i]]:
            if j <= i or not (hi_i[i] < lo_i[j] or hi_i[j] < lo_i[i]):
                continue
            if np.array_equal((delta[i] + delta[j]) % OPA_PRIME, r0):
                found.append((int(e[i]), int(x[i]), int(e[j]), int(x[j])))
    return found
