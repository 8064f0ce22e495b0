# SPDX-License-Identifier: BSD-2-Clause
"""Packet captures: read and write pcap (and read pcapng) with exact ns timestamps, and
pair a sender-side and a receiver-side capture into both points' observations.

Data flow (docs/DESIGN.md, "Data flow of a packet": offline analysis of two pcap captures
with the same estimators; model layer): capture files ► **this module** ►
:class:`~host_sw.model.traffic.Trace` per point ►
:class:`~host_sw.model.observation.IntervalObservation` ► golden model ► estimators.

Timestamps are int64 ns since the epoch, exact: classic pcap records are parsed here
with dpkt's header classes (microsecond files are scaled by 1000, nanosecond-magic files
kept as they are) rather than through dpkt's float timestamps, which cannot hold ns at
epoch scale. pcapng (one interface, as dpkt's reader supports) uses the interface's
``if_tsresol`` and ``if_tsoffset`` in integer arithmetic (a power-of-two resolution is
rounded to the nearest ns). Writing produces classic pcap, nanosecond magic by default.

Example
-------
>>> write_pcap("a.pcap", frames, timestamps_ns)            # doctest: +SKIP
>>> cap = read_pcap("a.pcap")                               # doctest: +SKIP
>>> intervals = pair_captures("sender.pcap", "receiver.pcap")  # doctest: +SKIP
>>> s_syn, r_syn = intervals[0].synopses(config)            # doctest: +SKIP
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.hashing import DEFAULT_WINDOW_BYTES, FrameClass, default_masks
from host_sw.model.observation import (
    NO_INTERVAL, IntervalObservation, interval_observations,
)
from host_sw.model.traffic import Trace, trace_from_frames

__all__ = ["Capture", "CaptureError", "read_pcap", "write_pcap", "capture_trace",
           "pair_captures", "MAGIC_US", "MAGIC_NS", "PCAPNG_SHB", "PCAPNG_BOM"]

#: File magic numbers: classic pcap with µs or ns timestamps, pcapng's section header
#: block type and its byte-order magic (one definition for every reader here).
MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
#: Ethernet's link-layer type (``dpkt.pcap.DLT_EN10MB``).
DLT_EN10MB = 1


class CaptureError(ValueError):
    """A capture file is missing, truncated or not pcap/pcapng."""


@dataclass(eq=False)
class Capture:
    """Frames of one capture with exact timestamps.

    Attributes
    ----------
    frames:
        list of bytes (as captured; without FCS for Ethernet captures).
    timestamps_ns:
        int64 ``(N,)`` — ns since the epoch.
    linktype:
        The link-layer type (1 = Ethernet).
    original_lengths:
        int64 ``(N,)`` — on-wire lengths (a snap length may have cut ``frames``).
    """
    frames: list
    timestamps_ns: np.ndarray
    linktype: int
    original_lengths: np.ndarray

    def __len__(self):
        return len(self.frames)


def _open_bytes(path) -> bytes:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CaptureError(f"capture file {path!r} does not exist")
    with open(path, "rb") as f:
        return f.read()


def _read_classic(data: bytes, path: str) -> Capture:
    import dpkt    # here: the streamed analysis never needs it (about 0.05 s to import)
    magic_le = struct.unpack("<I", data[:4])[0]
    if magic_le in (MAGIC_US, MAGIC_NS):
        file_hdr_cls, pkt_hdr_cls, magic = dpkt.pcap.LEFileHdr, dpkt.pcap.LEPktHdr, magic_le
    else:
        file_hdr_cls, pkt_hdr_cls = dpkt.pcap.FileHdr, dpkt.pcap.PktHdr
        magic = struct.unpack(">I", data[:4])[0]
    if len(data) < file_hdr_cls.__hdr_len__:
        raise CaptureError(f"{path!r}: truncated pcap file header")
    fh = file_hdr_cls(data[:file_hdr_cls.__hdr_len__])
    frac_ns = 1 if magic == MAGIC_NS else 1000
    off = file_hdr_cls.__hdr_len__
    hlen = pkt_hdr_cls.__hdr_len__
    frames, ts, orig = [], [], []
    while off < len(data):
        if off + hlen > len(data):
            raise CaptureError(f"{path!r}: truncated record header at byte {off}")
        ph = pkt_hdr_cls(data[off:off + hlen])
        off += hlen
        if off + ph.caplen > len(data):
            raise CaptureError(f"{path!r}: truncated packet record at byte {off} "
                               f"({ph.caplen} bytes announced)")
        if frac_ns == 1000 and ph.tv_usec >= 1_000_000 or ph.tv_usec >= 1_000_000_000:
            raise CaptureError(f"{path!r}: corrupt timestamp fraction {ph.tv_usec} at "
                               f"record {len(frames)}")
        frames.append(data[off:off + ph.caplen])
        ts.append(ph.tv_sec * 1_000_000_000 + ph.tv_usec * frac_ns)
        orig.append(ph.len)
        off += ph.caplen
    return Capture(frames, np.array(ts, dtype=np.int64), int(fh.linktype),
                   np.array(orig, dtype=np.int64))


def _interface(idb, le: bool, path: str) -> tuple[int, int, int, int]:
    """``(linktype, resolution base, power, offset s)`` of an interface description."""
    import dpkt
    resol_num, resol_pow, offset_s = 10, 6, 0
    for opt in idb.opts:
        if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL and len(opt.data) >= 1:
            v = opt.data[0]
            resol_num, resol_pow = (2 if v & 0x80 else 10), v & 0x7F
        elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) >= 8:
            offset_s = struct.unpack("<q" if le else ">q", opt.data[:8])[0]
    return int(idb.linktype), resol_num, resol_pow, offset_s


def _read_pcapng(path: str) -> Capture:
    import dpkt
    try:
        with open(path, "rb") as f:
            reader = dpkt.pcapng.Reader(f)
            le = reader._Reader__le if hasattr(reader, "_Reader__le") else True
            ifaces = [_interface(reader.idb, le, path)]
            linktype = ifaces[0][0]
            frames, ts, orig = [], [], []
            # iterate blocks like dpkt's reader, keeping the integer timestamps
            while True:
                head = f.read(8)
                if len(head) < 8:
                    if head:
                        raise CaptureError(f"{path!r}: truncated pcapng block header")
                    break
                blk_type, blk_len = struct.unpack("<II" if le else ">II", head)
                if blk_len < 12:
                    raise CaptureError(f"{path!r}: corrupt pcapng block length {blk_len}")
                body = f.read(blk_len - 8)
                if len(body) < blk_len - 8:
                    raise CaptureError(f"{path!r}: truncated pcapng block")
                buf = head + body
                if blk_type == dpkt.pcapng.PCAPNG_BT_SHB:
                    ifaces = []
                    continue
                if blk_type == dpkt.pcapng.PCAPNG_BT_IDB:
                    idb = (dpkt.pcapng.InterfaceDescriptionBlockLE(buf) if le
                           else dpkt.pcapng.InterfaceDescriptionBlock(buf))
                    ifaces.append(_interface(idb, le, path))
                    if ifaces[-1][0] != linktype:    # every interface's link type
                        raise CaptureError(f"{path!r}: interfaces of different link types "
                                           f"({linktype}, {ifaces[-1][0]})")
                    continue
                if blk_type == dpkt.pcapng.PCAPNG_BT_EPB:
                    blk = (dpkt.pcapng.EnhancedPacketBlockLE(buf) if le
                           else dpkt.pcapng.EnhancedPacketBlock(buf))
                elif blk_type == dpkt.pcapng.PCAPNG_BT_PB:
                    blk = (dpkt.pcapng.PacketBlockLE(buf) if le
                           else dpkt.pcapng.PacketBlock(buf))
                else:
                    continue
                if blk.caplen > blk_len - 32:
                    raise CaptureError(f"{path!r}: pcapng packet block announces "
                                       f"{blk.caplen} captured bytes in {blk_len - 32}")
                iface = getattr(blk, "iface_id", 0)
                if iface >= len(ifaces):
                    raise CaptureError(f"{path!r}: a packet names an interface the file "
                                       f"does not describe")
                _, resol_num, resol_pow, offset_s = ifaces[iface]
                ticks = (blk.ts_high << 32) | blk.ts_low
                d = resol_num ** resol_pow
                ns = (ticks * 10 ** 9 + d // 2) // d + offset_s * 1_000_000_000
                if not -(1 << 63) <= ns < 1 << 63:
                    raise CaptureError(f"{path!r}: timestamp of packet {len(frames)} "
                                       f"({ticks} ticks, offset {offset_s} s) is beyond the "
                                       f"64-bit ns range")
                frames.append(bytes(blk.pkt_data))
                ts.append(ns)
                orig.append(blk.pkt_len)
    except CaptureError:
        raise
    except (dpkt.dpkt.Error, ValueError, struct.error) as e:
        raise CaptureError(f"{path!r}: corrupt pcapng file ({e})") from e
    return Capture(frames, np.array(ts, dtype=np.int64), linktype,
                   np.array(orig, dtype=np.int64))


def read_pcap(path) -> Capture:
    """Read a pcap or pcapng file; timestamps exact in ns (module docstring).

    Raises :class:`CaptureError` (a ``ValueError``) for a missing, truncated or
    unrecognised file.
    """
    path = os.fspath(path)
    data = _open_bytes(path)
    if len(data) < 4:
        raise CaptureError(f"{path!r} is too short to be a capture ({len(data)} bytes)")
    magic_le = struct.unpack("<I", data[:4])[0]
    magic_be = struct.unpack(">I", data[:4])[0]
    if magic_le == PCAPNG_SHB:
        return _read_pcapng(path)
    if magic_le in (MAGIC_US, MAGIC_NS) or magic_be in (MAGIC_US, MAGIC_NS):
        return _read_classic(data, path)
    raise CaptureError(f"{path!r} is not a pcap or pcapng file (magic {magic_le:#010x})")


def write_pcap(path, frames, timestamps_ns, *, nano: bool = True,
               linktype: int = DLT_EN10MB, snaplen: int = 65535) -> None:
    """Write frames with int ns timestamps to a classic pcap file.

    ``nano=False`` writes a microsecond file (timestamps must then be whole µs, else
    ``ValueError`` — no silent rounding).
    """
    ts = np.asarray(timestamps_ns, dtype=np.int64)
    if len(ts) != len(frames):
        raise ValueError(f"{len(frames)} frames but {len(ts)} timestamps")
    if (ts < 0).any():
        raise ValueError("pcap timestamps must be non-negative")
    if not nano and (ts % 1000).any():
        raise ValueError("a microsecond pcap cannot hold these ns timestamps; use nano=True")
    import dpkt
    magic = MAGIC_NS if nano else MAGIC_US
    div = 1 if nano else 1000
    fh = dpkt.pcap.LEFileHdr(magic=magic, snaplen=snaplen, linktype=linktype)
    parts = [bytes(fh)]
    for frame, t in zip(frames, ts.tolist()):
        frame = bytes(frame)
        sec, frac = divmod(t, 1_000_000_000)
        parts.append(bytes(dpkt.pcap.LEPktHdr(tv_sec=sec, tv_usec=frac // div,
                                              caplen=len(frame), len=len(frame))))
        parts.append(frame)
    with open(os.fspath(path), "wb") as f:
        f.write(b"".join(parts))


def capture_trace(capture: Capture | str | os.PathLike, *,
                  window_bytes: int = DEFAULT_WINDOW_BYTES) -> Trace:
    """A :class:`~host_sw.model.traffic.Trace` of one capture (Ethernet link type)."""
    if not isinstance(capture, Capture):
        capture = read_pcap(capture)
    if capture.linktype != DLT_EN10MB:
        raise CaptureError(f"only Ethernet captures (link type 1) are supported, "
                           f"not link type {capture.linktype}")
    return trace_from_frames(capture.frames, capture.timestamps_ns,
                             window_bytes=window_bytes)


def _packet_keys(trace: Trace) -> np.ndarray:
    """The packet-invariant bytes of each window (default packet masks per class), as
    fixed-size byte strings for matching."""
    masks = default_masks(trace.windows.shape[1])
    m4 = masks["packet_ipv4"].as_array()
    m6 = masks["packet_ipv6"].as_array()
    keyed = np.where((trace.classes == FrameClass.IPV6)[:, None],
                     trace.windows * m6, trace.windows * m4)
    keyed = np.ascontiguousarray(np.concatenate(
        [keyed, trace.classes[:, None].astype(np.uint8)], axis=1))
    return keyed.view(np.dtype((np.void, keyed.shape[1]))).ravel()


def _occurrence(keys: np.ndarray) -> np.ndarray:
    """How many equal keys precede each key (0 for the first occurrence)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    start = np.ones(len(k), bool)
    start[1:] = k[1:] != k[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(k)), 0))
    occ = np.empty(len(k), np.int64)
    occ[order] = np.arange(len(k)) - first
    return occ


def _match_packets(s_keys: np.ndarray, r_keys: np.ndarray) -> np.ndarray:
    """For each receiver packet, the index of the sender packet with the same key and
    occurrence number, or -1."""
    def tagged(keys):
        raw = keys.view(np.uint8).reshape(len(keys), -1) if len(keys) else \
            np.zeros((0, 1), np.uint8)
        occ = _occurrence(keys).astype("<u8").view(np.uint8).reshape(-1, 8)
        both = np.ascontiguousarray(np.concatenate([raw, occ], axis=1))
        return both.view(np.dtype((np.void, both.shape[1]))).ravel()
    if not len(s_keys) or not len(r_keys):
        return np.full(len(r_keys), -1, dtype=np.int64)
    s_tag, r_tag = tagged(s_keys), tagged(r_keys)
    _, inverse = np.unique(np.concatenate([s_tag, r_tag]), return_inverse=True)
    inverse = inverse.ravel()
    sender_of_group = np.full(inverse.max() + 1, -1, dtype=np.int64)
    sender_of_group[inverse[:len(s_tag)]] = np.arange(len(s_tag))
    return sender_of_group[inverse[len(s_tag):]]


def pair_captures(sender, receiver, *, mode: str = "time", interval_ns: int | None = None,
                  start_ns: int | None = None,
                  window_bytes: int = DEFAULT_WINDOW_BYTES) -> list[IntervalObservation]:
    """Both points' per-interval observations from two captures, with truth.

    ``sender`` / ``receiver`` are paths or :class:`Capture` objects. Each point's packets
    are hashed from its own frames, so the estimators see exactly what two taps would.
    Intervals: ``mode="time"`` assigns by each capture's own timestamps on the grid
    ``start_ns + iδ`` (default start: the sender's first timestamp); ``mode="marker"``
    assigns a matched receiver packet to its sender packet's interval and unmatched
    ones by their own time. ``interval_ns=None``: one interval holding both captures.

    The intervals cover both captures: the sender's first and last intervals are open
    towards the captures' ends, so a receiver packet before the sender's first interval
    or after its last one (the packets still in flight when the sender's capture
    stopped, or a receiver clock behind the sender's) belongs to that first or last
    interval. Without that, the receiver's tail would be counted lost at the end and
    form an interval of its own that the sender never saw.

    The truth pairs packets whose invariant header bytes (default packet masks) are
    identical — exact when windows are unique; a repeated window matches its first
    unmatched occurrence in order.
    """
    if mode not in ("marker", "time"):
        raise ValueError(f"mode must be 'marker' or 'time', not {mode!r}")
    s_trace = capture_trace(sender, window_bytes=window_bytes)
    r_trace = capture_trace(receiver, window_bytes=window_bytes)
    ns, nr = len(s_trace), len(r_trace)
    s_keys, r_keys = _packet_keys(s_trace), _packet_keys(r_trace)
    match = _match_packets(s_keys, r_keys)
    unmatched = np.flatnonzero(match < 0)
    g = ns + len(unmatched)
    r_id = match.copy()
    r_id[unmatched] = ns + np.arange(len(unmatched))
    sender_index = np.concatenate([np.arange(ns), np.full(len(unmatched), -1)])
    receiver_index = np.full(g, -1, dtype=np.int64)
    receiver_index[r_id] = np.arange(nr)
    sender_ts = np.zeros(g, np.int64)
    sender_ts[:ns] = s_trace.timestamps
    receiver_ts = np.zeros(g, np.int64)
    receiver_ts[r_id] = r_trace.timestamps
    counted = np.zeros(g, bool)
    counted[:ns] = s_trace.counted
    counted[r_id] |= r_trace.counted
    if start_ns is not None:
        t0 = int(start_ns)
    elif ns:
        t0 = int(s_trace.timestamps.min())
    elif nr:
        t0 = int(r_trace.timestamps.min())
    else:
        return []
    if interval_ns is None:
        last = max(int(t.timestamps.max()) for t in (s_trace, r_trace) if len(t))
        delta = max(1, last - t0 + 1)
    else:
        if int(interval_ns) <= 0:
            raise ValueError(f"interval_ns must be positive, not {interval_ns}")
        delta = int(interval_ns)
    s_iv = np.full(g, NO_INTERVAL, np.int64)
    s_iv[:ns] = np.floor_divide(s_trace.timestamps - t0, delta)
    r_iv = np.full(g, NO_INTERVAL, np.int64)
    own = np.floor_divide(r_trace.timestamps - t0, delta)
    if mode == "marker":
        r_iv[r_id] = np.where(match >= 0, s_iv[np.maximum(match, 0)], own)
    else:
        r_iv[r_id] = own
    if ns:   # the sender's first and last intervals reach the captures' ends
        r_iv[r_id] = np.clip(r_iv[r_id], s_iv[:ns].min(), s_iv[:ns].max())
    return interval_observations(
        sender_trace=s_trace, receiver_trace=r_trace, sender_index=sender_index,
        receiver_index=receiver_index, sender_ts=sender_ts, receiver_ts=receiver_ts,
        sender_interval=s_iv, receiver_interval=r_iv, counted=counted)
