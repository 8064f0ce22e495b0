# SPDX-License-Identifier: BSD-2-Clause
"""OPA record frames (docs/SPEC.md §8.7): the SPEC's vectors are the builder's, frames
round-trip through the parser and the reassembler (framing by size and by offset
overflow, sampling), and every acceptance rule rejects what it should, naming the
interval."""

import numpy as np
import pytest

from bench.opa_record_vectors import BEGIN, END, markdown
from bench import ROOT
from host_sw.contracts.config import OpaConfig
from host_sw.contracts.frames.frame_format import (BadTagError, ControlConfigMismatch,
                                            DuplicateChunkError, InconsistentChunkError,
                                            MalformedFrameError, ReplayedIntervalError,
                                            TruncatedFrameError, UnauthenticatedFrameError,
                                            UnknownTypeError)
from host_sw.contracts.opa.records import (RecordReassembler, build_record_frames,
                                           frame_records, parse_record_frame,
                                           record_format, records_per_frame)
from host_sw.contracts.siphash import ZERO_KEY, siphash_tag

CONFIG = OpaConfig(groups=16, rows=4)
KEY = bytes(range(16))


def _interval(n=100, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    ts = np.cumsum(rng.integers(1, 1000, n)).astype(np.int64) + (1 << 40)
    ts[n // 2:] += 1 << 33          # beyond every offset field: a new frame there
    return p, ts


def _frames(point, seq=3, **kw):
    p, ts = _interval()
    kw = {"packet": p, "timestamps": ts, **kw}
    return build_record_frames(CONFIG, point, seq=seq, src_mac=1, dst_mac=2, mtu=300, **kw)


def test_spec_vectors_are_the_builders():
    text = (ROOT / "docs" / "SPEC.md").read_text()
    assert text[text.index(BEGIN):text.index(END) + len(END)] == markdown()


def test_formats_and_sizes():
    assert record_format(OpaConfig(), "sender").record_bytes == 4
    assert record_format(OpaConfig(), "sender").offset_bits == 22
    assert record_format(OpaConfig(groups=1 << 20), "sender").record_bytes == 8
    assert record_format(OpaConfig(), "receiver").record_bytes == 12
    assert records_per_frame(OpaConfig(), "sender") == 364
    assert records_per_frame(OpaConfig(), "receiver") == 121
    assert frame_records([], 5, 8) == [0]
    assert frame_records([0, 1, 2, 300, 301], 2, 8) == [0, 2, 3]


@pytest.mark.parametrize("point", ["sender", "receiver"])
def test_round_trip(point):
    p, ts = _interval()
    frames = _frames(point, record_groups=9)
    keep = (p >> np.uint64(60)) < 9
    r = RecordReassembler(CONFIG, mtu=300)
    got = [r.add(f) for f in frames[::-1]]     # any order
    done = got[-1]
    assert all(x is None for x in got[:-1]) and done.seq == 3 and done.record_groups == 9
    assert np.array_equal(done.timestamps, ts[keep])
    want = p[keep] if point == "receiver" else p[keep] >> np.uint64(60)
    assert np.array_equal(done.keys, want)
    assert len(frames) >= (4 if point == "receiver" else 2)   # by size, at the time gap


def test_authenticated_frames():
    frames = _frames("sender", key=KEY)
    assert parse_record_frame(frames[0], CONFIG, mtu=300, key=KEY).auth == 1
    with pytest.raises(UnauthenticatedFrameError):
        parse_record_frame(frames[0], CONFIG, mtu=300)


def _retag(frame: bytearray, end: int) -> bytes:
    frame[end:end + 8] = siphash_tag(bytes(frame[:end]), ZERO_KEY)
    return bytes(frame)


@pytest.mark.parametrize("byte, value, error, text", [
    (15, 2, UnknownTypeError, "not an OPA record frame"),
    (22, 0, ControlConfigMismatch, "interval 3"),
    (16, 0x08, MalformedFrameError, "flags"),
    (16, 0x06, MalformedFrameError, "coding word"),   # coded receiver: its coding word
    (30, 0, MalformedFrameError, "record_groups 0"),
    (39, 1, MalformedFrameError, "is not the last and says 1 records dropped"),
    (60, 0xFF, BadTagError, "interval 3, chunk 0: the tag does not match"),
])
def test_rejections(byte, value, error, text):
    f = bytearray(_frames("sender")[0])
    f[byte] = value
    if error is not BadTagError:
        f = bytearray(_retag(f, len(f) - 8))
    with pytest.raises(error, match=text):
        parse_record_frame(bytes(f), CONFIG, mtu=300)


def test_truncated_and_reassembly_errors():
    frames = _frames("receiver")
    with pytest.raises(TruncatedFrameError):
        parse_record_frame(frames[0][:-12], CONFIG, mtu=300)
    r = RecordReassembler(CONFIG, mtu=300)
    r.add(frames[0])
    with pytest.raises(DuplicateChunkError, match="interval 3 .* chunk 0 arrived twice"):
        r.add(frames[0])
    for f in frames[1:]:
        r.add(f)
    with pytest.raises(ReplayedIntervalError, match="interval 3"):
        r.add(frames[1])
    r = RecordReassembler(CONFIG, mtu=300)
    r.add(frames[-1])
    assert "chunks [0, 1" in r.missing(r.pending[0])
    other = _frames("receiver", record_groups=4)
    with pytest.raises(InconsistentChunkError, match="records 4 groups"):
        r.add(other[0])


@pytest.mark.parametrize("mtu", [46, 53])
def test_an_mtu_below_one_record_is_refused(mtu):
    """A 12-byte receiver record needs 34 + 12 + 8 = 54 payload bytes: below that the
    builder refuses, as the synopsis builder refuses an MTU below one word (it used to
    pack every record into one over-MTU frame)."""
    p, ts = _interval(5)
    with pytest.raises(ValueError, match=f"an MTU of {mtu} bytes cannot carry one 12-byte "
                                         f"receiver record"):
        build_record_frames(CONFIG, "receiver", seq=1, packet=p, timestamps=ts,
                            src_mac=1, dst_mac=2, mtu=mtu)
    with pytest.raises(ValueError, match="cannot carry one 12-byte receiver record"):
        records_per_frame(CONFIG, "receiver", mtu)
    # 8-byte sender records (log2 g > 16) need 50; 4-byte ones fit the smallest MTU
    assert records_per_frame(CONFIG, "sender", 46) == 1
    wide = OpaConfig(groups=1 << 17)
    assert records_per_frame(wide, "sender", 50) == 1
    with pytest.raises(ValueError, match="an MTU of 49 bytes cannot carry one 8-byte "
                                         "sender record"):
        records_per_frame(wide, "sender", 49)
    assert records_per_frame(CONFIG, "receiver", 54) == 1
    frames = build_record_frames(CONFIG, "receiver", seq=1, packet=p, timestamps=ts,
                                 src_mac=1, dst_mac=2, mtu=54)
    assert len(frames) == 5 and all(len(f) - 14 <= 54 for f in frames)
