# SPDX-License-Identifier: BSD-2-Clause
"""Real header windows for synthetic traffic, built vectorised: Ethernet II + IPv4/IPv6 +
UDP/TCP, one row per packet.

Model layer (docs/DESIGN.md, "Data flow of a packet"):
:func:`host_sw.model.traffic.synthetic_trace` draws the flows (:func:`random_flow_table`) and the packets, and this module writes the
bytes the header tap would see, so the golden model hashes the same windows the gateware
does.
"""

from __future__ import annotations

import numpy as np

from host_sw.contracts.hashing import ETHERTYPE_IPV4, ETHERTYPE_IPV6

__all__ = ["build_headers", "header_bytes", "random_flow_table", "rank_in_group"]


def rank_in_group(groups: np.ndarray, values: np.ndarray | None = None):
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


def header_bytes(is_v6: np.ndarray, is_tcp: np.ndarray) -> np.ndarray:
    return 14 + np.where(is_v6, 40, 20) + np.where(is_tcp, 20, 8)


def _put_ipv4(out, r4, f, frame_lengths, proto, rank, flow_table) -> None:
    """IPv4 header (IHL 5, DF, TTL 64, valid checksum; IP ID = flow start + rank)."""
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


def _put_ipv6(out, r6, f, frame_lengths, proto, flow_table) -> None:
    """IPv6 header (hop limit 64)."""
    out[r6, 12], out[r6, 13] = ETHERTYPE_IPV6 >> 8, ETHERTYPE_IPV6 & 0xFF
    out[r6, 14] = 0x60
    _put(out, r6, 18, frame_lengths[r6] - 54, 2)
    out[r6, 20] = proto[r6].astype(np.uint8)
    out[r6, 21] = 64
    out[r6, 22:38] = flow_table["src6"][f[r6]]
    out[r6, 38:54] = flow_table["dst6"][f[r6]]


def _put_l4(out, l4, tcp, f, frame_lengths, rank, before, packet_tags, flow_table) -> None:
    """UDP or TCP header at byte ``l4`` of each row, then the 8-byte payload tag."""
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
    hdr = header_bytes(v6, tcp)
    width = max(window_bytes, int(hdr.max()) + 8 if n else 0)
    out = np.zeros((n, width), dtype=np.uint8)
    f = flow_ids
    payload = frame_lengths - hdr
    rank, before = rank_in_group(f, payload)
    every = slice(None)
    _put(out, every, 0, 0x020000000001, 6)
    _put(out, every, 6, 0x020000000002, 6)
    proto = np.where(tcp, 6, 17).astype(np.uint64)
    if (~v6).any():
        _put_ipv4(out, _rows(~v6), f, frame_lengths, proto, rank, flow_table)
    if v6.any():
        _put_ipv6(out, _rows(v6), f, frame_lengths, proto, flow_table)
    _put_l4(out, np.where(v6, 54, 34), tcp, f, frame_lengths, rank, before, packet_tags,
            flow_table)
    # zero past each frame's end (frames shorter than the window)
    for col in range(int(frame_lengths.min()) if n else width, window_bytes):
        out[frame_lengths <= col, col] = 0
    return out if width == window_bytes else out[:, :window_bytes].copy()


def random_flow_table(flows: int, *, tcp_fraction: float, ipv6_fraction: float,
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
