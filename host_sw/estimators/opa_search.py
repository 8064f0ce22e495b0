# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1 for one group: the mapping σ of its received packets to sending
positions, found by enumeration (OPA §IV-D, §V-B), or ``None``.

Estimators layer, below :mod:`host_sw.estimators.opa` (which runs it for every group whose
count or CAH differs). The contract (field, nodes, augmented hash) is
:mod:`host_sw.contracts.opa`; the error model and its bounds are ``docs/SPEC.md`` §8.5.

A candidate is ``(e, L)``: ``e`` the received packet set aside (``e = w'`` for none) and
``L`` the sorted sending positions whose hashes are unknown. The other received packets, in
arrival order, fill the positions not in ``L``. Their known part of the CAH is a sum over at
most ``2(|L|+1)`` runs of packets at one common shift of position, read from prefix sums
of the terms ``x**r · h(P, x)`` precomputed per shift — every candidate costs O(k·|L|)
whatever the group's size. The first ``|L|`` rows solve for the unknown hashes (mapping
equation, a Vandermonde system in the nodes ``L``); the other rows must hold (checking
equation). A set-aside packet must then be one of the solved hashes at a position within
the shift bound ``d`` (it was reordered) or none of them (it belongs to another interval).
Candidates that pass are compared by the mapping they give: one mapping is the answer,
two or more are reported as ambiguous, never guessed.

Search levels: pure loss (``|L| = w − w'``, no packet set aside), then one packet set
aside (``|L| = w − w' + 1``), then two (every unknown position must then be one of theirs:
reordered or foreign packets, no loss besides), each only while ``|L| ≤ max_errors`` and the
level's candidates stay within ``candidate_limit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from host_sw.contracts.opa import (OPA_PRIME, augmented_hash, fold_mod_p, modinv, modmul,
                                   node_powers)

__all__ = ["GroupSearch", "search_group", "CHUNK"]

_P = np.uint64(OPA_PRIME)
#: Candidates evaluated per numpy batch (bounds the memory of one batch).
CHUNK = 1 << 16


@dataclass(frozen=True)
class GroupSearch:
    """The outcome for one group: ``sigma`` (1-based sending position per received
    packet, 0 for a packet of another interval) or ``None`` with ``reason``
    (``beyond_bound``, ``ambiguous``, ``search_limit``); ``candidates`` tested."""
    sigma: np.ndarray | None
    reason: str = ""
    candidates: int = 0


class _Terms:
    """Prefix sums of ``x**r · h(P_j, x)``, ``x = j + 1 + s``, per shift ``s`` (lazy)."""

    def __init__(self, packets: np.ndarray, w: int, rows: int, seed: int):
        self.packets, self.w, self.rows, self.seed = packets, w, rows, seed
        self._prefix = {}

    def prefix(self, s: int) -> np.ndarray:
        if s not in self._prefix:
            n = len(self.packets)
            x = np.arange(1, n + 1, dtype=np.int64) + s
            ok = (x >= 1) & (x <= self.w)
            h = np.where(ok, augmented_hash(self.packets, np.clip(x, 1, None), self.seed), 0)
            terms = modmul(node_powers(np.clip(x, 0, None), self.rows), h).astype(np.int64)
            pre = np.zeros((n + 1, self.rows), dtype=np.int64)   # gathered by row
            np.cumsum(terms.T, axis=0, out=pre[1:])
            self._prefix[s] = pre
        return self._prefix[s]


def _known_part(terms: _Terms, aside: np.ndarray, lost: np.ndarray) -> np.ndarray:
    """``K_r`` (rows, C) of each candidate: the CAH of the packets it places.

    ``aside`` (C, m) sorted arrival indices set aside, ``lost`` (C, a) sorted positions.
    Packet ``j`` not set aside has rank ``t = j − #{e < j}`` among the placed packets and
    position ``t + 1 + #{l passed}``: runs of constant shift, split by the lost
    positions' run starts and by the set-aside packets."""
    n, a, m = len(terms.packets), lost.shape[1], aside.shape[1]
    breaks = lost - np.arange(1, a + 1)                  # run starts in rank space
    for q in range(m):                                   # … in arrival-index space
        breaks = breaks + (aside[:, q:q + 1] <= breaks)
    count = len(lost)
    edges = np.concatenate([np.zeros((count, 1), np.int64), breaks,
                            np.full((count, 1), n + 1, np.int64)], axis=1)
    gap_lo = np.concatenate([np.zeros((count, 1), np.int64), aside + 1], axis=1)
    gap_hi = np.concatenate([aside, np.full((count, 1), n, np.int64)], axis=1)
    total = np.zeros((count, terms.rows), dtype=np.int64)
    for c in range(a + 1):
        for q in range(m + 1):   # between the (q-1)-th and q-th set-aside packets
            lo = np.minimum(np.maximum(edges[:, c], gap_lo[:, q]), n)
            hi = np.maximum(np.minimum(edges[:, c + 1], gap_hi[:, q]), lo)
            pre = terms.prefix(c - q)
            total += pre[hi] - pre[lo]
            if n >= (1 << 19):   # keep the int64 sum of the runs far from overflow
                total %= OPA_PRIME
    return (total % OPA_PRIME).astype(np.uint64).T


def _solve(nodes: np.ndarray, rhs: np.ndarray, inverses: np.ndarray) -> np.ndarray:
    """Solve ``Σ_l nodes_l**r · h_l = rhs_r`` (r < a) mod p for every candidate by
    Gaussian elimination (a ≤ 7, distinct nodes: the Vandermonde matrix is invertible)."""
    c, a = nodes.shape
    if a == 1:
        return rhs[:1].T.copy()
    if a == 2:   # h2 = (R1 − x1·R0) / (x2 − x1), h1 = R0 − h2; x2 > x1 (sorted)
        x1, x2 = nodes[:, 0], nodes[:, 1]
        h2 = modmul((rhs[1] + _P - modmul(x1, rhs[0])) % _P, inverses[x2 - x1])
        return np.stack([(rhs[0] + _P - h2) % _P, h2], axis=1)
    m = np.empty((c, a, a + 1), dtype=np.uint64)
    m[:, :, :a] = np.moveaxis(node_powers(nodes, a), 0, 1)
    m[:, :, a] = rhs[:a].T
    for col in range(a):      # the pivot m[col, col] is non-zero for distinct nodes
        m[:, col] = modmul(m[:, col], modinv(m[:, col, col])[:, None])
        for row in range(a):
            if row != col:
                factor = m[:, row, col][:, None]
                m[:, row] = (m[:, row] + _P - modmul(factor, m[:, col])) % _P
    return m[:, :, a]


def _evaluate(terms, b, aside, lost, d, inverses) -> tuple[np.ndarray, np.ndarray]:
    """Pass mask of a batch of candidates and, per set-aside packet, the position it
    matched (0: none — a packet of another interval)."""
    rows, a = terms.rows, lost.shape[1]
    resid = (b[:, None] + _P - _known_part(terms, aside, lost)) % _P
    if a:
        h = _solve(lost, resid, inverses)
        powers = node_powers(lost, rows)                  # (rows, C, a)
        ok = np.ones(len(lost), dtype=bool)
        for r in range(a, rows):
            ok &= (modmul(powers[r], h).sum(axis=1) % _P) == resid[r]
    else:
        h = np.zeros((len(lost), 0), dtype=np.uint64)
        ok = (resid == 0).all(axis=0)
    matched = np.zeros(aside.shape, dtype=np.int64)
    for i in np.flatnonzero(ok) if aside.shape[1] else ():
        free = np.ones(a, dtype=bool)
        for q, e in enumerate(aside[i]):
            near = np.abs(lost[i] - (e + 1)) <= d
            mine = augmented_hash(terms.packets[e], lost[i], terms.seed)
            hit = np.flatnonzero(near & free & (mine == h[i]))
            if len(hit):
                matched[i, q] = lost[i][hit[0]]
                free[hit[0]] = False
    return ok, matched


def _pure_loss(terms: _Terms, b: np.ndarray, w: int, a: int) -> list[np.ndarray]:
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


def _sigma(n: int, w: int, aside: np.ndarray, lost: np.ndarray,
           matched: np.ndarray) -> np.ndarray:
    """The mapping of a candidate that passed (module docstring)."""
    free = np.setdiff1d(np.arange(1, w + 1), lost)
    sigma = np.zeros(n, dtype=np.int64)
    keep = np.ones(n, dtype=bool)
    keep[aside] = False
    sigma[keep] = free[:keep.sum()]
    sigma[aside] = matched
    return sigma


def _homes(e: np.ndarray, w: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index into e, position)`` of every position within ``d`` of ``e + 1``."""
    idx, off = np.meshgrid(np.arange(len(e)), np.arange(-d, d + 1), indexing="ij")
    pos = e[idx] + 1 + off
    ok = (pos >= 1) & (pos <= w)
    return idx[ok], pos[ok]


def _candidates(n: int, w: int, a: int, m: int, d: int):
    """Candidate arrays ``(aside (C, m), lost (C, a))`` of one level, or ``None``.

    ``m = 0``: every a-subset of positions. ``m = 1``: one position of ``L`` within ``d``
    of the set-aside packet, the others anywhere. ``m = 2``: each position of ``L`` within
    ``d`` of one of the two set-aside packets."""
    positions = np.arange(1, w + 1)
    if m == 0:
        if a == 2:
            i, j = np.triu_indices(w, 1)
            return np.zeros((i.size, 0), np.int64), np.stack([i + 1, j + 1], 1).astype(np.int64)
        lost = np.array(list(combinations(positions, a)), dtype=np.int64).reshape(-1, a)
        return np.zeros((len(lost), 0), np.int64), lost
    if m == 1:
        e = np.arange(n, dtype=np.int64)
        if a == 0:
            return e[:, None], np.zeros((n, 0), dtype=np.int64)
        idx, l0 = _homes(e, w, d)
        if a == 1:
            return e[idx][:, None], l0[:, None]
        if a == 2:   # one more position anywhere; each pair once
            e, l0, l1 = np.repeat(e[idx], w), np.repeat(l0, w), np.tile(positions, len(idx))
            keep = (l1 != l0) & ((np.abs(l1 - (e + 1)) > d) | (l1 > l0))
            e, l0, l1 = e[keep], l0[keep], l1[keep]
            return e[:, None], np.stack([np.minimum(l0, l1), np.maximum(l0, l1)], axis=1)
        rows = [(int(e[i]), *sorted((int(x), *more))) for i, x in zip(idx, l0)
                for more in combinations(positions[positions != x], a - 1)]
    else:
        i, j = np.triu_indices(n, 1)
        pairs = np.stack([i, j], axis=1).astype(np.int64)
        if a == 0:
            return pairs, np.zeros((len(pairs), 0), dtype=np.int64)
        offsets = np.arange(-d, d + 1)
        e1 = np.broadcast_to(pairs[:, 0, None, None], (len(pairs), len(offsets), len(offsets)))
        e2 = np.broadcast_to(pairs[:, 1, None, None], e1.shape)
        x = e1 + 1 + offsets[None, :, None]                     # homes of e1
        y = e2 + 1 + offsets[None, None, :]                     # homes of e2
        if a == 1:   # one position, a home of e1 or of e2 (once when it is both)
            e1, e2 = e1[:, :, 0], e2[:, :, 0]
            x, y = x[:, :, 0], (e2 + 1 + offsets[None, :])
            y_ok = np.abs(y - (e1 + 1)) > d
            cand = np.concatenate([np.stack([e1.ravel(), e2.ravel(), x.ravel()], 1),
                                   np.stack([e1[y_ok], e2[y_ok], y[y_ok]], 1)])
            cand = cand[(cand[:, 2] >= 1) & (cand[:, 2] <= w)]
        else:        # a home of each; a set that is both ways round, once
            swapped = (np.abs(y - (e1 + 1)) <= d) & (np.abs(x - (e2 + 1)) <= d)
            keep = (x != y) & (~swapped | (x < y)) & (x >= 1) & (x <= w) & (y >= 1) & (y <= w)
            cand = np.stack([e1[keep], e2[keep], np.minimum(x, y)[keep],
                             np.maximum(x, y)[keep]], axis=1)
        if len(cand) == 0:
            return None
        return cand[:, :m], cand[:, m:]
    if not rows:
        return None
    arr = np.unique(np.array(rows, dtype=np.int64), axis=0)
    return arr[:, :m], arr[:, m:]


def _level_size(n: int, w: int, a: int, m: int, d: int) -> int:
    """Candidates of a level (an upper bound for ``m ≥ 1``)."""
    home = min(w, 2 * d + 1)
    if m == 0:
        return comb(w, a)
    if m == 1:
        return n if a == 0 else n * home * comb(w, a - 1)
    return comb(n, 2) * (2 * home if a == 1 else home ** a)


def search_group(packets: np.ndarray, w: int, b: np.ndarray, *, seed: int,
                 max_errors: int = 2, shift_bound: int = 8, max_aside: int = 2,
                 candidate_limit: int = 2_000_000) -> GroupSearch:
    """Algorithm 1 for one group: ``packets`` the received packet hashes in arrival
    order, ``w`` and ``b`` (uint64 ``(k,)``) the sender's word. Levels set aside
    ``m = 0 … max_aside`` packets (reordered or foreign), each with ``|L| = w − n + m``
    unknown positions, ``|L| ≤ max_errors``."""
    n, rows = len(packets), len(b)
    terms = _Terms(np.asarray(packets, dtype=np.uint64), w, rows, seed)
    b = np.asarray(b, dtype=np.uint64)
    tested = 0
    inverses = None
    for m in range(min(max_aside, n) + 1):
        a = w - n + m
        if a < 0 or a > max_errors or (a == 0 and m == 0) or a >= rows:
            continue
        if _level_size(n, w, a, m, shift_bound) > candidate_limit:
            return GroupSearch(None, "search_limit", tested)
        found = {}
        if m == 0 and a <= 2:
            for lost in _pure_loss(terms, b, w, a):
                sigma = _sigma(n, w, np.zeros(0, np.int64), lost, np.zeros(0, np.int64))
                found.setdefault(sigma.tobytes(), sigma)
            tested += _level_size(n, w, a, m, shift_bound)
        else:
            if inverses is None:   # 1/(x2 − x1) for positions up to w (Fermat)
                inverses = modinv(np.arange(max(w, 1) + 1))
            cands = _candidates(n, w, a, m, shift_bound)
            for start in range(0, 0 if cands is None else len(cands[0]), CHUNK):
                aside, lost = cands[0][start:start + CHUNK], cands[1][start:start + CHUNK]
                ok, matched = _evaluate(terms, b, aside, lost, shift_bound, inverses)
                if m == 2:   # every unknown position is a set-aside packet's (no loss)
                    ok &= (matched > 0).sum(axis=1) == a
                tested += len(lost)
                for i in np.flatnonzero(ok):
                    sigma = _sigma(n, w, aside[i], lost[i], matched[i])
                    found.setdefault(sigma.tobytes(), sigma)
        if len(found) == 1:
            return GroupSearch(next(iter(found.values())), "", tested)
        if len(found) > 1:
            return GroupSearch(None, "ambiguous", tested)
    return GroupSearch(None, "beyond_bound", tested)
