# SPDX-License-Identifier: BSD-2-Clause
"""hw.inband.control_frame_tx.BytePacker on its own (the exporter's byte packer, a ring buffer
with registered handshakes): random frames of random item sizes come out byte for byte,
on one or two ports with random backpressure, the stream rules held on every port, and
frames of items of at least ``lanes`` bytes leave without gaps when the ports are ready."""

import random
import re

import pytest

from hw.inband.control_frame_tx import BytePacker
from sim_tb.lib.amaranth_streams import Sink, simulate, wait_until


def random_frames(rng, sizes, count, lanes):
    """Frames as lists of items (bytes), each frame at least 60 bytes."""
    frames = []
    for _ in range(count):
        items = []
        while sum(map(len, items)) < max(60, lanes) or rng.random() < 0.6:
            items.append(rng.randbytes(rng.choice(sizes)))
        frames.append(items)
    return frames


class ItemSource:
    """Offers the items (valid held until taken; random idle clocks between items)."""

    def __init__(self, port, item_bytes, rng, p_valid):
        self.port, self.item_bytes, self.rng, self.p_valid = port, item_bytes, rng, p_valid
        self.frames = []

    async def run(self, ctx):
        port = self.port
        for items in self.frames:
            for k, item in enumerate(items):
                while self.rng.random() >= self.p_valid:
                    ctx.set(port.valid, 0)
                    await ctx.tick()
                ctx.set(port.valid, 1)
                ctx.set(port.payload.data, int.from_bytes(item, "little"))
                ctx.set(port.payload.size, len(item))
                ctx.set(port.payload.last, k == len(items) - 1)
                while True:
                    _, _, ready = await ctx.tick().sample(port.ready)
                    if ready:
                        break
            ctx.set(port.valid, 0)
        while True:
            await ctx.tick()


@pytest.mark.parametrize("data_width,item_bytes,item_sizes,enable", [
    (64, 12, None, 0b11),          # every size 1..12 (granule 1)
    (64, 20, (20, 8), 0b01),       # the exporter's RDA items, first port only
    (8, 12, (12,), 0b10),          # one size, second port only
    (32, 16, (16, 4), 0b11),
])
def test_packer_frames_byte_for_byte(data_width, item_bytes, item_sizes, enable):
    rng = random.Random(data_width + item_bytes)
    dut = BytePacker(data_width=data_width, item_bytes=item_bytes, item_sizes=item_sizes,
                     ports=2)
    sizes = list(item_sizes or range(1, item_bytes + 1))
    frames = random_frames(rng, sizes, 12, data_width // 8)
    source = ItemSource(dut.items, item_bytes, random.Random(1), p_valid=0.8)
    source.frames = frames
    sinks = [Sink(dut.sources[k], data_width, random.Random(2 + k), p_ready=0.6)
             for k in range(2)]
    sent = {"frames": 0}

    async def main(ctx):
        ctx.set(dut.enable, enable)

        def count():
            sent["frames"] += ctx.get(dut.frame_sent)
            return sent["frames"] == len(frames)
        await wait_until(ctx, count, 20_000, "all frames")
        for _ in range(10):
            await ctx.tick()

    simulate(dut, main, source.run, *(s.run for s in sinks))
    expected = [b"".join(items) for items in frames]
    for k, sink in enumerate(sinks):
        assert sink.frames() == (expected if enable >> k & 1 else [])


def test_packer_frames_have_no_gaps():
    dut = BytePacker(data_width=64, item_bytes=12, item_sizes=(12,))
    rng = random.Random(7)
    frames = [[rng.randbytes(12) for _ in range(40)] for _ in range(3)]
    source = ItemSource(dut.items, 12, rng, p_valid=1.0)
    source.frames = frames
    sink = Sink(dut.sources[0], 64, rng, p_ready=1.0)

    async def main(ctx):
        ctx.set(dut.enable, 1)
        await wait_until(ctx, lambda: len(sink.frames()) == 3, 2000, "frames")

    simulate(dut, main, source.run, sink.run)
    assert sink.frames() == [b"".join(items) for items in frames]
    for cycles in sink.frame_cycles():
        assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


def test_packer_rejects_bad_parameters():
    with pytest.raises(ValueError, match="item_sizes"):
        BytePacker(data_width=64, item_bytes=12, item_sizes=(13,))
    with pytest.raises(ValueError, match="ports"):
        BytePacker(data_width=64, item_bytes=12, ports=0)


def test_each_ring_byte_group_has_write_enables_of_its_own():
    """The write position is kept in four copies, each loading the write enables of every
    fourth group of four ring bytes (their fan-out was the control clock's critical net);
    the frames above come out right only if every copy follows the pushes."""
    from amaranth.back import rtlil

    dut = BytePacker(data_width=64, item_bytes=22, item_sizes=(22,))
    assert dut.ring_bytes > 16
    text = rtlil.convert(dut)
    for c in range(4):
        assert re.search(rf"wire width \d+ \\wpos_{c}\n", text)
        assert re.search(rf"wire width \d+ \\write_at_{c}\n", text)
    assert "\\wpos_4\n" not in text and "\\write_at_4\n" not in text
