# SPDX-License-Identifier: BSD-2-Clause
"""RLI's reference frame (EtherType 0x88B5, type 3): the one definition of its bytes.

Where it sits (docs/DESIGN.md; docs/SPEC.md "RLI", "Reference frame"): the sender's
gateware (:mod:`hw.rli.reference_source`) inserts reference frames between data frames; the
receiver (its gateware, or the host on a capture) recognises them and takes the delay
``arrival − timestamp``. A reference frame is laid out as a marker frame
(:func:`host_sw.contracts.frames.control_frame.build_marker`, docs/SPEC.md §6: the same header
fields, the same SipHash-2-4 tag rule over bytes 0..47, zero padding to 60 bytes) with

* ``type`` = :data:`TYPE_REFERENCE` (3), so no marker parser takes it for a boundary;
* ``seq``: the reference's sequence number (counts references, wrapping at 2³²);
* ``timestamp``: the sender's send tick (the ``t`` RLI's receiver subtracts);
* ``flags`` 0, ``chunk_*``/``first_word``/``word_count`` 0.

Kept beside :mod:`host_sw.contracts.frames.control_frame` (not inside it) so that module's
parser is unchanged; it rejects type 3 as an unknown type.
"""

from __future__ import annotations

from dataclasses import dataclass

from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.frames.control_frame import build_marker
from host_sw.contracts.frames.frame_format import (
    AUTH_KEYED, AUTH_NONE, MTU_PAYLOAD, PAYLOAD_OFFSET, MalformedFrameError,
    check_control_start, check_tail, field_by_name, header_field,
)
from host_sw.contracts.hashing import MIN_FRAME_BYTES
from host_sw.contracts.siphash import ZERO_KEY, siphash_tag

__all__ = ["TYPE_REFERENCE", "REFERENCE_FRAME_BYTES", "ReferenceFrame", "build_reference",
           "parse_reference"]

#: The control-frame ``type`` of a reference frame.
TYPE_REFERENCE = 3
#: A reference frame's length without FCS (the Ethernet minimum).
REFERENCE_FRAME_BYTES = MIN_FRAME_BYTES


@dataclass(frozen=True)
class ReferenceFrame:
    """A parsed reference frame: sent at ``timestamp`` (sender ticks), number ``seq``."""
    dst_mac: bytes
    src_mac: bytes
    kind: str
    seq: int
    config_id: int
    timestamp: int
    authenticated: bool



def build_reference(config: SynopsisConfig, *, seq: int, timestamp: int, src_mac, dst_mac,
                    key: bytes | None = None) -> bytes:
    """The reference frame number ``seq`` sent at ``timestamp``: the marker frame of the
    same fields with ``type`` 3 and its tag over the changed content."""
    marker = build_marker(config, seq=seq, timestamp=timestamp, src_mac=src_mac,
                          dst_mac=dst_mac, key=key)
    content = bytearray(marker[:PAYLOAD_OFFSET])
    content[field_by_name("type").offset] = TYPE_REFERENCE
    out = content + siphash_tag(bytes(content), ZERO_KEY if key is None else key)
    return bytes(out + bytes(max(0, REFERENCE_FRAME_BYTES - len(out))))


def parse_reference(frame: bytes, *, key: bytes | None = None) -> ReferenceFrame:
    """Check and parse a reference frame (its structure and tag, as a marker's);
    ``ControlFrameError`` subclasses name what is wrong."""
    frame = bytes(frame)
    check_control_start(frame, MTU_PAYLOAD, {TYPE_REFERENCE: "a reference frame"})
    kinds = {v: k for k, v in KIND_CODES.items()}
    if header_field(frame, "kind") not in kinds:
        raise MalformedFrameError(f"unknown synopsis kind code {header_field(frame, 'kind')}")
    for name in ("flags", "chunk_index", "chunk_count", "first_word", "word_count",
                 "reserved1"):
        if header_field(frame, name):
            raise MalformedFrameError(f"reference frame: {name} must be 0, "
                                      f"not {header_field(frame, name)}")
    auth = header_field(frame, "auth")
    if auth not in (AUTH_NONE, AUTH_KEYED):
        raise MalformedFrameError(f"auth byte {auth} is neither 0 nor 1")
    check_tail(frame, PAYLOAD_OFFSET, key, auth, f"reference frame {header_field(frame, 'seq')}")
    return ReferenceFrame(dst_mac=frame[0:6], src_mac=frame[6:12],
                          kind=kinds[header_field(frame, "kind")], seq=header_field(frame, "seq"),
                          config_id=header_field(frame, "config_id"),
                          timestamp=header_field(frame, "timestamp"),
                          authenticated=auth == AUTH_KEYED)
