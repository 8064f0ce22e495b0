# SPDX-License-Identifier: BSD-2-Clause
"""The marker source in the control domain (hw.inband.marker_crossing) on Amaranth's
simulator, two unrelated clocks, each side faster: its frames equal
host_sw.contracts.frames.control_frame.build_marker byte for byte with the inputs as they
were when each request was taken (they change at once after it), and each frame's beats
leave on consecutive datapath clocks while the port is ready (stored and forwarded)."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import ClockDomain, Module, UnusedElaboratable
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.frames.control_frame import build_marker
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.siphash import key_to_int
from hw.frames.frame import FrameStream
from hw.frames.frame_crossing import FrameDepths, store_and_forward
from hw.inband.marker_crossing import MarkerSourceCrossing
from hw.inband.marker_source import MarkerFrameSource
from sim_tb.lib.amaranth_streams import Sink, stream_put, wait_until

SRC_MAC = 0x020000000001
DST_MAC = 0x020000000002
KEY = bytes(range(16))

CASES = [
    # (config, data_width, sync period ns, ctrl period ns, p_ready)
    (LdaConfig(), 64, 5.0, 8.0, 1.0),
    (LdaConfig(), 64, 8.0, 5.0, 0.5),
    (LdaConfig(), 8, 10.0, 4.0, 0.7),
    (RdaConfig(), 512, 4.0, 9.0, 1.0),
]


@pytest.mark.parametrize("config,data_width,sync_ns,ctrl_ns,p_ready", CASES)
def test_crossing_markers_equal_build_marker(config, data_width, sync_ns, ctrl_ns, p_ready):
    rng = random.Random(data_width * 13 + int(sync_ns))
    dut = MarkerSourceCrossing(MarkerFrameSource(config=config, data_width=data_width))
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.domains.ctrl = ClockDomain("ctrl")
    top.submodules.dut = dut
    sink = Sink(dut.source, data_width, random.Random(1), p_ready=p_ready)
    requests = [(rng.getrandbits(32), rng.getrandbits(64), rng.choice(
                    [0, int(IntervalFlags.OVERRUN), 0x87]),
                 rng.choice([None, KEY]), rng.getrandbits(48), rng.getrandbits(48))
                for _ in range(5)]

    async def main(ctx):
        ctx.set(dut.config_id, config.config_id)
        await ctx.tick().repeat(3)
        for seq, ts, flags, key, src, dst in requests:
            ctx.set(dut.src_mac, src)
            ctx.set(dut.dst_mac, dst)
            ctx.set(dut.key, 0 if key is None else key_to_int(key))
            ctx.set(dut.auth, key is not None)
            await stream_put(ctx, dut.request, {"seq": seq, "timestamp": ts, "flags": flags})
            # the inputs change at once: the crossing has what it needs
            ctx.set(dut.request.payload, {"seq": 0, "timestamp": 0, "flags": 0})
            for name in ("src_mac", "dst_mac", "key", "auth"):
                ctx.set(getattr(dut, name), 0)
            await ctx.tick().repeat(rng.randrange(0, 40))
        await wait_until(ctx, lambda: len(sink.frames()) == len(requests), 20_000,
                         "markers")

    sim = Simulator(top)
    sim.add_clock(sync_ns * 1e-9, domain="sync")
    sim.add_clock(ctrl_ns * 1e-9, domain="ctrl", phase=rng.random() * ctrl_ns * 1e-9)
    sim.add_testbench(sink.run, background=True)
    sim.add_testbench(main)
    sim.run()

    assert sink.frames() == [
        build_marker(config, seq=seq, timestamp=ts, src_mac=src, dst_mac=dst, flags=flags,
                     key=key)
        for seq, ts, flags, key, src, dst in requests]
    if p_ready == 1.0:       # stored and forwarded: no frame has a gap
        for cycles in sink.frame_cycles():
            assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


def test_crossing_needs_two_domains():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="two domains"):
            MarkerSourceCrossing(MarkerFrameSource(config=LdaConfig(), data_width=64),
                                 control_domain="sync")
        gc.collect()


def test_the_readers_ready_reaches_no_fifo_read_enable_in_its_clock():
    """A whole frame stored, its first beat offered: the reader's ready changes nothing
    on the beat FIFO's read side within the clock (a register slice takes it), and the
    beats still leave on consecutive clocks (``frame_crossing.store_and_forward``)."""
    width = 64
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.domains.ctrl = ClockDomain("ctrl")
    source = FrameStream(width).create()
    port = FrameStream(width).flip().create()
    store_and_forward(top, source, port, depths=FrameDepths(longest=4, shortest=1),
                      data_width=width, w_domain="ctrl", r_domain="sync", name="frames")
    beats = top.submodules["frames_beats"]
    offered = []

    async def main(ctx):           # the writer, on the control clock
        ctx.set(source.valid, 1)
        for i in range(3):
            ctx.set(source.payload, {"data": i, "keep": 0xFF, "last": i == 2})
            while not ctx.get(source.ready):
                await ctx.tick("ctrl")
            await ctx.tick("ctrl")
        ctx.set(source.valid, 0)

    async def reader(ctx):
        await wait_until(ctx, lambda: ctx.get(port.valid), 200, "the stored frame")
        for ready in (0, 1, 0, 1):
            ctx.set(port.ready, ready)
            offered.append(ctx.get(beats.r_en))
        ctx.set(port.ready, 1)
        for i in range(3):
            assert ctx.get(port.valid) and ctx.get(port.payload.data) == i
            await ctx.tick()
        assert not ctx.get(port.valid)

    sim = Simulator(top)
    sim.add_clock(5e-9, domain="sync")
    sim.add_clock(8e-9, domain="ctrl")
    sim.add_testbench(main, background=True)
    sim.add_testbench(reader)
    sim.run()
    assert len(set(offered)) == 1
