# SPDX-License-Identifier: BSD-2-Clause
"""Packet streams for simulation and benchmarks: the frames both measurement points see.

Data flow (docs/DESIGN.md, "Data flow of a packet"): this module stands in for the wire in
front of the *header tap*; it sits in the model layer, beside the golden model it feeds.
A :class:`Trace` is what the sender sees: send timestamps, the flow of each packet and
either real header windows (Ethernet + IPv4/IPv6 + UDP/TCP, built vectorised, hashed by
:func:`host_sw.model.golden.hash_windows` — the default, and what the tests exercise) or, in
*fast mode*, random 64-bit per-packet and per-flow keys from which hashes are drawn
directly. :mod:`host_sw.model.channel` turns a trace into both points' observations.

Timestamps are integer nanosecond ticks (``int64``), strictly increasing.

Example
-------
>>> from host_sw.contracts.config import LdsConfig
>>> trace = synthetic_trace(packets=10_000, flows=200, rate_pps=1e6, seed=1)
>>> hashes = trace.hashes(LdsConfig())          # H3 over the real header windows
>>> hashes.flow.shape
(4, 10000)
>>> fast = synthetic_trace(packets=10_000, flows=200, seed=1, fast=True)
>>> fast.windows is None
True

Fast mode is statistically equivalent under H3 with a random seed: distinct windows give
pairwise-independent uniform hashes, which a keyed 64-bit mixer of unique random keys
also gives. It is for the accuracy benchmarks (5 M packets × many runs); it cannot
reproduce the gateware's exact counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import LdsConfig, SynopsisConfig
from host_sw.contracts.hashing import (
    DEFAULT_WINDOW_BYTES, ETHERTYPE_IPV4, ETHERTYPE_IPV6, MIN_FRAME_BYTES, FrameClass,
    HashPurpose, classify_frame, default_masks, header_windows, mix64, mix64_array,
)
from host_sw.model.golden import Hashers, PacketHashes, flow_row_hashes, hash_windows

__all__ = ["Trace", "synthetic_trace", "send_times", "flow_assignment", "build_headers",
           "trace_from_frames"]

_PACKET_SALT = 0x5041434B45540001  # "PACKET" — fast-mode key derivation
_FLOW_SALT = 0x464C4F5700000000    # "FLOW"


# ---------------------------------------------------------------------------------------
# The trace
# ---------------------------------------------------------------------------------------

@dataclass(eq=False)
class Trace:
    """A packet stream as the sender sees it.

    Attributes
    ----------
    timestamps:
        int64 ``(N,)`` — send times in ns ticks, strictly increasing for synthetic traces
        (non-decreasing for captures).
    flow_ids:
        int64 ``(N,)`` — index of each packet's flow in ``0..num_flows-1``.
    frame_lengths:
        int64 ``(N,)`` — frame length in bytes without FCS.
    classes:
        int64 ``(N,)`` — :class:`~host_sw.contracts.hashing.FrameClass` of each frame.
    windows:
        uint8 ``(N, window_bytes)`` header windows, or ``None`` in fast mode.
    flow_windows:
        uint8 ``(F, window_bytes)`` — one representative window per flow (any packet of
        the flow gives the same flow hash), or ``None`` in fast mode.
    flow_classes:
        int64 ``(F,)`` — frame class of each flow (IPv4 or IPv6 masks).
    packet_keys, flow_keys:
        uint64 ``(N,)`` / ``(F,)`` random keys of fast mode, else ``None``.
    """
    timestamps: np.ndarray
    flow_ids: np.ndarray
    frame_lengths: np.ndarray
    classes: np.ndarray
    windows: np.ndarray | None = None
    flow_windows: np.ndarray | None = None
    flow_classes: np.ndarray | None = None
    packet_keys: np.ndarray | None = None
    flow_keys: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        n = len(self.timestamps)
        for name in ("flow_ids", "frame_lengths", "classes"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries, "
                                 f"the trace has {n} packets")
        if self.windows is None and self.packet_keys is None:
            raise ValueError("a trace needs header windows or (fast mode) packet keys")
        if self.windows is not None and self.windows.shape[0] != n:
            raise ValueError(f"windows has {self.windows.shape[0]} rows, the trace has "
                             f"{n} packets")

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def fast(self) -> bool:
        """True when hashes are drawn from random keys instead of header windows."""
        return self.windows is None

    @property
    def num_flows(self) -> int:
        if self.flow_classes is not None:
            return len(self.flow_classes)
        return int(self.flow_ids.max()) + 1 if len(self.flow_ids) else 0

    @property
    def counted(self) -> np.ndarray:
        """bool ``(N,)`` — frames the tap counts (IPv4 or IPv6)."""
        return (self.classes == FrameClass.IPV4) | (self.classes == FrameClass.IPV6)

    @property
    def window_bytes(self) -> int | None:
        return None if self.windows is None else self.windows.shape[1]

    def clear_cache(self) -> None:
        """Forget the cached hashes (they take 8 + 8·rows bytes per packet and
        configuration)."""
        self._cache.clear()

    def _check_config(self, config: SynopsisConfig) -> None:
        if self.windows is not None and config.window_bytes != self.windows.shape[1]:
            raise ValueError(f"the trace has {self.windows.shape[1]}-byte windows, the "
                             f"configuration hashes {config.window_bytes} bytes")

    def hashes(self, config: SynopsisConfig, indices=None,
               hashers: Hashers | None = None) -> PacketHashes:
        """Per-packet hashes under ``config`` (all packets, or ``indices``).

        The full-trace result is cached per configuration, so observations of several
        intervals share one hashing pass.
        """
        self._check_config(config)
        key = ("packets", config)
        if key not in self._cache:
            if self.fast:
                self._cache[key] = self._fast_hashes(config)
            else:
                self._cache[key] = hash_windows(config, self.windows, self.classes, hashers)
        full = self._cache[key]
        return full if indices is None else full.select(np.asarray(indices))

    def flow_hashes(self, config: LdsConfig, hashers: Hashers | None = None) -> np.ndarray:
        """uint64 ``(rows, num_flows)`` — each flow's per-row 32-bit LDS flow hash."""
        if not config.hash_count(HashPurpose.LDS_FLOW):
            raise ValueError("flow hashes exist for LDS configurations only")
        self._check_config(config)
        key = ("flows", config)
        if key not in self._cache:
            if self.fast:
                self._cache[key] = self._fast_flow_table(config)
            else:
                self._cache[key] = flow_row_hashes(config, self.flow_windows,
                                                   self.flow_classes, hashers)
        return self._cache[key]

    def _fast_flow_table(self, config: LdsConfig) -> np.ndarray:
        rows = config.hash_count(HashPurpose.LDS_FLOW)
        table = np.empty((rows, len(self.flow_keys)), dtype=np.uint64)
        for r in range(rows):
            salt = np.uint64(mix64(config.seed ^ (_FLOW_SALT + r)))
            table[r] = mix64_array(self.flow_keys ^ salt) >> np.uint64(32)
        return table

    def _fast_hashes(self, config: SynopsisConfig) -> PacketHashes:
        salt = np.uint64(mix64(config.seed ^ _PACKET_SALT))
        packet = mix64_array(self.packet_keys ^ salt)
        flow = None
        if config.hash_count(HashPurpose.LDS_FLOW):
            flow = self._fast_flow_table(config)[:, self.flow_ids]
        return PacketHashes(packet, flow, self.counted)

    def frames(self, indices=None) -> list[bytes]:
        """Whole frames (header window, zero payload padding up to the frame length) —
        for writing a trace to pcap. Bytes past the window are zero (so an IPv6 TCP
        frame's payload tag, past a 64-byte window, is not in it). Not available in fast
        mode."""
        if self.fast:
            raise ValueError("a fast-mode trace has no frame bytes")
        idx = np.arange(len(self)) if indices is None else np.asarray(indices)
        w = self.windows.shape[1]
        out = []
        for i in idx:
            length = int(self.frame_lengths[i])
            head = self.windows[i, :min(w, length)].tobytes()
            out.append(head + bytes(length - len(head)))
        return out


# ---------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------

def send_times(packets: int, *, rate_pps: float, gaps: str = "poisson",
               start_ns: int = 1_000_000, rng: np.random.Generator) -> np.ndarray:
    """Strictly increasing int64 send times (ns) at ``rate_pps`` packets per second.

    ``gaps="poisson"``: exponential gaps rounded to the nearest ns, at least 1 ns;
    ``"constant"``: packet ``i`` at ``start_ns + floor(i * 1e9 / rate_pps)``.
    """
    if not rate_pps > 0:
        raise ValueError(f"rate_pps must be positive, not {rate_pps}")
    if rate_pps > 1e9:
        raise ValueError(f"rate_pps must be at most 1e9 (1 ns ticks), not {rate_pps}")
    if start_ns < 0:
        raise ValueError(f"start_ns must be non-negative, not {start_ns}")
    mean_gap = 1e9 / rate_pps
    if gaps == "poisson":
        g = np.maximum(1, np.rint(rng.exponential(mean_gap, packets))).astype(np.int64)
        g[0] = 0
        return start_ns + np.cumsum(g)
    if gaps == "constant":
        return start_ns + np.floor(np.arange(packets) * mean_gap).astype(np.int64)
    raise ValueError(f"gaps must be 'poisson' or 'constant', not {gaps!r}")


def flow_assignment(packets: int, flows: int, *, size_dist: str = "pareto",
                    shape: float = 1.2, sigma: float = 2.0,
                    rng: np.random.Generator) -> np.ndarray:
    """The flow of each packet: flows get heavy-tailed popularity weights (Pareto with
    ``shape``, or lognormal with ``sigma``); every flow gets one packet when
    ``packets >= flows``, the other packets are multinomial in proportion to the weights,
    and all packets are randomly interleaved."""
    if flows < 1:
        raise ValueError(f"flows must be at least 1, not {flows}")
    if size_dist == "pareto":
        if not shape > 0:
            raise ValueError(f"Pareto shape must be positive, not {shape}")
        w = (1.0 - rng.random(flows)) ** (-1.0 / shape)
    elif size_dist == "lognormal":
        w = rng.lognormal(0.0, sigma, flows)
    elif size_dist == "uniform":
        w = np.ones(flows)
    else:
        raise ValueError(f"size_dist must be 'pareto', 'lognormal' or 'uniform', "
                         f"not {size_dist!r}")
    # every flow gets one packet (when there are enough), the rest go by popularity
    base = 1 if packets >= flows else 0
    counts = base + rng.multinomial(packets - base * flows, w / w.sum())
    flow_ids = np.repeat(np.arange(flows, dtype=np.int64), counts)
    rng.shuffle(flow_ids)
    return flow_ids


def _rank_in_group(groups: np.ndarray, values: np.ndarray | None = None):
    """Per element: its 0-based rank within its group (in order of appearance) and,
    if ``values`` is given, the exclusive prefix sum of ``values`` within the group."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    start = np.ones(len(g), dtype=bool)
    start[1:] = g[1:] != g[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
    rank = np.empty(len(g), dtype=np.int64)
    rank[order] = np.arange(len(g)) - first
    prefix = None
    if values is not None:
        v = values[order].astype(np.int64)
        c = np.cumsum(v) - v
        prefix = np.empty(len(g), dtype=np.int64)
        prefix[order] = c - c[first]
    return rank, prefix


def _put(out: np.ndarray, rows, offset: int, values, nbytes: int) -> None:
    """Write big-endian ``nbytes``-wide integers (1, 2, 4, 6 or 8) into columns
    ``offset..`` of the selected rows, through a structured view (one strided pass)."""
    if nbytes == 6:
        values = np.asarray(values, dtype=np.uint64)
        _put(out, rows, offset, values >> np.uint64(16), 4)
        _put(out, rows, offset + 4, values & np.uint64(0xFFFF), 2)
        return
    if nbytes not in (1, 2, 4, 8):
        raise ValueError(f"field width must be 1, 2, 4, 6 or 8 bytes, not {nbytes}")
    field_type = np.dtype({"names": ["v"], "formats": [f">u{nbytes}"], "offsets": [offset],
                           "itemsize": out.shape[1]})
    view = out.view(field_type).reshape(-1)["v"]
    values = np.asarray(values)
    if values.dtype.kind == "i":
        values = values.view(np.uint64) if values.dtype.itemsize == 8 else values
    mask = np.uint64((1 << (8 * nbytes)) - 1) if nbytes < 8 else None
    values = np.asarray(values, dtype=np.uint64)
    view[rows] = values & mask if mask is not None else values


def _rows(mask: np.ndarray):
    """A slice when every row is selected (cheaper than fancy indexing), else indices."""
    return slice(None) if mask.all() else np.flatnonzero(mask)


def _header_bytes(is_v6: np.ndarray, is_tcp: np.ndarray) -> np.ndarray:
    return 14 + np.where(is_v6, 40, 20) + np.where(is_tcp, 20, 8)


def build_headers(*, flow_ids: np.ndarray, frame_lengths: np.ndarray,
                  flow_table: dict, packet_tags: np.ndarray, window_bytes: int) -> np.ndarray:
    """Header windows ``(N, window_bytes)`` of real frames, vectorised.

    Ethernet II (fixed locally administered MACs) + IPv4 (IHL 5, DF, TTL 64, valid
    header checksum, IP ID = flow's random start + packet's rank in the flow) or IPv6
    (hop limit 64) + UDP (checksum 0; over IPv6 the packet's rank in its flow, low 16
    bits) or TCP (sequence = flow's random ISN + payload
    bytes before the packet, ACK|PSH). The first 8 payload bytes carry ``packet_tags``
    (unique per packet), so IPv4 windows (64 bytes) are unique even when IP IDs wrap;
    IPv6 windows are unique per flow up to 2**32 packets (UDP: rank in checksum and
    first payload bytes) or 4 GB (TCP sequence number). Bytes past a frame's end are
    zero, as the tap sees them.

    ``flow_table`` holds per-flow arrays: ``src4``/``dst4`` (uint32), ``src6``/``dst6``
    (uint8 ``(F, 16)``), ``sport``/``dport``, ``tcp`` and ``v6`` (bool), ``ip_id0`` and
    ``isn`` (random starts).
    """
    n = len(flow_ids)
    v6 = flow_table["v6"][flow_ids]
    tcp = flow_table["tcp"][flow_ids]
    hdr = _header_bytes(v6, tcp)
    width = max(window_bytes, int(hdr.max()) + 8 if n else 0)
    out = np.zeros((n, width), dtype=np.uint8)
    f = flow_ids
    payload = frame_lengths - hdr
    rank, before = _rank_in_group(f, payload)
    every = slice(None)
    _put(out, every, 0, 0x020000000001, 6)
    _put(out, every, 6, 0x020000000002, 6)
    v4 = ~v6
    proto = np.where(tcp, 6, 17).astype(np.uint64)
    # IPv4
    if v4.any():
        r4 = _rows(v4)
        out[r4, 12], out[r4, 13] = ETHERTYPE_IPV4 >> 8, ETHERTYPE_IPV4 & 0xFF
        out[r4, 14] = 0x45
        total_len = frame_lengths[r4] - 14
        ip_id = (flow_table["ip_id0"][f[r4]] + rank[r4]) & 0xFFFF
        src, dst = flow_table["src4"][f[r4]], flow_table["dst4"][f[r4]]
        _put(out, r4, 16, total_len, 2)
        _put(out, r4, 18, ip_id, 2)
        out[r4, 20] = 0x40
        out[r4, 22] = 64
        out[r4, 23] = proto[r4].astype(np.uint8)
        _put(out, r4, 26, src, 4)
        _put(out, r4, 30, dst, 4)
        # header checksum from the field values (ones-complement sum of 16-bit words)
        total = (0x4500 + total_len + ip_id + 0x4000 + (64 << 8) + proto[r4].astype(np.int64)
                 + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF))
        while (total >> 16).any():
            total = (total & 0xFFFF) + (total >> 16)
        _put(out, r4, 24, (~total) & 0xFFFF, 2)
    if v6.any():
        r6 = _rows(v6)
        out[r6, 12], out[r6, 13] = ETHERTYPE_IPV6 >> 8, ETHERTYPE_IPV6 & 0xFF
        out[r6, 14] = 0x60
        _put(out, r6, 18, frame_lengths[r6] - 54, 2)
        out[r6, 20] = proto[r6].astype(np.uint8)
        out[r6, 21] = 64
        out[r6, 22:38] = flow_table["src6"][f[r6]]
        out[r6, 38:54] = flow_table["dst6"][f[r6]]
    l4 = np.where(v6, 54, 34)
    for off in np.unique(l4):
        for is_tcp in (False, True):
            sel = (l4 == off) & (tcp == is_tcp)
            if not sel.any():
                continue
            rows = _rows(sel)
            fr = f[rows]
            _put(out, rows, off, flow_table["sport"][fr], 2)
            _put(out, rows, off + 2, flow_table["dport"][fr], 2)
            if is_tcp:
                _put(out, rows, off + 4, (flow_table["isn"][fr] + before[rows]) & 0xFFFFFFFF, 4)
                _put(out, rows, off + 8, flow_table["ack"][fr], 4)
                out[rows, off + 12] = 0x50
                out[rows, off + 13] = 0x18
                _put(out, rows, off + 14, 0xFFFF, 2)
                tag_at = off + 20
                tags = packet_tags[rows]
            else:
                _put(out, rows, off + 4, frame_lengths[rows] - off, 2)
                tag_at = off + 8
                tags = packet_tags[rows]
                if off == 54:
                    # IPv6 UDP: only the checksum and 2 payload bytes fall in a 64-byte
                    # window; they carry the packet's 32-bit rank in its flow.
                    rk = rank[rows].astype(np.uint64)
                    _put(out, rows, off + 6, rk & np.uint64(0xFFFF), 2)
                    tags = (((rk >> np.uint64(16)) & np.uint64(0xFFFF)) << np.uint64(48)
                            | (tags & np.uint64((1 << 48) - 1)))
            _put(out, rows, tag_at, tags, 8)
    # zero past each frame's end (frames shorter than the window)
    for col in range(int(frame_lengths.min()) if n else width, window_bytes):
        out[frame_lengths <= col, col] = 0
    return out if width == window_bytes else out[:, :window_bytes].copy()


def _flow_table(flows: int, *, tcp_fraction: float, ipv6_fraction: float,
                rng: np.random.Generator) -> dict:
    table = {
        "src4": (0x0A000000 | rng.integers(0, 1 << 24, flows)).astype(np.int64),
        "dst4": rng.integers(1 << 24, 0xE0000000, flows).astype(np.int64),
        "src6": np.concatenate([np.tile(np.array([0x20, 0x01, 0x0D, 0xB8], np.uint8),
                                        (flows, 1)),
                                rng.integers(0, 256, (flows, 12), dtype=np.uint8)], axis=1),
        "dst6": np.concatenate([np.tile(np.array([0x20, 0x01, 0x0D, 0xB9], np.uint8),
                                        (flows, 1)),
                                rng.integers(0, 256, (flows, 12), dtype=np.uint8)], axis=1),
        "sport": rng.integers(1024, 65536, flows).astype(np.int64),
        "dport": rng.choice(np.array([53, 80, 443, 4789, 5001, 8080], np.int64), flows),
        "tcp": rng.random(flows) < tcp_fraction,
        "v6": rng.random(flows) < ipv6_fraction,
        "ip_id0": rng.integers(0, 1 << 16, flows).astype(np.int64),
        "isn": rng.integers(0, 1 << 32, flows).astype(np.int64),
        "ack": rng.integers(0, 1 << 32, flows).astype(np.int64),
    }
    return table


def _frame_lengths(n: int, frame_bytes, rng) -> np.ndarray:
    if frame_bytes == "imix":  # 7:4:1 simple IMIX (without FCS)
        table = np.array([60] * 7 + [590] * 4 + [1514], dtype=np.int64)
        return table[rng.integers(0, 12, n)]
    try:
        value = int(frame_bytes)
    except (TypeError, ValueError):
        raise ValueError(f"frame_bytes must be an integer or 'imix', not {frame_bytes!r}")
    if not MIN_FRAME_BYTES <= value <= 9000:
        raise ValueError(f"frame_bytes must be {MIN_FRAME_BYTES}..9000, not {value}")
    return np.full(n, value, dtype=np.int64)


def synthetic_trace(*, packets: int, flows: int = 1000, rate_pps: float = 5e6,
                    gaps: str = "poisson", size_dist: str = "pareto",
                    shape: float = 1.2, sigma: float = 2.0, frame_bytes="imix",
                    tcp_fraction: float = 0.8, ipv6_fraction: float = 0.0,
                    start_ns: int = 1_000_000, window_bytes: int = DEFAULT_WINDOW_BYTES,
                    fast: bool = False, seed: int = 0) -> Trace:
    """A seeded synthetic trace of ``packets`` packets over ``flows`` flows.

    Parameters
    ----------
    packets:
        Number of packets N (≥ 1).
    flows:
        Number of flows F; each gets a heavy-tailed popularity (:func:`flow_assignment`)
        and, when ``packets >= flows``, at least one packet.
    rate_pps, gaps, start_ns:
        Send times (:func:`send_times`); ns ticks.
    size_dist, shape, sigma:
        Flow popularity: ``"pareto"`` (``shape``), ``"lognormal"`` (``sigma``) or
        ``"uniform"``.
    frame_bytes:
        Frame length without FCS: an integer, or ``"imix"`` (60/590/1514 in 7:4:1).
        Raised where needed so the headers and an 8-byte payload tag fit.
    tcp_fraction, ipv6_fraction:
        Fractions of flows that are TCP (else UDP) and IPv6 (else IPv4).
    window_bytes:
        Header window width (must equal the synopsis configuration's).
    fast:
        Skip the windows; draw random per-packet and per-flow keys instead.
    seed:
        Seeds everything (numpy ``default_rng``).
    """
    if packets < 1:
        raise ValueError(f"packets must be at least 1, not {packets}")
    for name, frac in (("tcp_fraction", tcp_fraction), ("ipv6_fraction", ipv6_fraction)):
        if not 0 <= frac <= 1:
            raise ValueError(f"{name} must be in [0, 1], not {frac}")
    rng = np.random.default_rng(seed)
    timestamps = send_times(packets, rate_pps=rate_pps, gaps=gaps, start_ns=start_ns,
                            rng=rng)
    flow_ids = flow_assignment(packets, flows, size_dist=size_dist, shape=shape,
                               sigma=sigma, rng=rng)
    table = _flow_table(flows, tcp_fraction=tcp_fraction, ipv6_fraction=ipv6_fraction,
                        rng=rng)
    flow_classes = np.where(table["v6"], FrameClass.IPV6, FrameClass.IPV4).astype(np.int64)
    classes = flow_classes[flow_ids]
    if fast:
        # unique packet keys: a bijective mix of the packet index and a random salt
        keys = mix64_array(np.arange(packets, dtype=np.uint64)
                           ^ np.uint64(int(rng.integers(0, 1 << 63))))
        flow_keys = mix64_array(np.arange(flows, dtype=np.uint64)
                                + np.uint64(int(rng.integers(0, 1 << 63))))
        return Trace(timestamps, flow_ids, _frame_lengths(packets, frame_bytes, rng),
                     classes, flow_classes=flow_classes, packet_keys=keys,
                     flow_keys=flow_keys)
    lengths = _frame_lengths(packets, frame_bytes, rng)
    lengths = np.maximum(lengths, _header_bytes(table["v6"][flow_ids],
                                                table["tcp"][flow_ids]) + 8)
    lengths = np.maximum(lengths, MIN_FRAME_BYTES)
    salt = np.uint64(int(rng.integers(0, 1 << 63)))
    tags = mix64_array(np.arange(packets, dtype=np.uint64) + salt)
    windows = build_headers(flow_ids=flow_ids, frame_lengths=lengths, flow_table=table,
                            packet_tags=tags, window_bytes=window_bytes)
    # one representative window per flow (the flow hash only sees the 5-tuple)
    rep_ids = np.arange(flows, dtype=np.int64)
    rep_len = np.maximum(_header_bytes(table["v6"], table["tcp"]) + 8, MIN_FRAME_BYTES)
    flow_windows = build_headers(flow_ids=rep_ids, frame_lengths=rep_len.astype(np.int64),
                                 flow_table=table, packet_tags=np.zeros(flows, np.uint64),
                                 window_bytes=window_bytes)
    return Trace(timestamps, flow_ids, lengths, classes, windows=windows,
                 flow_windows=flow_windows, flow_classes=flow_classes)


def trace_from_frames(frames, timestamps_ns, *, window_bytes: int = DEFAULT_WINDOW_BYTES,
                      errors=None) -> Trace:
    """A trace from captured frames (bytes without FCS) and their int64 ns timestamps.

    Windows come from :func:`~host_sw.contracts.hashing.header_windows`, classes from
    :func:`~host_sw.contracts.hashing.classify_frame`. Flows are the distinct flow-masked windows
    (5-tuple bytes of the default flow masks, per frame class); uncounted frames
    (non-IP, runts, control) get flows of their own but are never counted.
    """
    timestamps = np.asarray(timestamps_ns, dtype=np.int64)
    if len(frames) != len(timestamps):
        raise ValueError(f"{len(frames)} frames but {len(timestamps)} timestamps")
    errors = [False] * len(frames) if errors is None else errors
    classes = np.array([classify_frame(f, error=e) for f, e in zip(frames, errors)],
                       dtype=np.int64)
    windows = header_windows(frames, window_bytes)
    masks = default_masks(window_bytes)
    m4 = masks["flow_ipv4"].as_array()
    m6 = masks["flow_ipv6"].as_array()
    keyed = np.where((classes == FrameClass.IPV6)[:, None], windows * m6, windows * m4)
    keyed = np.concatenate([keyed, classes[:, None].astype(np.uint8)], axis=1)
    keyed = np.ascontiguousarray(keyed)
    if len(frames):
        as_void = keyed.view(np.dtype((np.void, keyed.shape[1]))).ravel()
        _, first, flow_ids = np.unique(as_void, return_index=True, return_inverse=True)
        flow_ids = flow_ids.ravel().astype(np.int64)
    else:
        first = np.zeros(0, np.int64)
        flow_ids = np.zeros(0, np.int64)
    lengths = np.array([len(f) for f in frames], dtype=np.int64)
    return Trace(timestamps, flow_ids, lengths, classes, windows=windows,
                 flow_windows=windows[first], flow_classes=classes[first])
