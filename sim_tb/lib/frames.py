# SPDX-License-Identifier: BSD-2-Clause
"""Frame sources for the cocotb testbenches: real Ethernet/IPv4/IPv6 + UDP/TCP frames.

Where it sits (``docs/DESIGN.md``): these are the "frames in" of the data flow, offered to the
exported core's ``s_axis`` port by :mod:`sim_tb.lib.tb`; the same byte strings go to the
golden model (:func:`host_sw.model.golden_lda_rda_lds.hash_frames`), so the scoreboard compares the core
with the specification frame by frame.

Everything is seeded (:class:`numpy.random.Generator`) so a failing run can be repeated.
Frames are ``bytes`` without FCS (the tap never sees an FCS); a frame error (AXIS
``tuser`` on the last beat) travels beside the bytes in :class:`OfferedFrame`.

Kinds of frames:

* :func:`ip_frame` / :func:`random_frames` — valid IPv4/IPv6 UDP/TCP frames of a chosen
  size (60..1518, jumbo up to 9000), with correct lengths and checksums (dpkt);
* :func:`min_size_burst` — back-to-back 60-byte frames (the 1-frame-per-beat case);
* :func:`bad_frames` — errored, runt, truncated-header, non-IP and control frames;
* :func:`same_bucket_frames` — frames whose packet hash lands in one counter (found by
  searching with the golden model's hash), for the read-modify-write hazard test;
* :func:`read_pcap` — the frames of a capture (``sim_tb/data/mixed_small.pcap``: IPv4/IPv6
  UDP/TCP frames of many sizes, minimum-size frames, runts, non-IP and control frames),
  read by :mod:`host_sw.model.pcap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import dpkt
import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import (
    ETHERTYPE_CONTROL, ETHERTYPE_IPV4, ETHERTYPE_IPV6, MIN_FRAME_BYTES, FrameClass,
    classify_frame,
)
from host_sw.model import pcap
from host_sw.model.golden_lda_rda_lds import Hashers, bucket_indices, hash_windows

__all__ = ["OfferedFrame", "ip_frame", "random_frames", "min_size_burst", "bad_frames",
           "same_bucket_frames", "read_pcap", "JUMBO_MAX_BYTES", "STANDARD_MAX_BYTES"]

#: Largest standard frame without FCS (1518 with FCS is 1514 without; we follow the
#: task's 60..1518 range on the byte count the core sees).
STANDARD_MAX_BYTES = 1518
JUMBO_MAX_BYTES = 9000

_IPV4_TCP_MIN = 14 + 20 + 20
_IPV6_UDP_MIN = 14 + 40 + 8
_IPV6_TCP_MIN = 14 + 40 + 20


@dataclass(frozen=True)
class OfferedFrame:
    """One frame offered to the core: its bytes and the AXIS error flag (``tuser`` on
    the last beat)."""
    data: bytes
    error: bool = False

    @property
    def frame_class(self) -> FrameClass:
        """What the header tap must decide about it (``host_sw.contracts.hashing``)."""
        return classify_frame(self.data, error=self.error)


def _mac(rng) -> bytes:
    mac = bytearray(rng.integers(0, 256, 6, dtype=np.uint8).tobytes())
    mac[0] = (mac[0] & 0xFE) | 0x02  # unicast, locally administered
    return bytes(mac)


def ip_frame(rng: np.random.Generator, *, size: int, ipv6: bool = False,
             tcp: bool = False) -> bytes:
    """A valid Ethernet + IPv4/IPv6 + UDP/TCP frame of exactly ``size`` bytes (no FCS).

    Addresses, ports, IP ID / flow label, TTL, sequence numbers and payload are random.
    A size too small for the requested headers falls back to UDP, then to IPv4.
    """
    if size < MIN_FRAME_BYTES:
        raise ValueError(f"an IP test frame must be at least {MIN_FRAME_BYTES} bytes, "
                         f"not {size}")
    if size > JUMBO_MAX_BYTES:
        raise ValueError(f"size must be at most {JUMBO_MAX_BYTES}, not {size}")
    if ipv6 and size < _IPV6_UDP_MIN:
        ipv6 = False
    if tcp and size < (_IPV6_TCP_MIN if ipv6 else _IPV4_TCP_MIN):
        tcp = False
    l3_head = 40 if ipv6 else 20
    l4_head = 20 if tcp else 8
    payload = rng.integers(0, 256, size - 14 - l3_head - l4_head, dtype=np.uint8).tobytes()
    sport, dport = (int(p) for p in rng.integers(1, 65536, 2))
    if tcp:
        l4 = dpkt.tcp.TCP(sport=sport, dport=dport, seq=int(rng.integers(0, 1 << 32)),
                          ack=int(rng.integers(0, 1 << 32)), flags=dpkt.tcp.TH_ACK,
                          win=int(rng.integers(1, 65536)), data=payload)
        proto = dpkt.ip.IP_PROTO_TCP
    else:
        l4 = dpkt.udp.UDP(sport=sport, dport=dport, ulen=8 + len(payload), data=payload)
        proto = dpkt.ip.IP_PROTO_UDP
    if ipv6:
        l3 = dpkt.ip6.IP6(src=rng.integers(0, 256, 16, dtype=np.uint8).tobytes(),
                          dst=rng.integers(0, 256, 16, dtype=np.uint8).tobytes(),
                          nxt=proto, hlim=int(rng.integers(1, 256)),
                          plen=l4_head + len(payload), data=l4)
        l3.fc = 0
        l3.flow = int(rng.integers(0, 1 << 20))
        ethertype = ETHERTYPE_IPV6
    else:
        l3 = dpkt.ip.IP(src=rng.integers(0, 256, 4, dtype=np.uint8).tobytes(),
                        dst=rng.integers(0, 256, 4, dtype=np.uint8).tobytes(),
                        p=proto, ttl=int(rng.integers(1, 256)),
                        id=int(rng.integers(0, 65536)), data=l4)
        ethertype = ETHERTYPE_IPV4
    frame = bytes(dpkt.ethernet.Ethernet(src=_mac(rng), dst=_mac(rng), type=ethertype,
                                         data=l3))
    assert len(frame) == size, (len(frame), size)
    return frame


def random_frames(rng: np.random.Generator, count: int, *, min_size: int = 60,
                  max_size: int = STANDARD_MAX_BYTES, jumbo_fraction: float = 0.0,
                  ipv6_fraction: float = 0.3, tcp_fraction: float = 0.5,
                  small_fraction: float = 0.5) -> list[OfferedFrame]:
    """``count`` valid IP frames; sizes mix minimum-size frames (``small_fraction``),
    uniform sizes in ``min_size..max_size`` and jumbo frames up to 9000 bytes."""
    frames = []
    for _ in range(count):
        u = rng.random()
        if u < jumbo_fraction:
            size = int(rng.integers(STANDARD_MAX_BYTES + 1, JUMBO_MAX_BYTES + 1))
        elif u < jumbo_fraction + small_fraction:
            size = int(rng.integers(min_size, min(min_size + 8, max_size) + 1))
        else:
            size = int(rng.integers(min_size, max_size + 1))
        frames.append(OfferedFrame(ip_frame(rng, size=size,
                                            ipv6=bool(rng.random() < ipv6_fraction),
                                            tcp=bool(rng.random() < tcp_fraction))))
    return frames


def min_size_burst(rng: np.random.Generator, count: int) -> list[OfferedFrame]:
    """``count`` minimum-size (60-byte) IPv4/UDP frames, for back-to-back bursts."""
    return [OfferedFrame(ip_frame(rng, size=MIN_FRAME_BYTES)) for _ in range(count)]


def bad_frames(rng: np.random.Generator) -> list[OfferedFrame]:
    """One of each kind the tap must not count (plus an errored runt):

    errored IPv4 (tuser on the last beat), errored runt, runts of 1, 13 and 59 bytes,
    an IPv4 header truncated at 34 bytes (a runt), a non-IP (ARP) frame, an IPv4
    EtherType with a version-6 nibble (non-IP), and a control frame (EtherType 0x88B5).
    """
    good = ip_frame(rng, size=int(rng.integers(60, 200)))
    arp = bytes(dpkt.ethernet.Ethernet(src=_mac(rng), dst=b"\xff" * 6,
                                       type=dpkt.ethernet.ETH_TYPE_ARP,
                                       data=dpkt.arp.ARP(sha=_mac(rng))))
    arp = arp + bytes(max(0, 60 - len(arp)))
    wrong_version = bytearray(ip_frame(rng, size=80))
    wrong_version[14] = 0x65
    control = (bytes(6) + _mac(rng) + ETHERTYPE_CONTROL.to_bytes(2, "big")
               + rng.integers(0, 256, 64, dtype=np.uint8).tobytes())
    frames = [
        OfferedFrame(good, error=True),
        OfferedFrame(good[:40], error=True),
        OfferedFrame(good[:1]),
        OfferedFrame(good[:13]),
        OfferedFrame(good[:59]),
        OfferedFrame(good[:34]),
        OfferedFrame(arp),
        OfferedFrame(bytes(wrong_version)),
        OfferedFrame(control),
    ]
    expected = [FrameClass.ERRORED, FrameClass.ERRORED, FrameClass.RUNT, FrameClass.RUNT,
                FrameClass.RUNT, FrameClass.RUNT, FrameClass.NON_IP, FrameClass.NON_IP,
                FrameClass.CONTROL]
    assert [f.frame_class for f in frames] == expected
    return frames


def _ipv4_udp_candidates(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``n`` IPv4/UDP frames of ``size`` bytes as an ``(n, size)`` uint8 array, with
    random addresses, ports, IP ID and payload; IP header checksum filled in, UDP
    checksum 0 (none, valid for IPv4)."""
    template = np.frombuffer(ip_frame(np.random.default_rng(0), size=size), np.uint8)
    out = np.tile(template, (n, 1))
    out[:, 18:20] = rng.integers(0, 256, (n, 2), dtype=np.uint8)   # IP ID
    out[:, 26:38] = rng.integers(0, 256, (n, 12), dtype=np.uint8)  # addresses, ports
    out[:, 42:] = rng.integers(0, 256, (n, size - 42), dtype=np.uint8)
    out[:, 40:42] = 0                                               # UDP checksum: none
    out[:, 24:26] = 0
    words = out[:, 14:34].astype(np.uint32).reshape(n, 10, 2)
    s = (words[:, :, 0] << 8 | words[:, :, 1]).sum(axis=1)
    while (s >> 16).any():
        s = (s & 0xFFFF) + (s >> 16)
    checksum = (~s) & 0xFFFF
    out[:, 24] = checksum >> 8
    out[:, 25] = checksum & 0xFF
    return out


def same_bucket_frames(config: SynopsisConfig, rng: np.random.Generator, count: int, *,
                       size: int = MIN_FRAME_BYTES, distinct: int = 64,
                       max_candidates: int = 1 << 20) -> list[OfferedFrame]:
    """``count`` IPv4/UDP frames that all update the same counter(s): the same (bank,
    row) for LDA, the same bucket in every bank for RDA, the same cell in every row for
    LDS (all rows sampling them). Found by hashing random candidates with the golden
    model; up to ``distinct`` different frames are found and then repeated in a seeded
    random order."""
    hashers = Hashers(config)
    target = None
    found: list[bytes] = []
    batch = 1 << 15
    tried = 0
    while len(found) < distinct and tried < max_candidates:
        cand = _ipv4_udp_candidates(rng, batch, size)
        tried += batch
        windows = np.zeros((batch, config.window_bytes), dtype=np.uint8)
        head = min(size, config.window_bytes)
        windows[:, :head] = cand[:, :head]
        hashes = hash_windows(config, windows, None, hashers)
        lane, col, who = bucket_indices(config, hashes, hashers)
        lanes = config.shape[0]
        # per packet: the tuple of flat indices it updates, -1 where a lane is not updated
        key = np.full((batch, lanes), -1, dtype=np.int64)
        key[who, lane] = lane * config.shape[1] + col
        if target is None:
            full = (key >= 0).sum(axis=1) == (1 if config.kind == "lda" else lanes)
            if not full.any():
                continue
            target = key[np.flatnonzero(full)[0]].copy()
        match = np.flatnonzero((key == target).all(axis=1))
        found.extend(bytes(cand[i]) for i in match[:distinct - len(found)])
    if not found:
        raise RuntimeError(f"no frame found for one bucket in {tried} candidates")
    picks = rng.integers(0, len(found), count)
    return [OfferedFrame(found[i]) for i in picks]


def read_pcap(path) -> list[OfferedFrame]:
    """The frames of a pcap or pcapng file (Ethernet link type), in file order, read by
    :func:`host_sw.model.pcap.read_pcap`."""
    return [OfferedFrame(bytes(frame)) for frame in pcap.read_pcap(path).frames]
