# SPDX-License-Identifier: BSD-2-Clause
"""Synthetic traces: real header windows (unique, parseable, classified as the tap does),
send times, heavy-tailed flows, fast mode, and traces from frames."""

import dpkt
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.model.golden_lda_rda_lds import hash_frames, hash_windows
from host_sw.model.headers import rank_in_group as _rank_in_group
from host_sw.contracts.hashing import FrameClass, classify_frame, mix64_array
from host_sw.contracts.hash_fields import leading_zeros32
from host_sw.model.traffic import (
    flow_assignment, send_times, synthetic_trace,
    trace_from_frames,
)


def n_unique_rows(windows):
    w = np.ascontiguousarray(windows)
    return len(np.unique(w.view(np.dtype((np.void, w.shape[1]))).ravel()))


@pytest.fixture(scope="module")
def mixed_trace():
    return synthetic_trace(packets=20_000, flows=40, seed=3, ipv6_fraction=0.5,
                           tcp_fraction=0.5)


def test_windows_unique_per_packet_for_every_protocol_mix(mixed_trace):
    t = mixed_trace
    assert t.windows.shape == (20_000, 64) and t.windows.dtype == np.uint8
    assert n_unique_rows(t.windows) == len(t)
    # the packet hash (invariant bytes only) is unique too
    h = t.hashes(LdaConfig())
    assert len(np.unique(h.packet)) == len(t)


def test_ipv6_udp_windows_unique_in_one_big_flow():
    t = synthetic_trace(packets=100_000, flows=1, seed=1, ipv6_fraction=1.0,
                        tcp_fraction=0.0, frame_bytes=60)
    assert n_unique_rows(t.windows) == len(t)


def test_frames_parse_as_the_flow_5_tuple(mixed_trace):
    t = mixed_trace
    seen = {}
    for i, frame in enumerate(t.frames(range(400))):
        eth = dpkt.ethernet.Ethernet(frame)
        ip = eth.data
        assert len(frame) == t.frame_lengths[i]
        if isinstance(ip, dpkt.ip.IP):
            assert t.classes[i] == FrameClass.IPV4
            assert ip.len == len(frame) - 14
            # valid header checksum: the ones-complement sum of the header is 0xFFFF
            words = np.frombuffer(frame[14:34], dtype=">u2").astype(np.uint32)
            total = int(words.sum())
            while total >> 16:
                total = (total & 0xFFFF) + (total >> 16)
            assert total == 0xFFFF
            key = (ip.src, ip.dst, ip.p)
        else:
            assert isinstance(ip, dpkt.ip6.IP6) and t.classes[i] == FrameClass.IPV6
            assert ip.plen == len(frame) - 54
            key = (ip.src, ip.dst, ip.nxt)
        l4 = frame[34:38] if t.classes[i] == FrameClass.IPV4 else frame[54:58]
        key += (l4,)
        f = int(t.flow_ids[i])
        assert seen.setdefault(f, key) == key
        assert classify_frame(frame) == t.classes[i]
    # distinct flows have distinct 5-tuples
    assert len(set(seen.values())) == len(seen)


def test_frames_shorter_than_the_window_read_zero_past_their_end():
    t = synthetic_trace(packets=500, flows=5, seed=2, frame_bytes=60, tcp_fraction=0.0)
    assert (t.frame_lengths == 60).all()
    assert (t.windows[:, 60:] == 0).all()
    assert (t.windows[:, 42:50] != 0).any(axis=1).all()  # the payload tag is there


def test_hash_windows_path_matches_hash_frames(mixed_trace):
    cfg = LdsConfig()
    idx = np.arange(0, 20_000, 97)
    via_trace = mixed_trace.hashes(cfg, idx)
    via_frames = hash_frames(cfg, mixed_trace.frames(idx))
    assert np.array_equal(via_trace.packet, via_frames.packet)
    assert np.array_equal(via_trace.flow, via_frames.flow)
    assert via_trace.counted.all()


def test_flow_hashes_per_flow_equal_the_packets_flow_hashes(mixed_trace):
    cfg = LdsConfig(rows=3, row_thresholds=(0, 0, 0))
    table = mixed_trace.flow_hashes(cfg)
    assert table.shape == (3, mixed_trace.num_flows)
    assert np.array_equal(table[:, mixed_trace.flow_ids], mixed_trace.hashes(cfg).flow)
    assert len(np.unique(table[0])) == mixed_trace.num_flows


def test_send_times_rate_and_monotonicity():
    rng = np.random.default_rng(0)
    ts = send_times(200_000, rate_pps=1e6, gaps="poisson", rng=rng)
    assert ts.dtype == np.int64 and (np.diff(ts) >= 1).all()
    assert np.diff(ts).mean() == pytest.approx(1000, rel=0.01)
    const = send_times(1000, rate_pps=3e6, gaps="constant", start_ns=5, rng=rng)
    assert const[0] == 5 and const[3] == 5 + 1000  # floor(i * 333.33)
    assert (np.diff(const) > 0).all()


def test_flow_sizes_are_heavy_tailed():
    rng = np.random.default_rng(1)
    flows = flow_assignment(500_000, 10_000, shape=1.2, rng=rng)
    sizes = np.sort(np.bincount(flows, minlength=10_000))[::-1]
    assert sizes[:1000].sum() > 0.5 * sizes.sum()   # top 10% of flows > half the packets
    uniform = np.bincount(flow_assignment(500_000, 10_000, size_dist="uniform", rng=rng))
    assert uniform.max() < 100


def test_seed_determinism_and_difference():
    a = synthetic_trace(packets=1000, flows=10, seed=5)
    b = synthetic_trace(packets=1000, flows=10, seed=5)
    c = synthetic_trace(packets=1000, flows=10, seed=6)
    assert np.array_equal(a.windows, b.windows) and np.array_equal(a.timestamps, b.timestamps)
    assert not np.array_equal(a.windows, c.windows)


def test_fast_mode_hashes_behave_like_h3_outputs():
    t = synthetic_trace(packets=200_000, flows=100, seed=4, fast=True)
    assert t.fast and t.windows is None
    cfg = LdsConfig()
    h = t.hashes(cfg)
    assert len(np.unique(h.packet)) == len(t)
    # the sampling word's leading zeros are geometric: P(lz >= 3) = 1/8
    assert (leading_zeros32(h.packet) >= 3).mean() == pytest.approx(1 / 8, rel=0.03)
    # flow hashes are per flow, 32-bit, and change with the configuration's seed
    assert np.array_equal(h.flow, t.flow_hashes(cfg)[:, t.flow_ids])
    assert h.flow.max() < (1 << 32)
    other = t.hashes(cfg.replace(seed=99))
    assert not np.array_equal(other.packet, h.packet)
    assert not np.array_equal(other.flow, h.flow)
    with pytest.raises(ValueError, match="fast-mode"):
        t.frames()


def test_trace_from_frames_recovers_flows_and_classes(mixed_trace):
    idx = np.arange(3000)
    frames = mixed_trace.frames(idx) + [b"\x00" * 30]  # plus one runt
    ts = np.concatenate([mixed_trace.timestamps[idx], [mixed_trace.timestamps[3000]]])
    t = trace_from_frames(frames, ts)
    assert t.classes[-1] == FrameClass.RUNT and not t.counted[-1]
    assert np.array_equal(t.classes[:-1], mixed_trace.classes[idx])
    # same partition of packets into flows
    pairs = set(zip(t.flow_ids[:-1].tolist(), mixed_trace.flow_ids[idx].tolist()))
    assert len(pairs) == len(np.unique(t.flow_ids[:-1])) == len(np.unique(mixed_trace.flow_ids[idx]))
    cfg = LdsConfig()
    assert np.array_equal(t.hashes(cfg).packet[:-1], mixed_trace.hashes(cfg, idx).packet)
    assert np.array_equal(t.flow_hashes(cfg)[:, t.flow_ids[:-1]],
                          mixed_trace.hashes(cfg, idx).flow)


def test_window_size_must_match_the_configuration():
    t = synthetic_trace(packets=10, flows=2, seed=0, window_bytes=128)
    assert t.windows.shape == (10, 128)
    with pytest.raises(ValueError, match="128-byte windows"):
        t.hashes(LdaConfig())
    assert len(hash_windows(LdaConfig(window_bytes=128), t.windows).packet) == 10


@pytest.mark.parametrize("kwargs, message", [
    (dict(packets=0), "packets must be at least 1"),
    (dict(packets=10, rate_pps=2e9), "rate_pps must be at most"),
    (dict(packets=10, rate_pps=0), "rate_pps must be positive"),
    (dict(packets=10, frame_bytes=20), "frame_bytes must be"),
    (dict(packets=10, frame_bytes="jumbo"), "frame_bytes must be an integer"),
    (dict(packets=10, gaps="bursty"), "gaps must be"),
    (dict(packets=10, size_dist="zipf"), "size_dist must be"),
    (dict(packets=10, ipv6_fraction=1.5), "ipv6_fraction must be in"),
    (dict(packets=10, flows=0), "flows must be at least 1"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthetic_trace(**kwargs)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_rank_in_group_matches_a_naive_count(groups):
    g = np.array(groups, dtype=np.int64)
    values = np.arange(len(g), dtype=np.int64) + 1
    rank, prefix = _rank_in_group(g, values)
    for i in range(len(g)):
        earlier = [j for j in range(i) if groups[j] == groups[i]]
        assert rank[i] == len(earlier)
        assert prefix[i] == sum(values[j] for j in earlier)


def test_mix64_is_a_bijection_on_a_sample():
    x = np.arange(100_000, dtype=np.uint64)
    assert len(np.unique(mix64_array(x))) == len(x)


def test_every_flow_gets_a_packet_when_there_are_enough():
    rng = np.random.default_rng(3)
    counts = np.bincount(flow_assignment(10_000, 3000, shape=0.9, rng=rng), minlength=3000)
    assert counts.min() >= 1 and counts.sum() == 10_000
    few = flow_assignment(10, 3000, rng=rng)
    assert len(few) == 10 and few.max() < 3000
