# SPDX-License-Identifier: BSD-2-Clause
"""The item tagger (:class:`hw.inband.siphash.ItemTagger`): every frame's items pass
unchanged, followed by the SipHash-2-4 tag of their bytes under the key
(host_sw.contracts.siphash); a stored frame leaves without gaps; ``source`` comes from
flip-flops after synthesis (the byte packer behind fans it out to its ring)."""

import random

import pytest
from amaranth.sim import Simulator

from host_sw.contracts.siphash import TAG_BYTES, key_to_int, siphash_tag
from hw.inband.siphash import ItemTagger
from tests.hw.ecp5_netlist import drivers, synthesized

ITEM_BYTES = 8
FRAME_ITEMS = 6


def _random_frames(rng, count):
    """``(key, items)``: each item ``(bytes, last)`` of 4 or 8 bytes, up to
    ``FRAME_ITEMS - 1`` items per frame (the tag is the last)."""
    frames = []
    for _ in range(count):
        key = rng.randbytes(16)
        n = rng.randint(1, FRAME_ITEMS - 1)
        items = [(rng.randbytes(rng.choice((4, 8))), k == n - 1) for k in range(n)]
        frames.append((key, items))
    return frames


def _run(frames, *, seed, stalls):
    """The items ``source`` gives (``(bytes, last, clock)``) for ``frames`` offered with
    random gaps; ``source.ready`` drops at random when ``stalls``."""
    dut = ItemTagger(item_bytes=ITEM_BYTES, frame_items=FRAME_ITEMS)
    rng = random.Random(seed)
    out = []
    expected_items = sum(len(items) + 1 for _, items in frames)

    async def offer(ctx):
        for key, items in frames:
            for data, last in items:
                while rng.random() < 0.2:
                    await ctx.tick()
                ctx.set(dut.key, key_to_int(key))
                ctx.set(dut.sink.payload.data, int.from_bytes(data, "little"))
                ctx.set(dut.sink.payload.size, len(data))
                ctx.set(dut.sink.payload.last, last)
                ctx.set(dut.sink.valid, 1)
                await ctx.tick().until(dut.sink.ready)
                ctx.set(dut.sink.valid, 0)

    async def take(ctx):
        clock = 0
        while len(out) < expected_items:
            ready = not stalls or rng.random() < 0.7
            ctx.set(dut.source.ready, ready)
            await ctx.delay(1e-9)
            if ready and ctx.get(dut.source.valid):
                size = ctx.get(dut.source.payload.size)
                data = ctx.get(dut.source.payload.data).to_bytes(ITEM_BYTES, "little")
                out.append((data[:size], bool(ctx.get(dut.source.payload.last)), clock))
            await ctx.tick()
            clock += 1
            assert clock < 200 * expected_items, "the tagger stopped"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(offer)
    sim.add_testbench(take)
    sim.run()
    return out


@pytest.mark.parametrize("seed, stalls", [(1, False), (2, True), (3, True)])
def test_items_pass_and_each_frame_ends_with_its_tag(seed, stalls):
    frames = _random_frames(random.Random(seed), 12)
    out = _run(frames, seed=seed, stalls=stalls)
    k = 0
    for key, items in frames:
        got = out[k:k + len(items) + 1]
        k += len(items) + 1
        assert [(data, last) for data, last, _ in got] == \
            [(data, False) for data, _ in items] + \
            [(siphash_tag(b"".join(data for data, _ in items), key), True)]
        assert len(got[-1][0]) == TAG_BYTES
        if not stalls:
            # a frame leaves once it is tagged, one item per clock
            clocks = [clock for _, _, clock in got]
            assert clocks == list(range(clocks[0], clocks[0] + len(got)))
    assert k == len(out)


def test_source_comes_from_flip_flops(tmp_path):
    """After ``synth_ecp5`` every bit of ``source.valid`` and ``source.payload`` is a
    flip-flop's output (or a constant), not the store's block RAM output or a LUT."""
    module = synthesized(ItemTagger(item_bytes=ITEM_BYTES, frame_items=FRAME_ITEMS), tmp_path)
    driven_by = drivers(module)
    bits = [bit for name, port in module["ports"].items()
            if name.startswith(("source__valid", "source__payload")) for bit in port["bits"]]
    assert len(bits) == 1 + 8 * ITEM_BYTES + (ITEM_BYTES + 1).bit_length() + 1
    assert {driven_by[bit] for bit in bits if bit not in ("0", "1")} == {("TRELLIS_FF", "Q")}
