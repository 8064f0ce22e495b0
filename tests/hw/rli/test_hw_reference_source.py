# SPDX-License-Identifier: BSD-2-Clause
"""hw.rli.reference_source.ReferenceFrameSource behind a frame merger on Amaranth's simulator:
reference frames equal to host_sw.contracts.frames.reference_frame.build_reference (tag
checked by its parser), one after every N-th data frame with data held for at most one
frame, data frames unchanged and in order, the send stamp at most one data frame early;
by the timebase rule one each period, stamped exactly a period apart."""

import numpy as np
from amaranth.hdl import Elaboratable, Module, Signal

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.frame_format import ControlFrameError
from host_sw.contracts.frames.reference_frame import parse_reference
from hw.frames.frame_merger import FrameMerger
from hw.rli.reference_source import ReferenceFrameSource
from sim_tb.lib.amaranth_streams import Sink, Source, simulate

W = 64
EVERY = 6


class _Sender(Elaboratable):
    def __init__(self, *, every=EVERY, period=0):
        self.refs = ReferenceFrameSource(config=RliConfig(), data_width=W)
        self.merger = FrameMerger(data_width=W, inserts=1)
        self.now = Signal(64)
        self.every, self.period = every, period

    def elaborate(self, platform):
        m = Module()
        m.submodules.refs, m.submodules.merger = self.refs, self.merger
        sink = self.merger.sink
        m.d.sync += self.now.eq(self.now + 1)
        m.d.comb += [self.refs.now.eq(self.now), self.refs.every_packets.eq(self.every),
                     self.refs.period_ticks.eq(self.period),
                     self.refs.src_mac.eq(0x020000000001), self.refs.dst_mac.eq(-1),
                     self.refs.counted.eq(sink.valid & sink.ready & sink.payload.last)]
        for name in ("valid", "payload"):
            m.d.comb += getattr(self.merger.insert[0], name).eq(
                getattr(self.refs.source, name))
        m.d.comb += self.refs.source.ready.eq(self.merger.insert[0].ready)
        return m


def _parse(frame):
    try:
        return parse_reference(frame)
    except ControlFrameError:
        return None


def test_references_every_n_frames_exact_bytes_and_stamp():
    rng = np.random.default_rng(4)
    dut = _Sender()
    src = Source(dut.merger.sink, W, rng)
    out = Sink(dut.merger.source, W, rng)
    data = [bytes(rng.integers(0, 256, int(rng.integers(64, 300)), dtype=np.uint8))
            for _ in range(26)]
    src.queue = [(f, False) for f in data]

    async def main(ctx):
        for _ in range(1500):
            await ctx.tick()

    simulate(dut, main, src.run, out.run)
    frames, cycles = out.frames(), out.frame_cycles()
    assert [f for f in frames if _parse(f) is None] == data      # data untouched
    refs = [(i, _parse(f), cycles[i][0]) for i, f in enumerate(frames) if _parse(f)]
    assert [r.seq for _, r, _ in refs] == list(range(len(data) // EVERY))
    longest = max(-(-len(f) // (W // 8)) for f in data)
    data_starts = [c[0] for f, c in zip(frames, cycles) if _parse(f) is None]
    for k, (i, ref, depart) in enumerate(refs):
        assert i - k >= EVERY * (k + 1)             # after the N-th data frame
        # from the stamp (the earliest the frame is ready) it waits for one data frame
        assert sum(ref.timestamp <= c < depart for c in data_starts) <= 1
        assert 0 <= depart - ref.timestamp <= longest + 2, (depart, ref.timestamp)
    assert min(depart - ref.timestamp for _, ref, depart in refs) == 0


def test_references_by_the_timebase_are_a_period_apart():
    """``period_ticks`` alone, an idle link: the first reference a period (and the trigger's
    two registers) after the rule is armed, then one each period, each stamped when it
    leaves, the stamps exactly a period apart."""
    period = 300
    rng = np.random.default_rng(5)
    dut = _Sender(every=0, period=period)
    out = Sink(dut.merger.source, W, rng)

    async def main(ctx):
        for _ in range(5 * period + 200):
            await ctx.tick()

    simulate(dut, main, out.run)
    frames, cycles = out.frames(), out.frame_cycles()
    refs = [(_parse(f), c[0]) for f, c in zip(frames, cycles)]
    assert all(ref is not None for ref, _ in refs)
    assert [ref.seq for ref, _ in refs] == list(range(5))
    stamps = [ref.timestamp for ref, _ in refs]
    assert [b - a for a, b in zip(stamps, stamps[1:])] == [period] * 4
    assert [depart - ref.timestamp for ref, depart in refs] == [0] * 5
