# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the golden model (``host_sw.model.golden_lda_rda_lds``) against a slow per-packet reference
written from the definitions, and of the word layouts and configurations it relies on
(``host_sw.contracts.layouts``, ``host_sw.contracts.config``), plus the test vectors printed in docs/SPEC.md."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.config_base import ConfigMismatch
from host_sw.contracts.config import (
    LdaConfig, LdsConfig, RdaConfig, RliConfig, check_comparable, config_from_dict,
)
from host_sw.model.golden_lda_rda_lds import (Hashers, PacketHashes, _scatter, bucket_indices,
                                              hash_frames, hash_windows, update)
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import (
    MASK64, PAIR_TABLE_MIN_ROWS, FrameClass, header_windows,
)
from host_sw.contracts.hash_fields import field_hash_scalar
from host_sw.contracts.layouts import Field, WordLayout, signed_difference, wrap

from bench import make_test_vectors

ROOT = Path(__file__).resolve().parents[2]
U64_ANY_LZ = st.builds(lambda v, shift: v >> shift, st.integers(0, MASK64), st.integers(0, 40))


# -- slow per-packet reference (pure Python ints, straight from the definitions) -------------

def ref_lz(p: int) -> int:
    return 32 - (p >> 32).bit_length()


def ref_update(config, packets, timestamps, flows=None, weights=None, counted=None):
    """Dict of field name → nested lists, updated one packet at a time."""
    banks, cols = config.shape
    layout = config.layout
    mod = {f.name: 1 << f.width for f in layout.fields}
    mem = {f.name: [[0] * cols for _ in range(banks)] for f in layout.fields}
    hashers = Hashers(config)

    def add(b, c, p, t, w):
        mem["count"][b][c] = (mem["count"][b][c] + w) % mod["count"]
        mem["ts_sum"][b][c] = (mem["ts_sum"][b][c] + t * w) % mod["ts_sum"]
        if "id_xor" in mem:
            mem["id_xor"][b][c] ^= p
        if "digest" in mem:
            mem["digest"][b][c] ^= field_hash_scalar(p, config.seed) % mod["digest"]

    for i, (p, t) in enumerate(zip(packets, timestamps)):
        if counted is not None and not counted[i]:
            continue
        w = 1 if weights is None else weights[i]
        if isinstance(config, LdaConfig):
            bank = -1
            f = field_hash_scalar(p, config.seed)
            for j, z in enumerate(config.thresholds):
                if ref_lz(f) >= z:
                    bank = j
            if bank >= 0:
                add(bank, f % config.rows, p, t, w)
        elif isinstance(config, RdaConfig):
            for l, h in enumerate(hashers.rda_bucket):
                add(l, (h.scalar(p) * cols) >> 32, p, t, w)
        else:
            f = field_hash_scalar(p, config.seed)
            for r, z in enumerate(config.row_thresholds):
                if ref_lz(f) >= z:
                    offset = (hashers.lds_offset[r].scalar(p) * config.vlda_cells) >> 32
                    base = ((flows[r][i] & 0xFFFFFFFF) * cols) >> 32
                    add(r, (base + offset) % cols, p, t, w)
    return mem


def as_lists(syn: Synopsis):
    return {k: v.tolist() for k, v in syn.fields.items()}


small_lda = st.builds(
    lambda rows, th, cb, tb: LdaConfig(banks=len(th), rows=rows, thresholds=th,
                                       count_bits=cb, ts_bits=tb),
    st.sampled_from([2, 4, 8]),
    st.sets(st.integers(0, 12), min_size=1, max_size=3).map(lambda s: tuple(sorted(s))),
    st.sampled_from([8, 9, 32]), st.sampled_from([16, 17, 40]))
small_rda = st.builds(
    lambda k, m, cb, tb: RdaConfig(banks=k, buckets_per_bank=m, count_bits=cb, ts_bits=tb),
    st.integers(1, 3), st.sampled_from([1, 3, 8, 10]), st.sampled_from([8, 32]),
    st.sampled_from([16, 40]))
small_lds = st.builds(
    lambda th, c, k, cb, tb, db: LdsConfig(rows=len(th), cells=c, vlda_cells=min(k, c),
                                           row_thresholds=th, count_bits=cb, ts_bits=tb,
                                           digest_bits=db),
    st.lists(st.integers(0, 6), min_size=1, max_size=3).map(tuple), st.sampled_from([1, 5, 16]),
    st.integers(1, 6), st.sampled_from([8, 32]), st.sampled_from([16, 40]),
    st.sampled_from([1, 13, 32, 64]))


@st.composite
def traffic(draw, config_strategy, max_packets=300):
    config = draw(config_strategy)
    n = draw(st.integers(0, max_packets))
    packets = draw(st.lists(U64_ANY_LZ, min_size=n, max_size=n))
    # timestamps around 2**ts_bits, so the sums wrap at their width
    base = draw(st.sampled_from([0, (1 << config.ts_bits) - 50, (1 << 63) - 5000]))
    timestamps = draw(st.lists(st.integers(base, base + 1000), min_size=n, max_size=n))
    counted = draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    flows = None
    if isinstance(config, LdsConfig):
        flows = [draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
                 for _ in range(config.rows)]
    return config, packets, timestamps, flows, counted


def run_golden(config, packets, timestamps, flows, counted, weights=None):
    hashes = PacketHashes(
        np.array(packets, dtype=np.uint64),
        None if flows is None else np.array(flows, dtype=np.uint64).reshape(len(flows), -1),
        None if counted is None else np.array(counted, dtype=bool))
    return update(config, hashes, np.array(timestamps, dtype=np.uint64), weights=weights)


@pytest.mark.parametrize("strategy", [small_lda, small_rda, small_lds], ids=["lda", "rda", "lds"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_update_equals_per_packet_reference(strategy, data):
    config, packets, timestamps, flows, counted = data.draw(traffic(strategy))
    syn = run_golden(config, packets, timestamps, flows, counted)
    assert as_lists(syn) == ref_update(config, packets, timestamps, flows, counted=counted)


@pytest.mark.parametrize("config", [
    LdaConfig(banks=2, rows=8, thresholds=(3, 7)),  # the LDA paper's §III-B example
    LdaConfig(banks=1, rows=4, thresholds=(1,)),
    LdaConfig(banks=3, rows=2, thresholds=(0, 1, 32)),
    LdsConfig(rows=3, cells=10, vlda_cells=10, row_thresholds=(1, 0, 5)),
], ids=["lda-3-7", "lda-1", "lda-0-1-32", "lds-1-0-5"])
def test_update_with_thresholds_equals_reference(config):
    rng = np.random.default_rng(11)
    n = 600
    packets = [int(v) >> int(s) for v, s in zip(rng.integers(0, 1 << 64, n, dtype=np.uint64),
                                                 rng.integers(0, 34, n))]
    packets += [0, 1 << 63, (1 << 32) - 1]
    timestamps = [int(t) for t in rng.integers(0, 1 << 45, len(packets))]
    flows = ([[int(f) for f in rng.integers(0, 1 << 32, len(packets))]
              for _ in range(config.rows)] if isinstance(config, LdsConfig) else None)
    syn = run_golden(config, packets, timestamps, flows, None)
    assert as_lists(syn) == ref_update(config, packets, timestamps, flows)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_lds_weights(data):
    config, packets, timestamps, flows, counted = data.draw(traffic(small_lds))
    weights = data.draw(st.lists(st.integers(0, 2**20), min_size=len(packets),
                                 max_size=len(packets)))
    syn = run_golden(config, packets, timestamps, flows, counted,
                     weights=np.array(weights, dtype=np.uint64))
    assert as_lists(syn) == ref_update(config, packets, timestamps, flows, weights, counted)


def test_count_wraps_at_count_bits():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8, ts_bits=16)
    n = 300  # all packets in one row: the row of F(0)
    row = field_hash_scalar(0, config.seed) % 2
    syn = run_golden(config, [0] * n, [(1 << 16) - 1] * n, None, None)
    expected_count, expected_ts = [0, 0], [0, 0]
    expected_count[row], expected_ts[row] = n % 256, (n * ((1 << 16) - 1)) % (1 << 16)
    assert syn.count.tolist() == [expected_count]
    assert syn.ts_sum.tolist() == [expected_ts]


def test_update_rejects_bad_inputs():
    config = LdaConfig()
    hashes = PacketHashes(np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="one timestamp per packet"):
        update(config, hashes, np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="non-negative"):
        update(config, hashes, np.array([1, -1, 2]))
    with pytest.raises(ValueError, match="integer ticks"):
        update(config, hashes, np.zeros(3))
    with pytest.raises(ValueError, match="LDS only"):
        update(config, hashes, np.zeros(3, dtype=np.int64), weights=np.ones(3))
    with pytest.raises(ValueError, match="flow hashes"):
        update(LdsConfig(), hashes, np.zeros(3, dtype=np.int64))
    with pytest.raises(ConfigMismatch, match="differing parameters: rows"):
        update(config, hashes, np.zeros(3, dtype=np.int64),
               synopsis=Synopsis.empty(LdaConfig(rows=64)))


def test_large_batches_use_the_same_split():
    """Batches above PAIR_TABLE_MIN_ROWS take the paired-table path for RDA bucket
    hashes; compare it with the small-batch path on the same packets."""
    rng = np.random.default_rng(5)
    n = PAIR_TABLE_MIN_ROWS + 1000
    packets = rng.integers(0, 1 << 64, size=n, dtype=np.uint64)
    timestamps = rng.integers(0, 1 << 40, size=n, dtype=np.uint64)
    for config in (RdaConfig(banks=3, buckets_per_bank=1000), RdaConfig()):
        hashers = Hashers(config)
        fast = hashers.rda_bucket_hashes(packets)
        assert [f.tolist() for f in fast] == [h.of_u64(packets).tolist()
                                                for h in hashers.rda_bucket]
        whole = update(config, PacketHashes(packets), timestamps)
        pieces = Synopsis.empty(config)
        for part in np.array_split(np.arange(n), 8):  # each piece below the threshold
            update(config, PacketHashes(packets[part]), timestamps[part], synopsis=pieces)
        assert whole == pieces


@pytest.mark.parametrize("config", [LdaConfig(rows=16, thresholds=(0, 2)),
                                    RdaConfig(banks=3, buckets_per_bank=7),
                                    LdsConfig(rows=2, cells=9, vlda_cells=3,
                                              row_thresholds=(0, 1))],
                         ids=["lda", "rda", "lds"])
def test_merged_equals_update_with_union(config):
    rng = np.random.default_rng(1)
    n = 500
    packets = rng.integers(0, 1 << 64, size=n, dtype=np.uint64)
    timestamps = rng.integers(0, 1 << 50, size=n, dtype=np.uint64)
    flow = (rng.integers(0, 1 << 32, size=(config.rows, n), dtype=np.uint64)
            if isinstance(config, LdsConfig) else None)
    hashes = PacketHashes(packets, flow)
    first, second = np.arange(n) < 200, np.arange(n) >= 200
    a = update(config, hashes.select(first), timestamps[first])
    b = update(config, hashes.select(second), timestamps[second])
    union = update(config, hashes, timestamps)
    assert a.merged(b) == union
    assert b.merged(a) == union
    with pytest.raises(ConfigMismatch):
        a.merged(Synopsis.empty(config.replace(seed=config.seed + 1)))


def test_bucket_indices_agree_with_update():
    config = LdsConfig(rows=3, cells=11, vlda_cells=4, row_thresholds=(0, 1, 3))
    rng = np.random.default_rng(2)
    n = 400
    hashes = PacketHashes(rng.integers(0, 1 << 64, size=n, dtype=np.uint64),
                          rng.integers(0, 1 << 32, size=(3, n), dtype=np.uint64),
                          rng.random(n) < 0.9)
    rows, cols, who = bucket_indices(config, hashes)
    count = np.zeros(config.shape, dtype=np.int64)
    np.add.at(count, (rows, cols), 1)
    syn = update(config, hashes, np.zeros(n, dtype=np.int64))
    assert syn.count.tolist() == count.tolist()
    assert hashes.counted[who].all()


def test_hash_frames_classifies_and_counts():
    config = LdsConfig(rows=2, cells=8, row_thresholds=(0, 0))
    ipv4 = bytes(12) + b"\x08\x00\x45" + bytes(60)
    ipv6 = bytes(12) + b"\x86\xdd\x60" + bytes(60)
    arp = bytes(12) + b"\x08\x06" + bytes(60)
    frames = [ipv4, ipv6, arp, ipv4[:40], ipv4]
    hashes = hash_frames(config, frames, errors=[False, False, False, False, True])
    assert hashes.counted.tolist() == [True, True, False, False, False]
    hashers = Hashers(config)
    windows = header_windows(frames)
    assert int(hashes.packet[0]) == hashers.packet[FrameClass.IPV4].scalar(windows[0].tobytes())
    assert int(hashes.packet[1]) == hashers.packet[FrameClass.IPV6].scalar(windows[1].tobytes())
    assert int(hashes.flow[1, 0]) == hashers.flow[FrameClass.IPV4][1].scalar(
        windows[0].tobytes())
    classes = [FrameClass.IPV4, FrameClass.IPV6, FrameClass.NON_IP, FrameClass.RUNT,
               FrameClass.ERRORED]
    again = hash_windows(config, windows, classes)
    assert np.array_equal(again.packet[:2], hashes.packet[:2])


# -- word layouts ----------------------------------------------------------------------------

@pytest.mark.parametrize("config", [LdaConfig(rows=4), RdaConfig(buckets_per_bank=3),
                                    LdsConfig(rows=2, cells=5, row_thresholds=(0, 0),
                                              digest_bits=64)])
def test_words_round_trip(config):
    rng = np.random.default_rng(3)
    syn = Synopsis.empty(config)
    for f in config.layout.fields:
        syn.fields[f.name] = wrap(rng.integers(0, 1 << 64, size=config.shape,
                                               dtype=np.uint64), f.width)
    words = syn.words()
    assert len(words) == config.buckets
    assert all(0 <= w < (1 << config.layout.width) for w in words)
    assert Synopsis.from_words(config, words) == syn
    # memory order: bank/row major; word = count | ts_sum << count_bits | ...
    b, c = config.shape[0] - 1, 1
    w = words[b * config.shape[1] + c]
    assert w & ((1 << config.count_bits) - 1) == int(syn.count[b, c])
    assert (w >> config.count_bits) & ((1 << config.ts_bits) - 1) == int(syn.ts_sum[b, c])
    with pytest.raises(ValueError, match=f"has {config.buckets} words, got 1"):
        Synopsis.from_words(config, words[:1])


def test_default_word_widths():
    assert (LdaConfig().layout.width, LdaConfig().layout.chunks) == (72, 3)
    assert (RdaConfig().layout.width, RdaConfig().layout.chunks) == (136, 5)
    assert (LdsConfig().layout.width, LdsConfig().layout.chunks) == (104, 4)
    assert RdaConfig().layout.offset("id_xor") == 72


@given(widths=st.lists(st.integers(1, 64), min_size=1, max_size=4), data=st.data())
def test_word_layout_round_trips(widths, data):
    layout = WordLayout(tuple(Field(f"f{i}", w, "sum") for i, w in enumerate(widths)))
    n = data.draw(st.integers(1, 5))
    values = {f.name: np.array(data.draw(st.lists(st.integers(0, (1 << f.width) - 1),
                                                  min_size=n, max_size=n)), dtype=np.uint64)
              for f in layout.fields}
    words = layout.pack(values)
    back = layout.unpack(words)
    assert all(back[k].tolist() == v.tolist() for k, v in values.items())
    for w in words:
        chunks = layout.to_chunks(w)
        assert len(chunks) == layout.chunks == (layout.width + 31) // 32
        assert all(0 <= c < (1 << 32) for c in chunks)
        assert layout.from_chunks(chunks) == w
        assert chunks[0] == w & 0xFFFFFFFF  # least significant chunk first
    with pytest.raises(ValueError, match="chunks, got"):
        layout.from_chunks([0] * (layout.chunks + 1))


@given(width=st.integers(8, 64), r=st.integers(0, MASK64), delta=st.integers(-2**62, 2**62))
def test_signed_difference(width, r, delta):
    half = 1 << (width - 1)
    delta = max(-half, min(half - 1, delta))
    mod = 1 << width
    receiver = r % mod
    sender = (receiver - delta) % mod
    got = signed_difference(np.array([receiver], dtype=np.uint64),
                            np.array([sender], dtype=np.uint64), width)
    assert int(got[0]) == delta


def test_signed_difference_edges():
    r = np.array([0, 5, 0x80], dtype=np.uint64)
    s = np.array([1, 5, 0], dtype=np.uint64)
    assert signed_difference(r, s, 8).tolist() == [-1, 0, -128]


# -- configurations --------------------------------------------------------------------------

def test_default_config_id_is_pinned():
    """Changing any contract default (or the ID recipe) changes this value: on purpose only,
    and then also in docs/SPEC.md §5."""
    assert LdaConfig().config_id == 0xA862EF21


COMMON_CHANGES = dict(seed=1, window_bytes=72, count_bits=31, ts_bits=39, tick_ns=2.0,
                      mask_packet_ipv4=1, mask_packet_ipv6=1, mask_flow_ipv4=1,
                      mask_flow_ipv6=1)
# one change per field (coupled fields change together where validation needs it)
FIELD_CHANGES = {
    LdaConfig: dict(COMMON_CHANGES, banks=dict(banks=3, thresholds=(0, 6, 9)), rows=512,
                    thresholds=(1, 6)),
    RdaConfig: dict(COMMON_CHANGES, banks=3, buckets_per_bank=1000, id_bits=None),
    LdsConfig: dict(COMMON_CHANGES, rows=dict(rows=3, row_thresholds=(0, 0, 0)), cells=1000,
                    vlda_cells=2, digest_bits=31, row_thresholds=(0, 0, 0, 1)),
}


@pytest.mark.parametrize("config", [LdaConfig(), RdaConfig(), LdsConfig()],
                         ids=["lda", "rda", "lds"])
def test_config_id_depends_on_every_field(config):
    changes = FIELD_CHANGES[type(config)]
    assert set(changes) == {f.name for f in dataclasses.fields(config)}
    ids = {config.config_id}
    for name, change in changes.items():
        if change is None:  # id_bits: only 64 is valid
            continue
        changed = config.replace(**(change if isinstance(change, dict) else {name: change}))
        assert changed.config_id not in ids, name
        ids.add(changed.config_id)
    assert config.config_id == type(config)().config_id  # stable across instances
    assert LdaConfig().config_id != RdaConfig().config_id != LdsConfig().config_id


@pytest.mark.parametrize("config", [
    LdaConfig(), LdaConfig(banks=3, rows=64, thresholds=(1, 4, 9), seed=5),
    RdaConfig(banks=4, buckets_per_bank=333), LdsConfig(rows=2, row_thresholds=(0, 3)),
])
def test_config_dict_round_trip(config):
    assert config_from_dict(config.to_dict()) == config
    assert config_from_dict(config.to_dict()).config_id == config.config_id


@pytest.mark.parametrize("make, message", [
    (lambda: LdaConfig(rows=1000), "rows must be a power of two in 2..2\\*\\*20, not 1000"),
    (lambda: LdaConfig(banks=3), "need one threshold per bank \\(3\\), got 2"),
    (lambda: LdaConfig(thresholds=(6, 6)), "thresholds must increase strictly"),
    (lambda: LdaConfig(thresholds=(0, 33)), "thresholds must be 0..32"),
    (lambda: LdaConfig(banks=0, thresholds=()), "banks must be 1..16, not 0"),
    (lambda: LdaConfig(seed=-1), "seed must be a 64-bit unsigned integer"),
    (lambda: LdaConfig(window_bytes=20), "window_bytes must be a multiple of 8"),
    (lambda: LdaConfig(count_bits=7), "count_bits must be 8..63, not 7"),
    (lambda: LdaConfig(ts_bits=64), "ts_bits must be 16..63, not 64"),
    (lambda: LdaConfig(tick_ns=0), "tick_ns must be positive"),
    # the default masks follow the window (SPEC §2); an explicit mask must fit it
    (lambda: LdaConfig(window_bytes=16, mask_packet_ipv4=1 << 20),
     "mask_packet_ipv4 must fit the 16-byte window"),
    (lambda: LdsConfig(window_bytes=48), "a 48-byte window cannot hold the LDS flow key"),
    # RLI keys its cell and its digest on the same flow key (flow hashes 0 and 1)
    (lambda: RliConfig(window_bytes=48), "a 48-byte window cannot hold the RLI flow key"),
    (lambda: LdaConfig(rows=1024.5), "rows must be an integer, not 1024.5"),
    (lambda: LdaConfig(tick_ns=float("inf")), "tick_ns must be positive and finite"),
    (lambda: RdaConfig(banks=9), "banks must be 1..8, not 9"),
    (lambda: RdaConfig(buckets_per_bank=0), "buckets_per_bank must be 1..2\\*\\*24"),
    (lambda: RdaConfig(id_bits=32), "id_bits must be 64"),
    (lambda: LdsConfig(vlda_cells=2000), "vlda_cells must be 1..cells \\(1024\\)"),
    (lambda: LdsConfig(digest_bits=0), "digest_bits must be 1..64"),
    (lambda: LdsConfig(row_thresholds=(0,)), "need one row threshold per row \\(4\\)"),
    (lambda: LdsConfig(rows=9), "rows must be 1..8, not 9"),
    (lambda: config_from_dict({"kind": "xyz"}), "unknown synopsis kind 'xyz'"),
    (lambda: config_from_dict({"kind": "lda", "cells": 4}), "unknown lda parameters"),
])
def test_config_validation_messages(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_check_comparable_names_the_difference():
    check_comparable(LdaConfig(), LdaConfig())
    with pytest.raises(ConfigMismatch, match="differing parameters: seed, ts_bits"):
        check_comparable(LdaConfig(), LdaConfig(seed=1, ts_bits=41))
    with pytest.raises(ConfigMismatch, match=r"ts_bits 40 vs 41\)$"):
        check_comparable(LdaConfig(), LdaConfig(ts_bits=41))
    with pytest.raises(ConfigMismatch, match='kind "lda" vs "rda"'):
        check_comparable(LdaConfig(), RdaConfig())


# -- test vectors in docs/SPEC.md ---------------------------------------------------------------

def test_spec_test_vectors_match_the_code():
    spec = (ROOT / "docs" / "SPEC.md").read_text()
    section = make_test_vectors.markdown()
    assert section in spec, ("docs/SPEC.md test vectors are stale: "
                             "run python -m bench.make_test_vectors --write")
    assert make_test_vectors.regmap_markdown() in spec, (
        "docs/SPEC.md §7.4 register maps are stale: run python -m bench.make_test_vectors "
        "--write")
    assert f"{LdaConfig().config_id:#010x}" in spec


def test_spec_is_enough_to_reimplement_the_vectors():
    """A from-scratch implementation of SPEC.md §1–§3 and §5 (no host_sw imports)
    reproduces the SPEC's own test-vector table and worked configuration ID."""
    import hashlib
    import json
    import re
    m64, gamma = (1 << 64) - 1, 0x9E3779B97F4A7C15

    def mix(z):
        z &= m64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m64
        return z ^ (z >> 31)

    def matrix(purpose, index, n, w):
        s0 = mix(0x1DA5EED ^ mix((purpose << 16) | index))
        return [mix(s0 + (i + 1) * gamma) & ((1 << w) - 1) for i in range(n)]

    def h3(q, data, mask):
        h = 0
        for i, byte in enumerate(data):
            for k in range(8):
                if (mask >> i) & 1 and (byte >> k) & 1:
                    h ^= q[8 * i + k]
        return h

    spec = (ROOT / "docs" / "SPEC.md").read_text()
    block = spec.split("<!-- test-vectors:begin -->")[1].split("```")[1]
    frames = [bytes.fromhex("".join(chunk.splitlines()[1:]))
              for chunk in block.split("# frame ")[1:]]
    table = [line for line in spec.splitlines() if re.match(r"\| \d+ \| IPV", line)]
    assert len(frames) == len(table) >= 3
    qp = matrix(1, 0, 512, 64)
    qr = [matrix(2, l, 64, 32) for l in range(2)]
    qf = [matrix(3, r, 512, 32) for r in range(4)]
    masks = {4: (0xFFFFFFFFFCBF7000, 0x3FFC800000), 6: (0xFFFFFFFFFFDF3000, 0x3FFFFFFFFD00000)}
    for frame, row in zip(frames, table):
        window = (frame[:64] + bytes(64))[:64]
        packet_mask, flow_mask = masks[window[14] >> 4]
        p = h3(qp, window, packet_mask)
        sbox = [0xC, 5, 6, 0xB, 9, 0, 0xA, 0xD, 3, 0xE, 0xF, 8, 4, 7, 1, 2]
        s_id = sum(sbox[(p >> (4 * i)) & 0xF] << (4 * i) for i in range(16))
        f = h3(matrix(4, 0, 64, 64), s_id.to_bytes(8, "little"), 0xFF)   # field hash F
        lz = 32 - (f >> 32).bit_length()
        bank = max(j for j, z in enumerate((0, 6)) if z <= lz)
        rda = [(h3(q, s_id.to_bytes(8, "little"), 0xFF) * 1024) >> 32 for q in qr]
        flows = [h3(q, window, flow_mask) for q in qf]
        cells = [((f_r * 1024) >> 32) % 1024 for f_r in flows]  # k = 1: offset 0
        cols = [c.strip().strip("`") for c in row.strip("|").split("|")]
        assert int(cols[2], 16) == p
        assert int(cols[3], 16) == f
        assert [int(c) for c in cols[4:7]] == [lz, bank, f % 1024]
        assert int(cols[7]) == (1 if f & 1 else -1)
        assert [int(x) for x in cols[8].split(",")] == rda
        assert int(cols[9], 16) == flows[0]
        assert [int(x) for x in cols[10].split(",")] == [0, 0, 0, 0]  # k = 1
        assert int(cols[11], 16) == f % (1 << 32)                      # 32-bit digest
        assert [int(x) for x in cols[12].split(",")] == cells
    # Other window sizes (SPEC §2): masks from the byte ranges, P over 8·w input bits.
    def keep(w, ranges):
        return sum(1 << i for lo, hi in ranges for i in range(lo, min(hi, w)))

    rows = [line for line in spec.splitlines() if re.match(r"\| (32|72) \| `0x", line)]
    assert len(rows) == 2
    for line in rows:
        cols = [c.strip().strip("`") for c in line.strip("|").split("|")]
        w = int(cols[0])
        masks = [keep(w, [(12, 15), (16, 22), (23, 24), (26, w)]),
                 keep(w, [(12, 14), (16, 21), (22, w)]),
                 keep(w, [(23, 24), (26, 38)]), keep(w, [(20, 21), (22, 58)])]
        assert [int(c, 16) for c in cols[1:5]] == masks
        q = matrix(1, 0, 8 * w, 64)
        hashes = [h3(q, (f[:w] + bytes(w))[:w], masks[0] if f[14] >> 4 == 4 else masks[1])
                  for f in frames]
        assert [int(x.strip().strip("`"), 16) for x in cols[5].split(",")] == hashes
    canonical = re.search(r'\n(\{"banks":2.*\})\n', spec).group(1)
    assert canonical == json.dumps(LdaConfig().to_dict(), sort_keys=True,
                                   separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).digest()[:4] == bytes.fromhex("a862ef21")


def test_flow_hashes_of_large_batches_equal_per_row_hashes():
    rng = np.random.default_rng(9)
    windows = rng.integers(0, 256, size=(PAIR_TABLE_MIN_ROWS + 5, 64), dtype=np.uint8)
    for rows in (3, 4):
        config = LdsConfig(rows=rows, row_thresholds=(0,) * rows)
        hashers = Hashers(config)
        for cls in (FrameClass.IPV4, FrameClass.IPV6):
            fast = hashers.flow_hashes(cls, windows)
            assert fast.tolist() == [h(windows).tolist() for h in hashers.flow[cls]]
            assert int(fast[rows - 1, 7]) == hashers.flow[cls][rows - 1].scalar(
                windows[7].tobytes())


@pytest.mark.parametrize("n", [17, 4096, 50_000])
def test_scatter_gives_the_bits_of_ufunc_at(n):
    """The synopsis update's scatter (a compiled loop from 4096 entries) against
    numpy's ``ufunc.at``: uint64 sums wrapping mod 2**64, int64 XORs, repeated cells."""
    rng = np.random.default_rng(n)
    flat = rng.integers(0, 300, n)
    values = rng.integers(0, 2**64, n, dtype=np.uint64)
    start = rng.integers(2**63, 2**64, 300, dtype=np.uint64)   # sums wrap
    want, got = start.copy(), start.copy()
    np.add.at(want, flat, values)
    _scatter(np.add, got, flat, values)
    assert np.array_equal(got, want) and not np.array_equal(got, start)
    want, got = start.view(np.int64).copy(), start.view(np.int64).copy()
    np.bitwise_xor.at(want, flat, values.view(np.int64))
    _scatter(np.bitwise_xor, got, flat, values.view(np.int64))
    assert np.array_equal(got, want)


def test_hashers_for_a_config_are_made_once_and_equal_fresh_ones():
    """:func:`hashers_for` gives one :class:`Hashers` per equal configuration (a capture
    analysis asks in every pass and task) with the tables a fresh one has."""
    from host_sw.contracts.config import LdsConfig
    from host_sw.model.golden_lda_rda_lds import Hashers, hashers_for
    a, b = hashers_for(LdsConfig()), hashers_for(LdsConfig())
    assert a is b and hashers_for(LdsConfig(seed=7)) is not a
    fresh = Hashers(LdsConfig())
    for cls in fresh.packet:
        assert np.array_equal(a.packet[cls].tables, fresh.packet[cls].tables)
        for x, y in zip(a.flow[cls], fresh.flow[cls]):
            assert np.array_equal(x.tables, y.tables)
