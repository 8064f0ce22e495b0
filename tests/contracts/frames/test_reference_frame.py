# SPDX-License-Identifier: BSD-2-Clause
"""host_sw.contracts.frames.reference_frame: RLI's reference frame built and parsed, tag checked,
not taken for a marker."""

import pytest

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.frame_format import UnknownTypeError
from host_sw.contracts.frames.control_frame import parse_control_frame
from host_sw.contracts.frames.frame_format import BadTagError, UnauthenticatedFrameError
from host_sw.contracts.frames.reference_frame import (REFERENCE_FRAME_BYTES, TYPE_REFERENCE,
                                               build_reference, parse_reference)
from host_sw.contracts.siphash import ZERO_KEY, siphash_tag

SRC, DST = "02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff"


def test_round_trip_and_layout():
    frame = build_reference(RliConfig(), seq=7, timestamp=0x123456789A, src_mac=SRC,
                            dst_mac=DST)
    assert len(frame) == REFERENCE_FRAME_BYTES == 60
    assert frame[12:14] == b"\x88\xb5" and frame[15] == TYPE_REFERENCE and frame[17] == 5
    assert frame[40:48] == (0x123456789A).to_bytes(8, "big")
    assert frame[48:56] == siphash_tag(frame[:48], ZERO_KEY) and frame[56:] == bytes(4)
    ref = parse_reference(frame)
    assert (ref.seq, ref.timestamp, ref.kind, ref.authenticated) == (7, 0x123456789A,
                                                                     "rli", False)
    with pytest.raises(UnknownTypeError):      # never a marker
        parse_control_frame(frame)


def test_tag_and_key_are_checked():
    key = bytes(range(16))
    frame = bytearray(build_reference(RliConfig(), seq=1, timestamp=5, src_mac=SRC,
                                      dst_mac=DST, key=key))
    assert parse_reference(frame, key=key).authenticated
    with pytest.raises(UnauthenticatedFrameError):
        parse_reference(frame)
    frame[41] ^= 1
    with pytest.raises(BadTagError):
        parse_reference(frame, key=key)
