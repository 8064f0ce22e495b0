# SPDX-License-Identifier: BSD-2-Clause
"""The CAH of one group's received packets at any placement, from prefix sums: what every
search of OPA Algorithm 1 reads (``docs/SPEC.md`` §8.5).

Estimators layer, used by :mod:`host_sw.estimators.opa.search`,
:mod:`host_sw.estimators.opa.grid`, :mod:`host_sw.estimators.opa.moves` and
:mod:`host_sw.estimators.opa.compound`. :class:`Terms` holds, per shift ``s``, the prefix
sums of the terms ``x**r · h(P_j, x)`` with ``x = j + 1 + s`` (packet ``j`` at ``s``
positions from its arrival slot); :func:`known_part` reads from them the CAH of the packets
a candidate places in arrival order around its set-aside packets and unknown positions,
in ``O(k·|L|·m)`` whatever the group's size.
"""

from __future__ import annotations

import numpy as np

from host_sw.contracts.opa.words import OPA_PRIME, augmented_hash, modmul, node_powers

__all__ = ["Terms", "known_part"]


class Terms:
    """Prefix sums of ``x**r · h(P_j, x)``, ``x = j + 1 + s``, per shift ``s`` (lazy)."""

    def __init__(self, packets: np.ndarray, w: int, rows: int, seed: int):
        self.packets, self.w, self.rows, self.seed = packets, w, rows, seed
        self._prefix, self._offsets = {}, {}

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

    def term_at(self, e: np.ndarray, x: np.ndarray, span: int) -> np.ndarray:
        """``x**r · h(P_e, x)`` (``e.shape + (rows,)``, int64) for positions
        ``|x − e − 1| ≤ span``, read from the per-shift terms (hashed once per packet and
        shift instead of once per candidate)."""
        if span not in self._offsets:
            self._offsets[span] = np.stack([np.diff(self.prefix(s), axis=0)
                                            for s in range(-span, span + 1)], axis=1)
        return self._offsets[span][e, x - e - 1 + span]


def known_part(terms: Terms, aside: np.ndarray, lost: np.ndarray) -> np.ndarray:
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
