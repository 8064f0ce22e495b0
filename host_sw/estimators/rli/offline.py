# SPDX-License-Identifier: BSD-2-Clause
"""RLI from two packet captures, streamed: the receiver's per-flow cells as the golden
model computes them from the references the sender capture supplies, the sender's cells,
and the truth of every flow.

In the host data flow (``docs/DESIGN.md``, "offline analysis") this is RLI's branch of
:func:`host_sw.estimators.offline.capture_records`: sender capture ► references (and the
sender's cells) ► receiver capture in arrival order ► :class:`~host_sw.model.golden_rli.
StreamedReceiver` (interpolation, per-flow counters; word for word the golden
:func:`~host_sw.model.golden_rli.receiver_synopsis`) ► per-interval synopses; both captures'
counted packets spilled and matched per partition for the truth (as
:mod:`host_sw.estimators.offline_stream`).

Where the references come from (docs/CLI.md, estimate):

* **reference frames** (control frames of type 3, :mod:`host_sw.contracts.frames.reference_frame`)
  in the sender capture: matched with the receiver capture's by sequence number; a
  reference's delay is its receiver capture time minus its sender capture time (both
  captures' clocks, as every truth here). A frame whose tag does not verify (zero key, or
  the ``key``) or that is cut before its tag, in either capture, is not used, and counted;
* **the configured rule** when the sender capture holds no reference frame: the packets
  :class:`~host_sw.model.golden_rli.ReferenceDesignator` designates in the sender capture
  (``RliConfig``'s rule on the capture's send times) are references, found at the
  receiver by their packet hash. Such a packet is a reference placed just before
  itself and is also counted: its interpolated delay is its measured delay.

Pairs that are only partly one stream at two points (issue 23, item 3) are handled as
:func:`~host_sw.estimators.offline_stream.stream_pair` handles them, with its
definitions: when the captures saw different windows
(:func:`~host_sw.estimators.offline_stream.common_window`), both are read again keeping
the sender's packets of the window both saw and the receiver's packets of those (or,
not in the sender capture, arrived where no edge explains them); the references still
come from the whole sender capture (they are not counted). The pairing counts (delays'
range, receiver packets the sender capture does not hold) feed the same checks
(:func:`host_sw.estimators.offline._streamed_check`).

Memory: the reference frames' (or designated packets') send times (a fraction of the
packets), one flow entry per flow, the receiver's buffer (``buffer_packets``), when
trimming the match keys of the sender's packets within the largest delay of the
window's edges; the truth's per-packet records go to temporary files beyond
:data:`~host_sw.estimators.offline_stream.SPILL_MEMORY_BYTES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.frame_format import ControlFrameError
from host_sw.contracts.frames.frame_format import field_by_name
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.frames.reference_frame import (REFERENCE_FRAME_BYTES, TYPE_REFERENCE,
                                               parse_reference)
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.offline_stream import (FlowTable, StreamedPair, _Grid, _key_hashers,
                                               _match, _partitions, _Spill, _ticks,
                                               common_window)
from host_sw.estimators.rli.estimate import estimate_flows
from host_sw.model.golden_lda_rda_lds import hash_windows, hashers_for
from host_sw.model.pcap_stream import DEFAULT_CHUNK_BYTES, iter_capture
from host_sw.model.golden_rli import ReferenceDesignator, StreamedReceiver, sender_synopsis

__all__ = ["RliCapturePair", "ReferenceCounts", "stream_rli_pair", "reference_rows",
           "interval_truth", "flow_table"]

_TYPE_AT = field_by_name("type").offset
_SPILL = np.dtype([("key", "<u8"), ("ts", "<i8"), ("iv", "<i8"), ("flow", "<i8")])


def reference_rows(chunk) -> np.ndarray:
    """Indices of a chunk's frames that claim to be reference frames (EtherType 0x88B5,
    type 3), checked or not: also those cut short by the capture's snap length (the tap
    would call them runts), so that a reference whose tag is missing is counted as
    rejected, not silently absent."""
    w = chunk.windows
    ethertype = (w[:, 12].astype(np.int64) << 8) | w[:, 13]
    claims = (ethertype == ETHERTYPE_CONTROL) & (w[:, _TYPE_AT] == TYPE_REFERENCE)
    return np.flatnonzero(claims & (chunk.lengths > _TYPE_AT))


@dataclass
class ReferenceCounts:
    """Where the references came from and what became of them (the record's notes)."""
    source: str = "rule"           # "frames" or "rule"
    sender: int = 0                # reference frames (or designated packets) at the sender
    sender_rejected: int = 0       # sender frames whose tag or layout did not check
    receiver_rejected: int = 0     # receiver frames whose tag or layout did not check
    unmatched: int = 0             # receiver frames with no checked sender copy
    ambiguous: int = 0             # designated packets whose key the sender repeats
    used: int = 0                  # references the receiver interpolated with

    def notes(self) -> list[str]:
        if self.source == "frames":
            out = [f"RLI references: {self.sender} reference frames in the sender capture, "
                   f"{self.used} used at the receiver"]
            for n, what in ((self.sender_rejected, "in the sender capture failed their "
                             "tag or layout check (not used)"),
                            (self.receiver_rejected, "in the receiver capture failed their "
                             "tag or layout check (not used)"),
                            (self.unmatched, "in the receiver capture have no checked "
                             "sender copy (not used)")):
                if n:
                    out.append(f"RLI references: {n} reference frames {what}")
            return out
        out = [f"RLI references: no reference frame in the sender capture; {self.sender} "
               f"sender packets designated by the configured rule, {self.used} found at "
               f"the receiver"]
        if self.ambiguous:
            out.append(f"RLI references: {self.ambiguous} designated packets not used "
                       f"(another designated packet has the same packet hash)")
        return out


@dataclass
class RliCapturePair:
    """What :func:`stream_rli_pair` learnt: per interval both points' cells and the
    receiver's stats; the flows seen; the truth (per interval and flow)."""
    config: RliConfig
    sender: dict                   # interval -> Synopsis
    receiver: dict                 # interval -> (Synopsis, RliReceiverStats)
    meta: dict                     # side -> interval -> [packets, first_ns, last_ns]
    refs: ReferenceCounts
    flows: FlowTable
    sent: int = 0
    received: int = 0
    matched: int = 0
    negative: int = 0
    zero: int = 0
    truth: dict = field(default_factory=dict)       # interval -> aggregate sums
    flow_truth: dict = field(default_factory=dict)  # interval -> per-flow arrays
    #: Packets repeating an earlier one's key, per capture.
    duplicates: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    # what the pairing shows, as :class:`~host_sw.estimators.offline_stream.StreamedPair`
    delay_min: int | None = None     # of the matched packets, ns
    delay_max: int | None = None
    delay_sum: int = 0
    unmatched: int = 0        # receiver packets not in the sender capture (kept ones)
    window: tuple | None = None      # (lo, hi, margin) ns: the window both saw
    left_out: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    start_ns: int | None = None      # the interval grid's origin

    #: First and last timestamp (ns) of a capture's packets (StreamedPair's definition).
    ends = StreamedPair.ends

    @property
    def intervals(self) -> list[int]:
        return sorted(set(self.sender) | set(self.receiver))


class _Band:
    """The match keys of the sender's kept packets near the window's edges (a multiset):
    a receiver packet outside the window's certain part is kept when it takes one."""

    def __init__(self, keys: list):
        k = np.sort(np.concatenate(keys)) if keys else np.zeros(0, np.uint64)
        self.keys, first, counts = np.unique(k, return_index=True, return_counts=True)
        self.left = counts.astype(np.int64)

    def take(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key (in order) takes an unused copy; the copies taken are used."""
        if not len(self.keys) or not len(keys):
            return np.zeros(len(keys), bool)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = self.keys[pos] == keys
        order = np.argsort(keys, kind="stable")
        k = keys[order]
        start = np.r_[True, k[1:] != k[:-1]]
        gid = np.cumsum(start) - 1
        rank = np.empty(len(keys), np.int64)
        rank[order] = np.arange(len(k)) - np.flatnonzero(start)[gid]
        ok = hit & (rank < self.left[pos])
        np.subtract.at(self.left, pos[ok], 1)
        return ok


def _meta(meta: dict, iv: np.ndarray, ts: np.ndarray) -> None:
    for k in np.unique(iv).tolist():
        part = ts[iv == k]
        m = meta.setdefault(k, [0, None, None])
        m[0] += len(part)
        lo, hi = int(part.min()), int(part.max())
        m[1] = lo if m[1] is None else min(m[1], lo)
        m[2] = hi if m[2] is None else max(m[2], hi)


def _check_references(chunk, rows, key) -> tuple[list, int]:
    """``[(row, seq)]`` of the reference frames whose layout and tag check, and how many
    did not."""
    good, bad = [], 0
    for i in rows.tolist():
        frame = bytes(chunk.windows[i, :min(int(chunk.lengths[i]), chunk.windows.shape[1])])
        try:
            good.append((i, parse_reference(frame, key=key).seq))
        except ControlFrameError:
            bad += 1
    return good, bad


class _Side:
    """What both passes share: hashing, intervals, flows, the truth's spill."""

    def __init__(self, config, grid, spill, flows, options):
        self.config, self.grid, self.spill, self.flows = config, grid, spill, flows
        self.hashers = hashers_for(config)
        self.key_hashers = _key_hashers(config)
        self.options = options
        self.window = max(config.window_bytes, REFERENCE_FRAME_BYTES)

    def chunks(self, path):
        for chunk in iter_capture(path, window_bytes=self.window,
                                  chunk_bytes=self.options["chunk_bytes"],
                                  progress=self.options["progress"]):
            w = chunk.windows[:, :self.config.window_bytes]
            h = hash_windows(self.config, w, chunk.classes, self.hashers)
            key = h.packet if self.key_hashers is None else hash_windows(
                self.key_hashers.config, w, chunk.classes, self.key_hashers).packet
            flow = self.flows.assign(h.flow, w, chunk.classes, h.counted)
            yield chunk, h, key, flow

    def spill_counted(self, side, counted, key, ts, iv, flow) -> int:
        sel = np.flatnonzero(counted)
        recs = np.zeros(len(sel), _SPILL)
        recs["key"], recs["ts"] = key[sel], ts[sel]
        recs["iv"], recs["flow"] = iv[sel], flow[sel]
        self.spill.add(side, recs)
        return len(sel)


def _sender_pass(side: _Side, path, pair: RliCapturePair, key, keep=None):
    """The sender's cells, reference frames (seq → capture ns) and designated packets
    (sorted keys, capture ns), and its truth records. ``keep``: ``(lo, hi, low band,
    high band)`` ns: only the packets sent in ``[lo, hi]`` are counted (references come
    from every packet), and the keys of those sent before ``low band`` or after ``high
    band`` are collected (``side.band``)."""
    config = side.config
    designator = ReferenceDesignator(config)
    frames, bad_seqs = {}, set()
    des_keys, des_ts = [], []
    offset, last, n_frames = 0, (np.uint64(0), 0), 0
    band = []
    for chunk, h, pkey, flow in side.chunks(path):
        ts = chunk.timestamps_ns
        ticks = _ticks(ts, config.tick_ns)
        inside = slice(None)
        if keep is not None:
            inside = np.flatnonzero((ts >= keep[0]) & (ts <= keep[1]))
            pair.left_out["sender"] += len(ts) - len(inside)
            at = inside[h.counted[inside] & ((ts[inside] < keep[2]) | (ts[inside] > keep[3]))]
            band.append(pkey[at])
        k_ts, k_flow, k_counted = ts[inside], h.flow[:, inside], h.counted[inside]
        iv = side.grid.assign(k_ts, "sender")
        for k in np.unique(iv).tolist():
            sel = np.flatnonzero(iv == k)
            syn = sender_synopsis(config, k_flow[:, sel], k_counted[sel])
            got = pair.sender.get(k)
            pair.sender[k] = syn if got is None else got.merged(syn)
        _meta(pair.meta["sender"], iv, k_ts)
        pair.sent += side.spill_counted("sender", k_counted, pkey[inside], k_ts, iv,
                                        flow[inside])
        rows = reference_rows(chunk)
        good, bad = _check_references(chunk, rows, key)
        n_frames += len(rows)
        pair.refs.sender_rejected += bad
        for i, seq in good:
            if seq in frames:
                bad_seqs.add(seq)
            frames[seq] = int(ts[i])
        at = designator.add(ticks, chunk.original_lengths, h.counted) - offset
        _designate(des_keys, des_ts, at, pkey, ts, h.counted, last)
        offset += len(ts)
        last = (pkey[-1], int(ts[-1])) if h.counted[-1] else (None, 0)
    _designate(des_keys, des_ts, designator.finish() - offset, None, None, None, last)
    for seq in bad_seqs:          # a number sent twice: neither copy can be matched
        frames.pop(seq)
    side.band = _Band(band) if keep is not None else None
    if n_frames:
        pair.refs.source, pair.refs.sender = "frames", n_frames
        return frames, (np.zeros(0, np.uint64), np.zeros(0, np.int64))
    return frames, _designated(des_keys, des_ts, pair.refs)


def _designate(keys: list, ts: list, at, pkey, pts, counted, last) -> None:
    """Collect the designated packets ``at`` (chunk indices; -1: the previous chunk's
    last packet, ``last``); a designated packet the tap does not count (no packet hash)
    cannot be found at the receiver and is left out."""
    old = at < 0
    if old.any() and last[0] is not None:
        keys.append(np.full(int(old.sum()), last[0], np.uint64))
        ts.append(np.full(int(old.sum()), last[1], np.int64))
    at = at[~old]
    if len(at):
        at = at[counted[at]]
        keys.append(pkey[at])
        ts.append(pts[at])


def _designated(keys: list, ts: list, refs: ReferenceCounts):
    """The designated packets as sorted unique keys with their send time. A packet
    designated more than once (the period rule, in a gap longer than the period) is one
    reference; two designated packets with the same key are dropped (ambiguous)."""
    if not keys:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    k, t = np.concatenate(keys), np.concatenate(ts)
    order = np.lexsort((t, k))
    k, t = k[order], t[order]
    again = np.r_[False, (k[1:] == k[:-1]) & (t[1:] == t[:-1])]
    k, t = k[~again], t[~again]
    u, first, counts = np.unique(k, return_index=True, return_counts=True)
    refs.sender = len(u)
    refs.ambiguous = int((counts > 1).sum())
    keep = counts == 1
    return u[keep], t[first[keep]]


def _receiver_refs(chunk, key, pkey, counted, frames, designated, used, refs):
    """Per receiver packet of a chunk: ``(is_ref, send ns)`` — reference frames matched
    to a checked sender copy, or (rule) designated packets (inserted as a reference just
    before the packet; returned as ``insert_at``)."""
    n = len(chunk)
    is_ref = np.zeros(n, bool)
    send = np.zeros(n, np.int64)
    insert_at = np.zeros(0, np.int64)
    if refs.source == "frames":
        rows = reference_rows(chunk)
        good, bad = _check_references(chunk, rows, key)
        refs.receiver_rejected += bad
        for i, seq in good:
            if seq in frames and seq not in used:
                used.add(seq)
                is_ref[i], send[i] = True, frames[seq]
            else:
                refs.unmatched += 1
        return is_ref, send, insert_at
    d_keys, d_ts = designated
    if len(d_keys):
        sel = np.flatnonzero(counted)
        pos = np.minimum(np.searchsorted(d_keys, pkey[sel]), len(d_keys) - 1)
        match = (d_keys[pos] == pkey[sel]) & ~used[pos]
        hit, hit_pos = sel[match], pos[match]
        hit_pos, first = np.unique(hit_pos, return_index=True)   # one use per key
        used[hit_pos] = True
        send[hit[first]] = d_ts[hit_pos]
        insert_at = np.sort(hit[first])
    return is_ref, send, insert_at


def _receiver_kept(side: _Side, ts, counted, pkey, keep) -> np.ndarray:
    """Which receiver packets a trimmed pass keeps (``keep``: ``(lo, hi, margin)``):
    the counted ones arrived in ``[lo + margin, hi]`` (the window's certain part, as
    :func:`~host_sw.estimators.offline_stream.common_window` says) and, elsewhere, those
    of a kept sender packet; packets not counted are kept (they are not data)."""
    lo, hi, margin = keep
    edge = counted & ((ts < lo + margin) | (ts > hi))
    kept = np.ones(len(ts), bool)
    at = np.flatnonzero(edge)
    kept[at] = side.band.take(pkey[at])
    return kept


def _receiver_pass(side: _Side, path, pair: RliCapturePair, key, frames, designated,
                   keep=None):
    config = side.config
    receivers = {}
    used = set() if pair.refs.source == "frames" else np.zeros(len(designated[0]), bool)
    for chunk, h, pkey, flow in side.chunks(path):
        ts = chunk.timestamps_ns
        iv = side.grid.assign(ts, "receiver")
        data = h.counted
        if keep is not None:
            kept = _receiver_kept(side, ts, h.counted, pkey, keep)
            pair.left_out["receiver"] += int((~kept).sum())
            data = h.counted & kept
            _meta(pair.meta["receiver"], iv[kept], ts[kept])
        else:
            _meta(pair.meta["receiver"], iv, ts)
        pair.received += side.spill_counted("receiver", data, pkey, ts, iv, flow)
        is_ref, send, ins = _receiver_refs(chunk, key, pkey, h.counted, frames,
                                           designated, used, pair.refs)
        arrival, counted, flows = _ticks(ts, config.tick_ns), data & ~is_ref, h.flow
        if len(ins):       # the designated packets: a reference just before each
            arrival = np.insert(arrival, ins, arrival[ins])
            flows = np.insert(flows, ins, 0, axis=1)
            counted = np.insert(counted, ins, False)
            is_ref = np.insert(is_ref, ins, True)
            send = np.insert(np.zeros(len(ts), np.int64), ins, send[ins])
            iv = np.insert(iv, ins, iv[ins])
        send_ticks = _ticks(send, config.tick_ns)
        for k in np.unique(iv).tolist():
            sel = np.flatnonzero(iv == k)
            r = receivers.setdefault(k, StreamedReceiver(config))
            r.add(flows[:, sel], arrival[sel], is_ref[sel], send_ticks[sel], counted[sel])
    for k, r in receivers.items():
        pair.receiver[k] = r.finish()
        pair.refs.used += pair.receiver[k][1].references


def _pair_partition(pair: RliCapturePair, s: np.ndarray, r: np.ndarray) -> None:
    """Match one partition; add to the truth per interval (the sender's) and flow."""
    si, ri = _match(s["key"], r["key"])
    for side, recs in (("sender", s), ("receiver", r)):
        pair.duplicates[side] += int(len(recs) - len(np.unique(recs["key"])))
    pair.unmatched += len(r) - len(ri)
    delays = r["ts"][ri] - s["ts"][si]
    if len(delays):
        lo_d, hi_d = int(delays.min()), int(delays.max())
        pair.delay_min = lo_d if pair.delay_min is None else min(pair.delay_min, lo_d)
        pair.delay_max = hi_d if pair.delay_max is None else max(pair.delay_max, hi_d)
        pair.delay_sum += int(delays.sum())
    pair.matched += len(si)
    pair.negative += int((delays < 0).sum())
    pair.zero += int((delays == 0).sum())
    both = r["iv"][ri] == s["iv"][si]
    lost = np.ones(len(s), bool)
    lost[si[both]] = False
    nf = len(pair.flows)
    for k in np.unique(np.r_[s["iv"], r["iv"]]).tolist():
        t = pair.truth.setdefault(k, {"sent": 0, "received": 0, "lost": 0, "n": 0,
                                      "sum": 0, "sq": 0.0})
        f = pair.flow_truth.setdefault(k, {})
        for name in ("packets", "sum", "sq", "lost"):
            arr = f.get(name, np.zeros(0))
            f[name] = np.r_[arr, np.zeros(nf - len(arr))]
        t["sent"] += int((s["iv"] == k).sum())
        t["received"] += int((r["iv"] == k).sum())
        t["lost"] += int((lost & (s["iv"] == k)).sum())
        m = both & (s["iv"][si] == k)
        d = delays[m]
        t["n"] += len(d)
        t["sum"] += int(d.sum())
        t["sq"] += float((d.astype(np.float64) ** 2).sum())
        fl = s["flow"][si[m]]
        np.add.at(f["packets"], fl, 1)
        np.add.at(f["sum"], fl, d.astype(np.float64))
        np.add.at(f["sq"], fl, d.astype(np.float64) ** 2)
        np.add.at(f["lost"], s["flow"][lost & (s["iv"] == k)], 1)


def stream_rli_pair(sender, receiver, config: RliConfig, *, key: bytes | None = None,
                    interval_ns: int | None = None, start_ns: int | None = None,
                    chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress=None,
                    spill_dir=None) -> RliCapturePair:
    """Stream two capture files (paths) into RLI's per-interval cells of both points,
    the reference accounting and the truth (module docstring). Intervals: by each
    capture's own times on the grid ``start_ns + k·interval_ns`` (default start: the
    sender's first packet; ``interval_ns=None``: one interval); the receiver's packets
    of an interval are interpolated between that interval's references only.
    ``key``: the reference frames' SipHash key (None: the zero key). When the captures
    saw different windows (:func:`~host_sw.estimators.offline_stream.common_window`),
    they are read again keeping the window both saw (module docstring); the pair's
    ``window`` and ``left_out`` say what was left out."""
    pair = _stream_once(sender, receiver, config, key=key, interval_ns=interval_ns,
                        start_ns=start_ns, chunk_bytes=chunk_bytes, progress=progress,
                        spill_dir=spill_dir)
    window = common_window(pair)
    if window is None or window[0] > window[1]:
        pair.window = window          # an empty window: the pair is refused
        return pair
    again = _stream_once(sender, receiver, config, key=key, interval_ns=interval_ns,
                         start_ns=pair.start_ns, chunk_bytes=chunk_bytes, progress=None,
                         spill_dir=spill_dir, window=window,
                         slack=max(0, -pair.delay_min))
    again.window = window
    return again


def _stream_once(sender, receiver, config: RliConfig, *, key, interval_ns, start_ns,
                 chunk_bytes, progress, spill_dir, window=None, slack=0) -> RliCapturePair:
    """One reading of the two captures (of the window ``(lo, hi, margin)`` only, when
    given; ``slack``: how far before the receiver's time a kept sender packet may be
    sent, beyond the margin, when delays are negative)."""
    flows = FlowTable(2, config.window_bytes)
    spill = _Spill(_partitions((sender, receiver)), {"sender": _SPILL, "receiver": _SPILL},
                   spill_dir)
    grid = _Grid(interval_ns, start_ns)
    options = {"chunk_bytes": chunk_bytes, "progress": progress}
    pair = RliCapturePair(config, {}, {}, {"sender": {}, "receiver": {}},
                          ReferenceCounts(), flows)
    try:
        side = _Side(config, grid, spill, flows, options)
        s_keep = r_keep = None
        if window is not None:
            lo, hi, margin = window
            s_keep, r_keep = (lo, hi, lo + margin + slack, hi - margin), window
        frames, designated = _sender_pass(side, sender, pair, key, s_keep)
        _receiver_pass(side, receiver, pair, key, frames, designated, r_keep)
        pair.start_ns = grid.t0
        for p in range(spill.parts):
            _pair_partition(pair, spill.load("sender", p), spill.load("receiver", p))
    finally:
        spill.close()
    return pair


def interval_truth(pair: RliCapturePair, iv: int) -> dict:
    """The record's ``true`` object of an interval (sent, received, lost; mean and std
    of the delays of the packets both captures hold in it, ns)."""
    t = pair.truth.get(iv, {"sent": 0, "received": 0, "lost": 0, "n": 0, "sum": 0,
                            "sq": 0.0})
    n = t["n"]
    mean = t["sum"] / n if n else None
    std = math.sqrt(max(t["sq"] / n - mean * mean, 0.0)) if n else None
    return {"mean": mean, "std": std, "sent": t["sent"], "received": t["received"],
            "lost": t["lost"]}


def flow_table(pair: RliCapturePair, iv: int, keyed=None) -> dict:
    """Per-flow figures of one interval, as :func:`host_sw.estimators.simulate.
    rli_flow_table` (arrays; ``packets`` = packets both captures hold, the truth beside
    the estimate) for every flow seen in the captures; or for the flows ``keyed``
    (``(flow hashes (2, F), names)``, e.g. a ``--flows`` file) with the receiver's count
    as ``packets`` and no truth."""
    empty = Synopsis.empty(pair.config)
    sender = pair.sender.get(iv, empty)
    receiver = pair.receiver[iv][0] if iv in pair.receiver else empty
    if keyed is not None:
        hashes, names = keyed
        est = estimate_flows(receiver, hashes, sender)
        nan = np.full(len(names), np.nan)
        return {"flow": np.arange(len(names)), "names": list(names), "packets": est.packets,
                "sent": est.sent, "received": est.packets, "true_mean": nan,
                "true_std": nan, "mean": est.mean_ns, "std": est.std_ns,
                "collided": est.collided, "windows": None, "classes": None}
    nf = len(pair.flows)
    f = pair.flow_truth.get(iv, {})
    get = lambda name: np.r_[f.get(name, np.zeros(0)), np.zeros(nf - len(f.get(name, ())))]
    packets, total, sq = get("packets"), get("sum"), get("sq")
    est = estimate_flows(receiver, pair.flows.table(), sender)
    with np.errstate(invalid="ignore", divide="ignore"):
        true_mean = np.where(packets > 0, total / packets, np.nan)
        true_std = np.sqrt(np.maximum(sq / packets - true_mean ** 2, 0.0))
    return {"flow": np.arange(nf), "packets": packets.astype(np.int64), "sent": est.sent,
            "received": est.packets, "true_mean": true_mean, "true_std": true_std,
            "mean": est.mean_ns, "std": est.std_ns, "collided": est.collided,
            "windows": np.array(pair.flows.windows) if nf else None,
            "classes": np.array(pair.flows.classes) if nf else None}
