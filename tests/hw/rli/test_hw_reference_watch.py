# SPDX-License-Identifier: BSD-2-Clause
"""hw.rli.reference_watch.ReferenceWatch on tap records: a reference frame is taken with its
send tick; a marker, a data frame's look-alike, another kind's frame and a reference whose
check failed are not."""

import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import LdsConfig, RliConfig
from host_sw.contracts.frames.control_frame import build_marker
from host_sw.contracts.hashing import FrameClass
from host_sw.contracts.frames.reference_frame import build_reference
from hw.rli.reference_watch import ReferenceWatch

SRC, DST = "02:00:00:00:00:01", "ff:ff:ff:ff:ff:ff"


def _window(frame):
    return int.from_bytes(frame[:64].ljust(64, b"\0"), "little")


@pytest.mark.parametrize("frame, frame_class, expect", [
    (build_reference(RliConfig(), seq=3, timestamp=0xABCDE12345, src_mac=SRC, dst_mac=DST),
     FrameClass.CONTROL, (1, 1, 0xABCDE12345)),
    (build_marker(RliConfig(), seq=3, timestamp=5, src_mac=SRC, dst_mac=DST),
     FrameClass.CONTROL, (0, 0, None)),
    (build_reference(LdsConfig(), seq=3, timestamp=5, src_mac=SRC, dst_mac=DST),
     FrameClass.CONTROL, (0, 0, None)),
    (build_reference(RliConfig(), seq=3, timestamp=5, src_mac=SRC, dst_mac=DST),
     FrameClass.IPV4, (1, 0, None)),             # not a control frame: counted data
], ids=["reference", "marker", "other-kind", "class-ipv4"])
def test_watch(frame, frame_class, expect):
    dut = ReferenceWatch(window_bytes=64, ts_bits=40)
    got = []

    async def main(ctx):
        ctx.set(dut.record.valid, 1)
        ctx.set(dut.record.payload.window, _window(frame))
        ctx.set(dut.record.payload.frame_class, frame_class)
        ctx.set(dut.record.payload.timestamp, 777)
        await ctx.tick()
        ctx.set(dut.record.valid, 0)
        got.extend([ctx.get(dut.valid), ctx.get(dut.is_ref), ctx.get(dut.send),
                    ctx.get(dut.arrival)])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(main)
    sim.run()
    valid, is_ref, send = expect
    assert (got[0], got[1] & got[0]) == (valid, is_ref)
    if send is not None:
        assert (got[2], got[3]) == (send, 777)


def test_a_reference_whose_check_failed_is_not_taken_and_counted():
    # tag_ok low with a reference's record (hw.rli.rli_path: the tag, source or CONFIG_ID
    # check failed): neither a reference nor data, counted in references_bad_tag
    dut = ReferenceWatch(window_bytes=64, ts_bits=40)
    frame = build_reference(RliConfig(), seq=1, timestamp=99, src_mac=SRC, dst_mac=DST)
    got = []

    async def main(ctx):
        for ok in (0, 1):
            ctx.set(dut.tag_ok, ok)
            ctx.set(dut.record.valid, 1)
            ctx.set(dut.record.payload.window, _window(frame))
            ctx.set(dut.record.payload.frame_class, FrameClass.CONTROL)
            await ctx.tick()
            ctx.set(dut.record.valid, 0)
            valid = ctx.get(dut.valid)          # a clock after the record
            await ctx.tick()                    # the counts: a clock later
            got.append((valid, ctx.get(dut.references_seen),
                        ctx.get(dut.references_bad_tag)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(main)
    sim.run()
    assert got == [(0, 0, 1), (1, 1, 1)]
