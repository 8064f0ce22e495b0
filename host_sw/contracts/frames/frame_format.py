# SPDX-License-Identifier: BSD-2-Clause
"""The control/export frame format's constants: versions, types, interval flags, the header
field table, frame sizing, MAC helpers, the frame's tail (tag and padding checks, forward
interval numbers) and the errors of frame handling.

The byte layout is described in :mod:`host_sw.contracts.frames.control_frame`, which builds,
parses and reassembles frames with these and re-exports every name here, so importers use
that module. This part has no dependency on the synopsis snapshot, so the register map
(FROZEN_FLAGS) and the gateware's exporter read it without loading more (docs/DESIGN.md,
"Where each contract lives"). Contracts layer; no Amaranth import here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.contracts.siphash import TAG_BYTES, ZERO_KEY, siphash_tag

__all__ = ["VERSION", "TYPE_MARKER", "TYPE_SYNOPSIS", "TYPE_NAMES", "KIND_NAMES",
           "IntervalFlags", "INVALID_FLAGS", "Role", "ROLE_NAMES", "ROLE_FROM_MODE",
           "ROLE_SETTINGS", "effective_role", "pair_identity_problem", "FrameField",
           "HEADER_FIELDS",
           "RESERVED_FIELDS", "ETHERNET_HEADER_BYTES", "PAYLOAD_OFFSET",
           "CONTROL_HEADER_BYTES", "MTU_PAYLOAD", "MAX_MTU_PAYLOAD", "MIN_MTU_PAYLOAD",
           "check_mtu", "MAX_CHUNKS", "CHUNK_BYTES", "field_by_name", "words_per_frame",
           "frames_needed", "AUTH_NONE", "AUTH_KEYED", "AUTH_NAMES", "check_tail",
           "seq_after", "header_field", "check_control_start", "mac_to_bytes",
           "mac_to_str", "ControlFrameError", "NotControlFrameError",
           "TruncatedFrameError", "MalformedFrameError", "UnsupportedVersionError",
           "UnknownTypeError", "ControlConfigMismatch", "DuplicateChunkError",
           "MissingChunkError", "InconsistentChunkError", "BadTagError",
           "UnauthenticatedFrameError", "ReplayedIntervalError"]

#: Format version carried in every frame; a parser rejects other versions. Version 2
#: added the tag after the content and the ``auth`` byte (issue 11); version 3 the
#: ``role`` byte (the first of version 2's two reserved bytes).
VERSION = 3
#: Frame types.
TYPE_MARKER = 1
TYPE_SYNOPSIS = 2
TYPE_NAMES = {TYPE_MARKER: "marker", TYPE_SYNOPSIS: "synopsis chunk"}
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
#: Bytes of one counter-word chunk.
CHUNK_BYTES = 4
#: Ethernet payload bytes a frame may use (the standard MTU): the default of building,
#: parsing and reassembly.
MTU_PAYLOAD = 1500
#: The largest MTU a caller may ask for (jumbo frames): exports built for a jumbo MTU are
#: parsed and reassembled when the receiving side is given the same ``mtu``.
MAX_MTU_PAYLOAD = 9000
#: The smallest Ethernet payload (a 60-byte frame without FCS): the smallest MTU a parser
#: accepts, since every control frame is at least this long.
MIN_MTU_PAYLOAD = 46
#: Most chunks (frames) one interval's export may take (16-bit chunk count).
MAX_CHUNKS = 0xFFFF
#: Values of the ``auth`` byte: the tag is SipHash-2-4 under the all-zero key (integrity
#: only) or under the configured key (authenticated, docs/SPEC.md §6 "Tag").
AUTH_NONE = 0
AUTH_KEYED = 1
AUTH_NAMES = {AUTH_NONE: "integrity only (zero key)", AUTH_KEYED: "authenticated (keyed)"}


class IntervalFlags(enum.IntFlag):
    """Flags of an interval (the ``flags`` byte; the FROZEN_FLAGS register uses the same
    bits).

    OVERRUN: a boundary found the other copy not yet released; the interval spans more than
    one boundary (its counters are not one interval's) — invalid.
    SEQUENCE_GAP: the receiver saw a marker whose sequence number skipped (a marker was
    lost): the interval's edges do not match the sender's — invalid.
    CONFIG_CHANGED: CONFIG_ID was written during the interval — invalid.
    TIME_MODE: the boundaries were time-based (informational).
    """
    NONE = 0
    OVERRUN = 0x01
    SEQUENCE_GAP = 0x02
    CONFIG_CHANGED = 0x04
    TIME_MODE = 0x80


class Role(enum.IntEnum):
    """A measurement point's role in a pair (the FROZEN_ROLE register, the record's
    ``role`` byte and the synopsis chunk frames' ``role`` byte): NONE (not said: a
    manual or time-mode point the host gave no role), SENDER, RECEIVER."""
    NONE = 0
    SENDER = 1
    RECEIVER = 2


#: Role names, as snapshot files write them.
ROLE_NAMES = {Role.NONE: "none", Role.SENDER: "sender", Role.RECEIVER: "receiver"}
#: The role an INTERVAL_MODE.mode implies (2 marker sender, 3 marker receiver); the other
#: modes imply none.
ROLE_FROM_MODE = {2: Role.SENDER, 3: Role.RECEIVER}
#: The ROLE register's ``role`` field: 0 = the role INTERVAL_MODE.mode implies
#: (:data:`ROLE_FROM_MODE`), 1 = sender, 2 = receiver, 3 = none.
ROLE_SETTINGS = {"auto": 0, "sender": 1, "receiver": 2, "none": 3}


def effective_role(setting: int, mode: int) -> Role:
    """The role a core stamps into an interval (FROZEN_ROLE) from the ROLE register's
    ``setting`` (:data:`ROLE_SETTINGS`) and INTERVAL_MODE.mode."""
    if setting == 0:
        return ROLE_FROM_MODE.get(mode, Role.NONE)
    return Role(setting) if setting in (1, 2) else Role.NONE


def pair_identity_problem(sender_role, sender_mac, receiver_role, receiver_mac,
                          accepted_source=None) -> str | None:
    """Why two points' records cannot be one stream's sender and receiver, or None.

    The roles must be SENDER and RECEIVER (swapped or unsaid roles are refused), the two
    source MACs (ints or 6 bytes; None: not known) must differ (else the same point
    twice), and the receiver's accepted marker source, when known, must be the sender's
    MAC (else the receiver measured another sender's stream). Each reason is one line."""
    def name(role):
        return ("unknown" if role is None or role not in tuple(Role)
                else ROLE_NAMES[Role(role)])
    as_int = (lambda m: None if m is None else
              int.from_bytes(m, "big") if isinstance(m, (bytes, bytearray)) else int(m))
    sender_mac, receiver_mac, accepted_source = map(as_int, (sender_mac, receiver_mac,
                                                             accepted_source))
    if sender_role == Role.RECEIVER and receiver_role == Role.SENDER:
        return ("sender and receiver swapped: the sender's input comes from a receiver, "
                "the receiver's from a sender; give them the other way round")
    if sender_mac is not None and sender_mac == receiver_mac:
        return (f"both inputs come from one point (source MAC "
                f"{mac_to_str(sender_mac.to_bytes(6, 'big'))}): the same point twice")
    for side, role, want in (("sender", sender_role, Role.SENDER),
                             ("receiver", receiver_role, Role.RECEIVER)):
        if role != want:
            return (f"the {side}'s input comes from a point whose role is {name(role)}, "
                    f"not {want.name.lower()} (program it with ldactl config --role)")
    if (accepted_source is not None and sender_mac is not None
            and accepted_source != sender_mac):
        return (f"the receiver accepts markers from "
                f"{mac_to_str(accepted_source.to_bytes(6, 'big'))}, not from the sender "
                f"{mac_to_str(sender_mac.to_bytes(6, 'big'))}: the two points measure "
                f"different streams")
    return None


#: Flags that make an interval's counters unusable for estimates.
INVALID_FLAGS = IntervalFlags.OVERRUN | IntervalFlags.SEQUENCE_GAP | IntervalFlags.CONFIG_CHANGED


@dataclass(frozen=True)
class FrameField:
    """One fixed field of a control frame: ``size`` bytes at byte ``offset`` of the frame,
    big-endian unsigned."""
    name: str
    offset: int
    size: int
    description: str

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def bits(self) -> int:
        return 8 * self.size


#: Every fixed field, in frame order; they tile bytes 0 .. PAYLOAD_OFFSET - 1 exactly.
HEADER_FIELDS: tuple[FrameField, ...] = (
    FrameField("dst_mac", 0, 6, "destination MAC address"),
    FrameField("src_mac", 6, 6, "source MAC address (a receiver accepts markers only from "
                                "the configured sender)"),
    FrameField("ethertype", 12, 2, f"{ETHERTYPE_CONTROL:#06x}"),
    FrameField("version", 14, 1, f"format version, {VERSION}"),
    FrameField("type", 15, 1, "1 = marker, 2 = synopsis chunk"),
    FrameField("flags", 16, 1, "IntervalFlags of the interval"),
    FrameField("kind", 17, 1, "synopsis kind: 1 LDA, 2 RDA, 3 LDS"),
    FrameField("seq", 18, 4, "interval sequence number (marker: the interval that ends; "
                             "chunk: the exported interval)"),
    FrameField("config_id", 22, 4, "configuration ID (docs/SPEC.md §5)"),
    FrameField("chunk_index", 26, 2, "this frame's chunk, 0 .. chunk_count - 1 (0 for markers)"),
    FrameField("chunk_count", 28, 2, "frames of the interval's export (0 for markers)"),
    FrameField("word_chunks", 30, 1, "32-bit chunks per counter word (config.layout.chunks)"),
    FrameField("auth", 31, 1, "0: tag under the zero key (integrity), 1: tag under the "
                              "configured key (authenticated)"),
    FrameField("first_word", 32, 4, "index of the first counter word in this frame"),
    FrameField("word_count", 36, 2, "counter words in this frame (0 for markers)"),
    FrameField("role", 38, 1, "synopsis chunk: the exporting point's role in the "
                              "interval (FROZEN_ROLE, Role); 0 in other frames"),
    FrameField("reserved1", 39, 1, "zero"),
    FrameField("timestamp", 40, 8, "sender's timebase (ticks) at the interval boundary"),
)
_BY_NAME = {f.name: f for f in HEADER_FIELDS}
#: Bytes of the Ethernet header (dst, src, EtherType).
ETHERNET_HEADER_BYTES = 14
#: First byte of the counter words (= bytes of the fixed header, Ethernet header included).
PAYLOAD_OFFSET = HEADER_FIELDS[-1].end
#: Bytes of the control header after the EtherType.
CONTROL_HEADER_BYTES = PAYLOAD_OFFSET - ETHERNET_HEADER_BYTES
RESERVED_FIELDS = tuple(f for f in HEADER_FIELDS if f.name.startswith("reserved"))


def field_by_name(name: str) -> FrameField:
    """The :class:`FrameField` called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no control frame field {name!r}; fields: {list(_BY_NAME)}") from None


def check_mtu(mtu: int) -> int:
    """``mtu`` (Ethernet payload bytes) if it is an integer in
    :data:`MIN_MTU_PAYLOAD` .. :data:`MAX_MTU_PAYLOAD`, else a ValueError."""
    if isinstance(mtu, bool) or not isinstance(mtu, int) or not (
            MIN_MTU_PAYLOAD <= mtu <= MAX_MTU_PAYLOAD):
        raise ValueError(f"mtu must be an integer number of Ethernet payload bytes in "
                         f"{MIN_MTU_PAYLOAD}..{MAX_MTU_PAYLOAD} (1500 standard, 9000 jumbo), "
                         f"not {mtu!r}")
    return mtu


def words_per_frame(word_chunks: int, mtu: int = MTU_PAYLOAD) -> int:
    """Most counter words of ``word_chunks`` chunks one frame carries within ``mtu``
    Ethernet payload bytes with the header and the tag (LDA 3 chunks: 121, LDS 4: 91,
    RDA 5: 72 at 1500)."""
    if mtu > MAX_MTU_PAYLOAD:
        raise ValueError(f"an MTU of {mtu} bytes is above the largest the format allows "
                         f"({MAX_MTU_PAYLOAD}, jumbo frames)")
    if word_chunks < 1:
        raise ValueError(f"word_chunks must be at least 1, not {word_chunks}")
    n = (mtu - CONTROL_HEADER_BYTES - TAG_BYTES) // (CHUNK_BYTES * word_chunks)
    if n < 1:
        raise ValueError(f"an MTU of {mtu} bytes cannot carry one {word_chunks}-chunk word "
                         f"after the {CONTROL_HEADER_BYTES}-byte control header and "
                         f"before the {TAG_BYTES}-byte tag")
    return min(n, 0xFFFF)


def frames_needed(buckets: int, word_chunks: int, mtu: int = MTU_PAYLOAD) -> int:
    """Synopsis chunk frames for ``buckets`` counter words."""
    per = words_per_frame(word_chunks, mtu)
    return max(1, -(-buckets // per))


def mac_to_bytes(mac) -> bytes:
    """A MAC address from ``"02:00:00:00:00:01"``, an int or 6 bytes."""
    if isinstance(mac, (bytes, bytearray)):
        if len(mac) != 6:
            raise ValueError(f"a MAC address is 6 bytes, not {len(mac)}")
        return bytes(mac)
    if isinstance(mac, int):
        if not 0 <= mac < (1 << 48):
            raise ValueError(f"a MAC address is 48 bits, not {mac:#x}")
        return mac.to_bytes(6, "big")
    parts = str(mac).replace("-", ":").split(":")
    try:
        if len(parts) != 6:
            raise ValueError
        out = bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"not a MAC address: {mac!r} (expected six hex bytes, "
                         f"02:00:00:00:00:01)") from None
    return out


def mac_to_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


# ---------------------------------------------------------------------------------------
# The frame's start: Ethernet and control header (every control frame type)
# ---------------------------------------------------------------------------------------

def header_field(frame: bytes, name: str) -> int:
    """The big-endian value of header field ``name`` (:data:`HEADER_FIELDS`) of ``frame``."""
    f = field_by_name(name)
    return int.from_bytes(frame[f.offset:f.end], "big")


def check_control_start(frame: bytes, mtu: int, types: dict[int, str]) -> int:
    """Rules 1–5 of docs/SPEC.md §6, which every control frame passes first whatever its
    type: an Ethernet header, the control EtherType, a whole control header, a payload
    within ``mtu``, this format's version, and a ``type`` among ``types`` (code → name,
    for the error). Returns the type."""
    if len(frame) < ETHERNET_HEADER_BYTES:
        raise TruncatedFrameError(f"frame of {len(frame)} bytes ends inside the Ethernet "
                                  f"header ({ETHERNET_HEADER_BYTES} bytes)")
    ethertype = header_field(frame, "ethertype")
    if ethertype != ETHERTYPE_CONTROL:
        raise NotControlFrameError(f"EtherType {ethertype:#06x} is not a control frame "
                                   f"({ETHERTYPE_CONTROL:#06x})")
    if len(frame) < PAYLOAD_OFFSET:
        raise TruncatedFrameError(f"control frame of {len(frame)} bytes ends inside its "
                                  f"{PAYLOAD_OFFSET}-byte header")
    if len(frame) - ETHERNET_HEADER_BYTES > mtu:
        raise MalformedFrameError(f"control frame payload of "
                                  f"{len(frame) - ETHERNET_HEADER_BYTES} bytes exceeds the "
                                  f"{mtu}-byte MTU (frames built for a larger MTU need the "
                                  f"same mtu here, at most {MAX_MTU_PAYLOAD})")
    version = header_field(frame, "version")
    if version != VERSION:
        raise UnsupportedVersionError(f"control frame version {version}; this host "
                                      f"understands version {VERSION}")
    ftype = header_field(frame, "type")
    if ftype not in types:
        raise UnknownTypeError(f"control frame type {ftype} is not "
                               + " or ".join(f"{name} ({code})" for code, name in types.items()))
    return ftype


# ---------------------------------------------------------------------------------------
# The frame's tail: tag and padding; interval numbers
# ---------------------------------------------------------------------------------------

def check_tail(frame: bytes, end: int, key: bytes | None, auth: int, what: str) -> None:
    """Rules 14 and 15 of docs/SPEC.md §6: the tag at ``end`` (the content's end, the
    frame's first ``end`` bytes being what it covers) and the padding after it, checked
    against ``key`` (None: the zero key) and the frame's ``auth`` byte; ``what`` names the
    frame in the errors."""
    if len(frame) < end + TAG_BYTES:
        raise TruncatedFrameError(f"{what}: frame of {len(frame)} bytes ends before its "
                                  f"{TAG_BYTES}-byte tag (at {end})")
    _check_padding(frame, end + TAG_BYTES)
    if key is None and auth == AUTH_KEYED:
        raise UnauthenticatedFrameError(f"{what} is authenticated (keyed tag) and no key "
                                        f"was given to check it")
    if key is not None and auth != AUTH_KEYED:
        raise UnauthenticatedFrameError(f"{what} is not authenticated (its tag is under the "
                                        f"zero key) and a key was given")
    if siphash_tag(frame[:end], ZERO_KEY if key is None else key) != frame[end:end + TAG_BYTES]:
        raise BadTagError(f"{what}: the tag does not match the content "
                          f"({'under the key given' if key is not None else 'integrity check'}"
                          f"): the frame was changed or made without the key")


def _check_padding(frame: bytes, end: int) -> None:
    extra = len(frame) - end
    if extra and len(frame) > MIN_FRAME_BYTES:
        raise MalformedFrameError(f"{extra} unexpected byte(s) after the control frame's "
                                  f"content (only zero padding up to {MIN_FRAME_BYTES} "
                                  f"bytes is allowed)")
    if any(frame[end:]):
        raise MalformedFrameError("the padding after the control frame's content is not zero")


def seq_after(seq: int, last: int) -> bool:
    """Whether interval number ``seq`` is forward of ``last``: 1 to 2³¹ − 1 ahead modulo
    2³² (serial number arithmetic, RFC 1982, so the 32-bit number may wrap). The receiving
    core's marker check is the same (docs/SPEC.md §6)."""
    return 0 < (seq - last) % (1 << 32) < (1 << 31)


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------

class ControlFrameError(ValueError):
    """A control frame, or an interval's set of frames, is not acceptable."""


class NotControlFrameError(ControlFrameError):
    """The frame's EtherType is not 0x88B5."""


class TruncatedFrameError(ControlFrameError):
    """The frame ends before its header or its declared words."""


class MalformedFrameError(ControlFrameError):
    """A field holds a value the format does not allow."""


class UnsupportedVersionError(ControlFrameError):
    """The version byte is not :data:`VERSION`."""


class UnknownTypeError(ControlFrameError):
    """The type byte is neither marker nor synopsis chunk (or not the type expected)."""


class ControlConfigMismatch(ControlFrameError):
    """The frame's configuration ID, kind or word size differs from the expected
    configuration."""


class DuplicateChunkError(ControlFrameError):
    """A chunk of an interval arrived twice."""


class MissingChunkError(ControlFrameError):
    """An interval's export lacks chunks."""


class InconsistentChunkError(ControlFrameError):
    """Chunks of one interval disagree (count, flags, timestamp) or do not tile the
    synopsis."""


class BadTagError(ControlFrameError):
    """The frame's tag is not the SipHash-2-4 of its content under the key the receiver
    uses: the frame was changed on the way, or made by someone without the key."""


class UnauthenticatedFrameError(ControlFrameError):
    """The receiver has a key and the frame is not authenticated (``auth`` = 0), or the
    frame is authenticated and the receiver has no key to check it."""


class ReplayedIntervalError(ControlFrameError):
    """An interval number not forward of the last one taken from that source: a replayed
    or old interval."""
