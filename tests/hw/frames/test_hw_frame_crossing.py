# SPDX-License-Identifier: BSD-2-Clause
"""The store-and-forward frame crossing (hw.frames.frame_crossing) on Amaranth's
simulator, two unrelated clocks (each side faster): seeded random frames of one beat to
the longest, written with random gaps, arrive each once, in order, unchanged; each leaves
on consecutive reader clocks once its first beat has left, whatever the reader's stalls
between frames; frames of one beat back to back lose no token."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module

from hw.frames.frame import FrameStream
from hw.frames.frame_crossing import FrameDepths, store_and_forward
from tests.hw.two_clocks import run_two_clocks

WIDTH = 16


@pytest.mark.parametrize("longest,shortest,w_ns,r_ns,seed", [
    (6, 1, 5.0, 8.0, 1), (6, 1, 9.0, 4.0, 2), (12, 2, 6.0, 6.0, 3), (4, 1, 4.0, 13.0, 4),
    (9, 3, 7.0, 3.0, 5)])
def test_frames_cross_whole_and_leave_without_gaps(longest, shortest, w_ns, r_ns, seed):
    rng = random.Random(seed)
    top = Module()
    top.domains += [ClockDomain("wr"), ClockDomain("rd")]
    source = FrameStream(WIDTH).create()
    port = FrameStream(WIDTH).flip().create()
    store_and_forward(top, source, port, depths=FrameDepths(longest=longest, shortest=shortest),
                      data_width=WIDTH, w_domain="wr", r_domain="rd", name="frames")
    frames = [[rng.getrandbits(WIDTH) for _ in range(rng.randint(shortest, longest))]
              for _ in range(60)]
    frames += [[rng.getrandbits(WIDTH)] for _ in range(12)] if shortest == 1 else []
    got, gaps = [], []

    async def writer(ctx):
        for frame in frames:
            for k, word in enumerate(frame):
                ctx.set(source.payload, {"data": word, "keep": 3, "last": k == len(frame) - 1})
                ctx.set(source.valid, 1)
                await ctx.tick("wr").until(source.ready)
                if rng.random() < 0.3 and len(frame) > 1:      # a gap inside the frame
                    ctx.set(source.valid, 0)
                    for _ in range(rng.randint(1, 3)):
                        await ctx.tick("wr")
            ctx.set(source.valid, 0)
            if rng.random() < 0.5:
                for _ in range(rng.randint(1, 4 * longest)):
                    await ctx.tick("wr")

    async def reader(ctx):
        current = []
        for _ in range(400 * len(frames)):
            if len(got) == len(frames):
                break
            if current:                                 # inside a frame: always ready
                ctx.set(port.ready, 1)
            else:
                ctx.set(port.ready, rng.random() < 0.6)
            valid, ready = ctx.get(port.valid), ctx.get(port.ready)
            if current and not valid:
                gaps.append(len(got))
            if valid and ready:
                current.append(ctx.get(port.payload.data))
                if ctx.get(port.payload.last):
                    got.append(current)
                    current = []
            await ctx.tick("rd")

    run_two_clocks(top, w_domain="wr", w_ns=w_ns, r_domain="rd", r_ns=r_ns,
                   r_phase=rng.random(), main=reader, background=[writer])
    assert got == frames
    assert gaps == []
