# SPDX-License-Identifier: BSD-2-Clause
"""hw.frames.frame_merger.FrameMerger on Amaranth's simulator: data frames whole and in order,
inserted frames intact, the stream rules under random backpressure, one cycle of latency,
the watch copy equal to the output, and the arbitration rules."""

import random

import pytest

from hw.frames.frame import beats_to_frames
from hw.frames.frame_merger import FrameMerger
from sim_tb.lib.amaranth_streams import BEAT_KEYS, Sink, Source, simulate


def _frames(rng, tag, count, sizes):
    return [(bytes([tag]) + rng.randbytes(rng.choice(sizes)), rng.random() < 0.2)
            for _ in range(count)]


class WatchLog:
    """Records the watch copy and the inserted_sof / inserted_eof flags."""

    def __init__(self, dut):
        self.dut, self.beats, self.sof, self.eof = dut, [], [], []

    async def run(self, ctx):
        cycle = 0
        while True:
            _, _, valid, beat, sof, eof = await ctx.tick().sample(
                self.dut.watch_valid, self.dut.watch, self.dut.inserted_sof,
                self.dut.inserted_eof)
            if valid:
                self.beats.append((cycle, {k: int(beat[k]) for k in BEAT_KEYS}))
                self.sof.append(int(sof))
                self.eof.append(int(eof))
            else:
                assert sof == 0 and eof == 0
            cycle += 1


@pytest.mark.parametrize("data_width", [8, 64])
def test_frames_whole_in_order_and_watch_equals_output(data_width):
    rng = random.Random(7 + data_width)
    data = _frames(rng, 0xDA, 40, [0, 1, 7, 8, 9, 59, 100])
    markers = _frames(rng, 0x3A, 6, [59, 70])
    exports = _frames(rng, 0xE0, 8, [0, 8, 200])
    dut = FrameMerger(data_width=data_width, inserts=2)
    data_src = Source(dut.sink, data_width, random.Random(1), p_valid=0.7)
    marker_src = Source(dut.insert[0], data_width, random.Random(2), p_valid=0.6)
    export_src = Source(dut.insert[1], data_width, random.Random(3), p_valid=0.8)
    sink = Sink(dut.source, data_width, random.Random(4), p_ready=0.6)
    watch = WatchLog(dut)
    data_src.queue = list(data)
    total = len(data) + len(markers) + len(exports)

    async def main(ctx):
        for k in range(20000):
            if k % 300 == 0:
                if markers:
                    marker_src.queue.append(markers.pop(0))
                if exports and k % 600 == 0:
                    export_src.queue.extend(exports[:2])
                    del exports[:2]
            await ctx.tick()
            if len(beats_to_frames([b for _, b in sink.beats], data_width)) == total:
                return
        raise AssertionError("frames did not all come out")

    all_markers, all_exports = list(markers), list(exports)
    simulate(dut, main, data_src.run, marker_src.run, export_src.run, sink.run, watch.run)
    out = beats_to_frames([b for _, b in sink.beats], data_width)
    assert [f for f in out if f[0][0] == 0xDA] == data
    assert [f for f in out if f[0][0] == 0x3A] == all_markers
    assert [f for f in out if f[0][0] == 0xE0] == all_exports
    # The watch copy is the output, beat for beat, never later than the output.
    assert [b for _, b in watch.beats[:len(sink.beats)]] == [b for _, b in sink.beats]
    assert all(w <= s for (w, _), (s, _) in zip(watch.beats, sink.beats))
    # inserted_sof / inserted_eof flag exactly the first / last beats of each insert
    # input's frames in the watch copy.
    starts = []
    for frame, _ in out:
        j = {0xDA: None, 0x3A: 0, 0xE0: 1}[frame[0]]
        starts.append(0 if j is None else 1 << j)
    ends = starts
    frame_first = [i for i, (_, b) in enumerate(watch.beats) if i == 0 or
                   watch.beats[i - 1][1]["last"]]
    frame_last = [i for i, (_, b) in enumerate(watch.beats) if b["last"]]
    assert [watch.sof[i] for i in frame_first] == starts
    assert [watch.eof[i] for i in frame_last] == ends
    # ... and no other beat
    assert sum(map(bool, watch.sof)) == sum(map(bool, starts))
    assert sum(map(bool, watch.eof)) == sum(map(bool, ends))
    # Inputs were busy at once often enough to exercise the arbitration.
    order = [f[0] for f, _ in out]
    assert sum(1 for a, b in zip(order, order[1:]) if a != b) >= 10


def test_one_cycle_latency_without_backpressure():
    rng = random.Random(3)
    data = _frames(rng, 0xDA, 30, [0, 5, 60, 61])
    dut = FrameMerger(data_width=64)
    src = Source(dut.sink, 64, random.Random(5), p_valid=0.8)
    sink = Sink(dut.source, 64, random.Random(6), p_ready=1.0)
    src.queue = list(data)
    accepted = []

    async def main(ctx):
        cycle = 0
        for _ in range(3000):
            _, _, valid, ready = await ctx.tick().sample(dut.sink.valid, dut.sink.ready)
            if valid and ready:
                accepted.append(cycle)
            cycle += 1
        assert not src.queue

    simulate(dut, main, src.run, sink.run)
    assert [f for f, _ in beats_to_frames([b for _, b in sink.beats], 64)] == \
        [f for f, _ in data]
    assert [c for c, _ in sink.beats] == [c + 1 for c in accepted]


def test_alternates_with_data_and_markers_go_before_exports():
    """Data always waiting, markers and exports always waiting: the output alternates data
    and inserted frames, and the inserted frames are markers before exports."""
    rng = random.Random(11)
    dut = FrameMerger(data_width=64)
    data_src = Source(dut.sink, 64, random.Random(1))
    marker_src = Source(dut.insert[0], 64, random.Random(2))
    export_src = Source(dut.insert[1], 64, random.Random(3))
    sink = Sink(dut.source, 64, random.Random(4), p_ready=1.0)
    data_src.queue = _frames(rng, 0xDA, 12, [60])
    marker_src.queue = _frames(rng, 0x3A, 3, [60])
    export_src.queue = _frames(rng, 0xE0, 3, [60])

    async def main(ctx):
        for _ in range(600):
            await ctx.tick()

    simulate(dut, main, data_src.run, marker_src.run, export_src.run, sink.run)
    order = [f[0] for f, _ in beats_to_frames([b for _, b in sink.beats], 64)]
    assert order[:12] == [0xDA, 0x3A, 0xDA, 0x3A, 0xDA, 0x3A, 0xDA, 0xE0, 0xDA, 0xE0,
                          0xDA, 0xE0]
    # back to back: no idle cycle between the frames while all inputs wait
    cycles = [c for c, _ in sink.beats]
    assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="data_width"):
        FrameMerger(data_width=12)
    with pytest.raises(ValueError, match="inserts"):
        FrameMerger(data_width=64, inserts=0)
