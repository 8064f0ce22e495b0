# SPDX-License-Identifier: BSD-2-Clause
"""The control/export frame format (EtherType 0x88B5): markers and synopsis chunks.

In docs/DESIGN.md ("Data flow of a counter") this is the "interval control ► exporter ►
control frames" edge:
the sender's gateware inserts **marker** frames at interval boundaries and streams its
frozen copy out as **synopsis chunk** frames; the receiver (gateware or host) parses them.
This module is the one definition of the byte layout (``docs/SPEC.md`` §6): the header is
a table of fields (:data:`HEADER_FIELDS`) that :func:`build_marker` /
:func:`build_synopsis_frames` and :func:`parse_control_frame` both walk, and the gateware
exporter imports the same table and constants (defined in
:mod:`host_sw.contracts.frames.frame_format`, re-exported here). No Amaranth import here.

Layout (multi-byte fields big-endian; byte offsets in the frame)::

    0 dst MAC | 6 src MAC | 12 EtherType 0x88B5 | 14 version | 15 type | 16 flags | 17 kind
    18 seq (u32) | 22 config ID (u32) | 26 chunk index (u16) | 28 chunk count (u16)
    30 word chunks (u8) | 31 auth | 32 first word (u32) | 36 word count (u16)
    38 reserved (u16) | 40 timestamp (u64) | 48 counter words ... | tag (8 bytes)

Counter words follow at :data:`PAYLOAD_OFFSET` (48): word ``first_word .. first_word +
word_count - 1`` of the synopsis in memory order (``Synopsis.words()``), each as
``word_chunks`` 32-bit big-endian chunks, least significant chunk first (as on the bus).
A marker frame carries no words (``chunk_count = word_count = 0``) and is zero-padded to
the 60-byte Ethernet minimum; a frame's Ethernet payload (from the EtherType's end) never
exceeds the MTU: :data:`MTU_PAYLOAD` by default, up to :data:`MAX_MTU_PAYLOAD` (jumbo
frames) when builder and receiver are both given ``mtu``.

Every frame's content (bytes 0 to the end of its words) is followed by an 8-byte **tag**,
SipHash-2-4 of the content (:mod:`host_sw.contracts.siphash`): under the all-zero key
(``auth`` = 0, an integrity check, since a capture has no FCS) or under the configured
128-bit key (``auth`` = 1, authenticated mode, as STAMP (RFC 8762) and TWAMP offer). The
parser checks the structure (lengths, version, type, kind, chunk tiling) and the tag; the
reassembler the consistency of an interval's chunks and that interval numbers from one
source only go forward (a replayed or old interval is an error naming it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.frames.frame_format import (
    CHUNK_BYTES, HEADER_FIELDS, INVALID_FLAGS,
    KIND_NAMES, MAX_CHUNKS, MTU_PAYLOAD, PAYLOAD_OFFSET,
    RESERVED_FIELDS, TYPE_MARKER, TYPE_NAMES, TYPE_SYNOPSIS, VERSION,
    ControlConfigMismatch, DuplicateChunkError, InconsistentChunkError, IntervalFlags, MalformedFrameError, MissingChunkError,
    TruncatedFrameError, UnknownTypeError, check_mtu, frames_needed, mac_to_bytes, mac_to_str, words_per_frame,
    AUTH_KEYED, AUTH_NAMES, AUTH_NONE, ReplayedIntervalError, Role,
    check_tail, check_control_start, header_field, seq_after,
)
from host_sw.contracts.siphash import TAG_BYTES
from host_sw.contracts.siphash import ZERO_KEY, siphash_tag
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.contracts.synopsis import Synopsis

__all__ = ["MarkerFrame", "SynopsisChunk", "ReassembledSynopsis", "build_marker",
           "build_synopsis_frames", "parse_control_frame", "SynopsisReassembler",
           "reassemble"]

# ---------------------------------------------------------------------------------------
# Parsed frames
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MarkerFrame:
    """An interval boundary marker: interval ``seq`` ends at the sender's ``timestamp``."""
    dst_mac: bytes
    src_mac: bytes
    flags: IntervalFlags
    kind: str
    seq: int
    config_id: int
    timestamp: int
    word_chunks: int
    auth: int = AUTH_NONE


@dataclass(frozen=True)
class SynopsisChunk:
    """One frame of an interval's exported synopsis: counter words ``first_word ..
    first_word + len(words) - 1``."""
    dst_mac: bytes
    src_mac: bytes
    flags: IntervalFlags
    kind: str
    seq: int
    config_id: int
    chunk_index: int
    chunk_count: int
    word_chunks: int
    first_word: int
    timestamp: int
    words: tuple[int, ...] = field(repr=False)
    auth: int = AUTH_NONE
    role: Role = Role.NONE


@dataclass(frozen=True)
class ReassembledSynopsis:
    """An interval's synopsis rebuilt from its chunks."""
    seq: int
    flags: IntervalFlags
    timestamp: int
    src_mac: bytes
    synopsis: Synopsis
    role: Role = Role.NONE

    @property
    def valid(self) -> bool:
        return not (self.flags & INVALID_FLAGS)


# ---------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------

def _put_header(buf: bytearray, values: dict) -> None:
    for f in HEADER_FIELDS:
        v = values.get(f.name, 0)
        if isinstance(v, (bytes, bytearray)):
            if len(v) != f.size:
                raise ValueError(f"{f.name} must be {f.size} bytes, not {len(v)}")
            buf[f.offset:f.end] = v
            continue
        v = int(v)
        if not 0 <= v < (1 << f.bits):
            raise ValueError(f"{f.name} = {v} does not fit {f.bits} bits")
        buf[f.offset:f.end] = v.to_bytes(f.size, "big")


def _common(config: SynopsisConfig, seq, flags, timestamp, src_mac, dst_mac,
            key) -> dict:
    return {"dst_mac": mac_to_bytes(dst_mac), "src_mac": mac_to_bytes(src_mac),
            "ethertype": ETHERTYPE_CONTROL, "version": VERSION, "flags": int(flags),
            "kind": KIND_CODES[config.kind], "seq": seq, "config_id": config.config_id,
            "word_chunks": config.layout.chunks, "timestamp": timestamp,
            "auth": AUTH_NONE if key is None else AUTH_KEYED}


def _tagged(content: bytearray, key) -> bytes:
    """``content`` + its tag (zero key when ``key`` is None), zero-padded to 60 bytes."""
    out = content + siphash_tag(content, ZERO_KEY if key is None else key)
    return bytes(out + bytes(max(0, MIN_FRAME_BYTES - len(out))))


def build_marker(config: SynopsisConfig, *, seq: int, timestamp: int, src_mac, dst_mac,
                 flags: int = 0, key: bytes | None = None) -> bytes:
    """The marker frame ending interval ``seq`` at the sender's ``timestamp`` (ticks):
    header, tag (authenticated under ``key`` when given, else under the zero key),
    zero-padded to the 60-byte minimum."""
    values = _common(config, seq, flags, timestamp, src_mac, dst_mac, key)
    values["type"] = TYPE_MARKER
    buf = bytearray(PAYLOAD_OFFSET)
    _put_header(buf, values)
    return _tagged(buf, key)


def build_synopsis_frames(synopsis: Synopsis, *, seq: int, src_mac, dst_mac,
                          flags: int = 0, timestamp: int = 0,
                          mtu: int = MTU_PAYLOAD, key: bytes | None = None,
                          role: int = Role.NONE) -> list[bytes]:
    """The synopsis chunk frames exporting interval ``seq``'s ``synopsis``, made by a
    point of ``role`` (:class:`Role`: its FROZEN_ROLE).

    Words go in memory order, :func:`words_per_frame` to a frame (the last frame may hold
    fewer), each word as ``config.layout.chunks`` big-endian 32-bit chunks, least
    significant chunk first; then the tag (under ``key`` when given: authenticated; else
    under the zero key).

    Raises
    ------
    ValueError
        When the export would need more than :data:`MAX_CHUNKS` frames at this ``mtu``.
    """
    config = synopsis.config
    chunks = config.layout.chunks
    per = words_per_frame(chunks, mtu)
    count = frames_needed(config.buckets, chunks, mtu)
    if count > MAX_CHUNKS:
        raise ValueError(f"the {config.kind} synopsis of {config.buckets} words needs {count} "
                         f"frames at an MTU of {mtu} bytes; the chunk count allows "
                         f"{MAX_CHUNKS} (use a larger MTU)")
    words = synopsis.words()
    base = _common(config, seq, flags, timestamp, src_mac, dst_mac, key)
    base.update(type=TYPE_SYNOPSIS, chunk_count=count, role=Role(role))
    layout = config.layout
    frames = []
    for index in range(count):
        first = index * per
        part = words[first:first + per]
        buf = bytearray(PAYLOAD_OFFSET + CHUNK_BYTES * chunks * len(part))
        _put_header(buf, dict(base, chunk_index=index, first_word=first,
                              word_count=len(part)))
        pos = PAYLOAD_OFFSET
        for w in part:
            for c in layout.to_chunks(w):
                buf[pos:pos + CHUNK_BYTES] = c.to_bytes(CHUNK_BYTES, "big")
                pos += CHUNK_BYTES
        frames.append(_tagged(buf, key))
    return frames


# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------


def parse_control_frame(frame: bytes, *, expected: SynopsisConfig | None = None,
                        mtu: int = MTU_PAYLOAD,
                        key: bytes | None = None) -> MarkerFrame | SynopsisChunk:
    """Parse one control frame (from the destination MAC; without FCS).

    The checks, in this order, are docs/SPEC.md §6's acceptance rules. ``expected``, if
    given, is the configuration the frame must carry (ID, kind and word size). ``mtu`` is
    the largest Ethernet payload accepted (:data:`MTU_PAYLOAD` by default; up to
    :data:`MAX_MTU_PAYLOAD` for exports built for jumbo frames). ``key``: the 16-byte
    key of authenticated mode; then only frames authenticated under it are accepted;
    without it only integrity-tagged (zero key) frames. Raises a
    :class:`ControlFrameError` subclass saying what is wrong, or ValueError for a bad
    ``mtu``.
    """
    check_mtu(mtu)
    frame = bytes(frame)
    ftype = check_control_start(frame, mtu, TYPE_NAMES)
    kind_code = header_field(frame, "kind")
    if kind_code not in KIND_NAMES:
        raise MalformedFrameError(f"synopsis kind {kind_code} is not one of "
                                  f"{sorted(KIND_NAMES)} (" + ", ".join(
                                      f"{c} {n.upper()}" for c, n in sorted(
                                          KIND_NAMES.items())) + ")")
    auth = header_field(frame, "auth")
    if auth not in AUTH_NAMES:
        raise MalformedFrameError(f"auth byte {auth} is neither {AUTH_NONE} (integrity "
                                  f"tag) nor {AUTH_KEYED} (authenticated)")
    for f in RESERVED_FIELDS:
        if header_field(frame, f.name):
            raise MalformedFrameError(f"reserved byte(s) at {f.offset} are "
                                      f"{header_field(frame, f.name):#x}, not zero")
    flags_byte = header_field(frame, "flags")
    defined = sum(f.value for f in IntervalFlags)
    if flags_byte & ~defined:
        raise MalformedFrameError(f"flags {flags_byte:#04x} has undefined bits "
                                  f"{flags_byte & ~defined:#04x}")
    flags = IntervalFlags(flags_byte)
    kind, seq, config_id = KIND_NAMES[kind_code], header_field(frame, "seq"), header_field(frame, "config_id")
    word_chunks = header_field(frame, "word_chunks")
    if word_chunks < 1:
        raise MalformedFrameError("word_chunks is 0; a counter word has at least one chunk")
    if expected is not None:
        _check_expected(expected, kind, config_id, word_chunks, seq)
    common = dict(dst_mac=frame[0:6], src_mac=frame[6:12], flags=flags, kind=kind, seq=seq,
                  config_id=config_id, word_chunks=word_chunks,
                  timestamp=header_field(frame, "timestamp"), auth=auth)
    index, count = header_field(frame, "chunk_index"), header_field(frame, "chunk_count")
    first, n = header_field(frame, "first_word"), header_field(frame, "word_count")
    role = header_field(frame, "role")
    if ftype == TYPE_MARKER:
        if index or count or first or n or role:
            raise MalformedFrameError(f"marker frame with chunk fields set (chunk {index} "
                                      f"of {count}, words {first}+{n}, role {role})")
        check_tail(frame, PAYLOAD_OFFSET, key, auth, f"marker of interval {seq}")
        return MarkerFrame(**common)
    if count == 0 or index >= count:
        raise MalformedFrameError(f"chunk index {index} is not below chunk count {count}")
    if role not in tuple(Role):
        raise MalformedFrameError(f"role {role} is not one of {[int(r) for r in Role]} "
                                  f"(none, sender, receiver)")
    if n == 0:
        raise MalformedFrameError(f"synopsis chunk {index} of interval {seq} holds no words")
    end = PAYLOAD_OFFSET + CHUNK_BYTES * word_chunks * n
    if len(frame) < end + TAG_BYTES:
        raise TruncatedFrameError(f"synopsis chunk {index} of interval {seq} declares {n} "
                                  f"words and a tag ({end + TAG_BYTES} bytes) but the frame "
                                  f"has {len(frame)} bytes")
    check_tail(frame, end, key, auth, f"synopsis chunk {index} of interval {seq}")
    raw = [int.from_bytes(frame[p:p + CHUNK_BYTES], "big")
           for p in range(PAYLOAD_OFFSET, end, CHUNK_BYTES)]
    words = tuple(sum(raw[k + c] << (32 * c) for c in range(word_chunks))
                  for k in range(0, len(raw), word_chunks))
    return SynopsisChunk(**common, chunk_index=index, chunk_count=count, first_word=first,
                         words=words, role=Role(role))


def _check_expected(config: SynopsisConfig, kind: str, config_id: int, word_chunks: int,
                    seq: int) -> None:
    if config_id != config.config_id or kind != config.kind:
        raise ControlConfigMismatch(
            f"interval {seq}: frame from a {kind.upper()} synopsis with config ID "
            f"{config_id:#010x}, expected {config.kind.upper()} {config.config_id:#010x}")
    if word_chunks != config.layout.chunks:
        raise ControlConfigMismatch(f"interval {seq}: {word_chunks} chunks per word, the "
                                    f"configuration has {config.layout.chunks}")


# ---------------------------------------------------------------------------------------
# Reassembly
# ---------------------------------------------------------------------------------------

class SynopsisReassembler:
    """Collect synopsis chunk frames (any order, several intervals at once) into
    :class:`ReassembledSynopsis` objects.

    Parameters
    ----------
    config : SynopsisConfig
        The configuration the sender must use (its ID is checked in every frame; its
        layout and shape decode the words).
    mtu : int
        The largest Ethernet payload of a frame given as bytes (:data:`MTU_PAYLOAD`; up to
        :data:`MAX_MTU_PAYLOAD` for exports built for jumbo frames).
    key : bytes or None
        The 16-byte key of authenticated mode (frames given as bytes must then be
        authenticated under it), or None (integrity-tagged frames only).

    Interval numbers from one source MAC only go forward (:func:`seq_after`, serial
    number arithmetic): a chunk of an interval at or before the last one completed from
    that source is a :class:`ReplayedIntervalError` naming it.
    """

    def __init__(self, config: SynopsisConfig, *, mtu: int = MTU_PAYLOAD,
                 key: bytes | None = None):
        if not isinstance(config, SynopsisConfig) or not config.kind:
            raise ValueError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                             f"not {config!r}")
        self.config = config
        self.mtu = check_mtu(mtu)
        self.key = key
        self._pending: dict[int, dict[int, SynopsisChunk]] = {}
        self._last_done: dict[bytes, int] = {}

    def add(self, frame_or_chunk) -> ReassembledSynopsis | None:
        """Add one frame (bytes) or parsed :class:`SynopsisChunk`; return the interval's
        synopsis when this chunk completes it, else None."""
        chunk = frame_or_chunk
        if not isinstance(chunk, (SynopsisChunk, MarkerFrame)):
            chunk = parse_control_frame(chunk, expected=self.config, mtu=self.mtu,
                                        key=self.key)
        if isinstance(chunk, MarkerFrame):
            raise UnknownTypeError(f"interval {chunk.seq}: a marker frame is not a "
                                   f"synopsis chunk")
        last = self._last_done.get(chunk.src_mac)
        if last is not None and not seq_after(chunk.seq, last):
            raise ReplayedIntervalError(
                f"interval {chunk.seq} from {mac_to_str(chunk.src_mac)}: not after interval "
                f"{last}, the last one taken from this source (a replayed or old interval)")
        _check_expected(self.config, chunk.kind, chunk.config_id, chunk.word_chunks,
                        chunk.seq)
        got = self._pending.setdefault(chunk.seq, {})
        if got:
            ref = next(iter(got.values()))
            for name in ("chunk_count", "flags", "timestamp", "src_mac", "role"):
                if getattr(ref, name) != getattr(chunk, name):
                    raise InconsistentChunkError(
                        f"interval {chunk.seq}: chunk {chunk.chunk_index} has {name} "
                        f"{_show(getattr(chunk, name))}, chunk {ref.chunk_index} has "
                        f"{_show(getattr(ref, name))}")
        if chunk.chunk_index in got:
            raise DuplicateChunkError(f"interval {chunk.seq}: chunk {chunk.chunk_index} of "
                                      f"{chunk.chunk_count} arrived twice")
        got[chunk.chunk_index] = chunk
        if len(got) < chunk.chunk_count:
            return None
        return self._complete(chunk.seq)

    def missing(self, seq: int) -> list[int]:
        """Chunk indices of interval ``seq`` not yet received."""
        got = self._pending.get(seq, {})
        if not got:
            return []
        count = next(iter(got.values())).chunk_count
        return [i for i in range(count) if i not in got]

    @property
    def pending(self) -> list[int]:
        """Sequence numbers of incomplete intervals."""
        return sorted(self._pending)

    def finish(self, seq: int) -> ReassembledSynopsis:
        """Interval ``seq``'s synopsis; raise :class:`MissingChunkError` if incomplete."""
        if seq not in self._pending:
            raise MissingChunkError(f"interval {seq}: no synopsis chunk received")
        missing = self.missing(seq)
        if missing:
            count = next(iter(self._pending[seq].values())).chunk_count
            raise MissingChunkError(f"interval {seq}: {len(missing)} of {count} chunks "
                                    f"missing (indices {_ranges(missing)})")
        return self._complete(seq)

    def _complete(self, seq: int) -> ReassembledSynopsis:
        got = self._pending.pop(seq)
        chunks = [got[i] for i in sorted(got)]
        words: list[int] = []
        for c in chunks:
            if c.first_word != len(words):
                raise InconsistentChunkError(
                    f"interval {seq}: chunk {c.chunk_index} starts at word {c.first_word}, "
                    f"expected {len(words)} (chunks must tile the synopsis)")
            words.extend(c.words)
        if len(words) != self.config.buckets:
            raise InconsistentChunkError(f"interval {seq}: chunks hold {len(words)} words, "
                                         f"the configuration has {self.config.buckets}")
        top = 1 << self.config.layout.width
        if any(w >= top for w in words):
            raise MalformedFrameError(f"interval {seq}: a counter word has bits above the "
                                      f"{self.config.layout.width}-bit layout")
        ref = chunks[0]
        last = self._last_done.get(ref.src_mac)
        if last is not None and not seq_after(seq, last):
            raise ReplayedIntervalError(
                f"interval {seq} from {mac_to_str(ref.src_mac)}: not after interval {last}, "
                f"the last one taken from this source (a replayed or old interval)")
        self._last_done[ref.src_mac] = seq
        return ReassembledSynopsis(seq=seq, flags=ref.flags, timestamp=ref.timestamp,
                                   src_mac=ref.src_mac,
                                   synopsis=Synopsis.from_words(self.config, words),
                                   role=ref.role)


def reassemble(frames, config: SynopsisConfig, *, mtu: int = MTU_PAYLOAD,
               key: bytes | None = None) -> ReassembledSynopsis:
    """One interval's synopsis from all its frames (bytes or parsed chunks); every
    chunk must be present exactly once, and all must belong to one interval. ``mtu`` and
    ``key`` as for :class:`SynopsisReassembler`."""
    r = SynopsisReassembler(config, mtu=mtu, key=key)
    done = None
    for f in frames:
        if done is not None:
            raise InconsistentChunkError(f"frames after interval {done.seq} was complete")
        done = r.add(f)
        if len(r.pending) > 1:
            raise InconsistentChunkError(f"frames of several intervals: {r.pending}")
    if done is None:
        if not r.pending:
            raise MissingChunkError("no synopsis chunk frames")
        return r.finish(r.pending[0])
    return done


def _show(v):
    return mac_to_str(v) if isinstance(v, bytes) else (f"{int(v):#x}" if
                                                       isinstance(v, IntervalFlags) else v)


def _ranges(indices: list[int]) -> str:
    out, start, prev = [], None, None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)

