# SPDX-License-Identifier: BSD-2-Clause
"""RLI end to end on Amaranth's simulator (and the core's RLI path, hw.rli.rli_path): the sender's ReferenceFrameSource and frame
merger, a link that stalls at random (the queue), the receiver's header tap,
RliFront (H3 flow hashes, cell and digest; ReferenceWatch) and RliReceiver; the frozen
counter words equal the golden model's (host_sw.model.golden_lda_rda_lds flow hashes,
host_sw.model.golden_rli.receiver_synopsis) over the arrivals the receiver saw, and the front
found exactly the sender's reference frames with their stamps.

The full front (the H3 hasher on Amaranth's simulator) takes over a minute: it runs with
LDA_SLOW=1 (marker ``slow``); by default the cells and digests of the golden model's flow
hashes come from a table behind ReferenceWatch (the front's other half)."""

import os

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib.memory import Memory

from host_sw.contracts.config import LdaConfig, RliConfig
from host_sw.contracts.frames.frame_format import ControlFrameError
from host_sw.contracts.frames.reference_frame import parse_reference
from host_sw.contracts.hashing import FrameClass
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.golden_rli import flow_cells, receiver_synopsis
from hw.frames.frame_merger import FrameMerger
from hw.frames.header_tap import HeaderTap
from hw.lda_pipeline import MeasurementCore
from hw.inband.marker_watch import MarkerWatch
from hw.measurement_path import PATHS, measurement_path
from hw.rli.reference_source import ReferenceFrameSource
from hw.rli.reference_watch import ReferenceWatch
from hw.rli.front import RliFront
from hw.rli.rli_path import WATCH_LEAD, RliPath
from hw.rli.receiver import RliReceiver
from sim_tb.lib.amaranth_streams import Sink, Source, simulate, wait_until

W = 64
CONFIG = RliConfig(cells=16, digest_bits=8, buffer_packets=16)
EVERY = 4
OFFSET = 12345            # the receiver's clock against the sender's


class _Path(Elaboratable):
    def __init__(self, cells=None, digests=None):
        self.table = None if cells is None else [int(c) | int(g) << 8
                                                 for c, g in zip(cells, digests)]
        self.refs = ReferenceFrameSource(config=CONFIG, data_width=W)
        self.merger = FrameMerger(data_width=W, inserts=1)
        self.tap = HeaderTap(data_width=W, window_bytes=64, ts_bits=CONFIG.ts_bits)
        self.front = RliFront(config=CONFIG) if self.table is None else _TableFront(self.table)
        self.rx = RliReceiver(config=CONFIG, memory="generic")
        self.now = Signal(64)

    def elaborate(self, platform):
        m = Module()
        for name in ("refs", "merger", "tap", "front", "rx"):
            m.submodules[name] = getattr(self, name)
        refs, merger, tap, front, rx = self.refs, self.merger, self.tap, self.front, self.rx
        sink, out = merger.sink, merger.source
        m.d.sync += self.now.eq(self.now + 1)
        m.d.comb += [refs.now.eq(self.now), refs.every_packets.eq(EVERY),
                     refs.src_mac.eq(0x020000000001), refs.dst_mac.eq(-1),
                     refs.counted.eq(sink.valid & sink.ready & sink.payload.last),
                     merger.insert[0].valid.eq(refs.source.valid),
                     merger.insert[0].payload.eq(refs.source.payload),
                     refs.source.ready.eq(merger.insert[0].ready),
                     tap.watch.valid.eq(out.valid), tap.watch.ready.eq(out.ready),
                     tap.watch.payload.eq(out.payload), tap.now.eq(self.now + OFFSET),
                     front.record.valid.eq(tap.record.valid),
                     front.record.payload.eq(tap.record.payload)]
        if self.table is None:
            for n in ("packet_ipv4", "packet_ipv6", "flow_ipv4", "flow_ipv6"):
                m.d.comb += getattr(front, f"mask_{n}").eq(getattr(CONFIG, f"mask_{n}"))
        for n in ("valid", "is_ref", "arrival", "send", "cell", "digest"):
            m.d.comb += getattr(rx, f"packet_{n}").eq(getattr(front, f"packet_{n}"))
        return m


class _TableFront(Elaboratable):
    """ReferenceWatch, with each data frame's cell and digest from a table (in order)."""

    def __init__(self, table):
        self.watch = ReferenceWatch(window_bytes=64, ts_bits=CONFIG.ts_bits)
        self.record = self.watch.record
        self.table = table
        for n in ("valid", "is_ref", "arrival", "send", "cell", "digest"):
            setattr(self, f"packet_{n}", Signal(8 if n == "digest" else
                                                len(getattr(self.watch, n, Signal(4))),
                                                name=f"packet_{n}"))

    def elaborate(self, platform):
        m = Module()
        m.submodules.watch = watch = self.watch
        m.submodules.rom = rom = Memory(shape=16, depth=len(self.table), init=self.table)
        port = rom.read_port(domain="comb")
        index = Signal(range(len(self.table) + 1))
        with m.If(watch.valid & ~watch.is_ref):
            m.d.sync += index.eq(index + 1)
        m.d.comb += [port.addr.eq(index), self.packet_valid.eq(watch.valid),
                     self.packet_is_ref.eq(watch.is_ref), self.packet_arrival.eq(watch.arrival),
                     self.packet_send.eq(watch.send), self.packet_cell.eq(port.data[:4]),
                     self.packet_digest.eq(port.data[8:])]
        return m


def _ipv4_frame(rng):
    n = int(rng.integers(100, 300))
    f = rng.integers(0, 256, n, dtype=np.uint8)
    f[12:15] = (0x08, 0x00, 0x45)
    return bytes(f)


@pytest.mark.parametrize("front", [
    "table", pytest.param("hasher", marks=[pytest.mark.slow, pytest.mark.skipif(
        not os.environ.get("LDA_SLOW"), reason="over a minute; LDA_SLOW=1")])])
def test_sender_to_receiver_equals_the_golden_model(front):
    rng = np.random.default_rng(9)
    data = [_ipv4_frame(rng) for _ in range(18)]
    windows = np.zeros((len(data), 64), np.uint8)
    for i, f in enumerate(data):
        windows[i, :min(64, len(f))] = np.frombuffer(f[:64], np.uint8)
    hashes = Hashers(CONFIG).flow_hashes(FrameClass.IPV4, windows)
    dut = _Path() if front == "hasher" else _Path(*flow_cells(CONFIG, hashes))
    src = Source(dut.merger.sink, W, rng, p_valid=0.9)
    out = Sink(dut.merger.source, W, rng, p_ready=0.6)
    src.queue = [(f, False) for f in data]
    seen = []

    async def record(ctx):
        w = dut.front
        while True:
            _, _, v, r, a, s = await ctx.tick().sample(w.packet_valid, w.packet_is_ref,
                                                       w.packet_arrival, w.packet_send)
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
    assert len(refs) >= 3 and list(send[is_ref]) == [r.timestamp for r in refs]
    assert (~is_ref).sum() == len(data)
    full = np.zeros((2, len(seen)), np.uint64)
    full[:, ~is_ref] = hashes
    golden, stats = receiver_synopsis(CONFIG, full, arrival, is_ref, send, ~is_ref)
    assert main.refused == 0 and stats.overflowed == 0
    assert main.words == [int(w) for w in golden.words()]
    delays = golden.fields["delay_sum"].ravel()
    assert np.any(delays > 0)


def test_the_core_builds_the_rli_path_with_the_lead_it_assumes():
    # hw.rli.rli_path delays the reference check's verdict by WATCH_LEAD - VERIFY_LATENCY to
    # the frame's tap record; the core's watch delay and tap must give that lead.
    path = measurement_path(CONFIG, memory="generic")
    assert PATHS["rli"] is RliPath and isinstance(path, RliPath)
    tap = HeaderTap(data_width=W, window_bytes=64, ts_bits=CONFIG.ts_bits)
    assert path.watch_lead == WATCH_LEAD == MeasurementCore.TAP_WATCH_DELAY + tap.latency
    assert WATCH_LEAD > MarkerWatch.VERIFY_LATENCY
    with pytest.raises(ValueError, match="RliConfig"):
        RliPath(config=LdaConfig())
    with pytest.raises(ValueError, match="frame_type"):
        MarkerWatch(data_width=W, frame_type=2)
