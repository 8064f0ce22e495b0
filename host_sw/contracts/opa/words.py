# SPDX-License-Identifier: BSD-2-Clause
"""The OPA contract (order-preserving aggregator, Wang et al., "Every Packet Counts",
§IV): group selection, the augmented hash, the field and the Vandermonde rows of the
combined augmented hash (CAH), specified in ``docs/SPEC.md`` §8.

One definition for the gateware (the sender's per-group read-modify-write), the golden
model (:mod:`host_sw.model.golden_opa`) and the host recovery (:mod:`host_sw.estimators.opa.recovery`).
Contracts layer: numpy and the other contracts only.

Data flow: packet hash ``P`` (the H3 packet hash of ``hashing.py``) → group
``G = P >> (64 − log2 g)`` → position ``j`` (1-based rank of the packet in its group in
this interval, the group's count before the packet plus one) → augmented hash
``h = mix(P XOR pos(j)) mod p`` → the group's word ``(w, B_0..B_{k−1})`` with
``B_r += j^r · h (mod p)``.

Choices (justified in SPEC §8):

* field GF(p), ``p = 2**31 − 1`` (Mersenne): a 31×31-bit product is four ECP5 18×18 DSP
  multipliers and the reduction modulo p is two folding additions; GF(2**61 − 1) would
  need 16 DSPs per product, a binary field GF(2**32) carry-less products in LUTs;
* nodes ``x_j = j`` (the position itself): the row-r coefficient ``j**r`` is a chain of
  products of the count the word already holds, no stored node table;
* the checking equation of a wrong mapping holds with probability about ``1/p`` per
  checking row.

:func:`augment_mix` is the one place the augmented hash's non-linear mixing is chosen
(now the PRESENT S-box nibble layer of RDA, one LUT4 per bit in hardware); the issue-12
mixing function can replace it there.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from host_sw.contracts.hashing import H3, sbox_nibbles64

__all__ = ["OPA_PRIME", "OPA_FIELD_BITS", "OPA_POSITION_PURPOSE", "group_of", "augment_mix",
           "position_hash", "position_hash_rows", "augmented_hash", "augmented_hash_scalar", "node_powers",
           "fold_mod_p", "modmul", "modpow", "modinv", "cah_scalar"]

#: The field's modulus: the Mersenne prime 2**31 − 1.
OPA_PRIME = (1 << 31) - 1
#: Bits of one CAH value (``B_r`` field width).
OPA_FIELD_BITS = 31
#: H3 purpose code of the position hash (outside ``HashPurpose``'s codes 1..15 so that it
#: cannot collide with a kind's purpose; it belongs in ``HashPurpose`` once merged).
OPA_POSITION_PURPOSE = 0x4F
_P = np.uint64(OPA_PRIME)


def group_of(packet_hash: np.ndarray, groups: int) -> np.ndarray:
    """The OPA group of each packet: the top ``log2(groups)`` bits of ``P`` (int64).
    ``groups`` is a power of two; the top bits leave ``P``'s low word (LDA rows, LDS
    offsets) to the other kinds."""
    bits = groups.bit_length() - 1
    p = np.asarray(packet_hash, dtype=np.uint64)
    if bits == 0:
        return np.zeros(p.shape, dtype=np.int64)
    return (p >> np.uint64(64 - bits)).astype(np.int64)


def augment_mix(x: np.ndarray) -> np.ndarray:
    """The non-linear mixing of the augmented hash (module docstring): every nibble of
    the 64-bit value through the PRESENT S-box. Switch the augmented hash's mixing here."""
    return sbox_nibbles64(x)


@lru_cache(maxsize=16)
def _position_h3(seed: int) -> H3:
    return H3(seed=seed, purpose=OPA_POSITION_PURPOSE, index=0, in_bytes=4, out_bits=64)


def position_hash_rows(seed: int) -> tuple[int, ...]:
    """The 32 rows (64-bit) of the position hash's H3 matrix, row ``i`` for bit ``i`` of
    the position (the gateware's XOR tree)."""
    return _position_h3(seed).rows


def position_hash(positions: np.ndarray, seed: int) -> np.ndarray:
    """``pos(j)``: H3 (purpose :data:`OPA_POSITION_PURPOSE`, index 0, 32 input bits → 64)
    of the position's 4 little-endian bytes; uint64. In hardware an XOR of the rows of
    the count's set bits."""
    j = np.ascontiguousarray(positions, dtype=np.uint32).reshape(-1)
    if not np.little_endian:  # pragma: no cover
        j = j.byteswap()
    out = _position_h3(seed)(j.view(np.uint8).reshape(-1, 4))
    return out.reshape(np.shape(positions))


def augmented_hash(packet_hash: np.ndarray, positions: np.ndarray, seed: int) -> np.ndarray:
    """``h(P, j) = augment_mix(P XOR pos(j)) mod p`` (uint64 values in ``[0, p)``);
    arrays broadcast."""
    p, j = np.broadcast_arrays(np.asarray(packet_hash, dtype=np.uint64),
                               np.asarray(positions, dtype=np.int64))
    mixed = augment_mix(np.ascontiguousarray(p ^ position_hash(j, seed)))
    return fold_mod_p(mixed)


def augmented_hash_scalar(packet_hash: int, position: int, seed: int) -> int:
    """Reference evaluation of :func:`augmented_hash` from the definitions, bit by bit
    (for test vectors and tests)."""
    from_rows = _position_h3(seed).scalar(int(position).to_bytes(4, "little"))
    x = (int(packet_hash) ^ from_rows) & ((1 << 64) - 1)
    sbox = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
    y = sum(sbox[(x >> (4 * i)) & 0xF] << (4 * i) for i in range(16))
    return y % OPA_PRIME


def fold_mod_p(x) -> np.ndarray:
    """``x mod p`` of any uint64 values by two Mersenne folds (``2**31 ≡ 1``: the
    first leaves less than 2**34, the second less than p + 8) and one conditional
    subtraction — what the gateware does, and
    several times faster than numpy's 64-bit ``%``."""
    x = np.asarray(x, dtype=np.uint64)
    t = (x & _P) + (x >> np.uint64(31))
    t = (t & _P) + (t >> np.uint64(31))
    return t - _P * (t >= _P)


def modmul(a, b) -> np.ndarray:
    """``a·b mod p`` of values below p (uint64; the product fits 62 bits)."""
    return fold_mod_p(np.asarray(a, dtype=np.uint64) * np.asarray(b, dtype=np.uint64))


def modpow(a, e: int) -> np.ndarray:
    """``a**e mod p`` elementwise (square and multiply over the exponent's bits)."""
    base = np.asarray(a, dtype=np.uint64) % _P
    out = np.ones(base.shape, dtype=np.uint64)
    while e:
        if e & 1:
            out = modmul(out, base)
        base = modmul(base, base)
        e >>= 1
    return out


def modinv(a) -> np.ndarray:
    """``a**-1 mod p`` (Fermat: ``a**(p−2)``); a must not be 0 mod p."""
    return modpow(a, OPA_PRIME - 2)


def node_powers(positions: np.ndarray, rows: int) -> np.ndarray:
    """The Vandermonde coefficients ``j**r mod p`` for ``r = 0..rows−1``: uint64 array of
    shape ``(rows,) + positions.shape`` (row r of A at the positions)."""
    j = np.asarray(positions, dtype=np.uint64) % _P
    out = np.empty((rows,) + j.shape, dtype=np.uint64)
    out[0] = 1
    for r in range(1, rows):
        out[r] = modmul(out[r - 1], j)
    return out


def cah_scalar(packet_hashes, rows: int, seed: int) -> tuple[int, list[int]]:
    """Reference ``(w, B)`` of one group from its packets' hashes in sending order, in
    Python integers straight from SPEC §8 (tests and test vectors)."""
    b = [0] * rows
    for j, p in enumerate(packet_hashes, start=1):
        h = augmented_hash_scalar(p, j, seed)
        for r in range(rows):
            b[r] = (b[r] + pow(j, r, OPA_PRIME) * h) % OPA_PRIME
    return len(packet_hashes), b
