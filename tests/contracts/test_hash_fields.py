# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the field split of the hashes (``host_sw.contracts.hash_fields``): each field
against a slow pure-Python reference, the field hash against its definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.hash_fields import (
    LdsOffsetHash, field_hash, field_hash_scalar, lda_bank, lda_row, lda_sign, lds_digest,
    lds_offset, leading_zeros32, range_reduce32,
)
from host_sw.contracts.hashing import (
    GOLDEN_GAMMA, MASK64, PAIR_TABLE_MIN_ROWS, RDA_SBOX, HashPurpose, h3_rows,
)

U64 = st.integers(0, MASK64)
# 64-bit values with any number of leading zeros (uniform values almost never have many).
U64_ANY_LZ = st.builds(lambda v, shift: v >> shift, U64, st.integers(0, 64))


# -- slow references ---------------------------------------------------------------------

def ref_leading_zeros32(p: int) -> int:
    word = p >> 32
    return 32 - word.bit_length()


def ref_lda_bank(p: int, thresholds) -> int:
    lz = ref_leading_zeros32(p)
    bank = -1
    for j, z in enumerate(thresholds):
        if z <= lz:
            bank = j
    return bank


# -- field split -------------------------------------------------------------------------------

EDGE_HASHES = [0, 1, (1 << 32) - 1, 1 << 32, (1 << 33) - 1, 1 << 63, MASK64,
               (1 << 57), (1 << 57) - 1, (1 << 56), (1 << 60) + 5, (1 << 61) - 1]


@settings(max_examples=50, deadline=None)
@given(st.lists(U64_ANY_LZ, max_size=40))
def test_leading_zeros32_against_reference(values):
    values = values + EDGE_HASHES
    got = leading_zeros32(np.array(values, dtype=np.uint64)).tolist()
    assert got == [ref_leading_zeros32(v) for v in values]


def test_leading_zeros32_edge_values():
    assert leading_zeros32(np.array([0, 1 << 63, (1 << 32) - 1, 1 << 32],
                                    dtype=np.uint64)).tolist() == [32, 0, 32, 31]


@settings(max_examples=50, deadline=None)
@given(values=st.lists(U64_ANY_LZ, max_size=40),
       thresholds=st.sets(st.integers(0, 32), min_size=1, max_size=5).map(sorted))
def test_lda_bank_against_reference(values, thresholds):
    values = values + EDGE_HASHES
    got = lda_bank(np.array(values, dtype=np.uint64), thresholds).tolist()
    assert got == [ref_lda_bank(v, thresholds) for v in values]


def test_lda_bank_paper_example():
    """LDA paper §III-B: thresholds (3, 7); 7+ leading zeros → bank 1, 3..6 → bank 0."""
    def with_lz(lz):  # sampling word with exactly lz leading zeros (32: zero word)
        return 0xFFFF if lz == 32 else ((1 << (31 - lz)) << 32) | 0xABCD
    lzs = list(range(33))
    got = lda_bank(np.array([with_lz(z) for z in lzs], dtype=np.uint64), (3, 7)).tolist()
    assert got == [-1, -1, -1, 0, 0, 0, 0] + [1] * 26
    assert lda_bank(np.array([0, 1 << 63], dtype=np.uint64), (3, 7)).tolist() == [1, -1]
    assert lda_bank(np.array([1 << 63], dtype=np.uint64), (0, 6)).tolist() == [0]


@given(values=st.lists(U64, min_size=1, max_size=30), log_rows=st.integers(1, 20))
def test_lda_row_and_sign(values, log_rows):
    rows = 1 << log_rows
    got = lda_row(np.array(values, dtype=np.uint64), rows)
    assert got.tolist() == [v % rows for v in values]
    assert lda_sign(got).tolist() == [1 if (v % rows) & 1 else -1 for v in values]


@given(values=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=30),
       size=st.integers(1, 1 << 32))
def test_range_reduce32(values, size):
    got = range_reduce32(np.array(values, dtype=np.uint64), size).tolist()
    assert got == [(v * size) >> 32 for v in values]
    assert all(0 <= g < size for g in got)


def test_range_reduce32_power_of_two_is_top_bits():
    h = np.array([0xDEADBEEF, 0, 0xFFFFFFFF], dtype=np.uint64)
    assert range_reduce32(h, 1024).tolist() == [0xDEADBEEF >> 22, 0, 1023]
    with pytest.raises(ValueError, match="size must be at most 2\\*\\*32"):
        range_reduce32(h, (1 << 32) + 1)


@given(values=st.lists(U64, min_size=1, max_size=30), k=st.integers(1, 1 << 20),
       digest_bits=st.integers(1, 64))
def test_lds_offset_and_digest(values, k, digest_bits):
    p = np.array(values, dtype=np.uint64)
    assert lds_offset(p, k).tolist() == [((v & 0xFFFFFFFF) * k) >> 32 for v in values]
    assert lds_digest(p, digest_bits).tolist() == [v % (1 << digest_bits) for v in values]


def ref_field_hash(p: int, seed: int) -> int:
    """F = H3_field(S(P)) straight from the definitions: nibble S-box, then the rows."""
    substituted = sum(RDA_SBOX[(p >> (4 * i)) & 0xF] << (4 * i) for i in range(16))
    rows = h3_rows(seed, HashPurpose.FIELD, 0, 64, 64)
    out = 0
    for i in range(64):
        if (substituted >> i) & 1:
            out ^= rows[i]
    return out


@settings(max_examples=30)
@given(values=st.lists(U64, min_size=1, max_size=20), seed=U64)
def test_field_hash_against_definition(values, seed):
    got = field_hash(np.array(values, dtype=np.uint64), seed).tolist()
    assert got == [ref_field_hash(v, seed) for v in values]
    assert [field_hash_scalar(v, seed) for v in values] == got


def test_field_hash_long_input_and_shape():
    """The pair-table path (long inputs) equals the byte-table path; shapes are kept."""
    p = np.arange(PAIR_TABLE_MIN_ROWS + 5, dtype=np.uint64) * np.uint64(GOLDEN_GAMMA)
    long = field_hash(p, 7)
    assert long[:20].tolist() == field_hash(p[:20], 7).tolist()
    assert field_hash(p[:6].reshape(2, 3), 7).shape == (2, 3)


def test_field_hash_is_not_xor_linear():
    """The point of F: for packet hashes a ^ b ^ c ^ d = 0 (windows that differ by the
    same pattern), F(a) ^ F(b) ^ F(c) ^ F(d) is not 0, and its low bit (the LDA sign
    product) is 1 about half the time; with F = P it would always be 0."""
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 1 << 63, 4000, dtype=np.uint64) for _ in range(3))
    d = a ^ b ^ c
    f = [field_hash(x, 99) for x in (a, b, c, d)]
    combined = f[0] ^ f[1] ^ f[2] ^ f[3]
    assert np.count_nonzero(combined == 0) == 0
    assert 0.45 < float(np.mean(combined & np.uint64(1))) < 0.55


def test_lds_offset_hash_per_row():
    """Each row has its own offset hash (LDS paper §2.3.4): the rows' offsets of the same
    packets differ."""
    p = np.arange(1000, dtype=np.uint64)
    offsets = [lds_offset(LdsOffsetHash(seed=3, row=r).of_u64(p), 8) for r in range(3)]
    assert LdsOffsetHash(seed=3, row=1).scalar(5) == int(
        LdsOffsetHash(seed=3, row=1).of_u64(np.array([5], dtype=np.uint64))[0])
    assert np.mean(offsets[0] == offsets[1]) < 0.2
    assert np.mean(offsets[1] == offsets[2]) < 0.2


def test_compiled_sbox_hash_equals_the_numpy_layers():
    """:func:`sbox_table_xor` (the S-box layer and the H3 lookups in one compiled pass)
    gives the bits of the numpy path (:func:`sbox_nibbles64`, then the H3 pair tables),
    one 64-bit and two 32-bit hashes packed in one table, on long inputs."""
    from host_sw.contracts.hashing import (COMPILED_MIN_ROWS, SboxH3, sbox_nibbles64,
                                           sbox_table_xor)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 1 << 64, size=COMPILED_MIN_ROWS + 777, dtype=np.uint64)
    f = SboxH3(seed=9, purpose=HashPurpose.FIELD, out_bits=64).h3
    a, b = (SboxH3(seed=9, purpose=HashPurpose.RDA_BUCKET, index=i, out_bits=32).h3
            for i in range(2))
    got = sbox_table_xor(ids, np.stack([f.tables, a.tables | (b.tables << np.uint64(32))]))
    if got is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    s = sbox_nibbles64(ids)
    assert np.array_equal(got[0], f.of_u64(s))
    assert np.array_equal(got[1] & np.uint64(0xFFFFFFFF), a.of_u64(s))
    assert np.array_equal(got[1] >> np.uint64(32), b.of_u64(s))
    assert np.array_equal(field_hash(ids[:5], 9),
                          [ref_field_hash(int(v), 9) for v in ids[:5]])
