# SPDX-License-Identifier: BSD-2-Clause
"""Packet streams for simulation and benchmarks: the frames both measurement points see.

Data flow (docs/DESIGN.md, "Data flow of a packet"): this module stands in for the wire in
front of the *header tap*; it sits in the model layer, beside the golden model it feeds.
The header bytes themselves are written by :mod:`host_sw.model.headers`.
A :class:`Trace` is what the sender sees: send timestamps, the flow of each packet and
either real header windows (Ethernet + IPv4/IPv6 + UDP/TCP, built vectorised, hashed by
:func:`host_sw.model.golden_lda_rda_lds.hash_windows` — the default, and what the tests exercise) or, in
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

from host_sw.contracts.config import LdsConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import (
    DEFAULT_WINDOW_BYTES, MIN_FRAME_BYTES, FrameClass, HashPurpose, classify_frame,
    default_masks, header_windows, mix64, mix64_array,
)
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, flow_row_hashes, hash_windows
from host_sw.model.headers import build_headers, header_bytes, random_flow_table

__all__ = ["Trace", "synthetic_trace", "send_times", "flow_assignment",
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
    table = random_flow_table(flows, tcp_fraction=tcp_fraction, ipv6_fraction=ipv6_fraction,
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
    lengths = np.maximum(lengths, header_bytes(table["v6"][flow_ids],
                                               table["tcp"][flow_ids]) + 8)
    lengths = np.maximum(lengths, MIN_FRAME_BYTES)
    salt = np.uint64(int(rng.integers(0, 1 << 63)))
    tags = mix64_array(np.arange(packets, dtype=np.uint64) + salt)
    windows = build_headers(flow_ids=flow_ids, frame_lengths=lengths, flow_table=table,
                            packet_tags=tags, window_bytes=window_bytes)
    # one representative window per flow (the flow hash only sees the 5-tuple)
    rep_ids = np.arange(flows, dtype=np.int64)
    rep_len = np.maximum(header_bytes(table["v6"], table["tcp"]) + 8, MIN_FRAME_BYTES)
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
