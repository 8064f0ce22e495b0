# SPDX-License-Identifier: BSD-2-Clause
"""OPA's coded records (docs/SPEC.md §8.7, flags bit 2 CODED): the bit layout of
hand-coded sender and receiver frames, round trips exact (lossless) or within the stated
bound (lossy), framing (size, unary limit, empty interval), the Rice parameter's rule,
and rejections."""

import numpy as np
import pytest

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.frames.frame_format import (InconsistentChunkError,
                                                   MalformedFrameError, TruncatedFrameError)
from host_sw.contracts.opa.records import (RICE_K_INIT, RecordFlags, RecordReassembler,
                                           build_record_frames, coded_words_per_frame,
                                           lossy_error_bound, parse_record_frame,
                                           rice_next_k)
from host_sw.contracts.siphash import ZERO_KEY, siphash_tag

CONFIG = OpaConfig(groups=4, rows=4)


def _build(p, ts, **kw):
    return build_record_frames(CONFIG, "sender", seq=5, packet=p, timestamps=ts,
                               src_mac=1, dst_mac=2, rice=True, **kw)


def _done(frames, config=CONFIG, mtu=1500):
    r = RecordReassembler(config, mtu=mtu)
    out = [x for x in (r.add(f) for f in frames) if x is not None]
    assert len(out) == 1
    return out[0]


def test_hand_coded_frame():
    """Groups 1, 3, 0 at ticks 1000, 1010, 1300, k = 8: the group alone, then the group,
    unary quotient, zero and 8 remainder bits (10 = 0·256 + 10; 290 = 1·256 + 34)."""
    p = np.array([1 << 62, 3 << 62, 5], dtype=np.uint64)
    (f,) = _build(p, np.array([1000, 1010, 1300]))
    assert f[16] == RecordFlags.LAST | RecordFlags.CODED
    assert int.from_bytes(f[26:28], "big") == 3 and int.from_bytes(f[40:48], "big") == 1000
    assert f[48:52] == bytes([1, RICE_K_INIT, 0, 0])
    bits = "01" + "11" + "0" + "00001010" + "00" + "10" + "00100010"
    assert f[52:60] == int(bits.ljust(64, "0"), 2).to_bytes(8, "big")
    assert f[60:68] == siphash_tag(f[:60], ZERO_KEY) and len(f) == 68
    r = parse_record_frame(f, CONFIG)
    assert r.keys.tolist() == [1, 3, 0] and r.timestamps.tolist() == [1000, 1010, 1300]
    assert r.shift == 0


def test_rice_parameter_rule():
    assert rice_next_k(0, 1) == 0
    assert rice_next_k(200 * 10, 10) == 7          # floor(log2 200)
    assert rice_next_k(255, 1) == 7 and rice_next_k(256, 1) == 8
    assert rice_next_k((1 << 48) - 1, 1) == 24     # at most RICE_K_MAX


@pytest.mark.parametrize("shift", [0, 1, 8, 16])
def test_round_trip_exact_or_within_the_bound(shift):
    rng = np.random.default_rng(shift)
    n = 5000
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    gaps = rng.exponential(200, n).astype(np.int64)
    gaps[rng.random(n) < 0.002] += 10 ** 7          # beyond the unary limit: new frames
    ts = (1 << 50) + np.cumsum(gaps)
    frames = _build(p, ts, mtu=300, shift=shift)
    ks = {f[49] for f in frames}
    assert len(frames) > 10 and len(ks) > 1         # the parameter adapts
    done = _done(frames, mtu=300)
    g = p >> np.uint64(62)
    # lossy: each quantum's records as a set, sorted by group; per group, sending order
    mine, want = np.lexsort((done.timestamps, done.keys)), np.argsort(g, kind="stable")
    assert np.array_equal(done.keys[mine], g[want]) and done.shift == shift
    if shift == 0:
        assert np.array_equal(done.keys, g)
    else:                        # sorted by (quantum, group)
        k = (done.timestamps >> shift << 2) | done.keys.astype(np.int64)
        assert (np.diff(k) >= 0).all()
    err = done.timestamps[mine] - ts[want]
    assert np.abs(err).max() <= lossy_error_bound(shift)
    if shift == 0:
        assert not err.any()
    for f in frames[:-1]:           # every frame but the last is full or cut by a gap
        assert len(f) <= 14 + 300


def test_lossy_hand_coded_frame():
    """Shift 3: ticks 1000, 1010, 1030, 1031 (quanta 125, 126, 128, 128) of groups 3, 1,
    2, 0 become keys K = 4q + group = 503, 505, 514, 512, sent sorted: 503 (group 3 in
    2 bits), then the Rice codes of 2, 7, 2 (k = 8); base 125 << 3 = 1000."""
    p = np.array([3 << 62, 1 << 62, 2 << 62, 7], dtype=np.uint64)
    (f,) = _build(p, np.array([1000, 1010, 1030, 1031]), shift=3)
    assert int.from_bytes(f[40:48], "big") == 1000 and f[48:52] == bytes([1, 8, 3, 0])
    bits = "11" + "0" + "00000010" + "0" + "00000111" + "0" + "00000010"
    assert f[52:60] == int(bits.ljust(64, "0"), 2).to_bytes(8, "big")
    r = parse_record_frame(f, CONFIG)
    assert r.keys.tolist() == [3, 1, 0, 2] and r.shift == 3
    assert r.timestamps.tolist() == [1004, 1012, 1028, 1028]   # (q << 3) + 4


def test_sampling_and_an_empty_interval():
    p = np.array([1 << 62, 3 << 62, 5, 2 << 62], dtype=np.uint64)
    ts = np.array([10, 20, 30, 40])
    done = _done(_build(p, ts, record_groups=2))
    assert done.keys.tolist() == [1, 0] and done.timestamps.tolist() == [10, 30]
    (f,) = _build(p[:0], ts[:0])
    assert len(f) == 60 and f[48:52] == bytes([1, RICE_K_INIT, 0, 0])
    empty = parse_record_frame(f, CONFIG)
    assert empty.last and len(empty.keys) == 0 and empty.shift == 0


def test_mtu_and_arguments():
    assert coded_words_per_frame(1500) == 181 and coded_words_per_frame(54) == 1
    with pytest.raises(ValueError, match="never quantised"):
        build_record_frames(CONFIG, "receiver", seq=1, packet=[1], timestamps=[1],
                            src_mac=1, dst_mac=2, rice=True, shift=3)
    with pytest.raises(ValueError, match="shift"):
        _build([1], [1], shift=32)


def _retag(frame: bytearray) -> bytes:
    end = len(frame) - 8
    frame[end:] = siphash_tag(bytes(frame[:end]), ZERO_KEY)
    return bytes(frame)


def _refused(frame, at, value, error, text):
    """``frame`` with byte ``at`` set to ``value`` (tag recomputed) is refused with
    ``error`` matching ``text``."""
    bad = bytearray(frame)
    bad[at] = value
    with pytest.raises(error, match=text):
        parse_record_frame(_retag(bad), CONFIG)


def test_rejections():
    p = np.array([1 << 62, 3 << 62, 5], dtype=np.uint64)
    (f,) = _build(p, np.array([1000, 1010, 1300]))
    for at, value, text in [(48, 2, "coding word"), (49, 25, "coding word"),
                            (51, 1, "coding word"), (59, 1, "padding bits")]:
        _refused(f, at, value, MalformedFrameError, text)
    _refused(f, 27, 40, TruncatedFrameError, "chunk 0")   # 40 records: the bits end early
    # chunks of one interval coded with two shifts
    ts = np.arange(0, 4000, 10)
    a = _build(np.zeros(400, np.uint64), ts, mtu=60)
    b = _build(np.zeros(400, np.uint64), ts, mtu=60, shift=3)
    r = RecordReassembler(CONFIG, mtu=60)
    r.add(a[0])
    with pytest.raises(InconsistentChunkError, match="shift"):
        r.add(b[1])


def _build_receiver(p, ts, **kw):
    return build_record_frames(CONFIG, "receiver", seq=7, packet=p, timestamps=ts,
                               src_mac=1, dst_mac=2, rice=True, **kw)


def test_receiver_hand_coded_frame():
    """Hashes 0x4000000000000001, 0xc123456789abcdef, 0x42 at ticks base, base + 8,
    base + 24, k = 8: the first hash alone, then each hash (64 bits) and the Rice code
    of its arrival difference (8 = 0·256 + 8: ``0 00001000``; 16: ``0 00010000``)."""
    base = 0x1122334455667788
    p = np.array([0x4000000000000001, 0xC123456789ABCDEF, 0x42], dtype=np.uint64)
    (f,) = _build_receiver(p, np.array([base, base + 8, base + 24], dtype=np.uint64))
    assert f[16] == RecordFlags.LAST | RecordFlags.RECEIVER | RecordFlags.CODED
    assert int.from_bytes(f[26:28], "big") == 3 and int.from_bytes(f[40:48], "big") == base
    assert f[48:52] == bytes([1, RICE_K_INIT, 0, 0])
    bits = (f"{0x4000000000000001:064b}" + f"{0xC123456789ABCDEF:064b}" + "0" + "00001000"
            + f"{0x42:064b}" + "0" + "00010000")
    assert len(bits) == 210 and f[52:84] == int(bits.ljust(256, "0"), 2).to_bytes(32, "big")
    assert f[52:84].hex() == ("4000000000000001" "c123456789abcdef" "0400000000000000"
                              "2104000000000000")
    assert f[84:92] == siphash_tag(f[:84], ZERO_KEY) and len(f) == 92
    r = parse_record_frame(f, CONFIG)
    assert r.point.value == "receiver" and r.shift == 0
    assert r.keys.tolist() == p.tolist() and r.timestamps.tolist() == [base, base + 8,
                                                                        base + 24]


@pytest.mark.parametrize("mtu", [54, 300, 1500])
def test_receiver_round_trip_exact(mtu):
    """Every hash and arrival tick back exactly, in arrival order; frames cut by size,
    by a gap beyond the unary limit and (not monotone ticks) by a negative difference;
    the parameter adapts."""
    rng = np.random.default_rng(mtu)
    n = 4000
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    gaps = rng.exponential(300, n).astype(np.int64)
    gaps[rng.random(n) < 0.002] += 10 ** 8
    ts = (1 << 40) + np.cumsum(gaps)
    ts[100] -= 5000                                  # one tick out of order
    frames = _build_receiver(p, ts, mtu=mtu)
    done = _done(frames, mtu=mtu)
    assert done.point.value == "receiver" and done.shift == 0
    assert np.array_equal(done.keys, p) and np.array_equal(done.timestamps, ts)
    assert len({f[49] for f in frames}) > 1
    assert all(len(f) <= 14 + mtu for f in frames)
    if mtu == 54:                                    # one word: one hash a frame
        assert len(frames) == n
    # the same records fixed-width: the same keys and ticks
    fixed = _done(build_record_frames(CONFIG, "receiver", seq=7, packet=p, timestamps=ts,
                                      src_mac=1, dst_mac=2, mtu=max(mtu, 54)), mtu=mtu)
    assert np.array_equal(fixed.keys, done.keys) and fixed.shift == -1
    assert np.array_equal(fixed.timestamps, done.timestamps)


def test_receiver_rejections():
    base = 1000
    p = np.array([1, 2, 3], dtype=np.uint64)
    (f,) = _build_receiver(p, np.array([base, base + 8, base + 24]))
    _refused(f, 50, 3, MalformedFrameError, "coding word")   # a shift: receivers are lossless
    _refused(f, 27, 4, TruncatedFrameError, "chunk 0")        # 4 records: the bits end early
    # fixed-width and coded chunks in one interval's stream
    ts = np.arange(0, 4000, 10)
    a = _build_receiver(np.arange(400, dtype=np.uint64), ts, mtu=100)
    b = build_record_frames(CONFIG, "receiver", seq=7, packet=np.arange(400, dtype=np.uint64),
                            timestamps=ts, src_mac=1, dst_mac=2, mtu=100)
    r = RecordReassembler(CONFIG, mtu=100)
    r.add(a[0])
    with pytest.raises(InconsistentChunkError, match="shift"):
        r.add(b[1])
