# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the hash contract (``host_sw.contracts.hashing``): the fast vectorised paths against the
bit-by-bit definitions, and the field split against slow pure-Python references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.hashing import (
    ETHERTYPE_CONTROL, GOLDEN_GAMMA, MASK64, MIN_FRAME_BYTES, PAIR_TABLE_MIN_ROWS,
    TABLE_BLOCK_ROWS, H3, ByteMask, FrameClass, HashPurpose, classify_frame, default_masks,
    RDA_SBOX, LdsOffsetHash, field_hash, field_hash_scalar, h3_rows, header_windows,
    lda_bank, lda_row, lda_sign, lds_digest, lds_offset, leading_zeros32, mix64,
    range_reduce32,
)

U64 = st.integers(0, MASK64)
# 64-bit values with any number of leading zeros (uniform values almost never have many).
U64_ANY_LZ = st.builds(lambda v, shift: v >> shift, U64, st.integers(0, 64))
WINDOW_MASKS = st.lists(st.booleans(), min_size=16, max_size=16)


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


# -- SplitMix64 and the H3 matrix ----------------------------------------------------------

def test_mix64_is_splitmix64():
    # SplitMix64 seeded with 0: the first outputs are mix64(k * GOLDEN_GAMMA), k = 1, 2.
    assert mix64(GOLDEN_GAMMA) == 0xE220A8397B1DCDAF
    assert mix64(2 * GOLDEN_GAMMA & MASK64) == 0x6E789E6AA1B965F4


def test_h3_rows_follow_the_seeding_formula():
    seed, purpose, index = 0x1DA5EED, HashPurpose.RDA_BUCKET, 3
    rows = h3_rows(seed, purpose, index, 20, 32)
    state0 = mix64(seed ^ mix64((int(purpose) << 16) | index))
    expected = [mix64((state0 + (i + 1) * GOLDEN_GAMMA) & MASK64) & 0xFFFFFFFF
                for i in range(20)]
    assert list(rows) == expected
    # Purposes and indices select different matrices.
    assert h3_rows(seed, HashPurpose.PACKET, 3, 20, 32) != rows
    assert h3_rows(seed, purpose, 4, 20, 32) != rows


@pytest.mark.parametrize("kwargs, message", [
    (dict(seed=-1, index=0, in_bits=8, out_bits=8), "seed must be a 64-bit"),
    (dict(seed=0, index=1 << 16, in_bits=8, out_bits=8), "hash index must be"),
    (dict(seed=0, index=0, in_bits=8, out_bits=65), "output width"),
    (dict(seed=0, index=0, in_bits=0, out_bits=8), "input width"),
])
def test_h3_rows_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        h3_rows(purpose=HashPurpose.PACKET, **kwargs)


# -- H3 evaluation --------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=U64, mask=WINDOW_MASKS, out_bits=st.integers(1, 64),
       data=st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=12))
def test_h3_vectorised_equals_scalar(seed, mask, out_bits, data):
    h = H3(seed=seed, purpose=HashPurpose.PACKET, in_bytes=16, out_bits=out_bits,
           byte_mask=mask)
    windows = np.frombuffer(b"".join(data), dtype=np.uint8).reshape(-1, 16)
    assert h(windows).tolist() == [h.scalar(d) for d in data]


@settings(max_examples=5, deadline=None)
@given(seed=U64, rng_seed=st.integers(0, 2**32 - 1), mask_name=st.sampled_from(
    sorted(default_masks())))
def test_h3_blocked_batches_equal_plain_loop_and_scalar(seed, rng_seed, mask_name):
    """Batches are hashed in row blocks; results must not depend on the block boundary."""
    rng = np.random.default_rng(rng_seed)
    n = 2 * TABLE_BLOCK_ROWS + 37
    windows = rng.integers(0, 256, size=(n, 64), dtype=np.uint8)
    h = H3(seed=seed, purpose=HashPurpose.PACKET, in_bytes=64, out_bits=64,
           byte_mask=default_masks()[mask_name].as_array())
    fast = h(windows)
    by_bytes = np.zeros(n, dtype=np.uint64)
    for b in range(64):
        by_bytes ^= h.tables[b][windows[:, b]]
    assert np.array_equal(fast, by_bytes)
    for i in [0, TABLE_BLOCK_ROWS - 1, TABLE_BLOCK_ROWS, n - 1, *rng.integers(0, n, 10)]:
        assert int(fast[i]) == h.scalar(windows[i].tobytes())


@settings(max_examples=5, deadline=None)
@given(seed=U64, index=st.integers(0, 7), rng_seed=st.integers(0, 2**32 - 1))
def test_of_u64_pair_tables_equal_scalar(seed, index, rng_seed):
    """Large batches of IDs use 16-bit (byte pair) tables."""
    rng = np.random.default_rng(rng_seed)
    ids = rng.integers(0, 1 << 64, size=PAIR_TABLE_MIN_ROWS + 3, dtype=np.uint64)
    h = H3(seed=seed, purpose=HashPurpose.RDA_BUCKET, index=index, in_bytes=8, out_bits=32)
    fast = h.of_u64(ids)
    small = np.concatenate([h.of_u64(part) for part in np.array_split(ids, 4)])
    assert np.array_equal(fast, small)
    for i in rng.integers(0, len(ids), 10):
        assert int(fast[i]) == h.scalar(int(ids[i]).to_bytes(8, "little"))


@settings(max_examples=40, deadline=None)
@given(seed=U64, a=st.binary(min_size=8, max_size=8), b=st.binary(min_size=8, max_size=8))
def test_h3_is_xor_linear(seed, a, b):
    h = H3(seed=seed, purpose=HashPurpose.RDA_BUCKET, index=1, in_bytes=8, out_bits=32)
    a_xor_b = bytes(x ^ y for x, y in zip(a, b))
    assert h.scalar(a_xor_b) == h.scalar(a) ^ h.scalar(b)
    assert h.scalar(bytes(8)) == 0
    ids = np.array([int.from_bytes(x, "little") for x in (a, b, a_xor_b)], dtype=np.uint64)
    ha, hb, hab = h.of_u64(ids).tolist()
    assert hab == ha ^ hb
    assert ha == h.scalar(a)


@settings(max_examples=30, deadline=None)
@given(seed=U64, mask=WINDOW_MASKS, data=st.binary(min_size=16, max_size=16),
       noise=st.binary(min_size=16, max_size=16))
def test_masked_bytes_have_no_effect(seed, mask, data, noise):
    h = H3(seed=seed, purpose=HashPurpose.PACKET, in_bytes=16, out_bits=64, byte_mask=mask)
    changed = bytes(d if keep else n for d, n, keep in zip(data, noise, mask))
    assert h.scalar(changed) == h.scalar(data)
    windows = np.frombuffer(data + changed, dtype=np.uint8).reshape(2, 16)
    first, second = h(windows).tolist()
    assert first == second


def test_unmasked_byte_changes_the_hash():
    h = H3(seed=7, purpose=HashPurpose.PACKET, in_bytes=16, out_bits=64)
    assert h.scalar(bytes(16)) != h.scalar(bytes(15) + b"\x01")


def test_h3_input_validation():
    h = H3(seed=7, purpose=HashPurpose.PACKET, in_bytes=16, out_bits=64)
    with pytest.raises(ValueError, match=r"expected an \(N, 16\) uint8 array"):
        h(np.zeros((3, 15), dtype=np.uint8))
    with pytest.raises(ValueError, match="H3 input is 16 bytes"):
        h.scalar(b"x")
    with pytest.raises(ValueError, match="byte mask has 3 entries"):
        H3(seed=7, purpose=HashPurpose.PACKET, in_bytes=16, out_bits=64,
           byte_mask=[True] * 3)
    with pytest.raises(ValueError, match="of_u64 needs an H3 over 8 input bytes"):
        h.of_u64(np.zeros(2, dtype=np.uint64))


# -- byte masks and header windows -----------------------------------------------------------

def test_default_masks_keep_invariant_bytes():
    masks = {k: v.bits for k, v in default_masks().items()}
    ipv4 = masks["packet_ipv4"]
    assert not any(ipv4[0:12])                      # MAC addresses
    assert ipv4[12] and ipv4[13] and ipv4[14]       # EtherType, version/IHL
    assert not ipv4[15]                             # TOS
    assert not ipv4[22]                             # TTL
    assert not ipv4[24] and not ipv4[25]            # header checksum
    assert all(ipv4[26:64])
    ipv6 = masks["packet_ipv6"]
    assert not ipv6[14] and not ipv6[15] and not ipv6[21] and all(ipv6[22:64])
    flow4 = masks["flow_ipv4"]
    assert [i for i, b in enumerate(flow4) if b] == [23] + list(range(26, 38))
    flow6 = masks["flow_ipv6"]
    assert [i for i, b in enumerate(flow6) if b] == [20] + list(range(22, 58))


@given(value=st.integers(0, 2**64 - 1))
def test_byte_mask_int_encoding_round_trip(value):
    mask = ByteMask.from_int(value, 64)
    assert mask.as_int() == value
    assert all(mask.bits[i] == bool(value >> i & 1) for i in range(64))


def test_byte_mask_bit_i_is_byte_i():
    assert ByteMask.keep(16, ranges=[(2, 4)]).as_int() == 0b1100
    assert default_masks()["flow_ipv4"].as_int() == (1 << 23) | (((1 << 12) - 1) << 26)


def test_header_windows_pad_with_zeros_and_truncate():
    frames = [bytes(range(1, 11)), bytes(range(100)), b""]
    w = header_windows(frames, 64)
    assert w.shape == (3, 64) and w.dtype == np.uint8
    assert w[0].tolist() == list(range(1, 11)) + [0] * 54
    assert w[1].tolist() == list(range(64))
    assert not w[2].any()


# -- frame classification ---------------------------------------------------------------------

def frame(ethertype: int, first_payload_byte: int, length: int = 64) -> bytes:
    head = bytes(12) + ethertype.to_bytes(2, "big") + bytes([first_payload_byte])
    return head + bytes(length - len(head))


@pytest.mark.parametrize("data, error, expected", [
    (frame(0x0800, 0x45), False, FrameClass.IPV4),
    (frame(0x0800, 0x45, MIN_FRAME_BYTES), False, FrameClass.IPV4),
    (frame(0x86DD, 0x60), False, FrameClass.IPV6),
    (frame(0x0800, 0x65), False, FrameClass.NON_IP),    # IPv4 EtherType, version 6
    (frame(0x0800, 0x05), False, FrameClass.NON_IP),    # version 0
    (frame(0x86DD, 0x45), False, FrameClass.NON_IP),    # IPv6 EtherType, version 4
    (frame(0x0806, 0x00), False, FrameClass.NON_IP),    # ARP
    (frame(ETHERTYPE_CONTROL, 0x00), False, FrameClass.CONTROL),
    (frame(0x0800, 0x45, MIN_FRAME_BYTES - 1), False, FrameClass.RUNT),
    # priority: errored before runt before control
    (frame(0x0800, 0x45, 20), True, FrameClass.ERRORED),
    (frame(0x0800, 0x45), True, FrameClass.ERRORED),
    (frame(ETHERTYPE_CONTROL, 0x00, 20), False, FrameClass.RUNT),
    (frame(ETHERTYPE_CONTROL, 0x00), True, FrameClass.ERRORED),
])
def test_classify_frame(data, error, expected):
    assert classify_frame(data, error=error) == expected


def test_classify_frame_custom_minimum():
    assert classify_frame(frame(0x0800, 0x45, 40), min_frame_bytes=40) == FrameClass.IPV4
    assert classify_frame(frame(0x0800, 0x45, 39), min_frame_bytes=40) == FrameClass.RUNT


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
