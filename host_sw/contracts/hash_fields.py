# SPDX-License-Identifier: BSD-2-Clause
"""The field split of the hash outputs: which bits of which hash choose a packet's LDA
bank and row, its LDS offset and digest, and its RDA bucket.

A contract (docs/DESIGN.md, "Where each contract lives"; docs/SPEC.md §3) imported by the
golden model (:mod:`host_sw.model.golden_lda_rda_lds`), the estimators and the gateware's tests; the
gateware's selection stages (``hw/counters/kind_select.py``, ``hw/counters/bucket_select.py``,
``hw/arith/stages.py``) implement the same split. The hashes it splits (H3, the S-box layer
:class:`~host_sw.contracts.hashing.SboxH3`) are :mod:`host_sw.contracts.hashing`.

Data flow (docs/DESIGN.md, "Data flow of a packet"): H3 hasher (packet hash ``P``) →
**field split** → bucket selection → update pipeline. LDA and LDS take their fields from
the *field hash* ``F = H3_field(S(P))`` (:func:`field_hash`):

* ``F[63:32]`` — the *sampling word*; its number of leading zeros (0..32) chooses the LDA
  bank (and the LDS per-row sampling);
* ``F[31:0]`` — the *index word*; its low ``log2(rows)`` bits are the LDA row (the row's
  bit 0 is the ±1 sign of the variance estimator); the low ``digest_bits`` of ``F`` are
  the LDS digest;
* LDS offset of row ``r`` in the flow's virtual LDA: ``(h'_r * k) >> 32`` with the row's
  own offset hash ``h'_r = H3_off[r](S(P))`` (:class:`LdsOffsetHash`); the flow's base
  cell is ``(h * C) >> 32`` of its flow hash;
* RDA bucket of bank ``l``: ``H3_rda[l](S(ID))`` (64 → 32 bits, :class:`RdaBucketHash`)
  reduced to ``[0, m)`` by multiply-shift ``(h * m) >> 32`` (:func:`range_reduce32`) —
  for a power-of-two ``m`` these are the top ``log2 m`` bits of ``h``.

Why the fields come from a non-linear hash: H3 is linear over GF(2), so the windows of a
flow whose packets differ only in a counter (IP identification, TCP sequence number)
differ by a few XOR patterns, and every pair of packets with the same pattern has the
same relation of rows, signs and offsets. The cross terms of the LDA variance estimate
(§III-E) then do not cancel (the std came out about 16 % low on counting IP IDs), and
the LDS offsets of a flow's packets repeat in a pattern. The LDA paper assumes
4-universal hashing. ``S`` is non-linear, and because every bit of ``P`` depends on every
varying window bit, ``S(P)`` of packets that differ by the same pattern differ by
different patterns; the second H3 layer spreads them over all fields. Figures:
``docs/ACCURACY.md``, "Structured traffic". RDA's pure-bucket test (``h_l(ID XOR) == i``)
needs the S-box too: with a linear ``h`` and an order-preserving reduction, any odd
number of IDs sharing a bucket would pass the test (``h(a^b^c) = h(a)^h(b)^h(c)`` keeps
the common top bits).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from host_sw.contracts.hashing import MASK64, HashPurpose, SboxH3

__all__ = [
    "leading_zeros32", "lda_bank", "lda_row", "lda_sign", "RdaBucketHash", "field_hash",
    "field_hash_scalar", "LdsOffsetHash", "range_reduce32", "lds_offset", "lds_digest",
]


def leading_zeros32(packet_hash: np.ndarray) -> np.ndarray:
    """Leading zeros of the sampling word ``F[63:32]`` (of a 64-bit word: LDA and LDS
    pass the field hash ``F``), 0..32 (32 when it is zero)."""
    word = np.asarray(packet_hash, dtype=np.uint64) >> np.uint64(32)
    # frexp gives word = f * 2**e with 0.5 <= f < 1, so e = bit length (0 for word 0);
    # the conversion of a 32-bit integer to float64 is exact.
    _, bit_length = np.frexp(word.astype(np.float64))
    return 32 - bit_length.astype(np.int64)


def lda_bank(packet_hash: np.ndarray, thresholds) -> np.ndarray:
    """The LDA bank of each packet (given its field hash ``F``), or -1 when no bank
    samples it.

    ``thresholds[j]`` is bank ``j``'s leading-zero threshold ``z_j`` (strictly increasing).
    A packet goes to the bank with the largest ``z_j <= lz`` (the LDA paper's §III-B
    example: ``z = (3, 7)``; seven leading zeros → bank 1, three to six → bank 0), so the
    banks' sample sets are disjoint and bank ``j`` samples with probability
    ``2**-z_j - 2**-z_{j+1}``.
    """
    thresholds = [int(z) for z in thresholds]
    p = np.asarray(packet_hash, dtype=np.uint64)
    # lz(P[63:32]) >= z  <=>  P < 2**(64 - z) for 1 <= z <= 32; always true for z = 0.
    bank = np.full(p.shape, -1, dtype=np.int64)
    for z in thresholds:
        if z <= 0:
            bank += 1
        elif z <= 32:
            bank += p < np.uint64(1 << (64 - z))
    return bank


def lda_row(packet_hash: np.ndarray, rows: int) -> np.ndarray:
    """Row index: the low ``log2(rows)`` bits of the index word (of the field hash
    ``F``)."""
    return (np.asarray(packet_hash, dtype=np.uint64) & np.uint64(rows - 1)).astype(np.int64)


def lda_sign(row: np.ndarray) -> np.ndarray:
    """The ±1 sign of the variance estimator: +1 for odd rows, -1 for even rows.

    Rows ``2i`` and ``2i+1`` collapse into ``T[2i+1] - T[2i]`` (the paper's
    ``T[2i] - T[2i-1]`` with 1-based rows).
    """
    return np.where(np.asarray(row) & 1, 1, -1)


class RdaBucketHash(SboxH3):
    """RDA bank ``l``'s bucket hash ``h_l(ID) = H3_rda[l](S(ID))`` (32 bits).

    ``of_u64`` gives the 32-bit hash, :meth:`bucket` the bucket ``(h · m) >> 32``.
    """

    def __init__(self, *, seed: int, bank: int):
        super().__init__(seed=seed, purpose=HashPurpose.RDA_BUCKET, index=bank, out_bits=32)
        self.bank_index = bank

    def bucket(self, ids: np.ndarray, buckets: int) -> np.ndarray:
        return range_reduce32(self.of_u64(ids), buckets)


@lru_cache(maxsize=64)
def _field_hasher(seed: int) -> SboxH3:
    return SboxH3(seed=seed, purpose=HashPurpose.FIELD, out_bits=64)


def field_hash(packet_hash, seed: int) -> np.ndarray:
    """The field hash ``F = H3_field(S(P))`` (64 bits) of each packet hash ``P``.

    LDA and LDS take every field from ``F``, not from ``P`` (module docstring, "Why the
    fields come from a non-linear hash"): the bank or row sampling from ``F[63:32]``, the
    LDA row and sign from the low bits of ``F``, the LDS digest from the low
    ``digest_bits`` of ``F``. ``packet_hash`` is a uint64 array (or anything numpy turns
    into one); returns a uint64 array of the same shape. ``seed`` is the configuration's
    hash seed. Public for other kinds that need hash fields with the same property.
    """
    p = np.asarray(packet_hash, dtype=np.uint64)
    return _field_hasher(int(seed)).of_u64(p.reshape(-1)).reshape(p.shape)


def field_hash_scalar(packet_hash: int, seed: int) -> int:
    """:func:`field_hash` of one packet hash, from the definition (pure Python)."""
    return _field_hasher(int(seed)).scalar(int(packet_hash))


class LdsOffsetHash(SboxH3):
    """LDS row ``r``'s offset hash ``h'_r(P) = H3_off[r](S(P))`` (32 bits); the packet's
    cell offset in row ``r`` is :func:`lds_offset` of it (the LDS paper's §2.3.4: each row
    has its own ``h_r`` and ``h'_r``)."""

    def __init__(self, *, seed: int, row: int):
        super().__init__(seed=seed, purpose=HashPurpose.LDS_OFFSET, index=row, out_bits=32)
        self.row = row


def range_reduce32(hash32: np.ndarray, size: int) -> np.ndarray:
    """Map a 32-bit hash to ``[0, size)``: ``(h * size) >> 32`` (Lemire's reduction)."""
    h = np.asarray(hash32, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    if size <= (1 << 32):
        return ((h * np.uint64(size)) >> np.uint64(32)).astype(np.int64)
    raise ValueError(f"size must be at most 2**32, not {size}")


def lds_offset(offset_hash: np.ndarray, vlda_cells: int) -> np.ndarray:
    """Offset of a packet in its flow's virtual LDA in one row:
    ``range_reduce32(h'_r(P), k)`` of the row's offset hash (:class:`LdsOffsetHash`)."""
    return range_reduce32(np.asarray(offset_hash, dtype=np.uint64) & np.uint64(0xFFFFFFFF),
                          vlda_cells)


def lds_digest(field: np.ndarray, digest_bits: int) -> np.ndarray:
    """The LDS per-packet digest: the low ``digest_bits`` of the field hash ``F``."""
    mask = np.uint64((1 << digest_bits) - 1) if digest_bits < 64 else np.uint64(MASK64)
    return np.asarray(field, dtype=np.uint64) & mask
