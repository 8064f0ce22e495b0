# SPDX-License-Identifier: BSD-2-Clause
"""Control/export frames: the header table, exact bytes, round trips, and every rejection
with its message."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_sw.contracts import control_frame as cf
from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.regmap import register_map

SRC, DST = "02:00:00:00:00:01", "02:00:00:00:00:02"


def random_synopsis(config, seed=0):
    rng = np.random.default_rng(seed)
    fields = {}
    for f in config.layout.fields:
        hi = (1 << f.width) - 1
        fields[f.name] = (rng.integers(0, 1 << 62, size=config.shape, dtype=np.uint64)
                          & np.uint64(hi))
    return Synopsis(config, fields)


def test_header_table_tiles_the_header():
    pos = 0
    for f in cf.HEADER_FIELDS:
        assert f.offset == pos, f.name
        pos = f.end
    assert pos == cf.PAYLOAD_OFFSET == 48
    assert cf.CONTROL_HEADER_BYTES == 34
    assert cf.field_by_name("seq").offset == 18 and cf.field_by_name("seq").bits == 32
    assert cf.field_by_name("timestamp").bits == 64
    with pytest.raises(KeyError, match="no control frame field"):
        cf.field_by_name("nope")


def test_words_per_frame_fit_the_mtu():
    assert cf.words_per_frame(3) == 122 and cf.words_per_frame(4) == 91
    assert cf.words_per_frame(5) == 73
    for chunks in (1, 2, 3, 4, 5, 8):
        n = cf.words_per_frame(chunks)
        assert cf.CONTROL_HEADER_BYTES + 4 * chunks * n <= cf.MTU_PAYLOAD
        assert cf.CONTROL_HEADER_BYTES + 4 * chunks * (n + 1) > cf.MTU_PAYLOAD
    with pytest.raises(ValueError, match="cannot carry"):
        cf.words_per_frame(5, mtu=40)


def test_marker_exact_bytes():
    config = LdaConfig()
    frame = cf.build_marker(config, seq=0x01020304, timestamp=0x1122334455667788,
                            src_mac=SRC, dst_mac=DST, flags=cf.IntervalFlags.OVERRUN)
    assert config.config_id == 0xA862EF21
    assert frame.hex() == (
        "020000000002" "020000000001" "88b5"            # Ethernet header
        "01" "01" "01" "01"                             # version, marker, overrun, LDA
        "01020304" "a862ef21"                           # seq, config ID
        "0000" "0000" "03" "00"                         # chunk index/count, 3 chunks, rsvd
        "00000000" "0000" "0000"                        # first word, word count, rsvd
        "1122334455667788"                              # timestamp
        + "00" * 12)                                    # padding to 60 bytes
    m = cf.parse_control_frame(frame)
    assert isinstance(m, cf.MarkerFrame)
    assert (m.seq, m.timestamp, m.flags, m.kind) == (0x01020304, 0x1122334455667788,
                                                      cf.IntervalFlags.OVERRUN, "lda")
    assert cf.mac_to_str(m.src_mac) == SRC and cf.mac_to_str(m.dst_mac) == DST


def test_small_synopsis_frame_exact_bytes():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,))
    syn = Synopsis(config, {"count": np.array([[1, 2]], dtype=np.uint64),
                            "ts_sum": np.array([[0xAB_0000_0010, 0x20]], dtype=np.uint64)})
    (frame,) = cf.build_synopsis_frames(syn, seq=7, src_mac=SRC, dst_mac=DST, timestamp=5)
    assert config.config_id == 0x02D8FE13     # docs/SPEC.md §6 quotes these bytes
    cid = f"{config.config_id:08x}"
    assert frame.hex() == (
        "020000000002" "020000000001" "88b5"
        "01" "02" "00" "01" "00000007" + cid +
        "0000" "0001" "03" "00" "00000000" "0002" "0000" "0000000000000005"
        # word 0 = count 1 | ts_sum 0xAB00000010 << 32: chunks LS first
        "00000001" "00000010" "000000ab"
        "00000002" "00000020" "00000000")
    back = cf.reassemble([frame], config)
    assert back.synopsis == syn and back.seq == 7 and back.timestamp == 5 and back.valid


@pytest.mark.parametrize("config", [
    LdaConfig(), RdaConfig(buckets_per_bank=300), LdsConfig(rows=2, cells=500,
                                                           row_thresholds=(0, 0))],
    ids=lambda c: c.kind)
def test_round_trip_any_order(config):
    syn = random_synopsis(config, 1)
    frames = cf.build_synopsis_frames(syn, seq=42, src_mac=SRC, dst_mac=DST,
                                      flags=cf.IntervalFlags.SEQUENCE_GAP, timestamp=99)
    assert len(frames) == cf.frames_needed(config.buckets, config.layout.chunks) > 1
    assert all(len(f) - 14 <= cf.MTU_PAYLOAD for f in frames)
    r = cf.SynopsisReassembler(config)
    order = np.random.default_rng(3).permutation(len(frames))
    results = [r.add(frames[i]) for i in order]
    assert all(x is None for x in results[:-1])
    done = results[-1]
    assert done.synopsis == syn and done.seq == 42 and not done.valid
    assert done.flags == cf.IntervalFlags.SEQUENCE_GAP and r.pending == []


@settings(max_examples=30, deadline=None)
@given(rows_log=st.integers(1, 9), banks=st.integers(1, 3), seq=st.integers(0, 2**32 - 1),
       mtu=st.integers(100, 9000), seed=st.integers(0, 1000))
def test_round_trip_property(rows_log, banks, seq, mtu, seed):
    config = LdaConfig(banks=banks, rows=1 << rows_log, thresholds=tuple(range(banks)))
    syn = random_synopsis(config, seed)
    frames = cf.build_synopsis_frames(syn, seq=seq, src_mac=SRC, dst_mac=DST, mtu=mtu)
    assert all(len(f) - 14 <= mtu for f in frames)
    back = cf.reassemble([cf.parse_control_frame(f, mtu=mtu) for f in frames], config)
    assert back.synopsis == syn and back.seq == seq


def test_flag_bits_match_register_map():
    fields = register_map(LdaConfig())["frozen_flags"].fields
    assert {f.name: 1 << f.offset for f in fields} == {
        "overrun": cf.IntervalFlags.OVERRUN, "sequence_gap": cf.IntervalFlags.SEQUENCE_GAP,
        "config_changed": cf.IntervalFlags.CONFIG_CHANGED,
        "time_mode": cf.IntervalFlags.TIME_MODE}


# -- rejections ---------------------------------------------------------------------------

CONFIG = LdaConfig(banks=1, rows=256, thresholds=(0,))


@pytest.fixture
def frames():
    return cf.build_synopsis_frames(random_synopsis(CONFIG), seq=3, src_mac=SRC, dst_mac=DST)


def patch(frame, name, value):
    f = cf.field_by_name(name)
    b = bytearray(frame)
    b[f.offset:f.end] = value.to_bytes(f.size, "big")
    return bytes(b)


@pytest.mark.parametrize("mutate, error, message", [
    (lambda f: f[:10], cf.TruncatedFrameError, "inside the Ethernet header"),
    (lambda f: f[:40], cf.TruncatedFrameError, "inside its 48-byte header"),
    (lambda f: f[:-1], cf.TruncatedFrameError, "declares 122 words"),
    (lambda f: patch(f, "ethertype", 0x0800), cf.NotControlFrameError, "0x0800"),
    (lambda f: patch(f, "version", 2), cf.UnsupportedVersionError, "version 2"),
    (lambda f: patch(f, "type", 9), cf.UnknownTypeError, "type 9"),
    (lambda f: patch(f, "kind", 7), cf.MalformedFrameError, "synopsis kind 7"),
    (lambda f: patch(f, "flags", 0x40), cf.MalformedFrameError, "undefined bits"),
    (lambda f: patch(f, "reserved0", 1), cf.MalformedFrameError, "reserved"),
    (lambda f: patch(f, "chunk_index", 3), cf.MalformedFrameError, "not below chunk count"),
    (lambda f: patch(f, "word_count", 0), cf.MalformedFrameError, "holds no words"),
    (lambda f: patch(f, "word_chunks", 0), cf.MalformedFrameError, "word_chunks is 0"),
    (lambda f: patch(f, "config_id", 0x12345678), cf.ControlConfigMismatch,
     "config ID 0x12345678"),
    (lambda f: patch(f, "word_chunks", 4), cf.ControlConfigMismatch, "4 chunks per word"),
    (lambda f: f + bytes(2000), cf.MalformedFrameError, "exceeds the 1500-byte MTU"),
])
def test_parse_rejections(frames, mutate, error, message):
    with pytest.raises(error, match=message):
        cf.parse_control_frame(mutate(frames[0]), expected=CONFIG)
    assert issubclass(error, cf.ControlFrameError)


def test_trailing_bytes_rejected(frames):
    with pytest.raises(cf.MalformedFrameError, match="4 unexpected byte"):
        cf.parse_control_frame(frames[-1] + bytes(4))


def test_marker_rejections():
    m = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST)
    with pytest.raises(cf.MalformedFrameError, match="marker frame with chunk fields"):
        cf.parse_control_frame(patch(m, "chunk_count", 1))
    with pytest.raises(cf.MalformedFrameError, match="padding .* not zero"):
        cf.parse_control_frame(m[:-1] + b"\x01")
    with pytest.raises(cf.UnknownTypeError, match="marker frame is not a synopsis chunk"):
        cf.SynopsisReassembler(CONFIG).add(m)
    with pytest.raises(cf.ControlConfigMismatch, match="expected LDA"):
        cf.parse_control_frame(cf.build_marker(RdaConfig(), seq=1, timestamp=2,
                                               src_mac=SRC, dst_mac=DST), expected=CONFIG)


def test_reassembly_rejections(frames):
    assert len(frames) == 3
    r = cf.SynopsisReassembler(CONFIG)
    r.add(frames[0])
    with pytest.raises(cf.DuplicateChunkError, match="chunk 0 of 3 arrived twice"):
        r.add(frames[0])
    assert r.missing(3) == [1, 2]
    with pytest.raises(cf.MissingChunkError, match=r"2 of 3 chunks missing \(indices 1-2\)"):
        r.finish(3)
    with pytest.raises(cf.MissingChunkError, match="interval 9: no synopsis chunk"):
        r.finish(9)
    with pytest.raises(cf.MissingChunkError, match="no synopsis chunk frames"):
        cf.reassemble([], CONFIG)
    with pytest.raises(cf.MissingChunkError, match="1 of 3 chunks missing"):
        cf.reassemble(frames[:2], CONFIG)
    # Chunks of one interval that disagree.
    bad = patch(frames[1], "flags", int(cf.IntervalFlags.OVERRUN))
    with pytest.raises(cf.InconsistentChunkError, match="chunk 1 has flags 0x1"):
        cf.reassemble([frames[0], bad], CONFIG)
    bad = patch(frames[1], "first_word", 5)
    with pytest.raises(cf.InconsistentChunkError, match="starts at word 5, expected 122"):
        cf.reassemble([frames[0], bad, frames[2]], CONFIG)
    other = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=4, src_mac=SRC, dst_mac=DST)
    with pytest.raises(cf.InconsistentChunkError, match="several intervals"):
        cf.reassemble([frames[0], other[1]], CONFIG)
    # The right frames, but for another configuration.
    with pytest.raises(cf.ControlConfigMismatch, match="expected LDA"):
        cf.reassemble(frames, LdaConfig())
    # Fewer words than the configuration holds (chunk count consistent, tiling short).
    small = LdaConfig(banks=1, rows=128, thresholds=(0,))
    f = cf.build_synopsis_frames(random_synopsis(small), seq=1, src_mac=SRC, dst_mac=DST)
    f = [patch(x, "config_id", CONFIG.config_id) for x in f]
    with pytest.raises(cf.InconsistentChunkError, match="hold 128 words, the configuration "
                                                        "has 256"):
        cf.reassemble(f, CONFIG)


def test_jumbo_exports_reassemble_when_the_mtu_is_given():
    """Issue 12: frames built for a 9000-byte MTU are rejected at the default 1500 (with a
    message pointing at ``mtu``) and reassemble when the reassembler is told the MTU."""
    config = LdaConfig()
    syn = random_synopsis(config, 5)
    frames = cf.build_synopsis_frames(syn, seq=9, src_mac=SRC, dst_mac=DST,
                                      mtu=cf.MAX_MTU_PAYLOAD)
    per = (9000 - 34) // 12
    assert per == 747 and len(frames) == 3 and len(frames[0]) == 14 + 34 + 12 * per
    with pytest.raises(cf.MalformedFrameError, match="exceeds the 1500-byte MTU .*same mtu"):
        cf.reassemble(frames, config)
    assert cf.reassemble(frames, config, mtu=9000).synopsis == syn
    r = cf.SynopsisReassembler(config, mtu=9000)
    assert [r.add(f) for f in frames][-1].synopsis == syn
    assert r.mtu == 9000


@pytest.mark.parametrize("mtu", [45, 9001, 1500.0, True])
def test_mtu_outside_the_format_is_a_clear_error(mtu):
    with pytest.raises(ValueError, match="mtu must be an integer .* in 46..9000"):
        cf.SynopsisReassembler(CONFIG, mtu=mtu)
    with pytest.raises(ValueError, match="mtu must be an integer"):
        cf.parse_control_frame(bytes(60), mtu=mtu)
    if isinstance(mtu, int) and mtu > 9000:
        with pytest.raises(ValueError, match="above the largest the format allows"):
            cf.words_per_frame(3, mtu=mtu)


def test_padding_rules():
    """SPEC §6 acceptance: a chunk shorter than 60 bytes is zero-padded to exactly 60;
    padding must be zero; nothing may follow content that already reaches 60 bytes."""
    tiny = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8, ts_bits=16)
    assert tiny.layout.chunks == 1
    (frame,) = cf.build_synopsis_frames(random_synopsis(tiny), seq=1, src_mac=SRC,
                                        dst_mac=DST)
    assert len(frame) == 60 and not any(frame[56:])   # 48 + 2 words × 4 bytes, padded
    assert cf.parse_control_frame(frame, expected=tiny).words == cf.parse_control_frame(
        frame[:56], expected=tiny).words
    marker = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST)
    assert len(marker) == 60 and not any(marker[48:])
    assert cf.parse_control_frame(marker[:48]).seq == 1           # unpadded: accepted
    assert cf.parse_control_frame(marker[:54]).seq == 1           # partly padded: accepted
    with pytest.raises(cf.MalformedFrameError, match="13 unexpected byte"):
        cf.parse_control_frame(marker + bytes(1))
    with pytest.raises(cf.MalformedFrameError, match="padding .* not zero"):
        cf.parse_control_frame(marker[:59] + b"\x01")


def test_word_above_layout_rejected():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,))
    (frame,) = cf.build_synopsis_frames(Synopsis.empty(config), seq=1, src_mac=SRC,
                                        dst_mac=DST)
    b = bytearray(frame)
    b[cf.PAYLOAD_OFFSET + 8] = 0x01   # chunk 2 bit 24: above the 72-bit word
    with pytest.raises(cf.MalformedFrameError, match="above the 72-bit layout"):
        cf.reassemble([bytes(b)], config)


def test_mac_parsing():
    assert cf.mac_to_bytes("02-00-00-00-00-0a") == bytes.fromhex("02000000000a")
    assert cf.mac_to_bytes(0x020000000001) == bytes.fromhex("020000000001")
    with pytest.raises(ValueError, match="not a MAC address"):
        cf.mac_to_bytes("02:00")
    with pytest.raises(ValueError, match="6 bytes"):
        cf.mac_to_bytes(b"\x00")


def test_too_many_frames_is_a_clear_error():
    config = LdaConfig(banks=1, rows=1 << 19, thresholds=(0,))
    syn = Synopsis.empty(config)
    assert cf.frames_needed(config.buckets, 3, mtu=100) > cf.MAX_CHUNKS
    with pytest.raises(ValueError, match="use a larger MTU"):
        cf.build_synopsis_frames(syn, seq=0, src_mac=SRC, dst_mac=DST, mtu=100)


def test_ethertype_is_the_shared_constant():
    assert ETHERTYPE_CONTROL == 0x88B5
    assert cf.parse_control_frame(cf.build_marker(CONFIG, seq=0, timestamp=0, src_mac=SRC,
                                                  dst_mac=DST)).seq == 0
