# SPDX-License-Identifier: BSD-2-Clause
"""Control/export frames: the header table, exact bytes, round trips, and every rejection
with its message."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_sw.contracts.frames import control_frame as cf
from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.regmap import register_map
from host_sw.contracts.siphash import PAPER_VECTOR, siphash_tag
from host_sw.contracts.frames import frame_format
from host_sw.contracts import siphash

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
    for f in frame_format.HEADER_FIELDS:
        assert f.offset == pos, f.name
        pos = f.end
    assert pos == frame_format.PAYLOAD_OFFSET == 48
    assert frame_format.CONTROL_HEADER_BYTES == 34
    assert frame_format.field_by_name("seq").offset == 18 and frame_format.field_by_name("seq").bits == 32
    assert frame_format.field_by_name("timestamp").bits == 64
    with pytest.raises(KeyError, match="no control frame field"):
        frame_format.field_by_name("nope")


def test_words_per_frame_fit_the_mtu():
    assert frame_format.words_per_frame(3) == 121 and frame_format.words_per_frame(4) == 91
    assert frame_format.words_per_frame(5) == 72
    for chunks in (1, 2, 3, 4, 5, 8):
        n = frame_format.words_per_frame(chunks)
        assert frame_format.CONTROL_HEADER_BYTES + 4 * chunks * n + siphash.TAG_BYTES <= frame_format.MTU_PAYLOAD
        assert frame_format.CONTROL_HEADER_BYTES + 4 * chunks * (n + 1) + siphash.TAG_BYTES > frame_format.MTU_PAYLOAD
    with pytest.raises(ValueError, match="cannot carry"):
        frame_format.words_per_frame(5, mtu=40)


def test_marker_exact_bytes():
    config = LdaConfig()
    frame = cf.build_marker(config, seq=0x01020304, timestamp=0x1122334455667788,
                            src_mac=SRC, dst_mac=DST, flags=frame_format.IntervalFlags.OVERRUN)
    assert config.config_id == 0xA862EF21
    assert frame.hex() == (
        "020000000002" "020000000001" "88b5"            # Ethernet header
        "03" "01" "01" "01"                             # version, marker, overrun, LDA
        "01020304" "a862ef21"                           # seq, config ID
        "0000" "0000" "03" "00"                         # chunk index/count, 3 chunks, auth
        "00000000" "0000" "00" "00"                     # first word, word count, role, rsvd
        "1122334455667788"                              # timestamp
        "1a35b70579d88936"                              # tag (SipHash-2-4, zero key)
        + "00" * 4)                                     # padding to 60 bytes
    m = cf.parse_control_frame(frame)
    assert isinstance(m, cf.MarkerFrame)
    assert (m.seq, m.timestamp, m.flags, m.kind) == (0x01020304, 0x1122334455667788,
                                                      frame_format.IntervalFlags.OVERRUN, "lda")
    assert frame_format.mac_to_str(m.src_mac) == SRC and frame_format.mac_to_str(m.dst_mac) == DST


def test_small_synopsis_frame_exact_bytes():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,))
    syn = Synopsis(config, {"count": np.array([[1, 2]], dtype=np.uint64),
                            "ts_sum": np.array([[0xAB_0000_0010, 0x20]], dtype=np.uint64)})
    (frame,) = cf.build_synopsis_frames(syn, seq=7, src_mac=SRC, dst_mac=DST, timestamp=5,
                                        role=frame_format.Role.SENDER)
    assert config.config_id == 0x02D8FE13     # docs/SPEC.md §6 quotes these bytes
    cid = f"{config.config_id:08x}"
    assert frame.hex() == (
        "020000000002" "020000000001" "88b5"
        "03" "02" "00" "01" "00000007" + cid +
        "0000" "0001" "03" "00" "00000000" "0002" "01" "00" "0000000000000005"
        # word 0 = count 1 | ts_sum 0xAB00000010 << 32: chunks LS first
        "00000001" "00000010" "000000ab"
        "00000002" "00000020" "00000000"
        "bc06808c0190139c")                               # tag (zero key)
    back = cf.reassemble([frame], config)
    assert back.synopsis == syn and back.seq == 7 and back.timestamp == 5 and back.valid
    assert back.role == frame_format.Role.SENDER


@pytest.mark.parametrize("config", [
    LdaConfig(), RdaConfig(buckets_per_bank=300), LdsConfig(rows=2, cells=500,
                                                           row_thresholds=(0, 0)),
    OpaConfig(groups=256), RliConfig(cells=300)],     # kinds 4 and 5 (SPEC §6 rule 7)
    ids=lambda c: c.kind)
def test_round_trip_any_order(config):
    syn = random_synopsis(config, 1)
    frames = cf.build_synopsis_frames(syn, seq=42, src_mac=SRC, dst_mac=DST,
                                      flags=frame_format.IntervalFlags.SEQUENCE_GAP, timestamp=99)
    assert len(frames) == frame_format.frames_needed(config.buckets, config.layout.chunks) > 1
    assert all(len(f) - 14 <= frame_format.MTU_PAYLOAD for f in frames)
    r = cf.SynopsisReassembler(config)
    order = np.random.default_rng(3).permutation(len(frames))
    results = [r.add(frames[i]) for i in order]
    assert all(x is None for x in results[:-1])
    done = results[-1]
    assert done.synopsis == syn and done.seq == 42 and not done.valid
    assert done.flags == frame_format.IntervalFlags.SEQUENCE_GAP and r.pending == []


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
        "overrun": frame_format.IntervalFlags.OVERRUN, "sequence_gap": frame_format.IntervalFlags.SEQUENCE_GAP,
        "config_changed": frame_format.IntervalFlags.CONFIG_CHANGED,
        "time_mode": frame_format.IntervalFlags.TIME_MODE}


# -- rejections ---------------------------------------------------------------------------

CONFIG = LdaConfig(banks=1, rows=256, thresholds=(0,))


@pytest.fixture
def frames():
    return cf.build_synopsis_frames(random_synopsis(CONFIG), seq=3, src_mac=SRC, dst_mac=DST)


def patch(frame, name, value, retag=False):
    """``frame`` with field ``name`` set; ``retag``: with the tag recomputed (zero key),
    so that the structure check, not the tag, rejects it."""
    f = frame_format.field_by_name(name)
    b = bytearray(frame)
    b[f.offset:f.end] = value.to_bytes(f.size, "big")
    return retag_frame(bytes(b)) if retag else bytes(b)


def retag_frame(frame, key=bytes(16)):
    """``frame`` (unpadded, or a padded marker) with its tag recomputed over its content."""
    end = frame_format.PAYLOAD_OFFSET + 4 * frame[30] * int.from_bytes(frame[36:38], "big")
    return frame[:end] + siphash_tag(frame[:end], key) + frame[end + siphash.TAG_BYTES:]


@pytest.mark.parametrize("mutate, error, message", [
    (lambda f: f[:10], frame_format.TruncatedFrameError, "inside the Ethernet header"),
    (lambda f: f[:40], frame_format.TruncatedFrameError, "inside its 48-byte header"),
    (lambda f: f[:-1], frame_format.TruncatedFrameError, "declares 121 words and a tag"),
    (lambda f: patch(f, "ethertype", 0x0800), frame_format.NotControlFrameError, "0x0800"),
    (lambda f: patch(f, "version", 1), frame_format.UnsupportedVersionError, "version 1"),
    (lambda f: patch(f, "type", 9), frame_format.UnknownTypeError, "type 9"),
    (lambda f: patch(f, "kind", 7), frame_format.MalformedFrameError, "synopsis kind 7"),
    (lambda f: patch(f, "kind", 6), frame_format.MalformedFrameError, r"synopsis kind 6 is not one of "
     r"\[1, 2, 3, 4, 5\] \(1 LDA, 2 RDA, 3 LDS, 4 OPA, 5 RLI\)"),
    (lambda f: patch(f, "flags", 0x40), frame_format.MalformedFrameError, "undefined bits"),
    (lambda f: patch(f, "reserved1", 1), frame_format.MalformedFrameError, "reserved"),
    (lambda f: patch(f, "auth", 2), frame_format.MalformedFrameError, "auth byte 2"),
    (lambda f: patch(f, "seq", 4), frame_format.BadTagError, "chunk 0 of interval 4: the tag does "
                                                   "not match"),
    (lambda f: f[:100] + bytes([f[100] ^ 1]) + f[101:], frame_format.BadTagError, "interval 3"),
    (lambda f: f[:-1] + bytes([f[-1] ^ 0x80]), frame_format.BadTagError, "interval 3"),
    (lambda f: patch(f, "chunk_index", 3), frame_format.MalformedFrameError, "not below chunk count"),
    (lambda f: patch(f, "word_count", 0), frame_format.MalformedFrameError, "holds no words"),
    (lambda f: patch(f, "word_chunks", 0), frame_format.MalformedFrameError, "word_chunks is 0"),
    (lambda f: patch(f, "config_id", 0x12345678), frame_format.ControlConfigMismatch,
     "config ID 0x12345678"),
    (lambda f: patch(f, "word_chunks", 4), frame_format.ControlConfigMismatch, "4 chunks per word"),
    (lambda f: f + bytes(2000), frame_format.MalformedFrameError, "exceeds the 1500-byte MTU"),
])
def test_parse_rejections(frames, mutate, error, message):
    with pytest.raises(error, match=message):
        cf.parse_control_frame(mutate(frames[0]), expected=CONFIG)
    assert issubclass(error, frame_format.ControlFrameError)


def test_trailing_bytes_rejected(frames):
    with pytest.raises(frame_format.MalformedFrameError, match="4 unexpected byte"):
        cf.parse_control_frame(frames[-1] + bytes(4))


def test_marker_rejections():
    m = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST)
    with pytest.raises(frame_format.MalformedFrameError, match="marker frame with chunk fields"):
        cf.parse_control_frame(patch(m, "chunk_count", 1))
    with pytest.raises(frame_format.MalformedFrameError, match="padding .* not zero"):
        cf.parse_control_frame(m[:-1] + b"\x01")
    with pytest.raises(frame_format.UnknownTypeError, match="marker frame is not a synopsis chunk"):
        cf.SynopsisReassembler(CONFIG).add(m)
    with pytest.raises(frame_format.ControlConfigMismatch, match="expected LDA"):
        cf.parse_control_frame(cf.build_marker(RdaConfig(), seq=1, timestamp=2,
                                               src_mac=SRC, dst_mac=DST), expected=CONFIG)


def test_reassembly_rejections(frames):
    assert len(frames) == 3
    r = cf.SynopsisReassembler(CONFIG)
    r.add(frames[0])
    with pytest.raises(frame_format.DuplicateChunkError, match="chunk 0 of 3 arrived twice"):
        r.add(frames[0])
    assert r.missing(3) == [1, 2]
    with pytest.raises(frame_format.MissingChunkError, match=r"2 of 3 chunks missing \(indices 1-2\)"):
        r.finish(3)
    with pytest.raises(frame_format.MissingChunkError, match="interval 9: no synopsis chunk"):
        r.finish(9)
    with pytest.raises(frame_format.MissingChunkError, match="no synopsis chunk frames"):
        cf.reassemble([], CONFIG)
    with pytest.raises(frame_format.MissingChunkError, match="1 of 3 chunks missing"):
        cf.reassemble(frames[:2], CONFIG)
    # Chunks of one interval that disagree.
    bad = patch(frames[1], "flags", int(frame_format.IntervalFlags.OVERRUN), retag=True)
    with pytest.raises(frame_format.InconsistentChunkError, match="chunk 1 has flags 0x1"):
        cf.reassemble([frames[0], bad], CONFIG)
    bad = patch(frames[1], "first_word", 5, retag=True)
    with pytest.raises(frame_format.InconsistentChunkError, match="starts at word 5, expected 121"):
        cf.reassemble([frames[0], bad, frames[2]], CONFIG)
    other = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=4, src_mac=SRC, dst_mac=DST)
    with pytest.raises(frame_format.InconsistentChunkError, match="several intervals"):
        cf.reassemble([frames[0], other[1]], CONFIG)
    # The right frames, but for another configuration.
    with pytest.raises(frame_format.ControlConfigMismatch, match="expected LDA"):
        cf.reassemble(frames, LdaConfig())
    # Fewer words than the configuration holds (chunk count consistent, tiling short).
    small = LdaConfig(banks=1, rows=128, thresholds=(0,))
    f = cf.build_synopsis_frames(random_synopsis(small), seq=1, src_mac=SRC, dst_mac=DST)
    f = [patch(x, "config_id", CONFIG.config_id, retag=True) for x in f]
    with pytest.raises(frame_format.InconsistentChunkError, match="hold 128 words, the configuration "
                                                        "has 256"):
        cf.reassemble(f, CONFIG)


def test_jumbo_exports_reassemble_when_the_mtu_is_given():
    """Issue 12: frames built for a 9000-byte MTU are rejected at the default 1500 (with a
    message pointing at ``mtu``) and reassemble when the reassembler is told the MTU."""
    config = LdaConfig()
    syn = random_synopsis(config, 5)
    frames = cf.build_synopsis_frames(syn, seq=9, src_mac=SRC, dst_mac=DST,
                                      mtu=frame_format.MAX_MTU_PAYLOAD)
    per = (9000 - 34 - 8) // 12
    assert per == 746 and len(frames) == 3 and len(frames[0]) == 14 + 34 + 12 * per + 8
    with pytest.raises(frame_format.MalformedFrameError, match="exceeds the 1500-byte MTU .*same mtu"):
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
            frame_format.words_per_frame(3, mtu=mtu)


def test_padding_rules():
    """SPEC §6 acceptance: a chunk shorter than 60 bytes is zero-padded to exactly 60;
    padding must be zero; nothing may follow content that already reaches 60 bytes."""
    tiny = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8, ts_bits=16)
    assert tiny.layout.chunks == 1
    (frame,) = cf.build_synopsis_frames(random_synopsis(tiny), seq=1, src_mac=SRC,
                                        dst_mac=DST)
    # 48 + 2 words × 4 bytes + the tag = 64 bytes: no padding
    assert len(frame) == 64
    marker = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST)
    assert len(marker) == 60 and not any(marker[56:])             # header, tag, padding
    assert cf.parse_control_frame(marker[:56]).seq == 1           # unpadded: accepted
    assert cf.parse_control_frame(marker[:58]).seq == 1           # partly padded: accepted
    with pytest.raises(frame_format.TruncatedFrameError, match="ends before its 8-byte tag"):
        cf.parse_control_frame(marker[:48])                       # the runt
    with pytest.raises(frame_format.MalformedFrameError, match="5 unexpected byte"):
        cf.parse_control_frame(marker + bytes(1))
    with pytest.raises(frame_format.MalformedFrameError, match="padding .* not zero"):
        cf.parse_control_frame(marker[:59] + b"\x01")


def test_word_above_layout_rejected():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,))
    (frame,) = cf.build_synopsis_frames(Synopsis.empty(config), seq=1, src_mac=SRC,
                                        dst_mac=DST)
    b = bytearray(frame)
    b[frame_format.PAYLOAD_OFFSET + 8] = 0x01   # chunk 2 bit 24: above the 72-bit word
    with pytest.raises(frame_format.MalformedFrameError, match="above the 72-bit layout"):
        cf.reassemble([retag_frame(bytes(b))], config)


def test_mac_parsing():
    assert frame_format.mac_to_bytes("02-00-00-00-00-0a") == bytes.fromhex("02000000000a")
    assert frame_format.mac_to_bytes(0x020000000001) == bytes.fromhex("020000000001")
    with pytest.raises(ValueError, match="not a MAC address"):
        frame_format.mac_to_bytes("02:00")
    with pytest.raises(ValueError, match="6 bytes"):
        frame_format.mac_to_bytes(b"\x00")


def test_too_many_frames_is_a_clear_error():
    config = LdaConfig(banks=1, rows=1 << 19, thresholds=(0,))
    syn = Synopsis.empty(config)
    assert frame_format.frames_needed(config.buckets, 3, mtu=100) > frame_format.MAX_CHUNKS
    with pytest.raises(ValueError, match="use a larger MTU"):
        cf.build_synopsis_frames(syn, seq=0, src_mac=SRC, dst_mac=DST, mtu=100)


def test_ethertype_is_the_shared_constant():
    assert ETHERTYPE_CONTROL == 0x88B5
    assert cf.parse_control_frame(cf.build_marker(CONFIG, seq=0, timestamp=0, src_mac=SRC,
                                                  dst_mac=DST)).seq == 0


# -- tags, authentication, replays (issue 11) ------------------------------------------------

KEY = bytes(range(16))


def test_siphash_is_the_papers():
    key, message, tag = PAPER_VECTOR
    assert siphash_tag(message, key) == tag == bytes.fromhex("e545be4961ca29a1")


def test_authenticated_vectors():
    """docs/SPEC.md §6 "Tag" quotes these: the worked examples under the key 00..0f."""
    config = LdaConfig()
    m = cf.build_marker(config, seq=0x01020304, timestamp=0x1122334455667788, src_mac=SRC,
                        dst_mac=DST, flags=frame_format.IntervalFlags.OVERRUN, key=KEY)
    assert m.hex().endswith("0301" "00000000" "0000" "0000" "1122334455667788"
                            "e8af258adc35310e" "00000000")
    assert cf.parse_control_frame(m, key=KEY).auth == frame_format.AUTH_KEYED
    small = LdaConfig(banks=1, rows=2, thresholds=(0,))
    syn = Synopsis(small, {"count": np.array([[1, 2]], dtype=np.uint64),
                           "ts_sum": np.array([[0xAB_0000_0010, 0x20]], dtype=np.uint64)})
    (f,) = cf.build_synopsis_frames(syn, seq=7, src_mac=SRC, dst_mac=DST, timestamp=5,
                                    key=KEY, role=frame_format.Role.SENDER)
    assert f.hex().endswith("00000020" "00000000" "992849dc5221e867")
    assert cf.reassemble([f], small, key=KEY).synopsis == syn


def test_keys_must_match_the_mode():
    plain = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST)
    keyed = cf.build_marker(CONFIG, seq=1, timestamp=2, src_mac=SRC, dst_mac=DST, key=KEY)
    with pytest.raises(frame_format.UnauthenticatedFrameError, match="not authenticated"):
        cf.parse_control_frame(plain, key=KEY)
    with pytest.raises(frame_format.UnauthenticatedFrameError, match="no key was given"):
        cf.parse_control_frame(keyed)
    with pytest.raises(frame_format.BadTagError, match="under the key given"):
        cf.parse_control_frame(keyed, key=bytes(range(1, 17)))
    # Someone without the key re-tags a changed frame under the zero key, claiming auth.
    forged = retag_frame(patch(keyed, "seq", 9))
    with pytest.raises(frame_format.BadTagError, match="interval 9"):
        cf.parse_control_frame(forged, key=KEY)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_byte_is_rejected(data):
    """Every byte of a frame counts: flipping any bit is an error, never a frame."""
    frames = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=3, src_mac=SRC,
                                      dst_mac=DST, key=KEY)
    frame = bytearray(data.draw(st.sampled_from(frames)))
    pos = data.draw(st.integers(0, len(frame) - 1))
    frame[pos] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(frame_format.ControlFrameError):
        cf.parse_control_frame(bytes(frame), expected=CONFIG, key=KEY)


def test_replayed_or_old_intervals_are_rejected(frames):
    r = cf.SynopsisReassembler(CONFIG)
    for f in frames:
        done = r.add(f)
    assert done.seq == 3
    with pytest.raises(frame_format.ReplayedIntervalError, match="interval 3 from 02:00:00:00:00:01: "
                                                       "not after interval 3"):
        r.add(frames[0])
    old = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=2, src_mac=SRC, dst_mac=DST)
    with pytest.raises(frame_format.ReplayedIntervalError, match="interval 2 .* not after interval 3"):
        r.add(old[1])
    new = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=5, src_mac=SRC, dst_mac=DST)
    assert [r.add(f) for f in new][-1].seq == 5
    # Another source has its own numbers.
    other = cf.build_synopsis_frames(random_synopsis(CONFIG), seq=1, src_mac=DST, dst_mac=SRC)
    assert [r.add(f) for f in other][-1].seq == 1


def test_seq_after_wraps():
    assert frame_format.seq_after(1, 0) and not frame_format.seq_after(0, 0) and not frame_format.seq_after(0, 1)
    assert frame_format.seq_after(0, 2**32 - 1) and frame_format.seq_after(2**31 - 1, 0)
    assert not frame_format.seq_after(2**31, 0)


def test_pair_identity_problem():
    """The pairing rule of two points' records (SPEC §4.4 "Identity"): roles sender and
    receiver, two source MACs, the receiver accepting the sender's markers."""
    ok = frame_format.pair_identity_problem
    assert ok(1, 0x0200_0000_0001, 2, 0x0200_0000_0002) is None
    assert ok(1, bytes.fromhex("020000000001"), 2, 0x0200_0000_0002,
              0x0200_0000_0001) is None
    assert ok(2, 1, 1, 2).startswith("sender and receiver swapped")
    assert "the same point twice" in ok(1, 5, 2, 5)
    assert "the same point twice" in ok(1, 5, 1, bytes.fromhex("000000000005"))
    assert ok(0, 1, 2, 2) == ("the sender's input comes from a point whose role is none, "
                              "not sender (program it with ldactl config --role)")
    assert "receiver's input comes from a point whose role is unknown" in ok(1, 1, None, 2)
    assert "role is sender, not receiver" in ok(1, 1, 1, 2)
    assert ok(1, 1, 2, 2, 9) == ("the receiver accepts markers from 00:00:00:00:00:09, not "
                                 "from the sender 00:00:00:00:00:01: the two points measure "
                                 "different streams")
    assert frame_format.effective_role(0, 2) == frame_format.Role.SENDER
    assert frame_format.effective_role(0, 3) == frame_format.Role.RECEIVER
    assert frame_format.effective_role(0, 1) == frame_format.Role.NONE
    assert frame_format.effective_role(2, 2) == frame_format.Role.RECEIVER
    assert frame_format.effective_role(3, 2) == frame_format.Role.NONE
