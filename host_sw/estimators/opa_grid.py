# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1, pure-loss levels (no packet set aside): every set ``L`` of ``a``
lost positions of one group tested at once, without solving the mapping equation.

Estimators layer, used by :mod:`host_sw.estimators.opa_search` (which owns the prefix
sums of the terms ``x**r · h(P, x)`` per shift). With ``l_1 < … < l_a`` lost, received
packet of rank ``t`` sits at position ``t + 1 + s`` on the ``s``-th run, so the known part
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

from host_sw.contracts.opa import OPA_PRIME, fold_mod_p, modmul
from host_sw.estimators.opa_levels import combination_chunks

__all__ = ["pure_loss"]

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
        total = (f[i][:, None] + g[None, :] + modmul(xs[None, :], u[i][:, None])
                 + modmul(xi, v[None, :]))
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
