# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the hash contract (``host_sw.contracts.hashing``): the fast vectorised paths
against the bit-by-bit definitions, the header window and the frame classes (the field
split: ``test_hash_fields.py``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.hashing import (
    ETHERTYPE_CONTROL, GOLDEN_GAMMA, H3, MASK64, MIN_FRAME_BYTES, PAIR_TABLE_MIN_ROWS,
    TABLE_BLOCK_ROWS, ByteMask, FrameClass, HashPurpose, classify_frame, default_masks,
    h3_rows, header_windows, mix64,
)

U64 = st.integers(0, MASK64)
WINDOW_MASKS = st.lists(st.booleans(), min_size=16, max_size=16)


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


@pytest.mark.parametrize("dtype,width,size", [(np.uint8, 64, 256), (np.uint16, 4, 1 << 16)])
def test_table_xor_compiled_kernel_equals_numpy(dtype, width, size):
    """The compiled kernel (C or numba, from COMPILED_MIN_ROWS rows) and numpy's blocked
    gathers give the same bits, for byte and byte-pair columns, some without a table."""
    from host_sw.contracts import hashing
    if hashing.compiled(hashing._table_xor_loop) is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    rng = np.random.default_rng(7)
    n = hashing.COMPILED_MIN_ROWS + 5
    columns = rng.integers(0, size, size=(n, width)).astype(dtype)
    tables = {j: rng.integers(0, 1 << 64, size=size, dtype=np.uint64)
              for j in range(width) if j % 3}
    fast = hashing.table_xor(columns, tables)
    slow = hashing._numpy_table_xor(columns, list(tables.items()), 100)
    assert fast.dtype == np.uint64 and np.array_equal(fast, slow)
    i = int(rng.integers(0, n))
    expect = 0
    for j, t in tables.items():
        expect ^= int(t[columns[i, j]])
    assert int(fast[i]) == expect
