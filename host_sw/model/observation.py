# SPDX-License-Identifier: BSD-2-Clause
"""Both measurement points' per-interval observations and the exact ground truth they are
judged against, built from any pairing of the two points' packets.

Data flow (docs/DESIGN.md, "Data flow of a packet"; model layer): the simulated path
(:func:`host_sw.model.channel.split_intervals`) or two captures paired packet by packet
(:func:`host_sw.model.pcap.pair_captures`) ► :func:`interval_observations` ► per interval,
each point's :class:`Observation` (► :func:`host_sw.model.golden_lda_rda_lds.update` ► synopses ►
estimators) and the :class:`GroundTruth`.

Ground truth per interval (:class:`GroundTruth`): ``sent`` / ``received`` are the counted
packets each point saw; ``lost_ids`` the sender-only ones, ``reordered_ids`` the
receiver-only ones, so ``sent - lost == received - reordered`` == packets seen by both
(in marker mode ``reordered`` is empty and ``sent == received + lost``). ``delays`` are
``receiver timestamp − sender timestamp`` of the packets seen by both, i.e. they include
the clock offset, as any estimator from the two synopses does; ``mean`` and ``std``
(population, ddof 0) are over them. Times are integer nanoseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, update
from host_sw.model.traffic import Trace

__all__ = ["NO_INTERVAL", "Observation", "GroundTruth", "IntervalObservation",
           "interval_observations"]

#: The interval of a packet a point never saw (:func:`interval_observations`).
NO_INTERVAL = np.iinfo(np.int64).min


@dataclass(eq=False)
class Observation:
    """The packets one measurement point saw in one interval.

    Attributes
    ----------
    trace:
        The trace the packets come from (the sender's trace in simulation; each point's
        own capture offline).
    indices:
        int64 — the packets' indices in ``trace``, in this point's order of arrival.
    timestamps:
        int64 — their timestamps (ns) by this point's clock.
    packet_ids:
        int64 — identities shared by both points (for the truth); the trace index in
        simulation.
    """
    trace: Trace
    indices: np.ndarray
    timestamps: np.ndarray
    packet_ids: np.ndarray

    def __len__(self):
        return len(self.indices)

    def hashes(self, config: SynopsisConfig, hashers: Hashers | None = None) -> PacketHashes:
        """The H3 outputs of these packets under ``config``."""
        return self.trace.hashes(config, self.indices, hashers)

    def synopsis(self, config: SynopsisConfig, *, flow_weights=None,
                 hashers: Hashers | None = None) -> Synopsis:
        """The golden-model synopsis of this point for the interval.

        ``flow_weights`` (LDS, §4.1): integer weight per flow of the trace.
        """
        weights = None
        if flow_weights is not None:
            weights = np.asarray(flow_weights, dtype=np.uint64)[self.trace.flow_ids[self.indices]]
        return update(config, self.hashes(config, hashers), self.ticks(config),
                      weights=weights, hashers=hashers)

    def ticks(self, config: SynopsisConfig) -> np.ndarray:
        """The timestamps in the configuration's ticks, as a timebase counting
        ``tick_ns`` periods would read them: ``floor(ns / tick_ns)`` (integer division
        for a whole-ns tick; float64 otherwise). Identity for 1 ns ticks."""
        tick = config.tick_ns
        if tick == 1:
            return self.timestamps
        if float(tick).is_integer():
            return self.timestamps // int(tick)
        return np.floor(self.timestamps / tick).astype(np.int64)


@dataclass(eq=False)
class GroundTruth:
    """Exact truth of one interval (module docstring for the definitions)."""
    interval: int
    sent: int
    received: int
    both_ids: np.ndarray
    delays: np.ndarray
    lost_ids: np.ndarray
    reordered_ids: np.ndarray
    dropped_ids: np.ndarray
    clock_offset_ns: int = 0

    @property
    def lost(self) -> int:
        return len(self.lost_ids)

    @property
    def reordered(self) -> int:
        return len(self.reordered_ids)

    @property
    def mean(self) -> float:
        """Mean of ``delays`` in ns (NaN when no packet was seen by both)."""
        return float(self.delays.mean()) if len(self.delays) else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation (ddof 0) of ``delays`` in ns."""
        return float(self.delays.std()) if len(self.delays) else math.nan

    @property
    def delay_sum(self) -> int:
        """Exact integer sum of ``delays``."""
        return int(self.delays.sum())

    def per_flow(self, flow_ids: np.ndarray, num_flows: int) -> dict[str, np.ndarray]:
        """Per-flow truth: ``packets`` seen by both, ``delay_sum`` (int64) and ``mean``
        delay (ns; NaN for flows with none), ``lost`` and ``reordered`` counts.
        ``flow_ids`` maps packet ids to flows (the trace's ``flow_ids`` in simulation)."""
        f_both = flow_ids[self.both_ids]
        packets = np.bincount(f_both, minlength=num_flows)
        dsum = np.zeros(num_flows, dtype=np.int64)
        np.add.at(dsum, f_both, self.delays)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(packets > 0, dsum / np.maximum(packets, 1), np.nan)
        return {"packets": packets, "delay_sum": dsum, "mean": mean,
                "lost": np.bincount(flow_ids[self.lost_ids], minlength=num_flows),
                "reordered": np.bincount(flow_ids[self.reordered_ids], minlength=num_flows)}


@dataclass(eq=False)
class IntervalObservation:
    """Both points' observations of one interval and its truth."""
    interval: int
    sender: Observation
    receiver: Observation
    truth: GroundTruth

    def synopses(self, config: SynopsisConfig, *, flow_weights=None,
                 hashers: Hashers | None = None) -> tuple[Synopsis, Synopsis]:
        """(sender, receiver) golden-model synopses under ``config``."""
        hashers = hashers or Hashers(config)
        return (self.sender.synopsis(config, flow_weights=flow_weights, hashers=hashers),
                self.receiver.synopsis(config, flow_weights=flow_weights, hashers=hashers))


def _group_bounds(keys_sorted: np.ndarray, values: np.ndarray):
    lo = np.searchsorted(keys_sorted, values, side="left")
    hi = np.searchsorted(keys_sorted, values, side="right")
    return lo, hi


def interval_observations(*, sender_trace: Trace, receiver_trace: Trace,
                          sender_index: np.ndarray, receiver_index: np.ndarray,
                          sender_ts: np.ndarray, receiver_ts: np.ndarray,
                          sender_interval: np.ndarray, receiver_interval: np.ndarray,
                          counted: np.ndarray, dropped: np.ndarray | None = None,
                          clock_offset_ns: int = 0) -> list[IntervalObservation]:
    """Per-interval observations and truth over a common packet-id space of size G.

    Every argument array is indexed by packet id. ``*_interval`` is the interval each
    point assigned the packet to, or :data:`NO_INTERVAL` when that point never
    saw it; ``*_index`` its index in that point's trace. ``counted`` restricts the
    truth to frames the tap counts. Used by :func:`split_intervals` (simulation) and
    :func:`host_sw.model.pcap.pair_captures` (offline).
    """
    g = len(counted)
    ids = np.arange(g, dtype=np.int64)
    s_iv = np.asarray(sender_interval, dtype=np.int64)
    r_iv = np.asarray(receiver_interval, dtype=np.int64)
    dropped = np.zeros(g, bool) if dropped is None else dropped
    s_order = np.argsort(s_iv, kind="stable")
    r_order = np.lexsort((receiver_ts, r_iv))
    s_sorted, r_sorted = s_iv[s_order], r_iv[r_order]
    present = np.union1d(np.unique(s_iv), np.unique(r_iv))
    present = present[present != NO_INTERVAL]
    s_lo, s_hi = _group_bounds(s_sorted, present)
    r_lo, r_hi = _group_bounds(r_sorted, present)
    out = []
    for i, iv in enumerate(present):
        s_ids = s_order[s_lo[i]:s_hi[i]]
        r_ids = r_order[r_lo[i]:r_hi[i]]
        sc = s_ids[counted[s_ids]]
        rc = r_ids[counted[r_ids]]
        in_both = r_iv[sc] == iv
        both = sc[in_both]
        lost = sc[~in_both]
        reordered = np.sort(rc[s_iv[rc] != iv])
        truth = GroundTruth(
            interval=int(iv), sent=len(sc), received=len(rc), both_ids=both,
            delays=receiver_ts[both] - sender_ts[both], lost_ids=lost,
            reordered_ids=reordered, dropped_ids=lost[dropped[lost]],
            clock_offset_ns=clock_offset_ns)
        sender = Observation(sender_trace, sender_index[s_ids], sender_ts[s_ids], ids[s_ids])
        receiver = Observation(receiver_trace, receiver_index[r_ids], receiver_ts[r_ids],
                               ids[r_ids])
        out.append(IntervalObservation(int(iv), sender, receiver, truth))
    return out
