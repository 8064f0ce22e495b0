# SPDX-License-Identifier: BSD-2-Clause
"""The golden model: exactly the counter arrays the gateware holds, computed with numpy.

This is the executable specification of the update pipeline (docs/DESIGN.md, "Data flow of
a packet": header tap → H3 hasher → bucket selector → counter bank). It sits in the model
layer, above the contracts it computes (:mod:`host_sw.contracts.hashing`, the
configuration's word layout). The cocotb testbenches compare the gateware's frozen copy
with :class:`Synopsis` objects built here word for word, and ``ldactl simulate`` and the
accuracy benchmarks run millions of packets through it.

Two entry levels:

* :func:`hash_frames` / :func:`hash_windows` — from frames (or their header windows and
  classes) to :class:`PacketHashes`, as the tap and H3 hasher compute them
  (:func:`flow_row_hashes`: the per-row flow hashes of given flows, for LDS queries);
* :func:`update` — from hashes and integer timestamps (ticks) to a :class:`Synopsis`.

Kinds: the hash functions a kind needs come from its configuration
(:attr:`~host_sw.contracts.config_base.SynopsisConfig.hash_functions`); where its packets go is
one function per kind in :data:`UPDATE_GROUPS` (docs/DESIGN.md, "Adding a synopsis kind").

All arithmetic is modulo the field widths of the configuration's word layout.

Speed (target ≥ 5 million packets per second per synopsis update on one core; measured by
``bench/golden_throughput.py``, figures in ``docs/BENCHMARKS.md``): the field split is
done with whole-array comparisons and multiply-shifts, the counters are updated per bank
with ``np.bincount`` / ``np.add.at`` / ``np.bitwise_xor.at``, and H3 uses row-blocked
table lookups (:func:`host_sw.contracts.hashing.table_xor`), two 32-bit hashes per 64-bit table
entry where possible. Every fast path is tested against the definitions in
:mod:`host_sw.contracts.hashing` and a per-packet reference (``tests/model/test_golden.py``).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Callable

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config import check_comparable
from host_sw.contracts.hashing import (
    COMPILED_MIN_ROWS, H3, PAIR_TABLE_MIN_ROWS, ByteMask, FrameClass, HashPurpose, SboxH3,
    classify_frame, compiled, header_windows, sbox_nibbles64, sbox_table_xor, table_xor,
)
from host_sw.contracts.hash_fields import (
    LdsOffsetHash, RdaBucketHash, field_hash, lda_bank, lds_digest,
)
from host_sw.contracts.synopsis import Synopsis

_M32 = np.uint64(0xFFFFFFFF)

__all__ = ["PacketHashes", "Hashers", "hashers_for", "hash_windows", "split_window_hashes",
           "hash_frames", "flow_row_hashes",
           "update", "bucket_indices", "UPDATE_GROUPS", "XOR_FIELD_VALUES"]


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
            cls: H3(seed=config.seed, purpose=HashPurpose.PACKET, in_bytes=w, out_bits=64,
                    byte_mask=ByteMask.from_int(mask, w).as_array())
            for cls, mask in ((FrameClass.IPV4, config.mask_packet_ipv4),
                              (FrameClass.IPV6, config.mask_packet_ipv6))
        }
        self.flow = {}
        flow_rows = config.hash_count(HashPurpose.LDS_FLOW)
        if flow_rows:
            for cls, mask in ((FrameClass.IPV4, config.mask_flow_ipv4),
                              (FrameClass.IPV6, config.mask_flow_ipv6)):
                self.flow[cls] = [
                    H3(seed=config.seed, purpose=HashPurpose.LDS_FLOW, index=r, in_bytes=w,
                       out_bits=32, byte_mask=ByteMask.from_int(mask, w).as_array())
                    for r in range(flow_rows)]
        self.rda_bucket = [RdaBucketHash(seed=config.seed, bank=l)
                           for l in range(config.hash_count(HashPurpose.RDA_BUCKET))]
        self.lds_offset = [LdsOffsetHash(seed=config.seed, row=r)
                           for r in range(config.hash_count(HashPurpose.LDS_OFFSET))]
        self._pair_tables = {}
        self._flow_tables = {}

    def flow_hashes(self, frame_class: FrameClass, windows: np.ndarray) -> np.ndarray:
        """LDS flow hashes ``H3_flow[r](window)`` of every row ``r``: uint64 ``(R, N)``.

        Equal to ``[h(windows) for h in self.flow[frame_class]]``, computed two rows at a
        time: one 256-entry table per byte holds row ``2i`` in the low and row ``2i+1`` in
        the high 32 bits, halving the lookups.
        """
        hashers = self.flow[frame_class]
        windows = np.asarray(windows)
        out = np.empty((len(hashers), windows.shape[0]), dtype=np.uint64)
        for i, tables in enumerate(self._flow_pair_tables(frame_class)):
            both = table_xor(windows, tables)
            out[2 * i] = both & _M32
            if 2 * i + 1 < len(hashers):
                out[2 * i + 1] = both >> np.uint64(32)
        return out

    def _flow_pair_tables(self, frame_class: FrameClass) -> list[dict]:
        """Per pair of LDS rows, the 256-entry tables of the live window bytes (row
        ``2i`` in the low, ``2i+1`` in the high 32 bits)."""
        if frame_class not in self._flow_tables:
            hashers = self.flow[frame_class]
            combined = []
            for i in range(0, len(hashers), 2):
                lo = hashers[i]
                hi = hashers[i + 1] if i + 1 < len(hashers) else None
                combined.append({int(b): lo.tables[b] if hi is None
                                 else lo.tables[b] | (hi.tables[b] << np.uint64(32))
                                 for b in np.flatnonzero(lo.byte_mask)})
            self._flow_tables[frame_class] = combined
        return self._flow_tables[frame_class]

    def window_tables(self) -> list[list[dict]]:
        """The tables of every hash of the header window, per counted class (IPv4, IPv6):
        ``[packet hash P, LDS row pairs (as :meth:`flow_hashes`)...]``, each
        ``{window byte: 256-entry table}`` (for hashing while a capture is read:
        :class:`host_sw.model.pcap_stream.WindowHashes`; :func:`split_window_hashes`
        turns its outputs into :class:`PacketHashes`)."""
        out = []
        for cls in (FrameClass.IPV4, FrameClass.IPV6):
            h = self.packet[cls]
            tables = [{int(b): h.tables[b] for b in np.flatnonzero(h.byte_mask)}]
            if self.flow:
                tables += self._flow_pair_tables(cls)
            out.append(tables)
        return out

    def rda_bucket_hashes(self, ids: np.ndarray) -> list[np.ndarray]:
        """``h_l(ID) = H3_rda[l](S(ID))`` (32-bit values as uint64) for each RDA bank
        ``l`` (:class:`~host_sw.contracts.hash_fields.RdaBucketHash`)."""
        return self._sbox_hashes32("rda", self.rda_bucket, ids)

    def lds_offset_hashes(self, packet: np.ndarray) -> list[np.ndarray]:
        """``h'_r(P) = H3_off[r](S(P))`` (32-bit values as uint64) for each LDS row ``r``
        (:class:`~host_sw.contracts.hash_fields.LdsOffsetHash`)."""
        return self._sbox_hashes32("lds_offset", self.lds_offset, packet)

    def _sbox_hashes32(self, key: str, hashes: list[SboxH3], ids) -> list[np.ndarray]:
        """``[h.of_u64(ids) for h in hashes]`` (32-bit hashes of ``S(ids)``), computed
        faster for long inputs: two hashes at a time, with 65536-entry tables whose
        entries hold hash ``2i`` in the low and hash ``2i+1`` in the high 32 bits, one
        gather per 16 bits of the ID."""
        ids = np.ascontiguousarray(ids, dtype=np.uint64)
        if len(ids) < PAIR_TABLE_MIN_ROWS:
            return [h.of_u64(ids) for h in hashes]
        if key + "/bytes" not in self._pair_tables:    # two hashes per 64-bit entry
            self._pair_tables[key + "/bytes"] = np.stack([
                hashes[i].h3.tables if i + 1 == len(hashes)
                else hashes[i].h3.tables | (hashes[i + 1].h3.tables << np.uint64(32))
                for i in range(0, len(hashes), 2)])
        both = sbox_table_xor(ids, self._pair_tables[key + "/bytes"])
        if both is not None:
            return [both[i // 2] & _M32 if i % 2 == 0 else both[i // 2] >> np.uint64(32)
                    for i in range(len(hashes))]
        ids = sbox_nibbles64(ids)
        if key not in self._pair_tables:
            tables = []
            for i in range(0, len(hashes), 2):
                lo = hashes[i].h3.pair_tables()
                if i + 1 < len(hashes):
                    hi = hashes[i + 1].h3.pair_tables()
                    tables.append([lo[j] | (hi[j] << np.uint64(32)) for j in range(4)])
                else:
                    tables.append([lo[j] for j in range(4)])
            self._pair_tables[key] = tables
        halves = ids.view(np.uint16).reshape(-1, 4)
        if not np.little_endian:  # pragma: no cover
            halves = ids.byteswap().view(np.uint16).reshape(-1, 4)
        out = []
        for i, tables in enumerate(self._pair_tables[key]):
            both = table_xor(halves, dict(enumerate(tables)), block_rows=1 << 16)
            out.append(both & _M32)
            if 2 * i + 1 < len(hashes):
                out.append(both >> np.uint64(32))
        return out


@functools.lru_cache(maxsize=8)
def hashers_for(config: SynopsisConfig) -> Hashers:
    """The :class:`Hashers` of ``config``, made once per process and configuration: their
    H3 tables cost an LDS configuration about 15 ms, and a capture analysis wants them in
    each pass, partition and records task (the tables they build later are the same
    whoever asks first)."""
    return Hashers(config)


def split_window_hashes(config: SynopsisConfig, outputs: np.ndarray,
                        classes: np.ndarray) -> PacketHashes:
    """:class:`PacketHashes` from the outputs ``(H, N)`` of :meth:`Hashers.window_tables`'
    hashes (what :func:`hash_windows` gives for the same windows)."""
    rows = config.hash_count(HashPurpose.LDS_FLOW)
    flow = None
    if rows:
        flow = np.empty((rows, outputs.shape[1]), np.uint64)
        for r in range(rows):
            both = outputs[1 + r // 2]
            flow[r] = both & _M32 if r % 2 == 0 else both >> np.uint64(32)
    counted = (classes == FrameClass.IPV4) | (classes == FrameClass.IPV6)
    return PacketHashes(outputs[0], flow, counted)


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
    flow_rows = config.hash_count(HashPurpose.LDS_FLOW)
    flow = np.zeros((flow_rows, n), dtype=np.uint64) if flow_rows else None
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
            flow[:, sel] = hashers.flow_hashes(cls, sub)
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


def flow_row_hashes(config: SynopsisConfig, flow_windows: np.ndarray, classes=None,
                    hashers: Hashers | None = None) -> np.ndarray:
    """Per-row flow hashes ``(R, F)`` uint64 of flows given by one header window each
    (``(F, window_bytes)`` uint8; any packet of the flow will do — the flow mask keeps
    only the 5-tuple). ``classes`` (default all IPv4) picks IPv4 or IPv6 masks.
    ``config`` must be of a kind with flow hashes (LDS)."""
    rows = config.hash_count(HashPurpose.LDS_FLOW)
    if not rows:
        raise ValueError(f"flow hashes need an LDS configuration, not {config.kind}")
    windows = np.asarray(flow_windows, dtype=np.uint8)
    if windows.ndim != 2 or windows.shape[1] != config.window_bytes:
        raise ValueError(f"expected (F, {config.window_bytes}) flow windows, got "
                         f"{windows.shape}")
    hashers = hashers or Hashers(config)
    f = windows.shape[0]
    classes = (np.full(f, FrameClass.IPV4, dtype=np.int64) if classes is None
               else np.asarray(classes))
    out = np.zeros((rows, f), dtype=np.uint64)
    for cls in (FrameClass.IPV4, FrameClass.IPV6):
        sel = classes == cls
        if sel.any():
            for r, h in enumerate(hashers.flow[cls]):
                out[r, sel] = h(windows[sel])
    return out


def _reduce32(hash32: np.ndarray, size: int) -> np.ndarray:
    """:func:`~host_sw.contracts.hash_fields.range_reduce32` of uint64 values already below 2**32;
    returns int64."""
    return ((hash32 * np.uint64(size)) >> np.uint64(32)).astype(np.int64)


#: Update groups: ``(flat, sel)`` pairs, ``flat`` the memory-order bucket index
#: (``bank * shape[1] + column``) of the packets ``sel`` (an index array into the packets,
#: or ``None`` for all of them), one group per bank/row.
Groups = list[tuple[np.ndarray, np.ndarray | None]]


def _lda_groups(config, p: np.ndarray, flow, hashers) -> Groups:
    """LDA: one bank per sampled packet, chosen by the leading zeros of ``F[63:32]``;
    the row from the low bits of ``F`` (``F`` the field hash of ``P``)."""
    f = field_hash(p, config.seed)
    bank = lda_bank(f, config.thresholds)
    flat = bank * config.rows + (f & np.uint64(config.rows - 1)).astype(np.int64)
    if config.thresholds[0] == 0:  # every packet sampled by some bank
        return [(flat, None)]
    sel = np.flatnonzero(bank >= 0)
    return [(flat[sel], sel)]


def _rda_groups(config, p: np.ndarray, flow, hashers) -> Groups:
    """RDA: one bucket per bank, by the bank's hash of the packet ID."""
    hashers = hashers or Hashers(config)
    m = config.buckets_per_bank
    return [(_reduce32(h, m) + l * m, None)
            for l, h in enumerate(hashers.rda_bucket_hashes(p))]


def _lds_groups(config, p: np.ndarray, flow, hashers) -> Groups:
    """LDS: per sampled row (leading zeros of ``F[63:32]``), the flow's base cell plus
    the packet's offset in the row (its own offset hash ``h'_r``)."""
    if flow is None:
        raise ValueError("LDS needs per-row flow hashes")
    c, k = config.cells, config.vlda_cells
    f = field_hash(p, config.seed) if any(config.row_thresholds) else None
    offsets = None
    if k > 1:
        offsets = (hashers or Hashers(config)).lds_offset_hashes(p)
    groups = []
    for r, z in enumerate(config.row_thresholds):
        if z == 0:
            sel = None
            base = _reduce32(flow[r] & _M32, c)
        else:  # lz(F[63:32]) >= z  <=>  F < 2**(64 - z)
            sel = np.flatnonzero(f < np.uint64(1 << (64 - z)))
            base = _reduce32(flow[r][sel] & _M32, c)
        if offsets is not None:
            offset = _reduce32(offsets[r], k)
            base += offset if sel is None else offset[sel]
            base[base >= c] -= c  # base < C and offset < k <= C: one subtraction
        base += r * c
        groups.append((base, sel))
    return groups


#: Where each kind's packets go: ``kind → groups(config, p, flow, hashers)``. The fast
#: path of :func:`update` and :func:`bucket_indices`; it computes the same field split as
#: the definitions in :mod:`host_sw.contracts.hashing`.
UPDATE_GROUPS: dict[str, Callable[..., Groups]] = {
    "lda": _lda_groups, "rda": _rda_groups, "lds": _lds_groups}


def _update_groups(config: SynopsisConfig, p: np.ndarray, flow: np.ndarray | None,
                   hashers: Hashers | None) -> Groups:
    """The update groups of the (counted) packets ``p`` under ``config``."""
    if config.kind not in UPDATE_GROUPS:
        raise TypeError(f"unknown configuration {type(config).__name__}")
    return UPDATE_GROUPS[config.kind](config, p, flow, hashers)


def bucket_indices(config: SynopsisConfig, hashes: PacketHashes,
                   hashers: Hashers | None = None):
    """Where each packet goes: ``(row_or_bank, column)`` index arrays of equal length
    (a packet appears once per bank/row it updates) and the packet index of each entry.

    LDA: one entry per sampled packet. RDA: ``banks`` entries per packet. LDS: one entry
    per row whose threshold samples the packet.
    """
    counted = None if hashes.counted is None else np.asarray(hashes.counted, dtype=bool)
    pidx = np.arange(len(hashes)) if counted is None else np.flatnonzero(counted)
    p = hashes.packet[pidx]
    flow = None if hashes.flow is None else hashes.flow[:, pidx]
    banks, cols, who = [], [], []
    for flat, sel in _update_groups(config, p, flow, hashers):
        banks.append(flat // config.shape[1])
        cols.append(flat % config.shape[1])
        who.append(pidx if sel is None else pidx[sel])
    return np.concatenate(banks), np.concatenate(cols), np.concatenate(who)


#: What a packet XORs into each XOR field of a word layout (the ``count`` and ``ts_sum``
#: sums are common to every kind): ``field name → values(P, width, seed)``.
XOR_FIELD_VALUES: dict[str, Callable[[np.ndarray, int, int], np.ndarray]] = {
    "id_xor": lambda p, width, seed: p,                                # RDA: the packet ID
    "digest": lambda p, width, seed: lds_digest(field_hash(p, seed), width),  # LDS: F's low bits
}


def _add_at_loop(target, flat, values):
    """``np.add.at(target, flat, values)`` of uint64 (wrapping mod 2**64, as numpy's)."""
    for i in range(flat.shape[0]):
        target[flat[i]] += values[i]


def _xor_at_loop(target, flat, values):
    """``np.bitwise_xor.at(target, flat, values)``."""
    for i in range(flat.shape[0]):
        target[flat[i]] ^= values[i]


def _scatter(ufunc, target: np.ndarray, flat: np.ndarray, values: np.ndarray) -> None:
    """``ufunc.at(target, flat, values)`` for ``np.add`` (uint64) and ``np.bitwise_xor``
    (int64): by a compiled loop (numba, when installed) from :data:`COMPILED_MIN_ROWS`
    entries. numba: ``ufunc.at`` costs numpy about 2.6 ns an entry, a loop 1.2; sums
    mod 2**64 and XORs do not depend on the order, so the bits are the same."""
    if len(flat) >= COMPILED_MIN_ROWS:
        loop = compiled(_add_at_loop if ufunc is np.add else _xor_at_loop)
        if loop is not None:
            loop(target, flat, values.astype(target.dtype, copy=False))
            return
    ufunc.at(target, flat, values)


def update(config: SynopsisConfig, hashes: PacketHashes, timestamps: np.ndarray,
           synopsis: Synopsis | None = None, weights: np.ndarray | None = None,
           hashers: Hashers | None = None) -> Synopsis:
    """Add packets to a synopsis (a new empty one by default) and return it.

    ``timestamps`` are non-negative integer ticks (int64/uint64). ``weights`` (LDS flow
    weighting, §4.1; default 1) multiply both the count and the timestamp increments.
    A given ``synopsis`` is updated in place (and returned).
    """
    timestamps = np.asarray(timestamps)
    if timestamps.shape != (len(hashes),):
        raise ValueError(f"need one timestamp per packet ({len(hashes)}), "
                         f"got shape {timestamps.shape}")
    if not np.issubdtype(timestamps.dtype, np.integer):
        raise ValueError(f"timestamps must be integer ticks, not {timestamps.dtype}")
    if np.issubdtype(timestamps.dtype, np.signedinteger) and (timestamps < 0).any():
        raise ValueError("timestamps must be non-negative ticks")
    if weights is not None and not config.hash_count(HashPurpose.LDS_FLOW):
        raise ValueError("flow weights apply to LDS only")  # weights are per flow
    syn = Synopsis.empty(config) if synopsis is None else synopsis
    if syn.config != config:
        check_comparable(syn.config, config)
    ts = timestamps.astype(np.uint64, copy=False)
    p = np.asarray(hashes.packet, dtype=np.uint64)
    flow = hashes.flow
    w = None if weights is None else np.asarray(weights).astype(np.uint64, copy=False)
    if hashes.counted is not None and not np.all(hashes.counted):
        pidx = np.flatnonzero(hashes.counted)
        p, ts = p[pidx], ts[pidx]
        flow = None if flow is None else flow[:, pidx]
        w = None if w is None else w[pidx]
    if w is not None:
        inc_ts = ts * w  # uint64 products wrap mod 2**64, a multiple of 2**width
    else:
        inc_ts = ts
    groups = _update_groups(config, p, flow, hashers)
    layout = config.layout
    for f in layout.fields:
        arr = np.ascontiguousarray(syn.fields[f.name], dtype=np.uint64).reshape(-1)
        if f.name == "count":
            for flat, sel in groups:
                if w is None:
                    arr += np.bincount(flat, minlength=arr.size).astype(np.uint64)
                else:
                    _scatter(np.add, arr, flat, w if sel is None else w[sel])
        elif f.name == "ts_sum":
            for flat, sel in groups:
                _scatter(np.add, arr, flat, inc_ts if sel is None else inc_ts[sel])
        else:
            values = XOR_FIELD_VALUES[f.name](p, f.width, config.seed)
            # XOR on the int64 view: same bits, and numpy's int64 XOR.at is faster.
            target = arr.view(np.int64)
            values = values.view(np.int64)
            for flat, sel in groups:
                _scatter(np.bitwise_xor, target, flat,
                         values if sel is None else values[sel])
        if f.width < 64:
            arr &= np.uint64((1 << f.width) - 1)
        syn.fields[f.name] = arr.reshape(config.shape)
    return syn
