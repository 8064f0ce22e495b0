# SPDX-License-Identifier: BSD-2-Clause
"""The path between the two measurement points, simulated: delay, loss, reordering and
clock offset, turned into both points' per-interval observations plus exact ground truth.

Data flow (docs/DESIGN.md, "Data flow of a packet"; model layer): a
:class:`~host_sw.model.traffic.Trace` (what the sender sees) ►
**channel** ► per interval, the sender's and the receiver's packets with their own
timestamps (► :func:`host_sw.model.golden.update` ► synopses ► estimators), and the truth the
estimates are judged against.

The delay and loss models are in :mod:`host_sw.model.impairments`.

Units: every time is an integer number of **nanoseconds** unless a value carries a unit
suffix (``ns``, ``us``/``µs``, ``ms``, ``s``) in a specification string. Sampled delays
are rounded to the nearest integer ns (:func:`numpy.rint`, ties to even) and clipped at 0,
so receiver timestamps and the truth are exact integers.

Interval assignment (the interval modes of ``docs/SPEC.md`` §6):

* ``mode="marker"`` — FIFO segments: a packet belongs to the interval of its *send* time
  at both points (the marker travels with the stream). Boundary reordering has no effect.
* ``mode="time"`` — each point assigns by its own clock: interval ``i`` is
  ``[t0 + iδ, t0 + (i+1)δ)``. A packet sent before a boundary and received after it is
  *lost* in its send interval (sender only) and *reordered* into the next one (receiver
  only); a receiver clock offset shifts the receiver's boundaries.

Ground truth per interval (:class:`GroundTruth`): ``sent`` / ``received`` are the counted
packets each point saw; ``lost_ids`` the sender-only ones, ``reordered_ids`` the
receiver-only ones, so ``sent - lost == received - reordered`` == packets seen by both
(in marker mode ``reordered`` is empty and ``sent == received + lost``). ``delays`` are
``receiver timestamp − sender timestamp`` of the packets seen by both, i.e. they include
the clock offset, as any estimator from the two synopses does; ``mean`` and ``std``
(population, ddof 0) are over them.

Example
-------
The CLI's "N packets, loss P, delay D, configuration C, seed S, runs R"::

    from host_sw.model.channel import Scenario
    from host_sw.contracts.config import LdaConfig
    scenario = Scenario(packets=1_000_000, loss=0.01,
                        delay="weibull:shape=0.6,mean=0.2us", seed=7)
    trace = scenario.trace()                  # generated once, shared by the runs
    for run in range(R):
        sim = scenario.run(run, trace=trace)  # channel randomness differs per run
        iv = sim.intervals[0]
        s_hashes = iv.sender.hashes(config)   # PacketHashes; iv.sender.timestamps
        r_hashes = iv.receiver.hashes(config)
        s_syn, r_syn = iv.synopses(config)    # golden-model synopses of both points
        truth = iv.truth                      # .mean, .std, .lost, .lost_ids, ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import SynopsisConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden import Hashers, PacketHashes, update
from host_sw.model.impairments import DelayDistribution, LossModel, parse_time_ns
from host_sw.model.queueing import QueueSpec, run_queue
from host_sw.model.traffic import Trace, synthetic_trace

__all__ = ["DelayDistribution", "LossModel", "Channel", "Transmission", "Observation",
           "GroundTruth", "IntervalObservation", "Simulation", "Scenario",
           "parse_time_ns", "split_intervals", "observe", "simulate_interval",
           "interval_observations"]

_NO_INTERVAL = np.iinfo(np.int64).min


# ---------------------------------------------------------------------------------------
# The channel
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Transmission:
    """What the path did to each packet of a trace.

    ``arrival_ns`` is the true arrival time (sender clock), ``receiver_ts`` the
    receiver's timestamp (``arrival + clock offset``); both are meaningless where
    ``dropped``.
    """
    send_ts: np.ndarray
    arrival_ns: np.ndarray
    receiver_ts: np.ndarray
    dropped: np.ndarray
    clock_offset_ns: int


@dataclass(frozen=True, kw_only=True)
class Channel:
    """Delay, loss, reordering and clock offset between the two points.

    Parameters
    ----------
    delay:
        Delay specification (:class:`DelayDistribution`), ns unless suffixed.
    loss:
        Loss specification (:class:`LossModel`) or a uniform loss rate.
    multipath_fraction, multipath_extra:
        Fraction of packets that take a slower path, and the extra delay it adds
        (a delay specification) — reordering anywhere in the stream.
    boundary_reorder_fraction, boundary_reorder_span_ns:
        Time mode only: of the packets sent within ``span`` before a boundary, this
        fraction is held until just after it (arrival uniform in ``[b, b + span)``)
        — the RDA/FineComb reordering model at interval boundaries.
    flow_extra:
        Optional delay specification drawn *once per flow* and added to each of its
        packets (a flow pinned to a slower queue or ECMP path): flows then differ in
        mean delay, which is what per-flow estimators (LDS) must resolve.
    clock_offset_ns:
        Receiver clock = true time + offset (integer ns, may be negative).
    queue:
        Optional FIFO queue (:class:`~host_sw.model.queueing.QueueSpec`, or its
        specification string) the packets cross first: its sojourn adds to the delay,
        its drops to the loss (needs the frame lengths).
    """
    delay: DelayDistribution | str = "constant:value=0"
    loss: LossModel | str | float = 0.0
    multipath_fraction: float = 0.0
    multipath_extra: DelayDistribution | str = "constant:value=0"
    boundary_reorder_fraction: float = 0.0
    boundary_reorder_span_ns: int = 0
    flow_extra: DelayDistribution | str | None = None
    clock_offset_ns: int = 0
    queue: QueueSpec | str | None = None

    def __post_init__(self):
        if self.queue is not None:
            object.__setattr__(self, "queue", QueueSpec.parse(self.queue))
        object.__setattr__(self, "delay", DelayDistribution.parse(self.delay))
        if self.flow_extra is not None:
            object.__setattr__(self, "flow_extra", DelayDistribution.parse(self.flow_extra))
        object.__setattr__(self, "loss", LossModel.parse(self.loss))
        object.__setattr__(self, "multipath_extra",
                           DelayDistribution.parse(self.multipath_extra))
        for name in ("multipath_fraction", "boundary_reorder_fraction"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], not {getattr(self, name)}")
        if self.boundary_reorder_span_ns < 0:
            raise ValueError(f"boundary_reorder_span_ns must be non-negative, not "
                             f"{self.boundary_reorder_span_ns}")
        if int(self.clock_offset_ns) != self.clock_offset_ns:
            raise ValueError(f"clock_offset_ns must be an integer, not "
                             f"{self.clock_offset_ns}")

    def transmit(self, send_ts: np.ndarray, *, seed=0, boundaries=None,
                 flow_ids: np.ndarray | None = None,
                 frame_lengths: np.ndarray | None = None) -> Transmission:
        """Carry packets sent at ``send_ts`` (int64 ns) across the path.

        Delay, loss, multipath, boundary reordering and per-flow extra delay draw from
        independent child streams of ``seed`` (an int or
        :class:`numpy.random.SeedSequence`), so changing the loss rate keeps the same
        delays. ``boundaries`` (sorted int64 ns) enables boundary reordering;
        ``flow_ids`` is needed with ``flow_extra``, ``frame_lengths`` with ``queue`` (whose
        randomness, RED's drop draws, is a sixth child stream).
        """
        send_ts = np.asarray(send_ts, dtype=np.int64)
        n = len(send_ts)
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        r_delay, r_loss, r_multi, r_bound, r_flow = (np.random.default_rng(s)
                                                     for s in ss.spawn(5))
        arrival = send_ts + self.delay.sample_ns(n, r_delay)
        if self.flow_extra is not None:
            if flow_ids is None or len(flow_ids) != n:
                raise ValueError("flow_extra needs the flow id of every packet")
            flows = int(np.max(flow_ids)) + 1 if n else 0
            arrival += self.flow_extra.sample_ns(flows, r_flow)[flow_ids]
        if self.multipath_fraction > 0:
            slow = r_multi.random(n) < self.multipath_fraction
            arrival[slow] += self.multipath_extra.sample_ns(int(slow.sum()), r_multi)
        if (boundaries is not None and self.boundary_reorder_fraction > 0
                and self.boundary_reorder_span_ns > 0 and len(boundaries)):
            b = np.asarray(boundaries, dtype=np.int64)
            nxt = np.searchsorted(b, send_ts, side="right")
            has = nxt < len(b)
            bnext = np.where(has, b[np.minimum(nxt, len(b) - 1)], 0)
            near = has & (bnext - send_ts <= self.boundary_reorder_span_ns)
            pick = near & (r_bound.random(n) < self.boundary_reorder_fraction)
            held = bnext[pick] + r_bound.integers(0, self.boundary_reorder_span_ns,
                                                  int(pick.sum()))
            arrival[pick] = np.maximum(arrival[pick], held)
        dropped = self.loss.drops(n, r_loss)
        if self.queue is not None:
            if frame_lengths is None or len(frame_lengths) != n:
                raise ValueError("a queue needs the frame length of every packet")
            queued = run_queue(self.queue, send_ts, frame_lengths,
                               np.random.default_rng(ss.spawn(1)[0]))
            arrival += queued.sojourn_ns
            dropped |= queued.dropped
        receiver_ts = arrival + int(self.clock_offset_ns)
        if n and (receiver_ts[~dropped] < 0).any():
            raise ValueError("a receiver timestamp would be negative: raise the trace's "
                             "start time or the clock offset")
        return Transmission(send_ts, arrival, receiver_ts, dropped, int(self.clock_offset_ns))


# ---------------------------------------------------------------------------------------
# Observations and truth
# ---------------------------------------------------------------------------------------

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
    point assigned the packet to, or ``numpy.iinfo(int64).min`` when that point never
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
    present = present[present != _NO_INTERVAL]
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


def _interval_grid(t0: int, interval_ns: int | None, send_ts: np.ndarray):
    if interval_ns is None:
        span = int(send_ts[-1] - t0) + 1 if len(send_ts) else 1
        return span
    if int(interval_ns) <= 0:
        raise ValueError(f"interval_ns must be positive, not {interval_ns}")
    return int(interval_ns)


def split_intervals(trace: Trace, tx: Transmission, *, mode: str = "marker",
                    interval_ns: int | None = None,
                    start_ns: int | None = None) -> list[IntervalObservation]:
    """Assign each packet to intervals at both points (module docstring) and build the
    observations and truth. ``interval_ns=None``: one interval from ``start_ns``
    (default: the first send time) to the last send time (time mode: packets arriving
    after it fall into interval 1, receiver only)."""
    if mode not in ("marker", "time"):
        raise ValueError(f"mode must be 'marker' or 'time', not {mode!r}")
    send = tx.send_ts
    t0 = int(send[0]) if start_ns is None and len(send) else int(start_ns or 0)
    delta = _interval_grid(t0, interval_ns, send)
    s_iv = np.floor_divide(send - t0, delta)
    if mode == "marker":
        r_iv = s_iv.copy()
    else:
        r_iv = np.floor_divide(tx.receiver_ts - t0, delta)
    r_iv[tx.dropped] = _NO_INTERVAL
    idx = np.arange(len(trace), dtype=np.int64)
    return interval_observations(
        sender_trace=trace, receiver_trace=trace, sender_index=idx, receiver_index=idx,
        sender_ts=send, receiver_ts=tx.receiver_ts, sender_interval=s_iv,
        receiver_interval=r_iv, counted=trace.counted, dropped=tx.dropped,
        clock_offset_ns=tx.clock_offset_ns)


def observe(trace: Trace, channel: Channel, *, mode: str = "marker",
            interval_ns: int | None = None, start_ns: int | None = None,
            seed=0) -> list[IntervalObservation]:
    """Transmit ``trace`` over ``channel`` and split into intervals (both points)."""
    boundaries = None
    if mode == "time" and interval_ns is not None and len(trace):
        t0 = int(trace.timestamps[0]) if start_ns is None else int(start_ns)
        last = int(trace.timestamps[-1])
        boundaries = t0 + int(interval_ns) * np.arange(1, (last - t0) // int(interval_ns) + 2,
                                                       dtype=np.int64)
    tx = channel.transmit(trace.timestamps, seed=seed, boundaries=boundaries,
                          flow_ids=trace.flow_ids, frame_lengths=trace.frame_lengths)
    return split_intervals(trace, tx, mode=mode, interval_ns=interval_ns, start_ns=start_ns)


# ---------------------------------------------------------------------------------------
# Scenario: the one-call API for the CLI and the benchmarks
# ---------------------------------------------------------------------------------------

@dataclass(eq=False)
class Simulation:
    """One run of a :class:`Scenario`."""
    scenario: "Scenario"
    run: int
    trace: Trace
    intervals: list[IntervalObservation]


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """Everything that defines a simulated measurement, seeded.

    Traffic: ``packets``, ``flows``, ``rate_pps``, ``gaps``, ``size_dist``, ``shape``,
    ``frame_bytes``, ``ipv6_fraction``, ``window_bytes``, ``fast`` (see
    :func:`host_sw.model.traffic.synthetic_trace`). Path: ``delay``, ``loss``,
    ``multipath_*``, ``boundary_reorder_*``, ``flow_extra``, ``clock_offset_ns``, ``queue`` (see
:class:`Channel`).
    Intervals: ``mode`` and ``interval_ns`` (``None`` = one interval).
    ``seed`` seeds the trace (the same for every run, as in the LDA paper) and, with the
    run number, the channel.
    """
    packets: int = 100_000
    flows: int = 1000
    rate_pps: float = 5e6
    gaps: str = "poisson"
    size_dist: str = "pareto"
    shape: float = 1.2
    frame_bytes: object = "imix"
    ipv6_fraction: float = 0.0
    window_bytes: int = 64
    fast: bool = False
    delay: str | DelayDistribution = "weibull:shape=0.6,mean=200"
    loss: str | float | LossModel = 0.0
    multipath_fraction: float = 0.0
    multipath_extra: str | DelayDistribution = "constant:value=0"
    boundary_reorder_fraction: float = 0.0
    boundary_reorder_span_ns: int = 0
    flow_extra: str | DelayDistribution | None = None
    clock_offset_ns: int = 0
    queue: str | QueueSpec | None = None
    mode: str = "marker"
    interval_ns: int | None = None
    seed: int = 0

    def __post_init__(self):
        if self.mode not in ("marker", "time"):
            raise ValueError(f"mode must be 'marker' or 'time', not {self.mode!r}")
        if self.interval_ns is not None and int(self.interval_ns) <= 0:
            raise ValueError(f"interval_ns must be positive, not {self.interval_ns}")
        self.channel  # validates the path parameters early

    @property
    def channel(self) -> Channel:
        return Channel(delay=self.delay, loss=self.loss,
                       multipath_fraction=self.multipath_fraction,
                       multipath_extra=self.multipath_extra,
                       boundary_reorder_fraction=self.boundary_reorder_fraction,
                       boundary_reorder_span_ns=self.boundary_reorder_span_ns,
                       flow_extra=self.flow_extra,
                       clock_offset_ns=self.clock_offset_ns, queue=self.queue)

    def trace(self) -> Trace:
        """The scenario's trace (deterministic in ``seed``)."""
        return synthetic_trace(packets=self.packets, flows=self.flows,
                               rate_pps=self.rate_pps, gaps=self.gaps,
                               size_dist=self.size_dist, shape=self.shape,
                               frame_bytes=self.frame_bytes,
                               ipv6_fraction=self.ipv6_fraction,
                               window_bytes=self.window_bytes, fast=self.fast,
                               seed=self.seed)

    def run(self, run: int = 0, *, trace: Trace | None = None) -> Simulation:
        """Run ``run`` of the scenario (pass ``trace`` to reuse one across runs)."""
        trace = self.trace() if trace is None else trace
        intervals = observe(trace, self.channel, mode=self.mode,
                            interval_ns=self.interval_ns,
                            seed=np.random.SeedSequence([self.seed, run]))
        return Simulation(self, run, trace, intervals)


def simulate_interval(**scenario) -> IntervalObservation:
    """Shortcut: ``Scenario(**scenario).run().intervals[0]``."""
    return Scenario(**scenario).run().intervals[0]
