# SPDX-License-Identifier: BSD-2-Clause
"""Two captures of any size, streamed: per-interval golden synopses of both points, the
truth and the pairing checks, in memory bounded independently of the captures' size.

In the host data flow (``docs/DESIGN.md``, "offline analysis") this is the engine of
:func:`host_sw.estimators.offline.capture_records`: capture files ►
:func:`host_sw.model.pcap_stream.iter_capture` (chunks) ► hashes ► synopses per interval
(updated chunk by chunk: counters are sums and XORs, order does not matter) and, for
the truth, each counted packet's match key, timestamp, interval and flow spilled into
hash partitions (:class:`_Spill`: in memory while small, in temporary files beyond
:data:`SPILL_MEMORY_BYTES`). The partitions are matched one at a time, so the pairing
needs the memory of one partition, not of the captures.

What grows with the input instead: the synopses (one pair per interval), the flows of an
LDS configuration (one entry per flow) and, for RDA, both points' packet caches (16 bytes
a packet and point: the decoder repairs from them).

The same definitions as the in-memory :func:`host_sw.model.pcap.pair_captures`: a packet
of one capture matches the packet of the other with the same invariant bytes (default
packet masks; a repeated window matches its first unmatched occurrence in order); the
sender's intervals start at ``start_ns`` (default: the sender's first timestamp) and its
first and last intervals are open towards the captures' ends.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import HashPurpose, default_masks
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, hash_windows, update
from host_sw.model.pcap_stream import DEFAULT_CHUNK_BYTES, iter_capture

__all__ = ["StreamedPair", "FlowTable", "stream_pair", "SPILL_MEMORY_BYTES"]

#: Spilled records kept in memory before they go to temporary files.
SPILL_MEMORY_BYTES = 64 << 20
#: Counted packets per spill partition and capture (the pairing's working set).
_PART_PACKETS = 1_000_000
#: The smallest pcap record of a counted packet (16-byte header, 60-byte frame).
_MIN_RECORD = 76
_NONE = np.iinfo(np.int64).min


class _Spill:
    """Records of two sides partitioned by key; appended in order, read per partition."""

    def __init__(self, parts: int, dtypes: dict, directory=None):
        self.parts, self.dtypes = parts, dtypes
        self.buffers = {side: [[] for _ in range(parts)] for side in dtypes}
        self.buffered = 0
        self._dir = None
        self._directory = directory

    def add(self, side: str, recs: np.ndarray) -> None:
        if self.parts == 1:
            self.buffers[side][0].append(recs)
        else:
            part = (recs["key"] % np.uint64(self.parts)).astype(
                np.uint16 if self.parts <= 1 << 16 else np.int64)
            order = np.argsort(part, kind="stable")     # a radix sort for 16-bit keys
            bounds = np.r_[0, np.cumsum(np.bincount(part, minlength=self.parts))]
            ordered = recs[order]
            for p in range(self.parts):
                if bounds[p + 1] > bounds[p]:
                    self.buffers[side][p].append(ordered[bounds[p]:bounds[p + 1]])
        self.buffered += recs.nbytes
        if self.buffered > SPILL_MEMORY_BYTES:
            self.flush()

    def _path(self, side, p):
        return os.path.join(self._dir.name, f"{side}{p}.bin")

    def flush(self) -> None:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="ldactl-pair-",
                                                    dir=self._directory)
        for side, parts in self.buffers.items():
            for p, bufs in enumerate(parts):
                if bufs:
                    with open(self._path(side, p), "ab") as f:
                        for b in bufs:
                            b.tofile(f)
                    bufs.clear()
        self.buffered = 0

    def load(self, side: str, p: int) -> np.ndarray:
        parts = []
        if self._dir is not None and os.path.exists(self._path(side, p)):
            parts.append(np.fromfile(self._path(side, p), dtype=self.dtypes[side]))
        parts += self.buffers[side][p]
        self.buffers[side][p] = []
        if not parts:
            return np.zeros(0, self.dtypes[side])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()


@dataclass
class FlowTable:
    """The flows of an LDS configuration seen in the captures: per-row flow hashes
    ``(R, F)``, one header window and frame class per flow (to name it)."""
    rows: int
    window_bytes: int
    index: dict = field(default_factory=dict)
    hashes: list = field(default_factory=list)
    windows: list = field(default_factory=list)
    classes: list = field(default_factory=list)

    def __len__(self):
        return len(self.index)

    def assign(self, flow: np.ndarray, windows: np.ndarray, classes: np.ndarray,
               counted: np.ndarray) -> np.ndarray:
        """The flow index of each packet (``-1`` for uncounted ones), new flows added."""
        out = np.full(flow.shape[1], -1, np.int64)
        sel = np.flatnonzero(counted)
        if not len(sel):
            return out
        keys = np.ascontiguousarray(flow[:, sel].T.astype(np.uint32))
        keys = keys.view(np.dtype((np.void, 4 * self.rows))).ravel()
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        ids = np.empty(len(uniq), np.int64)
        for k, key in enumerate(uniq.tolist()):
            got = self.index.get(key)
            if got is None:
                got = self.index[key] = len(self.index)
                i = sel[first[k]]
                self.hashes.append(flow[:, i].copy())
                self.windows.append(windows[i].copy())
                self.classes.append(int(classes[i]))
            ids[k] = got
        out[sel] = ids[inverse.ravel()]
        return out

    def table(self) -> np.ndarray:
        """uint64 ``(R, F)`` per-row flow hashes."""
        if not self.hashes:
            return np.zeros((self.rows, 0), np.uint64)
        return np.stack(self.hashes, axis=1)


def _counts(iv: np.ndarray) -> list[tuple[int, int]]:
    """``(interval, packets)`` of the intervals present in ``iv``, in order (a count
    over the range when it is narrow, else a sort)."""
    if not len(iv):
        return []
    lo, hi = int(iv.min()), int(iv.max())
    if hi - lo <= 4 * len(iv) + 1024:
        c = np.bincount(iv - lo)
        at = np.flatnonzero(c)
        return list(zip((at + lo).tolist(), c[at].tolist()))
    u, c = np.unique(iv, return_counts=True)
    return list(zip(u.tolist(), c.tolist()))


def _by_interval(iv: np.ndarray, values: np.ndarray):
    """``(interval, values of the packets of that interval)`` for each interval present
    in ``iv``, in increasing order (the packets' order kept within an interval)."""
    if not len(iv):
        return
    order = np.argsort(iv, kind="stable")
    iv, values = iv[order], values[order]
    bounds = np.flatnonzero(np.diff(iv)) + 1
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(iv)]):
        yield int(iv[a]), values[a:b]


@dataclass
class _Truth:
    """Per-interval truth sums (exact integer delay sum; variance by Chan's update)."""
    sent: dict = field(default_factory=dict)
    received: dict = field(default_factory=dict)
    lost: dict = field(default_factory=dict)
    both: dict = field(default_factory=dict)      # iv -> [n, sum, mean, m2]

    def add_counts(self, target: dict, iv: np.ndarray) -> None:
        for k, n in _counts(iv):
            target[k] = target.get(k, 0) + n

    def add_delays(self, iv: np.ndarray, delays: np.ndarray) -> None:
        for k, d in _by_interval(iv, delays):
            n, s = len(d), int(d.sum())
            mean = s / n
            m2 = float(((d - mean) ** 2).sum())
            got = self.both.setdefault(k, [0, 0, 0.0, 0.0])
            n0, mean0 = got[0], got[2]
            tot = n0 + n
            delta = mean - mean0
            got[3] += m2 + delta * delta * n0 * n / tot
            got[2] = mean0 + delta * n / tot
            got[0], got[1] = tot, got[1] + s

    def json(self, iv: int) -> dict:
        n, s, _, m2 = self.both.get(iv, [0, 0, 0.0, 0.0])
        return {"mean": s / n if n else None, "std": math.sqrt(m2 / n) if n else None,
                "sent": self.sent.get(iv, 0), "received": self.received.get(iv, 0),
                "lost": self.lost.get(iv, 0)}


@dataclass
class StreamedPair:
    """Everything :func:`stream_pair` learnt of two captures."""
    config: SynopsisConfig
    synopses: dict            # side -> {interval: Synopsis}
    meta: dict                # side -> {interval: [packets, first_ns, last_ns]}
    truth: _Truth
    sent: int                 # counted packets of each capture
    received: int
    matched: int
    negative: int
    zero: int
    caches: dict              # side -> (ids, ticks) of counted packets (RDA) or None
    flows: FlowTable | None
    flow_truth: dict          # interval -> {"packets", "delay_sum", "lost"} arrays
    # what the pairing shows (issue 23: pairs that must make sense)
    delay_min: int | None = None     # of the matched packets, ns
    delay_max: int | None = None
    delay_sum: int = 0
    duplicates: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    unmatched: int = 0        # receiver packets not in the sender capture (kept ones)
    window: tuple | None = None      # (lo, hi, margin) ns: the window both saw
    left_out: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    start_ns: int | None = None      # the interval grid's origin

    def ends(self, side: str) -> tuple[int, int] | None:
        """First and last timestamp (ns) of a capture's packets in the intervals."""
        metas = [m for m in self.meta[side].values() if m[1] is not None]
        if not metas:
            return None
        return min(m[1] for m in metas), max(m[2] for m in metas)

    @property
    def intervals(self) -> list[int]:
        return sorted(set(self.synopses["sender"]) | set(self.synopses["receiver"]))

    def synopsis(self, side: str, iv: int) -> Synopsis:
        got = self.synopses[side].get(iv)
        return got if got is not None else Synopsis.empty(self.config)

    def side_meta(self, side: str, iv: int) -> dict:
        m = self.meta[side].get(iv)
        if m is None:
            return {"packets": 0}
        return {"packets": m[0], "first_ns": m[1], "last_ns": m[2]}


def _ticks(ts: np.ndarray, tick) -> np.ndarray:
    """As :meth:`host_sw.model.observation.Observation.ticks`."""
    if tick == 1:
        return ts
    if float(tick).is_integer():
        return ts // int(tick)
    return np.floor(ts / tick).astype(np.int64)


class _Pass:
    """One capture's pass: hash each chunk, update its synopses, spill its packets."""

    def __init__(self, config, hashers, key_hashers, flows, grid, spill, options,
                 keep: tuple[int, int] | None = None):
        self.config, self.hashers, self.key_hashers = config, hashers, key_hashers
        self.flows, self.grid, self.spill, self.options = flows, grid, spill, options
        self.keep = keep            # (lo, hi) ns: only the packets of this window
        self.synopses, self.meta = {}, {}
        self.counted = self.left_out = 0
        self.iv_range = None
        self.cache = [] if config.kind == "rda" else None

    def _meta(self, iv, ts):
        for k, part in _by_interval(iv, ts):
            m = self.meta.setdefault(k, [0, None, None])
            m[0] += len(part)
            lo, hi = int(part.min()), int(part.max())
            m[1] = lo if m[1] is None else min(m[1], lo)
            m[2] = hi if m[2] is None else max(m[2], hi)

    def update(self, iv, hashes: PacketHashes, ticks) -> None:
        groups = _counts(iv)
        for k, _ in groups:
            sel = slice(None) if len(groups) == 1 else np.flatnonzero(iv == k)
            syn = self.synopses.get(k)
            if syn is None:
                syn = self.synopses[k] = Synopsis.empty(self.config)
            update(self.config, hashes.select(sel), ticks[sel], synopsis=syn,
                   hashers=self.hashers)

    def run(self, path, side: str, *, deferred: bool) -> None:
        config = self.config
        for chunk in iter_capture(path, window_bytes=config.window_bytes,
                                  chunk_bytes=self.options.get("chunk_bytes",
                                                               DEFAULT_CHUNK_BYTES),
                                  progress=self.options.get("progress")):
            ts, windows, classes = chunk.timestamps_ns, chunk.windows, chunk.classes
            if self.keep is not None:
                inside = (ts >= self.keep[0]) & (ts <= self.keep[1])
                self.left_out += int(len(ts) - inside.sum())
                ts, windows, classes = ts[inside], windows[inside], classes[inside]
            iv = self.grid.assign(ts, side)
            hashes = hash_windows(config, windows, classes, self.hashers)
            ticks = _ticks(ts, config.tick_ns)
            if not deferred:
                self.update(iv, hashes, ticks)
                self._meta(iv, ts)
            counted = hashes.counted
            sel = np.flatnonzero(counted)
            self.counted += len(sel)
            if self.cache is not None:
                self.cache.append((hashes.packet[sel], ticks[sel]))
            key = hashes.packet if self.key_hashers is None else hash_windows(
                self.key_hashers.config, windows, classes, self.key_hashers).packet
            flow = (self.flows.assign(hashes.flow, windows, classes, counted)
                    if self.flows is not None else None)
            recs = np.zeros(len(sel), self.spill.dtypes[side])
            recs["key"], recs["ts"], recs["iv"] = key[sel], ts[sel], iv[sel]
            recs["flow"] = -1 if flow is None else flow[sel]
            if deferred:
                recs["p"] = hashes.packet[sel]
                if hashes.flow is not None:
                    recs["rows"] = hashes.flow[:, sel].T
                unc = np.flatnonzero(~counted)
                if len(unc):
                    self._meta(iv[unc], ts[unc])
            self.spill.add(side, recs)


class _Grid:
    """Interval assignment by time (module docstring)."""

    def __init__(self, interval_ns, start_ns):
        self.delta = None if interval_ns is None else int(interval_ns)
        self.t0 = None if start_ns is None else int(start_ns)
        self.lo = self.hi = None

    def assign(self, ts: np.ndarray, side: str) -> np.ndarray:
        if self.t0 is None and len(ts):
            self.t0 = int(ts.min())
        if self.delta is None:
            iv = np.zeros(len(ts), np.int64)
        else:
            iv = np.floor_divide(ts - self.t0, self.delta)
        if side == "sender":
            if len(iv):
                lo, hi = int(iv.min()), int(iv.max())
                self.lo = lo if self.lo is None else min(self.lo, lo)
                self.hi = hi if self.hi is None else max(self.hi, hi)
        elif self.lo is not None:
            iv = np.clip(iv, self.lo, self.hi)
        return iv


def _stable_order(keys: np.ndarray, order: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` from an unstable ``order`` (``same``: the
    sorted keys' neighbours that are equal): the positions of repeated keys put back
    in increasing order (one ``lexsort`` of those positions only)."""
    start = np.ones(len(order), bool)
    start[1:] = ~same
    gid = np.cumsum(start) - 1
    at = np.flatnonzero(np.bincount(gid)[gid] > 1)
    sub = order[at]
    order = order.copy()
    order[at] = sub[np.lexsort((sub, gid[at]))]
    return order


def _match(s_keys: np.ndarray, r_keys: np.ndarray):
    """Index pairs ``(si, ri)``: the ``t``-th receiver packet of a key (in file order)
    matches the ``t``-th sender packet of that key. One sort of both sides (numpy's
    unstable sort; when no key occurs more than twice a pair is two neighbours, else
    the positions of repeated keys are put back in file order)."""
    if not len(s_keys) or not len(r_keys):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ns = len(s_keys)
    keys = np.concatenate([s_keys, r_keys])
    order = np.argsort(keys)
    k = keys[order]
    same = k[1:] == k[:-1]
    if not (same[1:] & same[:-1]).any():         # no key thrice: neighbours pair up
        at = np.flatnonzero(same)
        a, b = order[at], order[at + 1]
        one = (a >= ns) != (b >= ns)
        a, b = a[one], b[one]
        return np.minimum(a, b), np.maximum(a, b) - ns
    order = _stable_order(keys, order, same)     # senders first within a key
    k = keys[order]
    is_r = order >= ns
    start = np.ones(len(k), bool)
    start[1:] = k[1:] != k[:-1]
    gid = np.cumsum(start) - 1
    gstart = np.flatnonzero(start)
    senders = np.bincount(gid, weights=~is_r).astype(np.int64)[gid]
    occ = np.arange(len(k)) - gstart[gid] - senders     # receivers: their occurrence
    ok = is_r & (occ < senders)
    at = np.flatnonzero(ok)
    return order[gstart[gid[at]] + occ[at]], order[at] - ns


def _key_hashers(config: SynopsisConfig) -> Hashers | None:
    """The truth's match key is the packet hash over the default packet masks: the
    configuration's own packet hash when its masks are the default ones (no second
    pass), else an LDA hash with the default masks."""
    masks = default_masks(config.window_bytes)
    if (config.mask_packet_ipv4 == masks["packet_ipv4"].as_int()
            and config.mask_packet_ipv6 == masks["packet_ipv6"].as_int()):
        return None
    return Hashers(LdaConfig(window_bytes=config.window_bytes, seed=config.seed))


def _dtypes(config: SynopsisConfig, marker: bool) -> dict:
    base = [("key", "<u8"), ("ts", "<i8"), ("iv", "<i8"), ("flow", "<i8")]
    receiver = list(base)
    if marker:
        receiver.append(("p", "<u8"))
        rows = config.hash_count(HashPurpose.LDS_FLOW)
        if rows:
            receiver.append(("rows", "<u8", (rows,)))
    return {"sender": np.dtype(base), "receiver": np.dtype(receiver)}


def _partitions(paths) -> int:
    size = max(os.path.getsize(os.fspath(p)) for p in paths)
    return max(1, math.ceil(size / _MIN_RECORD / _PART_PACKETS))


def _flow_truth(pair: StreamedPair, s, r, si, ri, both) -> None:
    f = pair.flows
    n = len(f)
    for iv in np.unique(s["iv"]).tolist():
        acc = pair.flow_truth.setdefault(iv, {"packets": np.zeros(n, np.int64),
                                              "delay_sum": np.zeros(n, np.int64),
                                              "lost": np.zeros(n, np.int64)})
        for k in ("packets", "delay_sum", "lost"):
            if len(acc[k]) < n:
                acc[k] = np.r_[acc[k], np.zeros(n - len(acc[k]), np.int64)]
        in_iv = s["iv"][si[both]] == iv
        fl = s["flow"][si[both]][in_iv]
        np.add.at(acc["packets"], fl, 1)
        np.add.at(acc["delay_sum"], fl, (r["ts"][ri[both]] - s["ts"][si[both]])[in_iv])
        gone = np.ones(len(s), bool)
        gone[si[both]] = False
        gone &= s["iv"] == iv
        np.add.at(acc["lost"], s["flow"][gone], 1)


def _duplicates(keys: np.ndarray) -> int:
    """Packets whose key an earlier packet of the same capture has (repeated copies)."""
    k = np.sort(keys)
    return int(np.count_nonzero(k[1:] == k[:-1]))


def _pair_partition(pair: StreamedPair, r_pass: _Pass, s, r, marker: bool,
                    trim: tuple | None = None) -> None:
    si, ri = _match(s["key"], r["key"])
    if trim is not None and len(r):
        # The receiver's packets of the window: those of its sender packets, and those
        # the sender capture does not hold that arrived where no edge explains them.
        lo, hi, margin = trim
        matched = np.zeros(len(r), bool)
        matched[ri] = True
        inside = (r["ts"] >= lo + margin) & (r["ts"] <= hi)
        keep = matched | inside
        pair.left_out["receiver"] += int(len(r) - keep.sum())
        r = r[keep]
        si, ri = _match(s["key"], r["key"])
    pair.duplicates["sender"] += _duplicates(s["key"])
    pair.duplicates["receiver"] += _duplicates(r["key"])
    pair.unmatched += len(r) - len(ri)
    if trim is not None:
        pair.received += len(r)
    deferred = marker or trim is not None
    if deferred and len(r):
        r_iv = r["iv"].copy()
        if marker:
            r_iv[ri] = s["iv"][si]
        flow = r["rows"].T if "rows" in r.dtype.names else None
        r_pass.update(r_iv, PacketHashes(r["p"], None if flow is None
                                         else np.ascontiguousarray(flow)),
                      _ticks(r["ts"], pair.config.tick_ns))
        r_pass._meta(r_iv, r["ts"])
        r = r.copy()
        r["iv"] = r_iv
    delays = r["ts"][ri] - s["ts"][si]
    if len(delays):
        lo_d, hi_d = int(delays.min()), int(delays.max())
        pair.delay_min = lo_d if pair.delay_min is None else min(pair.delay_min, lo_d)
        pair.delay_max = hi_d if pair.delay_max is None else max(pair.delay_max, hi_d)
        pair.delay_sum += int(delays.sum())
    pair.matched += len(si)
    pair.negative += int((delays < 0).sum())
    pair.zero += int((delays == 0).sum())
    t = pair.truth
    t.add_counts(t.sent, s["iv"])
    t.add_counts(t.received, r["iv"])
    both = r["iv"][ri] == s["iv"][si]
    t.add_delays(s["iv"][si[both]], delays[both])
    lost = np.ones(len(s), bool)
    lost[si[both]] = False
    t.add_counts(t.lost, s["iv"][lost])
    if pair.flows is not None:
        _flow_truth(pair, s, r, si, ri, both)


def common_window(pair: StreamedPair) -> tuple[int, int, int] | None:
    """``(lo, hi, margin)``: the sender times both captures saw, when a capture started
    late or stopped early (or the receiver holds packets the sender capture does not),
    else None (the whole captures). ``margin`` is the largest delay the pair shows: a
    receiver that started more than it after the sender's first packet started late
    (sender packets from its first one on), one that stopped more than it before the
    sender's last packet stopped early (sender packets up to its last one minus the
    margin); receiver packets the sender capture does not hold are left out within the
    margin of the window's edges."""
    s_ends, r_ends = pair.ends("sender"), pair.ends("receiver")
    if s_ends is None or r_ends is None or pair.delay_max is None:
        return None
    margin = max(pair.delay_max, 0)
    lo, hi = s_ends
    if r_ends[0] > s_ends[0] + margin:
        lo = r_ends[0]
    if r_ends[1] + margin < s_ends[1]:
        hi = r_ends[1] - margin
    if (lo, hi) == s_ends and not pair.unmatched:
        return None
    return lo, hi, margin


def stream_pair(sender, receiver, config: SynopsisConfig, *, mode: str = "time",
                interval_ns: int | None = None, start_ns: int | None = None,
                chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress=None,
                spill_dir=None, trim: bool = True) -> StreamedPair:
    """Stream two capture files (paths) into per-interval synopses of both points, the
    truth and the pairing counts (module docstring). ``progress(n)`` is told the bytes
    read. When the captures saw different windows (:func:`common_window`) and ``trim``,
    they are read again keeping the window both saw; the pair's ``window`` and
    ``left_out`` say what was left out. Raises
    :class:`~host_sw.model.pcap.CaptureError` for unreadable captures."""
    pair = _stream_once(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                        start_ns=start_ns, chunk_bytes=chunk_bytes, progress=progress,
                        spill_dir=spill_dir)
    window = common_window(pair) if trim else None
    if window is None or window[0] > window[1]:
        pair.window = window          # an empty window: the pair is refused
        return pair
    again = _stream_once(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                         start_ns=pair.start_ns, chunk_bytes=chunk_bytes, progress=None,
                         spill_dir=spill_dir, window=window)
    again.window = window
    return again


def _stream_once(sender, receiver, config: SynopsisConfig, *, mode, interval_ns,
                 start_ns, chunk_bytes, progress, spill_dir, window=None) -> StreamedPair:
    """One reading of the two captures (of the sender times ``window[:2]`` only, the
    receiver's packets trimmed as :func:`common_window` says, when given)."""
    if mode not in ("marker", "time"):
        raise ValueError(f"mode must be 'marker' or 'time', not {mode!r}")
    if interval_ns is not None and int(interval_ns) <= 0:
        raise ValueError(f"interval_ns must be positive, not {interval_ns}")
    marker = mode == "marker"
    hashers = Hashers(config)
    rows = config.hash_count(HashPurpose.LDS_FLOW)
    flows = FlowTable(rows, config.window_bytes) if rows else None
    spill = _Spill(_partitions((sender, receiver)),
                   _dtypes(config, marker or window is not None), spill_dir)
    grid = _Grid(interval_ns, start_ns)
    options = {"chunk_bytes": chunk_bytes, "progress": progress}
    key_hashers = _key_hashers(config)
    try:
        s_pass = _Pass(config, hashers, key_hashers, flows, grid, spill, options,
                       keep=None if window is None else window[:2])
        s_pass.run(sender, "sender", deferred=False)
        r_pass = _Pass(config, hashers, key_hashers, flows, grid, spill, options)
        r_pass.run(receiver, "receiver", deferred=marker or window is not None)
        caches = {side: None for side in ("sender", "receiver")}
        if s_pass.cache is not None:
            caches = {side: tuple(np.concatenate([c[k] for c in p.cache])
                                  if p.cache else np.zeros(0, np.int64) for k in (0, 1))
                      for side, p in (("sender", s_pass), ("receiver", r_pass))}
        pair = StreamedPair(config, {"sender": s_pass.synopses,
                                     "receiver": r_pass.synopses},
                            {"sender": s_pass.meta, "receiver": r_pass.meta}, _Truth(),
                            s_pass.counted, 0 if window else r_pass.counted, 0, 0, 0,
                            caches, flows, {}, start_ns=grid.t0)
        pair.left_out["sender"] = s_pass.left_out
        for p in range(spill.parts):
            _pair_partition(pair, r_pass, spill.load("sender", p),
                            spill.load("receiver", p), marker, window)
    finally:
        spill.close()
    return pair
