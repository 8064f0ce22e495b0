# SPDX-License-Identifier: BSD-2-Clause
"""The golden model: exactly the counter arrays the gateware holds, computed with numpy.

This is the executable specification of the update pipeline (``DESIGN.md``, "update
pipeline"). The cocotb testbenches compare the gateware's frozen copy with
:class:`Synopsis` objects built here word for word, and ``ldactl simulate`` and the
accuracy benchmarks run millions of packets through it.

Two entry levels:

* :func:`hash_frames` / :func:`hash_windows` — from frames (or their header windows and
  classes) to :class:`PacketHashes`, as the tap and H3 hasher compute them;
* :func:`update` — from hashes and integer timestamps (ticks) to a :class:`Synopsis`.

All arithmetic is modulo the field widths of the configuration's word layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import LdaConfig, LdsConfig, RdaConfig, SynopsisConfig, check_comparable
from .hashing import (
    H3, ByteMask, FrameClass, HashPurpose, classify_frame, header_windows, lda_bank,
    lda_row, lds_digest, lds_offset, leading_zeros32, range_reduce32,
)
from .layouts import wrap

__all__ = ["PacketHashes", "Synopsis", "Hashers", "hash_windows", "hash_frames",
           "update", "bucket_indices"]


@dataclass
class PacketHashes:
    """Per-packet hash outputs of the H3 stage.

    Attributes
    ----------
    packet:
        uint64 ``(N,)`` — the 64-bit packet hash ``P`` (RDA ID).
    flow:
        uint64 ``(R, N)`` — per-LDS-row 32-bit flow hashes, or ``None`` for LDA/RDA.
    counted:
        bool ``(N,)`` — whether the tap counts the frame (IPv4/IPv6, not errored/runt).
    """
    packet: np.ndarray
    flow: np.ndarray | None = None
    counted: np.ndarray | None = None

    def __len__(self):
        return len(self.packet)

    def select(self, which) -> "PacketHashes":
        """The hashes of a subset of packets (boolean mask or index array)."""
        return PacketHashes(self.packet[which],
                            None if self.flow is None else self.flow[:, which],
                            None if self.counted is None else self.counted[which])


class Hashers:
    """The H3 functions of a configuration (built once; the matrices are cached)."""

    def __init__(self, config: SynopsisConfig):
        w = config.window_bytes
        self.config = config
        self.packet = {
            FrameClass.IPV4: H3(seed=config.seed, purpose=HashPurpose.PACKET, in_bytes=w,
                                out_bits=64,
                                byte_mask=ByteMask.from_int(config.mask_packet_ipv4, w).as_array()),
            FrameClass.IPV6: H3(seed=config.seed, purpose=HashPurpose.PACKET, in_bytes=w,
                                out_bits=64,
                                byte_mask=ByteMask.from_int(config.mask_packet_ipv6, w).as_array()),
        }
        self.flow = {}
        if isinstance(config, LdsConfig):
            for cls, mask in ((FrameClass.IPV4, config.mask_flow_ipv4),
                              (FrameClass.IPV6, config.mask_flow_ipv6)):
                self.flow[cls] = [
                    H3(seed=config.seed, purpose=HashPurpose.LDS_FLOW, index=r, in_bytes=w,
                       out_bits=32, byte_mask=ByteMask.from_int(mask, w).as_array())
                    for r in range(config.rows)]
        self.rda_bucket = []
        if isinstance(config, RdaConfig):
            self.rda_bucket = [H3(seed=config.seed, purpose=HashPurpose.RDA_BUCKET, index=l,
                                  in_bytes=8, out_bits=32) for l in range(config.banks)]


def hash_windows(config: SynopsisConfig, windows: np.ndarray, classes=None,
                 hashers: Hashers | None = None) -> PacketHashes:
    """Hash header windows ``(N, window_bytes)`` uint8.

    ``classes`` (``(N,)`` ints of :class:`FrameClass`, default all IPv4) picks the mask
    set per packet and decides ``counted``.
    """
    hashers = hashers or Hashers(config)
    n = windows.shape[0]
    if classes is None:
        classes = np.full(n, FrameClass.IPV4, dtype=np.int64)
    classes = np.asarray(classes)
    packet = np.zeros(n, dtype=np.uint64)
    flow = (np.zeros((config.rows, n), dtype=np.uint64)
            if isinstance(config, LdsConfig) else None)
    for cls in (FrameClass.IPV4, FrameClass.IPV6):
        sel = classes == cls
        if not sel.any():
            continue
        if sel.all():
            sub = windows
        else:
            sub = windows[sel]
        packet[sel] = hashers.packet[cls](sub)
        if flow is not None:
            for r, h in enumerate(hashers.flow[cls]):
                flow[r, sel] = h(sub)
    counted = (classes == FrameClass.IPV4) | (classes == FrameClass.IPV6)
    return PacketHashes(packet, flow, counted)


def hash_frames(config: SynopsisConfig, frames, errors=None,
                hashers: Hashers | None = None) -> PacketHashes:
    """Hash whole frames (bytes without FCS), classifying them as the tap does."""
    errors = [False] * len(frames) if errors is None else errors
    classes = np.array([classify_frame(f, error=e) for f, e in zip(frames, errors)],
                       dtype=np.int64)
    return hash_windows(config, header_windows(frames, config.window_bytes), classes,
                        hashers)


@dataclass
class Synopsis:
    """One measurement point's counters for one interval.

    ``fields`` maps each layout field name (``count``, ``ts_sum``, ``id_xor`` /
    ``digest``) to a uint64 array of shape ``config.shape``, already reduced modulo the
    field width.
    """
    config: SynopsisConfig
    fields: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def empty(cls, config: SynopsisConfig) -> "Synopsis":
        return cls(config, {name: np.zeros(config.shape, dtype=np.uint64)
                            for name in config.layout.names})

    def __getitem__(self, name) -> np.ndarray:
        return self.fields[name]

    @property
    def count(self) -> np.ndarray:
        return self.fields["count"]

    @property
    def ts_sum(self) -> np.ndarray:
        return self.fields["ts_sum"]

    def words(self) -> list[int]:
        """Packed counter words in memory order (bank/row major), as the gateware holds
        them (``docs/SPEC.md`` §4)."""
        return self.config.layout.pack(self.fields)

    @classmethod
    def from_words(cls, config: SynopsisConfig, words) -> "Synopsis":
        if len(words) != config.buckets:
            raise ValueError(f"{config.kind} synopsis has {config.buckets} words, "
                             f"got {len(words)}")
        return cls(config, config.layout.unpack(list(words), config.shape))

    def merged(self, other: "Synopsis") -> "Synopsis":
        """Counters of both (as if one synopsis saw both packet sets)."""
        check_comparable(self.config, other.config)
        out = {}
        for f in self.config.layout.fields:
            a, b = self.fields[f.name], other.fields[f.name]
            out[f.name] = wrap(a + b, f.width) if f.combine == "sum" else a ^ b
        return Synopsis(self.config, out)

    def __eq__(self, other):
        return (isinstance(other, Synopsis) and self.config == other.config
                and all(np.array_equal(self.fields[k], other.fields[k]) for k in self.fields))


def bucket_indices(config: SynopsisConfig, hashes: PacketHashes,
                   hashers: Hashers | None = None):
    """Where each packet goes: ``(row_or_bank, column)`` index arrays of equal length
    (a packet appears once per bank/row it updates) and the packet index of each entry.

    LDA: one entry per sampled packet. RDA: ``banks`` entries per packet. LDS: one entry
    per row whose threshold samples the packet.
    """
    n = len(hashes)
    counted = np.ones(n, bool) if hashes.counted is None else hashes.counted
    pidx = np.flatnonzero(counted)
    p = hashes.packet[pidx]
    if isinstance(config, LdaConfig):
        bank = lda_bank(p, config.thresholds)
        keep = bank >= 0
        return bank[keep], lda_row(p[keep], config.rows), pidx[keep]
    if isinstance(config, RdaConfig):
        hashers = hashers or Hashers(config)
        banks, cols, who = [], [], []
        for l, h in enumerate(hashers.rda_bucket):
            banks.append(np.full(len(p), l, dtype=np.int64))
            cols.append(range_reduce32(h.of_u64(p), config.buckets_per_bank))
            who.append(pidx)
        return np.concatenate(banks), np.concatenate(cols), np.concatenate(who)
    if isinstance(config, LdsConfig):
        if hashes.flow is None:
            raise ValueError("LDS needs per-row flow hashes")
        lz = leading_zeros32(p)
        offset = lds_offset(p, config.vlda_cells)
        rows, cols, who = [], [], []
        for r in range(config.rows):
            keep = lz >= config.row_thresholds[r]
            base = range_reduce32(hashes.flow[r, pidx[keep]], config.cells)
            rows.append(np.full(int(keep.sum()), r, dtype=np.int64))
            cols.append((base + offset[keep]) % config.cells)
            who.append(pidx[keep])
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(who)
    raise TypeError(f"unknown configuration {type(config).__name__}")


def update(config: SynopsisConfig, hashes: PacketHashes, timestamps: np.ndarray,
           synopsis: Synopsis | None = None, weights: np.ndarray | None = None,
           hashers: Hashers | None = None) -> Synopsis:
    """Add packets to a synopsis (a new empty one by default) and return it.

    ``timestamps`` are non-negative integer ticks (int64/uint64). ``weights`` (LDS flow
    weighting, §4.1; default 1) multiply both the count and the timestamp increments.
    """
    timestamps = np.asarray(timestamps)
    if timestamps.shape != (len(hashes),):
        raise ValueError(f"need one timestamp per packet ({len(hashes)}), "
                         f"got shape {timestamps.shape}")
    if np.issubdtype(timestamps.dtype, np.signedinteger) and (timestamps < 0).any():
        raise ValueError("timestamps must be non-negative ticks")
    if not np.issubdtype(timestamps.dtype, np.integer):
        raise ValueError(f"timestamps must be integer ticks, not {timestamps.dtype}")
    ts = timestamps.astype(np.uint64)
    if weights is not None and not isinstance(config, LdsConfig):
        raise ValueError("flow weights apply to LDS only")
    syn = Synopsis.empty(config) if synopsis is None else synopsis
    if syn.config != config:
        check_comparable(syn.config, config)
    bank, col, who = bucket_indices(config, hashes, hashers)
    flat = bank * config.shape[1] + col
    layout = config.layout
    t = ts[who]
    if weights is not None:
        w = np.asarray(weights, dtype=np.uint64)[who]
        inc_count, inc_ts = w, t * w  # uint64 products wrap mod 2**64 ⊇ mod 2**width
    else:
        inc_count, inc_ts = np.ones(len(who), dtype=np.uint64), t
    for f in layout.fields:
        arr = syn.fields[f.name].reshape(-1)
        if f.name == "count":
            np.add.at(arr, flat, inc_count)
        elif f.name == "ts_sum":
            np.add.at(arr, flat, inc_ts)
        elif f.name == "id_xor":
            np.bitwise_xor.at(arr, flat, hashes.packet[who])
        elif f.name == "digest":
            np.bitwise_xor.at(arr, flat, lds_digest(hashes.packet[who], f.width))
        else:  # pragma: no cover - layouts are defined in config.py
            raise AssertionError(f.name)
        syn.fields[f.name] = wrap(arr, f.width).reshape(config.shape)
    return syn
