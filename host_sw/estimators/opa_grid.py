# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1, pure-loss levels (no packet set aside): every set ``L`` of ``a``
lost positions of one group tested at once, without solving the mapping equation.

Estimators layer, used by :mod:`host_sw.estimators.opa_search` (which owns the prefix
sums :class:`~host_sw.estimators.opa_search.Terms`). With ``l_1 < … < l_a`` lost, received
packet of rank ``t`` sits at position ``t + 1 + s`` on the ``s``-th run, so the known part
of the CAH is ``Pre_a[n] + Σ_s D_s[l_s − s]`` with ``D_s = Pre_{s−1} − Pre_s``: the
residual ``R = B − known`` separates into one table per lost position. ``R`` is a
combination of the lost positions' columns ``(1, l, l², …)`` exactly when the
polynomial ``Π (X − l_s) = Σ c_i X^i`` annihilates it on every window of rows:
``Σ_i c_i R_{r+i} = 0`` for ``r = 0 … k − a − 1`` — the mapping and checking equations
of the paper without a division (``docs/SPEC.md`` §8.5).
"""

from __future__ import annotations

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


def pure_loss(terms, b: np.ndarray, w: int, a: int) -> list[np.ndarray]:
    """The lost-position sets ``L`` of size ``a`` that pass (module docstring)."""
    if a <= 2:
        return _pure_loss_small(terms, b, w, a)
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


def _pure_loss_small(terms, b: np.ndarray, w: int, a: int) -> list[np.ndarray]:
    """The lost-position sets ``L`` (a = 1 or 2, no packet set aside) that pass, over the
    whole grid of candidates at once.

    With ``b_s = l_s − s`` the known part is ``Pre_a[n] + Σ_s D_s[l_s − s]``,
    ``D_s = Pre_{s−1} − Pre_s``, so the residual separates into one table per lost
    position. The checking rows are applied as the recurrence of the nodes' polynomial
    (``R_{r+2} − (x1+x2)·R_{r+1} + x1·x2·R_r = 0``; for one node ``R_{r+1} = x·R_r``),
    which holds exactly when ``R`` is a combination of the nodes' columns — the mapping
    and checking equations without a division."""
    n, rows = len(terms.packets), terms.rows
    pre = [terms.prefix(s) for s in range(a + 1)]
    base = (b.astype(np.int64) - pre[a][n]) % OPA_PRIME                 # (rows,)
    d1 = ((pre[0] - pre[1]) % OPA_PRIME).astype(np.uint64)              # (n+1, rows)
    if a == 1:
        x = np.arange(1, w + 1, dtype=np.uint64)
        resid = (base.astype(np.uint64)[None, :] + _P - d1[x.astype(np.int64) - 1]) % _P
        ok = np.ones(w, dtype=bool)
        for r in range(rows - 1):
            ok &= resid[:, r + 1] == modmul(x, resid[:, r])
        return [np.array([l]) for l in x[ok].astype(np.int64)]
    d2 = ((pre[1] - pre[2]) % OPA_PRIME).astype(np.uint64)
    found = []
    step = max(1, (1 << 20) // max(w, 1))
    x2 = np.arange(2, w + 1, dtype=np.uint64)[None, :]
    col = np.clip(x2[0].astype(np.int64) - 2, 0, n)
    for start in range(1, w, step):
        x1 = np.arange(start, min(w, start + step), dtype=np.uint64)[:, None]
        row = np.minimum(x1[:, 0].astype(np.int64) - 1, n)
        # The grid sieves with the first recurrence (a wrong pair passes with probability
        # 1/p); the few survivors are checked on every row.
        resid = [fold_mod_p(np.uint64(base[r]) + 2 * _P - d1[row, r][:, None]
                            - d2[col, r][None, :]) for r in range(3)]
        s, q = fold_mod_p(x1 + x2), modmul(x1, x2)
        ok = (x2 > x1) & (fold_mod_p(resid[2] + modmul(q, resid[0]))
                          == modmul(s, resid[1]))
        for i, j in zip(*np.nonzero(ok)):
            l1, l2 = int(x1[i, 0]), int(x2[0, j])
            r_all = (base.astype(np.int64) - d1[min(l1 - 1, n)].astype(np.int64)
                     - d2[min(l2 - 2, n)].astype(np.int64)) % OPA_PRIME
            if all((int(r_all[r + 2]) + l1 * l2 * int(r_all[r])
                    - (l1 + l2) * int(r_all[r + 1])) % OPA_PRIME == 0
                   for r in range(rows - 2)):
                found.append(np.array([l1, l2]))
    return found


