# SPDX-License-Identifier: BSD-2-Clause
"""RLI end to end on Amaranth's simulator: the sender's ReferenceFrameSource and frame
merger, a link that stalls at random (the queue), the receiver's header tap,
ReferenceWatch and RliReceiver; the frozen counter words equal the golden model's
(host_sw.model.rli.receiver_synopsis) over what the receiver saw, and the watch found
exactly the sender's reference frames with their stamps."""

import numpy as np
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib.memory import Memory

from host_sw.contracts.config import RliConfig
from host_sw.contracts.control_frame import ControlFrameError
from host_sw.contracts.reference_frame import parse_reference
from host_sw.model.rli import flow_cells, receiver_synopsis
from hw.frame_merger import FrameMerger
from hw.header_tap import HeaderTap
from hw.reference_source import ReferenceFrameSource
from hw.reference_watch import ReferenceWatch
from hw.rli_receiver import RliReceiver
from sim_tb.amaranth_streams import Sink, Source, simulate, wait_until

W = 64
CONFIG = RliConfig(cells=16, digest_bits=8, buffer_packets=16)
EVERY = 8
OFFSET = 12345            # the receiver's clock against the sender's


class _Path(Elaboratable):
    def __init__(self, cells, digests):
        self.refs = ReferenceFrameSource(config=CONFIG, data_width=W)
        self.merger = FrameMerger(data_width=W, inserts=1)
        self.tap = HeaderTap(data_width=W, window_bytes=64, ts_bits=CONFIG.ts_bits)
        self.watch = ReferenceWatch(window_bytes=64, ts_bits=CONFIG.ts_bits)
        self.rx = RliReceiver(config=CONFIG, memory="generic")
        self.rom = [int(c) | int(g) << 8 for c, g in zip(cells, digests)]
        self.now = Signal(64)

    def elaborate(self, platform):
        m = Module()
        for name in ("refs", "merger", "tap", "watch", "rx"):
            m.submodules[name] = getattr(self, name)
        refs, merger, tap, watch, rx = self.refs, self.merger, self.tap, self.watch, self.rx
        m.submodules.rom = rom = Memory(shape=16, depth=len(self.rom), init=self.rom)
        port = rom.read_port(domain="comb")
        index = Signal(range(len(self.rom) + 1))
        sink, out = merger.sink, merger.source
        m.d.sync += self.now.eq(self.now + 1)
        m.d.comb += [refs.now.eq(self.now), refs.every_packets.eq(EVERY),
                     refs.src_mac.eq(0x020000000001), refs.dst_mac.eq(-1),
                     refs.counted.eq(sink.valid & sink.ready & sink.payload.last),
                     merger.insert[0].valid.eq(refs.source.valid),
                     merger.insert[0].payload.eq(refs.source.payload),
                     refs.source.ready.eq(merger.insert[0].ready),
                     tap.watch.valid.eq(out.valid), tap.watch.ready.eq(out.ready),
                     tap.watch.payload.eq(out.payload), tap.now.eq(self.now + OFFSET)]
        m.d.comb += [watch.record.valid.eq(tap.record.valid),
                     watch.record.payload.eq(tap.record.payload)]
        data = watch.valid & ~watch.is_ref
        with m.If(data):
            m.d.sync += index.eq(index + 1)
        m.d.comb += [port.addr.eq(index),
                     rx.packet_valid.eq(watch.valid), rx.packet_is_ref.eq(watch.is_ref),
                     rx.packet_arrival.eq(watch.arrival), rx.packet_send.eq(watch.send),
                     rx.packet_cell.eq(port.data[:4]), rx.packet_digest.eq(port.data[8:])]
        return m


def _ipv4_frame(rng):
    n = int(rng.integers(100, 300))
    f = rng.integers(0, 256, n, dtype=np.uint8)
    f[12:15] = (0x08, 0x00, 0x45)
    return bytes(f)


def test_sender_to_receiver_equals_the_golden_model():
    rng = np.random.default_rng(9)
    data = [_ipv4_frame(rng) for _ in range(36)]
    hashes = rng.integers(0, 1 << 32, (2, len(data)), dtype=np.uint64)
    cells, digests = flow_cells(CONFIG, hashes)
    dut = _Path(cells, digests)
    src = Source(dut.merger.sink, W, rng, p_valid=0.9)
    out = Sink(dut.merger.source, W, rng, p_ready=0.6)
    src.queue = [(f, False) for f in data]
    seen = []

    async def record(ctx):
        w = dut.watch
        while True:
            _, _, v, r, a, s = await ctx.tick().sample(w.valid, w.is_ref, w.arrival, w.send)
            if v:
                seen.append((int(r), int(a), int(s)))

    async def main(ctx):
        await wait_until(ctx, lambda: len(out.frames()) >= len(data) + 2
                         and not src.queue, 8000, "the frames")
        await ctx.tick().repeat(100)
        ctx.set(dut.rx.swap, 1)
        await ctx.tick()
        ctx.set(dut.rx.swap, 0)
        await wait_until(ctx, lambda: ctx.get(dut.rx.frozen_ready), 400, "frozen")
        main.words = []
        for addr in range(CONFIG.cells):
            ctx.set(dut.rx.frozen.addr, addr)
            ctx.set(dut.rx.frozen.en, 1)
            await ctx.tick()
            ctx.set(dut.rx.frozen.en, 0)
            await wait_until(ctx, lambda: ctx.get(dut.rx.frozen.valid), 10, "read")
            main.words.append(ctx.get(dut.rx.frozen.data.as_value()))
        main.refused = ctx.get(dut.rx.frozen_refused)

    simulate(dut, main, src.run, out.run, record)
    refs = []
    for f in out.frames():
        try:
            refs.append(parse_reference(f))
        except ControlFrameError:
            pass
    is_ref = np.array([r for r, _, _ in seen], bool)
    arrival = np.array([a for _, a, _ in seen], np.int64)
    send = np.array([s for _, _, s in seen], np.int64)
    assert len(refs) >= 4 and list(send[is_ref]) == [r.timestamp for r in refs]
    assert (~is_ref).sum() == len(data)
    full = np.zeros((2, len(seen)), np.uint64)
    full[:, ~is_ref] = hashes
    golden, stats = receiver_synopsis(CONFIG, full, arrival, is_ref, send, ~is_ref)
    assert main.refused == 0 and stats.overflowed == 0
    assert main.words == [int(w) for w in golden.words()]
    delays = golden.fields["delay_sum"].ravel()
    assert np.any(delays > 0)
