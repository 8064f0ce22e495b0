# SPDX-License-Identifier: BSD-2-Clause
"""Captures: exact ns round trips, pcapng and big-endian files, clear errors for bad
files, and pairing two captures into the same observations as the simulator's."""

import struct

import dpkt
import numpy as np
import pytest

from host_sw.model.channel import Scenario
from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.model.pcap import CaptureError, capture_trace, pair_captures, read_pcap, write_pcap
from host_sw.model.traffic import synthetic_trace

EPOCH_NS = 1_764_115_200_123_456_789  # 2025-11-26 at ns resolution: beyond float64's


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace(packets=300, flows=7, seed=8, ipv6_fraction=0.3,
                           start_ns=EPOCH_NS)


def test_nanosecond_round_trip_is_exact(tmp_path, trace):
    frames = trace.frames()
    path = tmp_path / "a.pcap"
    write_pcap(path, frames, trace.timestamps)
    cap = read_pcap(path)
    assert cap.frames == frames
    assert cap.timestamps_ns.dtype == np.int64
    assert np.array_equal(cap.timestamps_ns, trace.timestamps)
    assert cap.linktype == 1 and np.array_equal(cap.original_lengths, trace.frame_lengths)
    # dpkt reads the same file
    with open(path, "rb") as f:
        assert [bytes(b) for _, b in dpkt.pcap.Reader(f)] == frames


def test_microsecond_files(tmp_path, trace):
    ts = (trace.timestamps // 1000) * 1000
    path = tmp_path / "us.pcap"
    write_pcap(path, trace.frames(), ts, nano=False)
    assert struct.unpack("<I", path.read_bytes()[:4])[0] == 0xA1B2C3D4
    assert np.array_equal(read_pcap(path).timestamps_ns, ts)
    with pytest.raises(ValueError, match="nano=True"):
        write_pcap(tmp_path / "x.pcap", trace.frames(), trace.timestamps, nano=False)


def test_big_endian_pcap(tmp_path):
    frames = [bytes(range(60)), bytes(range(1, 65))]
    fh = dpkt.pcap.FileHdr(magic=0xA1B23C4D, snaplen=65535, linktype=1)
    body = bytes(fh)
    for i, fr in enumerate(frames):
        body += bytes(dpkt.pcap.PktHdr(tv_sec=1000 + i, tv_usec=999_999_999,
                                       caplen=len(fr), len=len(fr))) + fr
    path = tmp_path / "be.pcap"
    path.write_bytes(body)
    cap = read_pcap(path)
    assert cap.frames == frames
    assert cap.timestamps_ns.tolist() == [1000_999_999_999, 1001_999_999_999]


def _pcapng(path, frames, ticks, tsresol=None):
    opts = []
    if tsresol is not None:
        opts.append(dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL,
                                               data=bytes([tsresol])))
    opts.append(dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT))
    idb = dpkt.pcapng.InterfaceDescriptionBlockLE(snaplen=65535, linktype=1, opts=opts)
    with open(path, "wb") as f:
        w = dpkt.pcapng.Writer(f, idb=idb)
        for fr, t in zip(frames, ticks):
            w.writepkt(dpkt.pcapng.EnhancedPacketBlockLE(pkt_data=fr, ts_high=t >> 32,
                                                         ts_low=t & 0xFFFFFFFF,
                                                         pkt_len=len(fr)))


def test_pcapng_with_nanosecond_and_default_resolution(tmp_path, trace):
    frames = trace.frames(range(20))
    ticks = trace.timestamps[:20].tolist()
    _pcapng(tmp_path / "ns.pcapng", frames, ticks, tsresol=9)
    cap = read_pcap(tmp_path / "ns.pcapng")
    assert cap.frames == frames and cap.timestamps_ns.tolist() == ticks
    us_ticks = [t // 1000 for t in ticks]
    _pcapng(tmp_path / "us.pcapng", frames, us_ticks)   # default: microseconds
    assert read_pcap(tmp_path / "us.pcapng").timestamps_ns.tolist() == \
        [t * 1000 for t in us_ticks]
    _pcapng(tmp_path / "p2.pcapng", frames[:1], [3 << 20], tsresol=0x80 | 20)  # 2**-20 s
    assert read_pcap(tmp_path / "p2.pcapng").timestamps_ns.tolist() == [3_000_000_000]


def test_missing_truncated_and_foreign_files(tmp_path, trace):
    with pytest.raises(CaptureError, match="does not exist"):
        read_pcap(tmp_path / "nope.pcap")
    path = tmp_path / "a.pcap"
    write_pcap(path, trace.frames(range(3)), trace.timestamps[:3])
    data = path.read_bytes()
    (tmp_path / "cut.pcap").write_bytes(data[:-5])
    with pytest.raises(CaptureError, match="truncated packet record"):
        read_pcap(tmp_path / "cut.pcap")
    (tmp_path / "cuthdr.pcap").write_bytes(data[:24 + 7])
    with pytest.raises(CaptureError, match="truncated record header"):
        read_pcap(tmp_path / "cuthdr.pcap")
    (tmp_path / "text.pcap").write_bytes(b"hello, this is not a capture")
    with pytest.raises(CaptureError, match="not a pcap or pcapng"):
        read_pcap(tmp_path / "text.pcap")
    (tmp_path / "tiny.pcap").write_bytes(b"\xd4")
    with pytest.raises(CaptureError, match="too short"):
        read_pcap(tmp_path / "tiny.pcap")
    _pcapng(tmp_path / "a.pcapng", trace.frames(range(2)), [1, 2])
    ng = (tmp_path / "a.pcapng").read_bytes()
    (tmp_path / "cut.pcapng").write_bytes(ng[:-10])
    with pytest.raises(CaptureError, match="truncated pcapng"):
        read_pcap(tmp_path / "cut.pcapng")
    assert issubclass(CaptureError, ValueError)


def test_capture_trace_hashes_like_the_simulated_trace(tmp_path, trace):
    path = tmp_path / "a.pcap"
    write_pcap(path, trace.frames(), trace.timestamps)
    t = capture_trace(path)
    cfg = LdsConfig()
    assert np.array_equal(t.hashes(cfg).packet, trace.hashes(cfg).packet)
    assert np.array_equal(t.hashes(cfg).flow, trace.hashes(cfg).flow)


@pytest.mark.parametrize("mode", ["time", "marker"])
def test_pairing_two_captures_reproduces_the_simulation(capture_pair, tmp_path, mode):
    sc = Scenario(packets=6000, flows=40, loss=0.02, delay="exponential:mean=2us",
                  mode=mode, interval_ns=300_000, clock_offset_ns=1234, seed=5)
    sim = sc.run()
    s, r = capture_pair(tmp_path, sim)
    paired = pair_captures(s, r, mode=mode, interval_ns=300_000,
                           start_ns=int(sim.trace.timestamps[0]))
    assert [p.interval for p in paired] == [iv.interval for iv in sim.intervals]
    cfg = LdaConfig()
    for a, b in zip(sim.intervals, paired):
        for attr in ("sent", "received", "lost", "reordered"):
            assert getattr(a.truth, attr) == getattr(b.truth, attr)
        assert np.array_equal(np.sort(a.truth.delays), np.sort(b.truth.delays))
        sa, ra = a.synopses(cfg)
        sb, rb = b.synopses(cfg)
        assert sa == sb and ra == rb
    assert sum(p.truth.lost for p in paired) > 0


def test_pairing_counts_non_ip_frames_nowhere(tmp_path, trace):
    frames = trace.frames(range(10))
    arp = bytes(12) + b"\x08\x06" + bytes(46)
    write_pcap(tmp_path / "s.pcap", frames + [arp], list(trace.timestamps[:11]))
    write_pcap(tmp_path / "r.pcap", frames[:9] + [arp], [t + 50 for t in trace.timestamps[:10]])
    (iv,) = pair_captures(tmp_path / "s.pcap", tmp_path / "r.pcap", interval_ns=10**9,
                          start_ns=EPOCH_NS - 1)
    assert iv.truth.sent == 10 and iv.truth.received == 9
    assert iv.truth.lost_ids.tolist() == [9] and (iv.truth.delays == 50).all()
    assert len(iv.sender) == 11 and len(iv.receiver) == 10
    assert not iv.sender.hashes(LdaConfig()).counted[-1]


@pytest.mark.parametrize("mode", ["time", "marker"])
def test_one_interval_holds_both_captures(capture_pair, tmp_path, mode):
    # Loss-free: the packets still in flight when the sender's capture ends are not lost
    # and form no receiver-only interval.
    sim = Scenario(packets=3000, flows=20, delay="exponential:mean=2us", seed=5).run()
    s, r = capture_pair(tmp_path, sim)
    (iv,) = pair_captures(s, r, mode=mode)
    assert iv.truth.sent == iv.truth.received == 3000
    assert iv.truth.lost == 0 and iv.truth.reordered == 0
    assert len(iv.truth.delays) == 3000


def test_the_grid_covers_both_captures(capture_pair, tmp_path):
    # The receiver's tail (after the sender's last interval) and a receiver clock behind
    # the sender's first timestamp stay in the sender's first and last intervals.
    sim = Scenario(packets=3000, flows=20, delay="constant:value=5us", seed=5,
                   clock_offset_ns=-2_000).run()
    s, r = capture_pair(tmp_path, sim)
    t0 = int(sim.trace.timestamps[0])
    span = int(sim.trace.timestamps[-1]) - t0
    delta = span // 3 + 1            # three intervals; the receiver's tail past the last
    paired = pair_captures(s, r, interval_ns=delta, start_ns=t0 + 1_000)
    assert [p.interval for p in paired] == [-1, 0, 1, 2]
    assert sum(p.truth.received for p in paired) == 3000
    first, last = paired[0], paired[-1]
    assert first.truth.sent > 0 and last.truth.sent > 0
    assert last.truth.lost == 0      # its in-flight packets are in it at both points
    assert sum(p.truth.lost for p in paired) == sum(p.truth.reordered for p in paired)
