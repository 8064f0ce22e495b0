# SPDX-License-Identifier: BSD-2-Clause
"""The exporter in the control domain (hw.inband.exporter_crossing) on Amaranth's
simulator, two unrelated clocks, each side faster: the frames out of either port equal
host_sw.contracts.frames.control_frame's builders byte for byte, each frame's beats leave
on consecutive datapath clocks while the port is ready (stored and forwarded), the shared
read port's holds only slow the reads, and busy / done / release / EXPORT_FRAMES behave as
the one-clock exporter's."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import ClockDomain, Module, UnusedElaboratable
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.frames.control_frame import build_synopsis_frames, reassemble
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.siphash import key_to_int
from host_sw.contracts.synopsis import Synopsis
from hw.inband.exporter import Exporter
from hw.inband.exporter_crossing import ExporterCrossing
from sim_tb.lib.amaranth_streams import FakeFrozenCopy, Sink

SRC_MAC = 0x020000000001
DST_MAC = 0x020000000002
KEY = bytes(range(16))


CASES = [
    # (config, data_width, mtu, sync period ns, ctrl period ns, read_ahead): small MTUs
    # give several frames, the last one short
    (LdaConfig(banks=2, rows=8, thresholds=(0, 3)), 64, 34 + 12 * 5, 6.4, 10.0, 16),
    (LdaConfig(banks=2, rows=8, thresholds=(0, 3)), 8, 34 + 12 * 5, 10.0, 4.0, 16),
    (RdaConfig(banks=2, buckets_per_bank=8), 64, 34 + 20 * 3, 7.0, 5.3, 16),
    # one clock three times the other, and few reads ahead: the reads in flight reach
    # read_ahead, while a FIFO's writer sees the other side's pointer clocks late
    (LdaConfig(banks=2, rows=32, thresholds=(0, 3)), 64, 34 + 12 * 5, 3.1, 9.7, 4),
    (RdaConfig(banks=2, buckets_per_bank=32), 64, 34 + 20 * 3, 9.7, 3.1, 4),
]


@pytest.mark.parametrize("config,data_width,mtu,sync_ns,ctrl_ns,read_ahead", CASES)
def test_crossing_exports_equal_the_builders(config, data_width, mtu, sync_ns, ctrl_ns,
                                             read_ahead):
    rng = random.Random(data_width * 7 + mtu)
    words = [rng.getrandbits(config.layout.width) for _ in range(config.buckets)]
    synopsis = Synopsis.from_words(config, words)
    dut = ExporterCrossing(Exporter(config=config, data_width=data_width, mtu=mtu,
                                    read_ahead=read_ahead))
    assert dut.frame_count > 2
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.domains.ctrl = ClockDomain("ctrl")
    top.submodules.dut = dut
    memory = FakeFrozenCopy(dut.frozen, words)
    inband = Sink(dut.inband, data_width, random.Random(1), p_ready=0.5)
    host = Sink(dut.host, data_width, random.Random(2), p_ready=1.0)
    pulses = {"done": 0, "release": 0}
    exports = [dict(seq=7, flags=int(IntervalFlags.TIME_MODE | IntervalFlags.OVERRUN),
                    timestamp=0x1122334455667788, inband=1, host=1, auto_release=1, role=1,
                    key=KEY),
               dict(seq=8, flags=0, timestamp=5, inband=0, host=1, auto_release=0, role=2,
                    key=None)]

    async def main(ctx):
        ctx.set(dut.src_mac, SRC_MAC)
        ctx.set(dut.dst_mac, DST_MAC)
        ctx.set(dut.config_id, config.config_id)
        await ctx.tick().repeat(3)
        for e in exports:
            for name in ("seq", "flags", "timestamp", "role", "auto_release"):
                ctx.set(getattr(dut, name), e[name])
            ctx.set(dut.to_inband, e["inband"])
            ctx.set(dut.to_host, e["host"])
            ctx.set(dut.auth, e["key"] is not None)
            ctx.set(dut.key, 0 if e["key"] is None else key_to_int(e["key"]))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            # the inputs change at once: the crossing has what it needs
            for name in ("seq", "flags", "timestamp", "role", "key"):
                ctx.set(getattr(dut, name), 0)
            for _ in range(100_000):
                _, _, busy, done, release = await ctx.tick().sample(
                    dut.busy, dut.done, dut.release)
                pulses["done"] += done
                pulses["release"] += release
                if done:
                    break
            else:
                raise AssertionError("no done")
            assert not ctx.get(dut.busy)
            assert not ctx.get(dut.read_error)
        assert ctx.get(dut.frames) == 2 * dut.frame_count

    async def bus_reads(ctx):       # the bus's counter-window reads take the port
        hold_rng = random.Random(9)
        while True:
            ctx.set(dut.read_hold, hold_rng.random() < 0.2)
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(sync_ns * 1e-9, domain="sync")
    sim.add_clock(ctrl_ns * 1e-9, domain="ctrl", phase=rng.random() * ctrl_ns * 1e-9)
    for bench in (memory.run, inband.run, host.run, bus_reads):
        sim.add_testbench(bench, background=True)
    sim.add_testbench(main)
    sim.run()

    assert pulses == {"done": 2, "release": 1}
    assert memory.reads == 2 * config.buckets
    first, second = exports
    expected = build_synopsis_frames(synopsis, seq=7, src_mac=SRC_MAC, dst_mac=DST_MAC,
                                     flags=first["flags"], timestamp=first["timestamp"],
                                     mtu=mtu, role=1, key=KEY)
    assert len(expected) == dut.frame_count
    assert inband.frames() == expected
    host_frames = host.frames()
    assert host_frames[:len(expected)] == expected
    assert host_frames[len(expected):] == build_synopsis_frames(
        synopsis, seq=8, src_mac=SRC_MAC, dst_mac=DST_MAC, flags=0, timestamp=5, mtu=mtu,
        role=2)
    got = reassemble(host_frames[len(expected):], config)
    assert got.seq == 8 and list(got.synopsis.words()) == words
    # stored and forwarded: on the always-ready host port no frame has a gap
    for cycles in host.frame_cycles():
        assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


def test_crossing_needs_two_domains():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="two domains"):
            ExporterCrossing(Exporter(config=LdaConfig(), data_width=64),
                             control_domain="sync")
        gc.collect()


def test_crossing_holds_the_longest_frame():
    """Each port's beat FIFO holds a whole frame of the default MTU (else the token
    that releases it could never be written)."""
    with warnings.catch_warnings():  # sizes only, never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        for width in (8, 64, 512):
            dut = ExporterCrossing(Exporter(config=LdaConfig(), data_width=width))
            depths = dut.depths
            assert depths.frame_beats == -(-(48 + 121 * 12 + 8) // (width // 8))
            assert depths.frame_beats <= depths.beat_depth < 2 * depths.frame_beats
            del dut
        gc.collect()
