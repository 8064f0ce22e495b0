# SPDX-License-Identifier: BSD-2-Clause
"""OPA's per-packet record frames (EtherType 0x88B5, type 4): the one definition of their
bytes, their framing rule, their parser and their reassembly (``docs/SPEC.md`` §8.7).

Where they sit (docs/DESIGN.md): while an interval runs, an OPA point's gateware
(:mod:`hw.opa.records`) streams one record per counted packet — at the **sender** its
send timestamp with its group (the timestamp layer of §8.4 before coding), at the
**receiver** its packet hash with its arrival timestamp — to the host export port or a
frame-merger insert input. The host reassembles an interval's stream
(:class:`RecordReassembler`) and hands the records to the OPA recovery
(:mod:`host_sw.estimators.opa.export`).

A record frame is a control frame of format version 2 (§6: the same first 26 bytes, the
``auth`` byte at 31, the SipHash-2-4 tag after the content, zero padding to 60 bytes)
whose bytes 26–47 are its own (:data:`RECORD_HEADER_FIELDS`):

* flags (16): bit 0 ``LAST`` (the interval's last record frame: its stream is complete
  once chunks ``0 … chunk_index`` are there), bit 1 ``RECEIVER`` (the point);
* ``record_count`` (26, u16), ``record_groups`` (28, u24: the sampling rule — only
  packets of groups ``G < record_groups`` are recorded, at both points; ``groups`` when
  sampling is off), ``chunk_index`` (32, u32, from 0 in each interval), ``dropped``
  (36, u32: records of the interval the gateware could not keep, in the LAST frame; 0 in
  the others), ``timestamp`` (40, u64: the frame's **base**, the timestamp of its first
  record; 0 in a frame without records);
* records from byte 48, fixed width, big-endian (:func:`record_format`):
  sender ``(G << offset_bits) | offset`` in 4 bytes (8 when ``log2 groups > 16``),
  receiver the 64-bit packet hash then a 32-bit offset (12 bytes); ``offset`` = the
  record's timestamp minus the base; or (flags bit 2 ``CODED``) Golomb–Rice coded:
  the sender's group and send-tick difference (:func:`code_sender_frames`), the
  receiver's whole packet hash and arrival-tick difference
  (:func:`code_receiver_frames`: what recovery needs, §8.7 "Coded receiver records").

Framing rule (the gateware's, :func:`frame_records`): a record opens a new frame when the
open frame already holds :func:`records_per_frame` records or its offset from the open
frame's base does not fit ``offset_bits``; the frame open at the interval's end is the
LAST one (with no records when the interval recorded none). Sampling by whole groups
keeps every recorded group complete, so recovery over the recorded groups is exact.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import KIND_CODES, OpaConfig
from host_sw.contracts.frames.frame_format import (
    AUTH_KEYED, AUTH_NONE, ETHERNET_HEADER_BYTES, MTU_PAYLOAD, PAYLOAD_OFFSET, VERSION,
    ControlConfigMismatch, DuplicateChunkError, FrameField, InconsistentChunkError,
    MalformedFrameError, ReplayedIntervalError, TruncatedFrameError, check_control_start,
    check_mtu, check_tail, mac_to_bytes, mac_to_str, seq_after,
)
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.contracts.siphash import TAG_BYTES, ZERO_KEY, siphash_tag

__all__ = ["TYPE_OPA_RECORDS", "MIN_RECORD_MTU_PAYLOAD", "RecordFlags", "Point", "RECORD_HEADER_FIELDS",
           "RecordFormat", "record_format", "records_per_frame", "frame_records",
           "build_record_frames", "RecordFrame", "parse_record_frame", "IntervalRecords",
           "RecordReassembler", "sampled_groups", "RICE_CODING", "RICE_UNARY_LIMIT",
           "RICE_K_INIT", "RICE_K_MAX", "RICE_MAX_SHIFT", "coded_words_per_frame",
           "rice_next_k", "code_sender_frames", "decode_sender_bits", "lossy_error_bound",
           "DEFAULT_LOSSY_SHIFT", "RECEIVER_ID_BITS", "code_receiver_frames",
           "decode_receiver_bits"]

#: The control-frame ``type`` of an OPA record frame.
TYPE_OPA_RECORDS = 4
#: Most records in one frame (``record_count`` is 16 bits).
MAX_RECORDS = 0xFFFF
#: The smallest MTU (Ethernet payload bytes) a record frame of either point fits: the
#: 34-byte control header, one 12-byte receiver record, the 8-byte tag. A core's record
#: streamer builds both points' frames (``hw.opa.opa_path``), so it refuses a smaller MTU.
MIN_RECORD_MTU_PAYLOAD = PAYLOAD_OFFSET - ETHERNET_HEADER_BYTES + 12 + TAG_BYTES


class RecordFlags(enum.IntFlag):
    """The ``flags`` byte of a record frame."""
    NONE = 0
    LAST = 0x01
    RECEIVER = 0x02
    CODED = 0x04


class Point(str, enum.Enum):
    """Which point's records: the sender's (send timestamp and group) or the receiver's
    (packet hash and arrival timestamp)."""
    SENDER = "sender"
    RECEIVER = "receiver"


#: Bytes 0–47 of a record frame; 0–25 and 31 are §6's, the rest its own.
RECORD_HEADER_FIELDS: tuple[FrameField, ...] = (
    FrameField("dst_mac", 0, 6, "destination MAC address"),
    FrameField("src_mac", 6, 6, "source MAC address (the recording device)"),
    FrameField("ethertype", 12, 2, f"{ETHERTYPE_CONTROL:#06x}"),
    FrameField("version", 14, 1, f"format version, {VERSION}"),
    FrameField("type", 15, 1, f"{TYPE_OPA_RECORDS} = OPA records"),
    FrameField("flags", 16, 1, "RecordFlags: bit 0 LAST, bit 1 RECEIVER, bit 2 CODED"),
    FrameField("kind", 17, 1, f"synopsis kind, {KIND_CODES['opa']} (OPA)"),
    FrameField("seq", 18, 4, "interval the records belong to"),
    FrameField("config_id", 22, 4, "configuration ID (docs/SPEC.md §5)"),
    FrameField("record_count", 26, 2, "records in this frame"),
    FrameField("record_groups", 28, 3, "packets of groups G < record_groups are recorded"),
    FrameField("auth", 31, 1, "0: tag under the zero key, 1: under the configured key"),
    FrameField("chunk_index", 32, 4, "this frame's place in the interval's stream, from 0"),
    FrameField("dropped", 36, 4, "LAST frame: records of the interval not kept; else 0"),
    FrameField("timestamp", 40, 8, "base: the first record's timestamp (0 if none)"),
)
_FIELDS = {f.name: f for f in RECORD_HEADER_FIELDS}


@dataclass(frozen=True)
class RecordFormat:
    """A point's record: ``record_bytes`` bytes; the key (group index or packet hash)
    in ``key_bits``, the timestamp offset in ``offset_bits`` below it."""
    point: Point
    record_bytes: int
    key_bits: int
    offset_bits: int

    def pack(self, keys: np.ndarray, offsets: np.ndarray) -> bytes:
        """The records' bytes (big-endian, one after another)."""
        k = np.asarray(keys, dtype=np.uint64)
        o = np.asarray(offsets, dtype=np.uint64)
        if self.point is Point.RECEIVER:
            out = np.empty(len(k), dtype=[("h", ">u8"), ("o", ">u4")])
            out["h"], out["o"] = k, o
            return out.tobytes()
        dtype = ">u4" if self.record_bytes == 4 else ">u8"
        return ((k << np.uint64(self.offset_bits)) | o).astype(dtype).tobytes()

    def unpack(self, raw: bytes, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, offsets)`` (uint64) of ``count`` records."""
        if self.point is Point.RECEIVER:
            a = np.frombuffer(raw, dtype=[("h", ">u8"), ("o", ">u4")], count=count)
            return a["h"].astype(np.uint64), a["o"].astype(np.uint64)
        v = np.frombuffer(raw, dtype=">u4" if self.record_bytes == 4 else ">u8",
                          count=count).astype(np.uint64)
        mask = np.uint64((1 << self.offset_bits) - 1)
        return v >> np.uint64(self.offset_bits), v & mask


def record_format(config: OpaConfig, point: Point | str) -> RecordFormat:
    """The record layout of ``point`` under ``config`` (module docstring): sender 4 bytes
    (group in the top ``log2 g`` bits, offset below) or 8 when ``log2 g > 16`` (so the
    offset keeps at least 16 bits); receiver 12 bytes (hash, 32-bit offset). Every size
    is a multiple of 4: the tag engine absorbs 32-bit words."""
    point = Point(point)
    if point is Point.RECEIVER:
        return RecordFormat(point, 12, 64, 32)
    gbits = config.groups.bit_length() - 1
    size = 4 if gbits <= 16 else 8
    return RecordFormat(point, size, gbits, 8 * size - gbits)


def records_per_frame(config: OpaConfig, point: Point | str, mtu: int = MTU_PAYLOAD) -> int:
    """Most records of one frame within ``mtu`` Ethernet payload bytes (header, tag); a
    ValueError when not even one fits (a 12-byte receiver record needs an MTU of 54, an
    8-byte sender record 50), as :func:`~host_sw.contracts.frames.frame_format.words_per_frame`
    refuses an MTU below one counter word."""
    check_mtu(mtu)
    fmt = record_format(config, point)
    header = PAYLOAD_OFFSET - ETHERNET_HEADER_BYTES
    n = (mtu - header - TAG_BYTES) // fmt.record_bytes
    if n < 1:
        raise ValueError(f"an MTU of {mtu} bytes cannot carry one {fmt.record_bytes}-byte "
                         f"{fmt.point.value} record after the {header}-byte control header "
                         f"and before the {TAG_BYTES}-byte tag (at least "
                         f"{header + fmt.record_bytes + TAG_BYTES})")
    return min(MAX_RECORDS, n)


def sampled_groups(config: OpaConfig, record_groups: int) -> int:
    """The groups recorded under the RECORD_GROUPS value ``record_groups`` (0 or ≥ g:
    all ``g``; else that many, groups ``0 … record_groups − 1``)."""
    return config.groups if record_groups == 0 or record_groups >= config.groups \
        else int(record_groups)


def frame_records(timestamps: np.ndarray, per_frame: int, offset_bits: int) -> list[int]:
    """The framing rule: the index of the first record of each frame (``[0]`` for no
    records: one empty frame)."""
    ts = np.asarray(timestamps, dtype=np.uint64)
    starts, base, count = [0], None, 0
    limit = 1 << offset_bits
    for i, t in enumerate(ts.tolist()):
        if base is not None and (count == per_frame or (t - base) % (1 << 64) >= limit):
            starts.append(i)
            base, count = None, 0
        if base is None:
            base = t
        count += 1
    return starts


#: The sender's coded records (flags bit 2 ``CODED``, SPEC §8.7 "Coded sender records"):
#: the ``coding`` byte of the coding word (byte 48) for Golomb–Rice.
RICE_CODING = 1
#: A record whose quotient ``u`` would reach this opens a new frame (no escape codes: a
#: code is at most ``log2 g + RICE_UNARY_LIMIT + RICE_K_MAX`` ≤ 60 bits, one 64-bit word).
RICE_UNARY_LIMIT = 16
#: The Rice parameter of an interval's first frame.
RICE_K_INIT = 8
#: The largest Rice parameter.
RICE_K_MAX = 24
#: The largest quantisation shift (lossy mode; 0 = lossless): the gateware counts a
#: quantum's packets per group in 24 bits.
RICE_MAX_SHIFT = 24
#: The default lossy shift: every send timestamp within 2**15 ticks (±32.8 µs at 1 ns).
DEFAULT_LOSSY_SHIFT = 16
#: Bytes of the coding word (after the 48-byte header) and of one bitstream word.
CODING_BYTES = 4
CODED_WORD_BYTES = 8
_STAT_MAX = (1 << 48) - 1


def lossy_error_bound(shift: int) -> int:
    """Largest error in ticks of a coded record's decoded timestamp at ``shift``."""
    return 0 if shift == 0 else 1 << (shift - 1)


def coded_words_per_frame(mtu: int = MTU_PAYLOAD) -> int:
    """Most 64-bit bitstream words of a coded sender frame within ``mtu`` (header,
    coding word, tag); a ValueError below one (an MTU of 54)."""
    check_mtu(mtu)
    header = PAYLOAD_OFFSET - ETHERNET_HEADER_BYTES
    n = (mtu - header - CODING_BYTES - TAG_BYTES) // CODED_WORD_BYTES
    if n < 1:
        raise ValueError(f"an MTU of {mtu} bytes cannot carry one coded sender word "
                         f"(at least {header + CODING_BYTES + CODED_WORD_BYTES + TAG_BYTES})")
    return n


def rice_next_k(total: int, count: int) -> int:
    """The Rice parameter of the next frame from the previous frame's differences (their
    sum ``total``, saturated at 2**48 − 1, and ``count``, including the difference of the
    record that opened the new frame): the smallest ``k`` with ``count·2**(k+1) > total``
    (``floor(log2 mean)``), at most :data:`RICE_K_MAX`."""
    for k in range(RICE_K_MAX + 1):
        if count << (k + 1) > total:
            return k
    return RICE_K_MAX


def code_sender_frames(groups: np.ndarray, timestamps: np.ndarray, gbits: int, shift: int,
                       words_per_frame: int) -> list[tuple[int, int, int, bytes]]:
    """The coded sender records of one interval (SPEC §8.7), cut into frames:
    ``(records, k, base, bitstream bytes)`` per frame (``[]`` for no records).

    Lossless (``shift`` 0): the records in sending order; a frame's first record's code
    is its group (``gbits`` bits), every other's the group then the difference
    ``d = t − t_prev`` as ``u = d >> k`` one-bits, a zero, and the low ``k`` bits of
    ``d``; ``base`` the first record's tick. Lossy (``shift`` > 0): the records of each
    quantum ``q = t >> shift`` as a set — sorted by ``K = (q << gbits) | group`` —, the
    first record's code its group, every other's the Rice code of ``d = K − K_prev``
    alone; ``base = q << shift`` of the first record. Codes MSB first in big-endian
    64-bit words, the last padded with zeros. Each frame opens with Rice parameter ``k``
    (:data:`RICE_K_INIT` in an interval's first frame, then :func:`rice_next_k`); a
    record opens a new frame when ``u ≥`` :data:`RICE_UNARY_LIMIT`, when its code does
    not fit the frame's words or the frame holds 65 535 records."""
    cap = 64 * words_per_frame
    frames = []
    g_list = [int(x) for x in np.asarray(groups, dtype=np.uint64).tolist()]
    q_list = [int(x) >> shift for x in np.asarray(timestamps, dtype=np.uint64).tolist()]
    if shift:
        values = sorted((q << gbits) | g for g, q in zip(g_list, q_list))
        g_list = [v & ((1 << gbits) - 1) for v in values]
    else:
        values = q_list
    head = 0 if shift else gbits          # group bits of a record after the first
    count, bits, parts = 0, 0, []
    total = n = 0
    prev = None
    gfmt = f"0{gbits}b"

    def close():
        nbits = sum(len(x) for x in parts)
        text = "".join(parts) + "0" * (-nbits % 64)
        frames.append((count, k_open, base, int(text, 2).to_bytes(len(text) // 8, "big")
                       if text else b""))
    k_open = RICE_K_INIT
    for g, v in zip(g_list, values):
        gtext = format(g, gfmt) if gbits else ""
        if prev is not None:
            d = (v - prev) % (1 << 64)
            u = d >> k_open
            length = head + u + 1 + k_open
            if u < RICE_UNARY_LIMIT and bits + length <= cap and count < MAX_RECORDS:
                rem = format(d & ((1 << k_open) - 1), f"0{k_open}b") if k_open else ""
                parts.append(gtext[:head] + "1" * u + "0" + rem)
                bits += length
                count += 1
                total, n = min(_STAT_MAX, total + d), n + 1
                prev = v
                continue
            close()
            total, n = min(_STAT_MAX, total + d), n + 1
            k_open = rice_next_k(total, n)
            total = n = 0
        count, bits, parts = 1, gbits, [gtext]
        base = (v >> gbits) << shift if shift else v
        prev = v
    if prev is not None:
        close()
    return frames


#: Identity bits of a coded receiver record: the whole packet hash ``P``. The augmented
#: hash ``h(P, j) = S(P ^ pos(j)) mod p`` (§8.1) depends on every bit of ``P``, and
#: recovery evaluates it at positions other than the arrival one (a lost or reordered
#: packet moves its neighbours), so no bit can be left out; the group (the top
#: ``log2 g`` bits) is part of it, not sent again.
RECEIVER_ID_BITS = 64


def code_receiver_frames(packet: np.ndarray, timestamps: np.ndarray,
                         words_per_frame: int) -> list[tuple[int, int, int, bytes]]:
    """The coded receiver records of one interval (SPEC §8.7 "Coded receiver records"),
    cut into frames as :func:`code_sender_frames`: ``(records, k, base, bitstream
    bytes)`` per frame. The sender's lossless layout with the 64-bit packet hash in the
    group's place: the records in arrival order, a frame's first record's code its hash
    (its tick is the base), every other's the hash then the Rice code of the arrival
    difference ``d = t − t_prev``. Arrival ticks are never quantised (``shift`` 0): a
    receiver record is the one source of its packet's arrival tick."""
    return code_sender_frames(packet, timestamps, RECEIVER_ID_BITS, 0, words_per_frame)


def decode_receiver_bits(data: bytes, count: int, k: int) -> tuple[list, list, int]:
    """``(packet hashes, differences, bits)`` of ``count`` coded receiver records in
    ``data`` (:func:`decode_sender_bits` with 64-bit identities, lossless)."""
    return decode_sender_bits(data, count, RECEIVER_ID_BITS, k)


def decode_sender_bits(data: bytes, count: int, gbits: int, k: int,
                       lossy: bool = False) -> tuple[list, list, int]:
    """``(groups, differences, bits)`` of ``count`` coded records in ``data`` (the first
    record's difference 0; ``lossy``: only the first record has its group, the others
    0); a ValueError when the bits end early or a quotient reaches
    :data:`RICE_UNARY_LIMIT`."""
    text = bin(int.from_bytes(data, "big"))[2:].zfill(8 * len(data)) if data else ""
    pos, groups, diffs = 0, [], []
    for i in range(count):
        head = gbits if i == 0 or not lossy else 0
        if pos + head > len(text):
            raise ValueError("the bitstream ends inside a record")
        groups.append(int(text[pos:pos + head], 2) if head else 0)
        pos += head
        if i == 0:
            diffs.append(0)
            continue
        z = text.find("0", pos, pos + RICE_UNARY_LIMIT)
        if z < 0 or z + 1 + k > len(text):
            raise ValueError("a quotient beyond the unary limit or the bitstream's end")
        u = z - pos
        pos = z + 1
        diffs.append((u << k) | (int(text[pos:pos + k], 2) if k else 0))
        pos += k
    return groups, diffs, pos


def _keys_of(config: OpaConfig, point: Point, packet: np.ndarray) -> np.ndarray:
    p = np.asarray(packet, dtype=np.uint64)
    if point is Point.RECEIVER:
        return p
    gbits = config.groups.bit_length() - 1
    return p >> np.uint64(64 - gbits) if gbits else np.zeros(len(p), np.uint64)


def build_record_frames(config: OpaConfig, point: Point | str, *, seq: int, packet,
                        timestamps, src_mac, dst_mac, record_groups: int = 0,
                        dropped: int = 0, mtu: int = MTU_PAYLOAD,
                        key: bytes | None = None, rice: bool = False,
                        shift: int = 0) -> list[bytes]:
    """The record frames of interval ``seq`` at ``point``: ``packet`` (64-bit packet
    hashes) and ``timestamps`` (ticks) of every packet the point counted, in its order;
    only those of the recorded groups (:func:`sampled_groups`) are kept, as the gateware
    does. ``dropped``: records the gateware could not keep (in the LAST frame).
    ``rice``: the coded records (sender :func:`code_sender_frames`, their timestamps
    quantised by ``shift`` bits, 0: lossless; receiver :func:`code_receiver_frames`,
    ``shift`` 0 only)."""
    point = Point(point)
    fmt = record_format(config, point)
    groups = sampled_groups(config, record_groups)
    p = np.asarray(packet, dtype=np.uint64)
    ts = np.asarray(timestamps, dtype=np.uint64)
    if p.shape != ts.shape:
        raise ValueError("need one timestamp per packet hash")
    if point is Point.RECEIVER and shift:
        raise ValueError(f"the receiver's arrival ticks are never quantised: shift must "
                         f"be 0, not {shift!r}")
    if not (isinstance(shift, int) and 0 <= shift <= (RICE_MAX_SHIFT if rice else 0)):
        raise ValueError(f"shift must be 0..{RICE_MAX_SHIFT} with rice (0 without), "
                         f"not {shift!r}")
    gbits = config.groups.bit_length() - 1
    g = p >> np.uint64(64 - gbits) if gbits else np.zeros(len(p), np.uint64)
    keep = g < np.uint64(groups)
    p, ts = p[keep], ts[keep]
    keys = _keys_of(config, point, p)
    if rice:
        coded = (code_receiver_frames(keys, ts, coded_words_per_frame(mtu))
                 if point is Point.RECEIVER
                 else code_sender_frames(keys, ts, gbits, shift, coded_words_per_frame(mtu))) \
            or [(0, RICE_K_INIT, 0, b"")]
        chunks = [(n, base, bytes([RICE_CODING, k, shift, 0]) + body)
                  for n, k, base, body in coded]
    else:
        per = records_per_frame(config, point, mtu)
        starts = frame_records(ts, per, fmt.offset_bits) + [len(ts)]
        chunks = [(b - a, int(ts[a]) if b > a else 0, (a, b))
                  for a, b in zip(starts[:-1], starts[1:])]
    flags = RecordFlags.RECEIVER if point is Point.RECEIVER else RecordFlags.NONE
    flags |= RecordFlags.CODED if rice else RecordFlags.NONE
    frames = []
    for index, (n, base, body) in enumerate(chunks):
        last = index == len(chunks) - 1
        values = {"dst_mac": mac_to_bytes(dst_mac), "src_mac": mac_to_bytes(src_mac),
                  "ethertype": ETHERTYPE_CONTROL, "version": VERSION,
                  "type": TYPE_OPA_RECORDS, "flags": int(flags | (RecordFlags.LAST if last
                                                                 else 0)),
                  "kind": KIND_CODES["opa"], "seq": seq, "config_id": config.config_id,
                  "record_count": n, "record_groups": groups,
                  "auth": AUTH_NONE if key is None else AUTH_KEYED, "chunk_index": index,
                  "dropped": dropped if last else 0, "timestamp": base}
        content = bytearray(PAYLOAD_OFFSET)
        for f in RECORD_HEADER_FIELDS:
            v = values[f.name]
            content[f.offset:f.end] = v if isinstance(v, bytes) else int(v).to_bytes(
                f.size, "big")
        if not rice:
            a, b = body
            body = fmt.pack(keys[a:b], (ts[a:b] - np.uint64(base)))
        content += body
        out = content + siphash_tag(bytes(content), ZERO_KEY if key is None else key)
        frames.append(bytes(out + bytes(max(0, MIN_FRAME_BYTES - len(out)))))
    return frames


@dataclass(frozen=True)
class RecordFrame:
    """A parsed record frame: its records as keys (group index or packet hash) and full
    timestamps (base + offset)."""
    src_mac: bytes
    point: Point
    seq: int
    config_id: int
    chunk_index: int
    last: bool
    record_groups: int
    dropped: int
    auth: int
    keys: np.ndarray = field(repr=False)
    timestamps: np.ndarray = field(repr=False)
    #: coded records: the quantisation shift (-1: not coded; 0: lossless, always at
    #: the receiver)
    shift: int = -1


def _get(frame: bytes, name: str) -> int:
    f = _FIELDS[name]
    return int.from_bytes(frame[f.offset:f.end], "big")


def parse_record_frame(frame: bytes, config: OpaConfig, *, mtu: int = MTU_PAYLOAD,
                       key: bytes | None = None) -> RecordFrame:
    """Check and parse one record frame of ``config`` (SPEC §8.7's rules, in order);
    a :class:`ControlFrameError` subclass names what is wrong and the interval."""
    check_mtu(mtu)
    frame = bytes(frame)
    check_control_start(frame, mtu, {TYPE_OPA_RECORDS: "an OPA record frame"})
    seq = _get(frame, "seq")
    what = f"OPA record frame of interval {seq}"
    kind, config_id = _get(frame, "kind"), _get(frame, "config_id")
    if kind != KIND_CODES["opa"] or config_id != config.config_id:
        raise ControlConfigMismatch(f"{what}: kind {kind}, config ID "
                                    f"{config_id:#010x}; expected OPA "
                                    f"{config.config_id:#010x}")
    flags, auth = _get(frame, "flags"), _get(frame, "auth")
    defined = int(RecordFlags.LAST | RecordFlags.RECEIVER | RecordFlags.CODED)
    coded = bool(flags & RecordFlags.CODED)
    if flags & ~defined or auth not in (AUTH_NONE, AUTH_KEYED):
        raise MalformedFrameError(f"{what}: flags {flags:#04x} or auth byte {auth} undefined")
    point = Point.RECEIVER if flags & RecordFlags.RECEIVER else Point.SENDER
    fmt = record_format(config, point)
    count, index = _get(frame, "record_count"), _get(frame, "chunk_index")
    groups, dropped = _get(frame, "record_groups"), _get(frame, "dropped")
    last = bool(flags & RecordFlags.LAST)
    if not 1 <= groups <= config.groups:
        raise MalformedFrameError(f"{what}: record_groups {groups} outside 1..{config.groups}")
    if dropped and not last:
        raise MalformedFrameError(f"{what}: chunk {index} is not the last and says "
                                  f"{dropped} records dropped")
    if count == 0 and (not last or _get(frame, "timestamp")):
        raise MalformedFrameError(f"{what}: chunk {index} holds no records and is not an "
                                  f"empty last chunk with base 0")
    if coded:
        return _parse_coded(frame, config, key=key, what=what, seq=seq, index=index,
                            last=last, count=count, groups=groups, dropped=dropped,
                            auth=auth, point=point)
    end = PAYLOAD_OFFSET + fmt.record_bytes * count
    if len(frame) < end + TAG_BYTES:
        raise TruncatedFrameError(f"{what}: chunk {index} declares {count} records and a tag "
                                  f"({end + TAG_BYTES} bytes), the frame has {len(frame)}")
    check_tail(frame, end, key, auth, f"{what}, chunk {index}")
    keys, offsets = fmt.unpack(frame[PAYLOAD_OFFSET:end], count)
    if point is Point.SENDER and (keys >= np.uint64(groups)).any():
        raise MalformedFrameError(f"{what}: a record of a group ≥ record_groups {groups}")
    ts = (offsets + np.uint64(_get(frame, "timestamp"))).astype(np.int64)
    return RecordFrame(src_mac=frame[6:12], point=point, seq=seq,
                       config_id=_get(frame, "config_id"), chunk_index=index, last=last,
                       record_groups=groups, dropped=dropped, auth=auth, keys=keys,
                       timestamps=ts)


def _parse_coded(frame, config, *, key, what, seq, index, last, count, groups, dropped,
                 auth, point=Point.SENDER) -> RecordFrame:
    """The rest of :func:`parse_record_frame` for a coded frame: the coding word, the
    bitstream (its words and zero padding), the tag; timestamps decoded (lossy, sender
    only: ``(q << shift) + 2**(shift − 1)``); a receiver frame's keys are its packet
    hashes."""
    name = f"{what}, chunk {index}"
    if len(frame) < PAYLOAD_OFFSET + CODING_BYTES + TAG_BYTES:
        raise TruncatedFrameError(f"{name}: ends inside its coding word or tag")
    coding, k, shift, zero = frame[PAYLOAD_OFFSET:PAYLOAD_OFFSET + CODING_BYTES]
    receiver = point is Point.RECEIVER
    if coding != RICE_CODING or k > RICE_K_MAX or shift > (0 if receiver else
                                                            RICE_MAX_SHIFT) or zero:
        raise MalformedFrameError(f"{name}: coding word {coding}, k {k}, shift {shift}, "
                                  f"{zero} undefined")
    gbits = RECEIVER_ID_BITS if receiver else config.groups.bit_length() - 1
    start = PAYLOAD_OFFSET + CODING_BYTES
    room = (len(frame) - start - TAG_BYTES) // CODED_WORD_BYTES * CODED_WORD_BYTES
    try:
        g, d, bits = decode_sender_bits(frame[start:start + max(0, room)], count, gbits, k,
                                        lossy=shift > 0)
    except ValueError as e:
        raise TruncatedFrameError(f"{name}: {e}") from None
    end = start + CODED_WORD_BYTES * (-(-bits // 64))
    body = int.from_bytes(frame[start:end], "big") if end > start else 0
    if body & ((1 << (8 * (end - start) - bits)) - 1):
        raise MalformedFrameError(f"{name}: the bitstream's padding bits are not zero")
    check_tail(frame, end, key, auth, name)
    keys = np.asarray(g, dtype=np.uint64)
    base = _get(frame, "timestamp")
    if shift:                   # K = (q << gbits) | group, summed from the first record
        first = ((base >> shift) << gbits) | (g[0] if count else 0)
        big = np.uint64(first) + np.cumsum(np.asarray(d, dtype=np.uint64), dtype=np.uint64)
        keys = big & np.uint64((1 << gbits) - 1)
        q = big >> np.uint64(gbits)
    else:
        q = np.uint64(base) + np.cumsum(np.asarray(d, dtype=np.uint64), dtype=np.uint64)
    if not receiver and (keys >= np.uint64(groups)).any():
        raise MalformedFrameError(f"{what}: a record of a group ≥ record_groups {groups}")
    ts = ((q << np.uint64(shift)) + np.uint64(lossy_error_bound(shift))).astype(np.int64)
    return RecordFrame(src_mac=frame[6:12], point=point, seq=seq,
                       config_id=_get(frame, "config_id"), chunk_index=index, last=last,
                       record_groups=groups, dropped=dropped, auth=auth, keys=keys,
                       timestamps=ts, shift=shift)


@dataclass(frozen=True)
class IntervalRecords:
    """One point's complete record stream of an interval: ``keys`` (group indices at the
    sender, packet hashes at the receiver) and ``timestamps`` in the point's order."""
    point: Point
    seq: int
    src_mac: bytes
    record_groups: int
    dropped: int
    keys: np.ndarray
    timestamps: np.ndarray
    #: coded sender records: the quantisation shift (every timestamp within
    #: :func:`lossy_error_bound` ticks); -1 for fixed-width records
    shift: int = -1


class RecordReassembler:
    """Collect record frames (any order) into :class:`IntervalRecords`, per source MAC,
    point and interval. An interval's stream is complete when its LAST chunk and every
    chunk before it are there; interval numbers per source and point only go forward
    (:func:`seq_after`); duplicated chunks, chunks after the LAST one and chunks that
    disagree on the sampling rule are errors naming the interval."""

    def __init__(self, config: OpaConfig, *, mtu: int = MTU_PAYLOAD, key: bytes | None = None):
        if not isinstance(config, OpaConfig):
            raise ValueError(f"config must be an OpaConfig, not {config!r}")
        self.config, self.mtu, self.key = config, check_mtu(mtu), key
        self._pending: dict[tuple, dict[int, RecordFrame]] = {}
        #: per pending stream: (its first chunk, the LAST chunk's index, highest index)
        self._summary: dict[tuple, tuple] = {}
        self._last_done: dict[tuple, int] = {}

    def add(self, frame) -> IntervalRecords | None:
        """Add one frame (bytes or :class:`RecordFrame`); the interval's records when
        this frame completes its stream, else None."""
        f = frame if isinstance(frame, RecordFrame) else parse_record_frame(
            frame, self.config, mtu=self.mtu, key=self.key)
        source = (f.src_mac, f.point)
        last = self._last_done.get(source)
        name = f"{f.point.value}'s records of interval {f.seq} from {mac_to_str(f.src_mac)}"
        if last is not None and not seq_after(f.seq, last):
            raise ReplayedIntervalError(f"{name}: not after interval {last}, the last one "
                                        f"taken from this source (replayed or old)")
        key = source + (f.seq,)
        got = self._pending.setdefault(key, {})
        if f.chunk_index in got:
            raise DuplicateChunkError(f"{name}: chunk {f.chunk_index} arrived twice")
        # every chunk so far agrees with the first and none lies after a LAST one: the
        # first chunk, the LAST one's index and the highest index say it (no rescan)
        first, end, top = self._summary.get(key, (f, None, f.chunk_index))
        if first.record_groups != f.record_groups:
            raise InconsistentChunkError(f"{name}: chunk {f.chunk_index} records "
                                         f"{f.record_groups} groups, chunk "
                                         f"{first.chunk_index} {first.record_groups}")
        if first.shift != f.shift:
            raise InconsistentChunkError(f"{name}: chunk {f.chunk_index} coded with shift "
                                         f"{f.shift}, chunk {first.chunk_index} "
                                         f"{first.shift} (-1: not coded)")
        if (end is not None and f.chunk_index > end) or (f.last and top > f.chunk_index):
            raise InconsistentChunkError(f"{name}: chunk after the last one")
        got[f.chunk_index] = f
        end = f.chunk_index if f.last else end
        self._summary[key] = (first, end, max(top, f.chunk_index))
        if end is not None and len(got) == end + 1:
            return self._complete(source, f.seq)
        return None

    @property
    def pending(self) -> list[tuple]:
        """``(src_mac, point, seq)`` of incomplete streams."""
        return sorted(self._pending, key=lambda k: (k[0], k[1].value, k[2]))

    def missing(self, source_seq: tuple) -> str:
        """What interval ``source_seq``'s stream lacks, in words."""
        got = self._pending.get(source_seq, {})
        ends = [c.chunk_index for c in got.values() if c.last]
        top = ends[0] if ends else max(got, default=-1)
        absent = [i for i in range(top + 1) if i not in got]
        text = f"chunks {absent} missing" if absent else ""
        if not ends:
            text += ("; " if text else "") + f"no last chunk (after chunk {top})"
        return text

    def _complete(self, source, seq) -> IntervalRecords:
        got = self._pending.pop(source + (seq,))
        self._summary.pop(source + (seq,), None)
        chunks = [got[i] for i in sorted(got)]
        self._last_done[source] = seq
        return IntervalRecords(
            point=source[1], seq=seq, src_mac=source[0],
            record_groups=chunks[0].record_groups, dropped=chunks[-1].dropped,
            keys=np.concatenate([c.keys for c in chunks]),
            timestamps=np.concatenate([c.timestamps for c in chunks]),
            shift=chunks[0].shift)

