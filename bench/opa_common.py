# SPDX-License-Identifier: BSD-2-Clause
"""The OPA benches' workload (``bench/opa_recovery.py``, ``bench/accuracy_opa.py``): one
interval of packets through a path with the OPA paper's impairments (§VII-A, C).

Packet hashes are drawn uniformly (statistically the H3 hashes of distinct headers), send
times are Poisson at ``rate_pps``, delays ``base_ns`` plus Weibull (``scale_ns``, ``shape``) with a large
delay (``large_factor`` × the scale, times a uniform 1…2) added with probability
``large_p``; losses are uniform. Arrival order is the sending order (a FIFO path) except
for ``reorder`` of the packets, each moved later by 1…``reorder_span`` places — so the
receiver sees loss and reordering at stated rates, as in the paper, whatever the delays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_sw.model.opa import PacketRecords

__all__ = ["Workload", "make_workload"]


@dataclass(frozen=True)
class Workload:
    """Both points' records and the truth: ``sent`` (send order), ``received`` (arrival
    order), ``true_delay`` (ns, per received packet), ``large`` (per received packet:
    it got a large delay), ``lost``, ``reordered``."""
    sent: PacketRecords
    received: PacketRecords
    true_delay: np.ndarray
    large: np.ndarray
    lost: int
    reordered: int


def make_workload(*, packets: int = 1_000_000, loss: float = 1e-4, reorder: float = 0.0,
                  reorder_span: int = 16, rate_pps: float = 5e6, scale_ns: float = 133.0,
                  shape: float = 0.6, large_p: float = 1e-4, large_factor: float = 100.0,
                  base_ns: float = 0.0, seed: int = 1) -> Workload:
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 2 ** 64, packets, dtype=np.uint64)
    send = (1_000_000 + np.cumsum(rng.exponential(1e9 / rate_pps, packets))).astype(np.int64)
    delay = base_ns + scale_ns * rng.weibull(shape, packets)
    large = rng.random(packets) < large_p
    delay[large] += scale_ns * large_factor * (1 + rng.random(int(large.sum())))
    recv = send + np.round(delay).astype(np.int64)
    keep = np.flatnonzero(rng.random(packets) >= loss)
    # arrival order: each reordered packet is moved later by 1..span places
    key = np.arange(len(keep), dtype=np.float64)
    moved = rng.random(len(keep)) < reorder
    key[moved] += rng.integers(1, reorder_span + 1, int(moved.sum())) + 0.5
    order = keep[np.argsort(key, kind="stable")]
    return Workload(sent=PacketRecords(p, send), received=PacketRecords(p[order], recv[order]),
                    true_delay=(recv - send)[order], large=large[order],
                    lost=packets - len(keep), reordered=int(moved.sum()))
