# SPDX-License-Identifier: BSD-2-Clause
"""The OPA contract (SPEC §8): augmented hash against its bit-by-bit definition, field
helpers, the configuration, and the timestamp layer's coding (lossless and lossy)."""

import numpy as np
import pytest

from host_sw.contracts.config import KIND_CODES, OpaConfig, config_from_dict
from host_sw.contracts.opa.words import (OPA_PRIME, augmented_hash, augmented_hash_scalar, cah_scalar,
                                   group_of, modinv, modmul, node_powers, position_hash)
from host_sw.contracts.opa.timestamps import (RICE_ESCAPE, decode_timestamps,
                                              encode_timestamps)


def test_augmented_hash_equals_definition():
    rng = np.random.default_rng(3)
    p = rng.integers(0, 2 ** 64, 200, dtype=np.uint64)
    j = rng.integers(1, 2 ** 32, 200)
    fast = augmented_hash(p, j, 0x1DA5EED)
    assert (fast < OPA_PRIME).all()
    assert [int(x) for x in fast] == [augmented_hash_scalar(int(a), int(b), 0x1DA5EED)
                                      for a, b in zip(p, j)]
    # The position matters: the same packet at two positions hashes differently.
    assert (augmented_hash(p, 1, 1) != augmented_hash(p, 2, 1)).all()


def test_group_is_top_bits():
    p = np.array([0, 2 ** 63, 2 ** 64 - 1, 3 << 60], dtype=np.uint64)
    assert list(group_of(p, 16)) == [0, 8, 15, 3]
    assert list(group_of(p, 1)) == [0, 0, 0, 0]


def test_field_helpers():
    a = np.array([1, 2, 12345, OPA_PRIME - 1], dtype=np.uint64)
    assert (modmul(a, modinv(a)) == 1).all()
    v = node_powers(np.array([3, 5]), 4)
    assert v.tolist() == [[1, 1], [3, 5], [9, 25], [27, 125]]


def test_opa_config():
    c = OpaConfig(groups=256, rows=3)
    assert KIND_CODES["opa"] == 4 and c.shape == (1, 256)
    assert c.layout.names == ("count", "b0", "b1", "b2") and c.layout.width == 32 + 93
    assert config_from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="power of two"):
        OpaConfig(groups=100)
    with pytest.raises(ValueError, match="rows"):
        OpaConfig(rows=1)


def _grouped_timestamps(rng, groups=64, mean=40, span=10 ** 9):
    counts = rng.poisson(mean, groups)
    ts = np.concatenate([np.sort(rng.integers(0, span, c)) for c in counts]).astype(np.int64)
    return ts, counts


def test_timestamps_lossless_round_trip():
    rng = np.random.default_rng(5)
    ts, counts = _grouped_timestamps(rng)
    counts[3] = 0  # an empty group
    ts = ts[:counts.sum()]
    ts = np.concatenate([np.sort(g) for g in np.split(ts, np.cumsum(counts)[:-1])])
    block = encode_timestamps(ts, counts)
    out, bound = decode_timestamps(block, counts)
    assert bound == 0 and np.array_equal(out, ts)
    assert len(block) < 4 * len(ts)   # well under a raw 4-byte timestamp


def test_timestamps_escape_and_lossy_bound():
    counts = np.array([4, 3])
    ts = np.array([10, 11, 12, 2 ** 40, 5, 5, 6], dtype=np.int64)   # one huge gap
    out, _ = decode_timestamps(encode_timestamps(ts, counts), counts)
    assert np.array_equal(out, ts)
    rng = np.random.default_rng(6)
    ts, counts = _grouped_timestamps(rng)
    lossless = encode_timestamps(ts, counts)
    block = encode_timestamps(ts, counts, shift=6)
    out, bound = decode_timestamps(block, counts)
    assert bound == 32 and np.abs(out - ts).max() <= 32 and len(block) < len(lossless)
    assert RICE_ESCAPE == 31


def test_timestamps_rejects_bad_input():
    with pytest.raises(ValueError, match="decrease"):
        encode_timestamps(np.array([5, 4]), np.array([2]))
    block = encode_timestamps(np.array([1, 2, 3]), np.array([3]))
    with pytest.raises(ValueError, match="counts say"):
        decode_timestamps(block, np.array([2]))
    with pytest.raises(ValueError):
        decode_timestamps(block[:-1], np.array([3]))


def test_spec_vectors():
    """docs/SPEC.md §8.6."""
    seed = OpaConfig().seed
    assert OpaConfig(groups=4, rows=4).config_id == 0xD9A1154A
    assert augmented_hash_scalar(0x0123456789ABCDEF, 1, seed) == 1551046615
    assert augmented_hash_scalar(0x0123456789ABCDEF, 1000, seed) == 1553346128
    assert augmented_hash_scalar(0, 1, seed) == 1392194042
    assert int(position_hash(np.array([2]), seed)[0]) == 0xF30EBBC091C7D47B
    assert cah_scalar([0x4000000000000001, 0x4000000101010102, 0x4000000202020203], 4,
                      seed) == (3, [1965460351, 1974451509, 1937625323, 1699547445])
    block = encode_timestamps(np.array([1000, 1010, 1030, 5000, 5003]), np.array([3, 2]))
    assert block.hex() == "01000a020500000000000000e80300000000000000800e32f61d"
