# SPDX-License-Identifier: BSD-2-Clause
"""The RLI golden model: where the sender injects reference packets, and exactly the
per-flow counters the receiver holds after interpolating between them.

RLI (Lee, Duffield and Kompella, SIGCOMM 2010) in the data flow (docs/DESIGN.md; model
layer, beside :mod:`host_sw.model.golden`): the sender's stream ► **reference packets
inserted** (:func:`reference_positions`, :func:`with_references`) ► the path (a
:class:`~host_sw.model.queueing.QueueSpec` queue in the evaluation) ► the receiver, in
arrival order ► **interpolation buffer and per-flow counters** (:func:`receiver_synopsis`)
► :mod:`host_sw.estimators.rli`. The rules (reference schedule, fixed-point interpolation,
buffer overflow, the ends of the interval) are specified in docs/SPEC.md, section "RLI";
this module is their executable form, and a per-packet reference implementation in
``tests/model/test_rli.py`` checks it.

RLI does not fit :func:`host_sw.model.golden.update`: a packet's increment is not a
function of its own hash and timestamp but of the reference packets around it, so this
module has its own entry points (``UPDATE_GROUPS`` has no ``rli`` row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import RliConfig
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, FrameClass
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.traffic import Trace

__all__ = ["REFERENCE_FRAME_BYTES", "reference_positions", "adaptive_spacing",
           "with_references", "flow_cells", "RliReceiverStats", "interpolated_delays",
           "receiver_synopsis", "sender_synopsis"]

#: Length of a reference frame (without FCS): a minimum Ethernet frame.
REFERENCE_FRAME_BYTES = 60

_M32 = np.uint64(0xFFFFFFFF)


# ---------------------------------------------------------------------------------------
# Sender: where the references go
# ---------------------------------------------------------------------------------------

def adaptive_spacing(config: RliConfig, utilisation: np.ndarray) -> np.ndarray:
    """Reference spacing N (one reference per N counted packets) for measured utilisations:
    ``ref_packets_low_util`` at or below ``util_low``, ``ref_packets_high_util`` at or above
    ``util_high``, geometric in between (rounded to the nearest integer)."""
    u = np.asarray(utilisation, dtype=np.float64)
    lo, hi = config.ref_packets_low_util, config.ref_packets_high_util
    x = np.clip((u - config.util_low) / (config.util_high - config.util_low), 0.0, 1.0)
    return np.rint(lo * (hi / lo) ** x).astype(np.int64)


def _every_nth(counted_idx: np.ndarray, n: int) -> np.ndarray:
    return counted_idx[n - 1::n]


def _in_the_gap(send_ticks: np.ndarray, after: np.ndarray) -> np.ndarray:
    """A reference's send tick: the middle of the gap after its packet (the last packet's
    own tick). Sent in the gap, it samples the queue between packets; stamped with the
    packet's own tick it would arrive together with that packet and always wait for it
    (docs/ACCURACY.md, RLI)."""
    nxt = np.minimum(after + 1, len(send_ticks) - 1)
    return send_ticks[after] + (send_ticks[nxt] - send_ticks[after]) // 2


def reference_positions(config: RliConfig, send_ticks: np.ndarray, frame_bytes: np.ndarray,
                        counted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the sender inserts reference packets: ``(after, ticks)`` — each reference
    goes right after data packet ``after[j]`` (sorted; repeated when several follow one
    packet) and carries send timestamp ``ticks[j]`` (docs/SPEC.md "RLI", "Reference
    schedule")."""
    send_ticks = np.asarray(send_ticks, dtype=np.int64)
    cidx = np.flatnonzero(counted)
    if config.ref_packets:
        after = _every_nth(cidx, config.ref_packets)
        return after, _in_the_gap(send_ticks, after)
    if len(send_ticks) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    t0 = int(send_ticks[0])
    if config.ref_period_ticks:
        p = config.ref_period_ticks
        times = t0 + p * np.arange(1, (int(send_ticks[-1]) - t0) // p + 1, dtype=np.int64)
        after = np.searchsorted(send_ticks, times, side="right") - 1
        return after, times
    w = config.adapt_window_ticks
    window = (send_ticks - t0) // w
    nwin = int(window[-1]) + 1
    window_bytes = np.bincount(window, weights=frame_bytes, minlength=nwin)
    capacity = config.adapt_link_Bps * w * config.tick_ns * 1e-9
    util = window_bytes / capacity
    spacing = adaptive_spacing(config, np.concatenate(([0.0], util[:-1])))
    cwin = window[cidx]
    starts = np.searchsorted(cwin, np.arange(nwin), side="left")
    rank = np.arange(len(cidx)) - starts[cwin]
    after = cidx[(rank + 1) % spacing[cwin] == 0]
    return after, _in_the_gap(send_ticks, after)


def _reference_window(window_bytes: int) -> np.ndarray:
    """A reference frame's header window: broadcast destination, EtherType 0x88B5."""
    w = np.zeros(window_bytes, dtype=np.uint8)
    w[:6] = 0xFF
    w[12:14] = (ETHERTYPE_CONTROL >> 8, ETHERTYPE_CONTROL & 0xFF)
    return w


def with_references(trace: Trace, config: RliConfig) -> tuple[Trace, np.ndarray]:
    """The sender's stream with the reference packets inserted (:func:`reference_positions`
    on the trace's own ns timestamps, one tick = ``tick_ns``), and the boolean mask of
    reference rows. References are control frames (never counted by any kind) of
    :data:`REFERENCE_FRAME_BYTES` in a flow of their own (``num_flows`` of the old trace);
    their timestamp is their send time."""
    tick = config.tick_ns
    ticks = trace.timestamps if tick == 1 else np.floor(trace.timestamps / tick).astype(np.int64)
    after, ref_ticks = reference_positions(config, ticks, trace.frame_lengths, trace.counted)
    ref_ns = ref_ticks if tick == 1 else np.ceil(ref_ticks * tick).astype(np.int64)
    if len(after):
        nxt = trace.timestamps[np.minimum(after + 1, len(trace) - 1)]
        ref_ns = np.clip(ref_ns, trace.timestamps[after], np.maximum(nxt, trace.timestamps[after]))
    at = after + 1
    m = len(at)
    ref_flow = trace.num_flows

    def ins(arr, value):
        return None if arr is None else np.insert(arr, at, value, axis=0)

    windows = None
    if trace.windows is not None:
        windows = np.insert(trace.windows, at, _reference_window(trace.windows.shape[1]),
                            axis=0)
    flow_windows = None
    if trace.flow_windows is not None:
        flow_windows = np.vstack([trace.flow_windows,
                                  _reference_window(trace.flow_windows.shape[1])[None]])
    flow_classes = None if trace.flow_classes is None else np.append(
        trace.flow_classes, FrameClass.CONTROL)
    flow_keys = None if trace.flow_keys is None else np.append(trace.flow_keys,
                                                                np.uint64(0))
    out = Trace(np.insert(trace.timestamps, at, ref_ns),
                np.insert(trace.flow_ids, at, ref_flow),
                np.insert(trace.frame_lengths, at, REFERENCE_FRAME_BYTES),
                np.insert(trace.classes, at, FrameClass.CONTROL),
                windows=windows, flow_windows=flow_windows, flow_classes=flow_classes,
                packet_keys=ins(trace.packet_keys, np.uint64(0)), flow_keys=flow_keys)
    is_ref = np.zeros(len(out), dtype=bool)
    is_ref[at + np.arange(m)] = True
    return out, is_ref


# ---------------------------------------------------------------------------------------
# Receiver: interpolation and per-flow counters
# ---------------------------------------------------------------------------------------

def flow_cells(config: RliConfig, flow_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cell, digest)`` of packets or flows from their two flow hashes (``(2, N)``
    uint64, :meth:`~host_sw.model.traffic.Trace.flow_hashes` rows 0 and 1)."""
    h = np.asarray(flow_hashes, dtype=np.uint64)
    cell = ((h[0] & _M32) * np.uint64(config.cells)) >> np.uint64(32)
    mask = np.uint64((1 << config.digest_bits) - 1) if config.digest_bits < 64 else \
        np.uint64(0xFFFFFFFFFFFFFFFF)
    return cell.astype(np.int64), h[1] & mask


@dataclass(frozen=True)
class RliReceiverStats:
    """What the receiver reports beside its counters for one interval."""
    references: int        # reference packets received
    counted: int           # data packets added to the counters
    overflowed: int        # data packets dropped from a full interpolation buffer
    unreferenced: int      # data packets with no reference in the interval at all

    @property
    def flagged(self) -> bool:
        """The interval is flagged (buffer overflow: some packets are not counted)."""
        return self.overflowed > 0


def interpolated_delays(config: RliConfig, arrival: np.ndarray, is_ref: np.ndarray,
                        ref_send: np.ndarray, is_data: np.ndarray):
    """Per data packet (in arrival order) its interpolated delay in ticks, and which data
    packets are counted: ``(delay int64 over kept packets, kept indices, stats)``
    (docs/SPEC.md "RLI", "Interpolation")."""
    arrival = np.asarray(arrival, dtype=np.int64)
    r_idx = np.flatnonzero(is_ref)
    d_ref = arrival[r_idx] - np.asarray(ref_send, dtype=np.int64)[r_idx]
    a_ref = arrival[r_idx]
    data = np.flatnonzero(is_data & ~is_ref)
    n_ref = len(r_idx)
    if n_ref == 0:
        stats = RliReceiverStats(0, 0, 0, len(data))
        return np.zeros(0, np.int64), np.zeros(0, np.int64), stats
    k = np.cumsum(is_ref)[data]                 # references before each data packet
    seg_start = np.searchsorted(k, np.arange(n_ref + 1), side="left")
    rank = np.arange(len(data)) - seg_start[k]
    keep = rank < config.buffer_packets
    overflowed = int((~keep).sum())
    data, k = data[keep], k[keep]
    prev = np.clip(k - 1, 0, n_ref - 1)
    nxt = np.clip(k, 0, n_ref - 1)
    d1, d2 = d_ref[prev], d_ref[nxt]
    a1, a2 = a_ref[prev], a_ref[nxt]
    span = a2 - a1
    f = config.slope_frac_bits
    both = (k > 0) & (k < n_ref) & (span > 0)
    slope = np.zeros(len(data), np.int64)
    slope[both] = ((d2[both] - d1[both]) << f) // span[both]
    delay = np.where(k == 0, d2, d1 + ((slope * (arrival[data] - a1)) >> f))
    stats = RliReceiverStats(n_ref, len(data), overflowed, 0)
    return delay, data, stats


def _accumulate(config: RliConfig, cells, digests, delays) -> Synopsis:
    syn = Synopsis.empty(config)
    n = config.cells
    count = np.bincount(cells, minlength=n).astype(np.uint64)
    fields = {"count": count}
    d = delays.astype(np.int64).view(np.uint64) if delays is not None else None
    for name, values in (("delay_sum", d), ("delay_sq_sum", None if d is None else d * d),
                         ("digest_sum", digests)):
        arr = np.zeros(n, dtype=np.uint64)
        if values is not None:
            np.add.at(arr, cells, values.astype(np.uint64))
        fields[name] = arr
    for f in config.layout.fields:
        arr = fields[f.name]
        if f.width < 64:
            arr &= np.uint64((1 << f.width) - 1)
        syn.fields[f.name] = arr.reshape(config.shape)
    return syn


def receiver_synopsis(config: RliConfig, flow_hashes: np.ndarray, arrival: np.ndarray,
                      is_ref: np.ndarray, ref_send: np.ndarray, counted: np.ndarray):
    """The receiver's counters for one interval: ``(Synopsis, RliReceiverStats)``.

    Arguments are per received packet in arrival order: ``flow_hashes`` ``(2, N)`` (their
    values at references are ignored), ``arrival`` ticks, ``is_ref``, ``ref_send`` (the
    send timestamp a reference carries; ignored elsewhere), ``counted`` (data frames).
    """
    is_ref = np.asarray(is_ref, dtype=bool)
    counted = np.asarray(counted, dtype=bool)
    delay, kept, stats = interpolated_delays(config, arrival, is_ref, ref_send, counted)
    cells, digests = flow_cells(config, np.asarray(flow_hashes)[:, kept])
    return _accumulate(config, cells, digests, delay), stats


def sender_synopsis(config: RliConfig, flow_hashes: np.ndarray, counted: np.ndarray
                    ) -> Synopsis:
    """The sender's cells: ``count`` and ``digest_sum`` of its counted data packets, the
    delay fields zero (RLI's sender keeps no per-flow state; these give per-flow loss)."""
    sel = np.flatnonzero(np.asarray(counted, dtype=bool))
    cells, digests = flow_cells(config, np.asarray(flow_hashes)[:, sel])
    return _accumulate(config, cells, digests, None)
