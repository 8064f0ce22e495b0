# SPDX-License-Identifier: BSD-2-Clause
"""The RLI golden model: where the sender injects reference packets, and exactly the
per-flow counters the receiver holds after interpolating between them.

RLI (Lee, Duffield and Kompella, SIGCOMM 2010) in the data flow (docs/DESIGN.md; model
layer, beside :mod:`host_sw.model.golden_lda_rda_lds`): the sender's stream ► **reference packets
inserted** (:func:`reference_positions`, :func:`with_references`) ► the path (a
:class:`~host_sw.model.queueing.QueueSpec` queue in the evaluation) ► the receiver, in
arrival order ► **interpolation buffer and per-flow counters** (:func:`receiver_synopsis`)
► :mod:`host_sw.estimators.rli.estimate`. The rules (reference schedule, fixed-point interpolation,
buffer overflow, the ends of the interval) are specified in docs/SPEC.md, section "RLI";
this module is their executable form, and a per-packet reference implementation in
``tests/model/test_rli.py`` checks it.

RLI does not fit :func:`host_sw.model.golden_lda_rda_lds.update`: a packet's increment is not a
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
           "ReferenceDesignator", "StreamedReceiver",
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
    unreferenced: int      # data packets buffered in an interval with no reference

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
        # the buffer still takes at most buffer_packets: the rest overflow, the buffered
        # are unreferenced at the interval's end (SPEC; the gateware counts the same)
        held = min(len(data), config.buffer_packets)
        stats = RliReceiverStats(0, 0, len(data) - held, held)
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


# ---------------------------------------------------------------------------------------
# The same rules fed in pieces (captures read as streams)
# ---------------------------------------------------------------------------------------

class ReferenceDesignator:
    """:func:`reference_positions`' ``after`` (the packets a reference follows), computed
    piece by piece over a stream in send order, with memory independent of its length
    (the carry: counts, the current utilisation window, the pending period times).

    ``add(send_ticks, frame_bytes, counted)`` returns the global indices of the pieces'
    packets that a reference follows (sorted; repeated when several follow one packet,
    as :func:`reference_positions`); ``finish()`` those only the stream's end decides
    (period rule: the times at or after the last piece's last tick). Send ticks must not
    decrease (the batch function's ``searchsorted`` assumes the same).
    """

    def __init__(self, config: RliConfig):
        self.config = config
        self.seen = 0              # packets before this piece
        self.counted = 0           # counted packets before this piece
        self.t0 = None
        self.next_k = 1            # period rule: the next time t0 + kP not yet placed
        self.last = None           # (global index, tick) of the last packet so far
        self.win = self.win_bytes = self.win_rank = self.prev_bytes = 0

    def add(self, send_ticks, frame_bytes, counted) -> np.ndarray:
        ticks = np.asarray(send_ticks, dtype=np.int64)
        counted = np.asarray(counted, dtype=bool)
        if not len(ticks):
            return np.zeros(0, np.int64)
        if self.t0 is None:
            self.t0 = int(ticks[0])
        c = self.config
        if c.ref_packets:
            cidx = np.flatnonzero(counted)
            rank = self.counted + np.arange(len(cidx))
            out = self.seen + cidx[(rank + 1) % c.ref_packets == 0]
        elif c.ref_period_ticks:
            out = self._period(ticks, int(ticks[-1]) - 1)
        else:
            out = self._adaptive(ticks, np.asarray(frame_bytes, dtype=np.float64), counted)
        self.seen += len(ticks)
        self.counted += int(counted.sum())
        self.last = (self.seen - 1, int(ticks[-1]))
        return out

    def finish(self) -> np.ndarray:
        if not self.config.ref_period_ticks or self.last is None:
            return np.zeros(0, np.int64)
        n = (self.last[1] - self.t0) // self.config.ref_period_ticks - self.next_k + 1
        self.next_k += max(n, 0)
        return np.full(max(n, 0), self.last[0], np.int64)

    def _period(self, ticks: np.ndarray, until: int) -> np.ndarray:
        """The period times up to ``until`` (below the piece's last tick, so no later
        packet can be sent at or before them): the last packet at or before each."""
        p = self.config.ref_period_ticks
        k_end = (until - self.t0) // p if until >= self.t0 else 0
        times = self.t0 + p * np.arange(self.next_k, k_end + 1, dtype=np.int64)
        self.next_k = max(self.next_k, k_end + 1)
        idx = self.seen + np.arange(len(ticks))
        if self.last is not None:
            ticks = np.concatenate([np.array([self.last[1]], np.int64), ticks])
            idx = np.concatenate([np.array([self.last[0]], np.int64), idx])
        return idx[np.searchsorted(ticks, times, side="right") - 1]

    def _adaptive(self, ticks, nbytes, counted) -> np.ndarray:
        """The adaptive rule with the current window's bytes, rank and its predecessor's
        bytes carried from piece to piece."""
        c = self.config
        wins = (ticks - self.t0) // c.adapt_window_ticks
        lo = int(wins[0])
        rel = wins - lo
        nw = int(rel[-1]) + 1
        wb = np.bincount(rel, weights=nbytes, minlength=nw)
        same = lo == self.win
        if same:
            wb[0] += self.win_bytes
        before = self.prev_bytes if same else (self.win_bytes if lo == self.win + 1 else 0.0)
        prev = np.r_[before, wb[:-1]]
        capacity = c.adapt_link_Bps * c.adapt_window_ticks * c.tick_ns * 1e-9
        spacing = adaptive_spacing(c, prev / capacity)
        cidx = np.flatnonzero(counted)
        cw = rel[cidx]
        starts = np.searchsorted(cw, np.arange(nw), side="left")
        rank = np.arange(len(cidx)) - starts[cw] + np.where((cw == 0) & same,
                                                              self.win_rank, 0)
        out = self.seen + cidx[(rank + 1) % spacing[cw] == 0]
        last_count = int((cw == nw - 1).sum())
        self.win_rank = last_count + (self.win_rank if nw == 1 and same else 0)
        self.prev_bytes, self.win_bytes, self.win = float(prev[-1]), float(wb[-1]), lo + nw - 1
        return out


class StreamedReceiver:
    """:func:`receiver_synopsis` of one interval fed in pieces of the arrival order: the
    same counters word for word, holding at most ``buffer_packets`` data packets (those
    after the last reference so far) and the last reference between pieces.

    ``add(flow_hashes, arrival, is_ref, ref_send, counted)`` takes a piece (arguments as
    :func:`receiver_synopsis`); ``finish()`` returns ``(Synopsis, RliReceiverStats)``.
    """

    def __init__(self, config: RliConfig):
        self.config = config
        self.synopsis = Synopsis.empty(config)
        self.references = self.counted = self.overflowed = 0
        self._excess = 0           # data past a full buffer before the next reference
        self._last = None          # (arrival, send tick) of the last reference
        self._arrival = np.zeros(0, np.int64)
        self._flow = np.zeros((2, 0), np.uint64)

    def _hold(self, arrival, flow) -> None:
        room = self.config.buffer_packets - len(self._arrival)
        self._excess += max(0, len(arrival) - room)
        self._arrival = np.concatenate([self._arrival, arrival[:room]])
        self._flow = np.concatenate([self._flow, flow[:, :room]], axis=1)

    def _run(self, flow, arrival, is_ref, ref_send, data) -> None:
        """Interpolate the buffered packets, then a piece ending with a reference."""
        # (typed arrays throughout: a float64 step would round epoch-ns ticks)
        lead = np.array([] if self._last is None else [self._last], np.int64).reshape(-1, 2)
        m, n = len(lead), len(self._arrival)
        arr = np.concatenate([lead[:, 0], self._arrival, arrival])
        ref = np.concatenate([np.ones(m, bool), np.zeros(n, bool), is_ref])
        send = np.concatenate([lead[:, 1], np.zeros(n, np.int64), ref_send])
        dat = np.concatenate([np.zeros(m, bool), np.ones(n, bool), data])
        flows = np.concatenate([np.zeros((2, m), np.uint64), self._flow, flow], axis=1)
        delay, kept, stats = interpolated_delays(self.config, arr, ref, send, dat)
        cells, digests = flow_cells(self.config, flows[:, kept])
        self.synopsis = self.synopsis.merged(_accumulate(self.config, cells, digests, delay))
        self.references += stats.references - m
        self.counted += stats.counted
        self.overflowed += stats.overflowed + self._excess
        self._excess = 0
        self._arrival = np.zeros(0, np.int64)
        self._flow = np.zeros((2, 0), np.uint64)

    def add(self, flow_hashes, arrival, is_ref, ref_send, counted) -> None:
        flow = np.asarray(flow_hashes, dtype=np.uint64)
        arrival = np.asarray(arrival, dtype=np.int64)
        is_ref = np.asarray(is_ref, dtype=bool)
        ref_send = np.asarray(ref_send, dtype=np.int64)
        data = np.asarray(counted, dtype=bool) & ~is_ref
        r_idx = np.flatnonzero(is_ref)
        if len(r_idx):
            end = int(r_idx[-1]) + 1
            self._run(flow[:, :end], arrival[:end], is_ref[:end], ref_send[:end], data[:end])
            self._last = (int(arrival[end - 1]), int(ref_send[end - 1]))
            flow, arrival, data = flow[:, end:], arrival[end:], data[end:]
        self._hold(arrival[data], flow[:, data])

    def finish(self):
        """The interval's counters and stats (the packets still buffered get the last
        reference's delay; with no reference at all, none is counted: the buffered are
        unreferenced, those past a full buffer overflowed)."""
        if self._last is None:
            return Synopsis.empty(self.config), RliReceiverStats(
                0, 0, self._excess, len(self._arrival))
        if len(self._arrival) or self._excess:
            empty = np.zeros(0, np.int64)
            self._run(np.zeros((2, 0), np.uint64), empty, empty.astype(bool), empty,
                      empty.astype(bool))
        return self.synopsis, RliReceiverStats(self.references, self.counted,
                                               self.overflowed, 0)
