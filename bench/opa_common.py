# SPDX-License-Identifier: BSD-2-Clause
"""The OPA benches' workload (``bench/opa_recovery.py``, ``bench/accuracy_opa.py``): one
interval of packets through a path with the OPA paper's impairments (§VII-A, C).

Packet hashes are drawn uniformly (statistically the H3 hashes of distinct headers), send
times are Poisson at ``rate_pps``, delays ``base_ns`` plus Weibull (``scale_ns``,
``shape``) with a large delay (``large_factor`` × the scale, times a uniform 1…2) added
with probability ``large_p``; losses are uniform. Arrival order is the sending order (a
FIFO path) except for ``reorder`` of the packets, each moved later by 1…``reorder_span``
places — so the receiver sees loss and reordering at stated rates, as in the paper,
whatever the delays.

:func:`rli_estimates` runs RLI (:mod:`host_sw.model.golden_rli`, the product's golden model) on
the same packets for the OPA paper's Figs. 5–7: reference packets after every N-th sent
packet, each with its own delay from the same model and the same loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import RliConfig
from host_sw.model.golden_opa import PacketRecords
from host_sw.model.golden_rli import interpolated_delays, reference_positions

__all__ = ["Workload", "make_workload", "rli_estimates"]


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
    #: per received packet: its index in ``sent``; and the delay model's parameters
    sent_index: np.ndarray = field(default=None, repr=False)
    model: dict = field(default_factory=dict)


def _delays(rng, count, scale_ns, shape, large_p, large_factor, base_ns):
    """Delays (ns, float) and which got a large one."""
    delay = base_ns + scale_ns * rng.weibull(shape, count)
    large = rng.random(count) < large_p
    delay[large] += scale_ns * large_factor * (1 + rng.random(int(large.sum())))
    return delay, large


def make_workload(*, packets: int = 1_000_000, loss: float = 1e-4, reorder: float = 0.0,
                  reorder_span: int = 16, rate_pps: float = 5e6, scale_ns: float = 133.0,
                  shape: float = 0.6, large_p: float = 1e-4, large_factor: float = 100.0,
                  base_ns: float = 0.0, seed: int = 1) -> Workload:
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 2 ** 64, packets, dtype=np.uint64)
    send = (1_000_000 + np.cumsum(rng.exponential(1e9 / rate_pps, packets))).astype(np.int64)
    model = dict(scale_ns=scale_ns, shape=shape, large_p=large_p,
                 large_factor=large_factor, base_ns=base_ns)
    delay, large = _delays(rng, packets, **model)
    recv = send + np.round(delay).astype(np.int64)
    keep = np.flatnonzero(rng.random(packets) >= loss)
    # arrival order: each reordered packet is moved later by 1..span places
    key = np.arange(len(keep), dtype=np.float64)
    moved = rng.random(len(keep)) < reorder
    key[moved] += rng.integers(1, reorder_span + 1, int(moved.sum())) + 0.5
    order = keep[np.argsort(key, kind="stable")]
    return Workload(sent=PacketRecords(p, send), received=PacketRecords(p[order], recv[order]),
                    true_delay=(recv - send)[order], large=large[order],
                    lost=packets - len(keep), reordered=int(moved.sum()),
                    sent_index=order, model=dict(model, loss=loss, seed=seed))


def rli_estimates(work: Workload, ref_every: int) -> tuple[np.ndarray, np.ndarray, int]:
    """RLI's per-packet interpolated delays (ns) on ``work``: a reference packet after
    every ``ref_every``-th sent packet, sent in the middle of the gap after it (as
    :func:`~host_sw.model.golden_rli.reference_positions` places them), delayed by a draw of the
    workload's delay model and lost at its loss rate, received right after the packet it
    followed (a FIFO path). Returns ``(delays, estimated, references received)``:
    ``estimated`` per received packet (``work.received`` order) says whether RLI gave it
    a delay (every packet between two received references, and those before the first
    or after the last take the nearest reference's delay). The receiver's interpolation
    buffer is made large enough (2**20) that no packet is left out of it."""
    config = RliConfig(ref_packets=ref_every, buffer_packets=1 << 20)
    send = np.asarray(work.sent.timestamps, dtype=np.int64)
    counted = np.ones(len(send), dtype=bool)
    after, ref_send = reference_positions(config, send, np.full(len(send), 64), counted)
    model = dict(work.model)
    loss, seed = model.pop("loss"), model.pop("seed")
    rng = np.random.default_rng([seed, ref_every])
    delay, _ = _delays(rng, len(after), **model)
    kept = rng.random(len(after)) >= loss
    after, ref_send = after[kept], ref_send[kept]
    ref_arrival = ref_send + np.round(delay[kept]).astype(np.int64)
    # each reference goes right after the last received packet sent at or before `after`
    rank = np.full(len(send), -1, dtype=np.int64)
    rank[work.sent_index] = np.arange(len(work.sent_index))
    last = np.maximum.accumulate(rank)[after]                # arrival slot it follows
    slot = np.concatenate([np.arange(len(rank[rank >= 0])) * 2 + 1, last * 2 + 2])
    arrival = np.concatenate([work.received.timestamps, ref_arrival])
    is_ref = np.concatenate([np.zeros(len(work.received), bool), np.ones(len(after), bool)])
    sends = np.concatenate([np.zeros(len(work.received), np.int64), ref_send])
    order = np.argsort(slot, kind="stable")
    d, data, _ = interpolated_delays(config, arrival[order], is_ref[order], sends[order],
                                     ~is_ref[order])
    out = np.zeros(len(work.received), dtype=np.float64)
    got = np.zeros(len(work.received), dtype=bool)
    which = order[data]                  # indices into the received packets
    out[which] = d * config.tick_ns
    got[which] = True
    return out, got, len(after)
