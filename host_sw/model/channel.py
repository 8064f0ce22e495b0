# SPDX-License-Identifier: BSD-2-Clause
"""The path between the two measurement points, simulated: delay, loss, reordering and
clock offset, turned into both points' per-interval observations plus exact ground truth.

Data flow (docs/DESIGN.md, "Data flow of a packet"; model layer): a
:class:`~host_sw.model.traffic.Trace` (what the sender sees) ►
**channel** ► per interval, the sender's and the receiver's packets with their own
timestamps (► :func:`host_sw.model.golden_lda_rda_lds.update` ► synopses ► estimators), and the truth the
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

The observations and the ground truth of each interval (what ``lost``, ``reordered`` and
``delays`` mean) are :mod:`host_sw.model.observation`.

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

from dataclasses import dataclass

import numpy as np

from host_sw.model.impairments import DelayDistribution, LossModel
from host_sw.model.observation import (
    NO_INTERVAL, IntervalObservation, interval_observations,
)
from host_sw.model.queueing import QueueSpec, run_queue
from host_sw.model.traffic import Trace, synthetic_trace

__all__ = ["Channel", "Transmission", "Simulation", "Scenario", "split_intervals",
           "observe", "simulate_interval"]


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
# Intervals at both points
# ---------------------------------------------------------------------------------------

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
    r_iv[tx.dropped] = NO_INTERVAL
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
