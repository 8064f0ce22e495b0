# SPDX-License-Identifier: BSD-2-Clause
"""The OPA golden model: what an OPA sender and receiver hold for one interval.

Model layer, the executable specification of ``docs/SPEC.md`` §8 (contract:
:mod:`host_sw.contracts.opa.words`, :mod:`host_sw.contracts.opa.timestamps`):

* sender — per group the word ``(w, B_0..B_{k−1})`` (:func:`opa_synopsis`, a
  :class:`~host_sw.contracts.synopsis.Synopsis` of fields ``count``, ``b0``…) and the
  interval's send timestamps, grouped and coded (:func:`sender_timestamp_block`);
* receiver — one record per packet, its hash and timestamp, in arrival order
  (:class:`PacketRecords`).

The host recovery (:mod:`host_sw.estimators.opa.recovery`) takes exactly these. OPA does not fit
the sum/XOR update of :func:`host_sw.model.golden_lda_rda_lds.update` (its increments depend on the
packet's position in its group), hence its own module. Vectorised: one stable sort by
group, one augmented-hash pass, and per row a segmented sum (``np.add.reduceat``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.layouts import wrap
from host_sw.contracts.opa.words import OPA_PRIME, augmented_hash, group_of, modmul, node_powers
from host_sw.contracts.opa.timestamps import encode_timestamps
from host_sw.contracts.synopsis import Synopsis

__all__ = ["PacketRecords", "GroupedPackets", "group_packets", "opa_synopsis",
           "group_sums", "sender_timestamp_block", "opa_sender"]


@dataclass(frozen=True)
class PacketRecords:
    """A point's per-packet records of one interval, in its order (send order at the
    sender, arrival order at the receiver): the 64-bit packet hash and the timestamp in
    ticks."""
    packet: np.ndarray
    timestamps: np.ndarray

    def __post_init__(self):
        if np.shape(self.packet) != np.shape(self.timestamps):
            raise ValueError("need one timestamp per packet hash")

    def __len__(self):
        return len(self.packet)


@dataclass(frozen=True)
class GroupedPackets:
    """Packets sorted by group, each group in the point's order.

    ``order`` — indices into the records; ``group`` — the group of each sorted packet;
    ``position`` — its 1-based rank in its group; ``counts``/``starts`` — per group.
    """
    order: np.ndarray
    group: np.ndarray
    position: np.ndarray
    counts: np.ndarray
    starts: np.ndarray


def group_packets(config: OpaConfig, packet_hashes: np.ndarray) -> GroupedPackets:
    """Group and rank packets as the sender's read-modify-write does (SPEC §8.1)."""
    groups = group_of(packet_hashes, config.groups)
    # a stable sort of 16-bit keys is a radix sort in numpy, several times faster
    keys = groups.astype(np.uint16 if config.groups <= (1 << 16) else np.uint32)
    order = np.argsort(keys, kind="stable")
    sorted_groups = groups[order]
    counts = np.bincount(sorted_groups, minlength=config.groups).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    position = np.arange(len(order), dtype=np.int64) - starts[sorted_groups] + 1
    return GroupedPackets(order, sorted_groups, position, counts, starts)


def group_sums(config: OpaConfig, hashes: np.ndarray, grouped: GroupedPackets) -> np.ndarray:
    """``B`` of every group, ``(rows, groups)`` uint64, from the packets' augmented
    hashes ``hashes`` (sorted as ``grouped``)."""
    rows, g = config.rows, config.groups
    out = np.zeros((rows, g), dtype=np.uint64)
    if len(hashes) == 0:
        return out
    nonempty = np.flatnonzero(grouped.counts)
    table = node_powers(np.arange(int(grouped.counts.max()) + 1), rows)  # j**r, j ≤ max w
    for r in range(rows):
        terms = modmul(table[r][grouped.position], hashes)
        # Terms are below 2**31: int64 sums of up to 2**32 of them cannot overflow.
        sums = np.add.reduceat(terms.astype(np.int64), grouped.starts[nonempty])
        out[r, nonempty] = (sums % OPA_PRIME).astype(np.uint64)
    return out


def opa_synopsis(config: OpaConfig, packet_hashes: np.ndarray,
                 grouped: GroupedPackets | None = None) -> Synopsis:
    """The sender's OPA words of an interval (packets in sending order; ``grouped``:
    their :func:`group_packets`, when already computed)."""
    p = np.asarray(packet_hashes, dtype=np.uint64)
    grouped = group_packets(config, p) if grouped is None else grouped
    h = augmented_hash(p[grouped.order], grouped.position, config.seed)
    b = group_sums(config, h, grouped)
    fields = {"count": wrap(grouped.counts, config.count_bits).reshape(config.shape)}
    for r in range(config.rows):
        fields[f"b{r}"] = b[r].reshape(config.shape)
    return Synopsis(config, fields)


def sender_timestamp_block(config: OpaConfig, records: PacketRecords, *,
                           shift: int = 0) -> bytes:
    """The sender's timestamp layer of an interval (SPEC §8.4): its send timestamps per
    group in sending order, coded by :func:`~host_sw.contracts.opa.timestamps.encode_timestamps`."""
    grouped = group_packets(config, np.asarray(records.packet, dtype=np.uint64))
    ts = np.asarray(records.timestamps, dtype=np.int64)[grouped.order]
    return encode_timestamps(ts, grouped.counts, shift=shift)


def opa_sender(config: OpaConfig, records: PacketRecords, *,
               shift: int = 0) -> tuple[Synopsis, bytes]:
    """Everything the sender ships for one interval: its OPA words and timestamp block."""
    p = np.asarray(records.packet, dtype=np.uint64)
    grouped = group_packets(config, p)
    ts = np.asarray(records.timestamps, dtype=np.int64)[grouped.order]
    return (opa_synopsis(config, p, grouped),
            encode_timestamps(ts, grouped.counts, shift=shift))
