# SPDX-License-Identifier: BSD-2-Clause
"""hw.frames.frame_route.FrameRoute: with ``select`` changing every few cycles and both
outputs stalling at random, each frame leaves whole on the output ``select`` named when
its first beat was offered, beats unaltered and in order; an offered beat stays offered
on its output until taken (no ``valid`` withdrawn)."""

import random

from amaranth.sim import Simulator

from hw.frames.frame import beats_to_frames, frame_to_beats
from hw.frames.frame_route import FrameRoute

W = 32


def test_whole_frames_to_the_selected_output():
    rng = random.Random(3)
    frames = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30)))
              for _ in range(40)]
    dut = FrameRoute(data_width=W)
    want = ([], [])            # frames by the output chosen at their first offered beat
    got = ([], [])
    offered = [None, None]     # a beat offered and not taken, per output

    async def bench(ctx):
        pending = [(f, frame_to_beats(f, W)) for f in frames]
        first = True
        while pending or any(offered):
            select = rng.random() < 0.5
            ready = [rng.random() < 0.6, rng.random() < 0.6]
            valid = any(offered) or (bool(pending) and rng.random() < 0.8)
            ctx.set(dut.select, select)
            for k in (0, 1):
                ctx.set(dut.source[k].ready, ready[k])
            ctx.set(dut.sink.valid, valid)
            if pending:
                ctx.set(dut.sink.payload, pending[0][1][0])
            _, _, s_ready, v0, p0, v1, p1 = await ctx.tick().sample(
                dut.sink.ready, dut.source[0].valid, dut.source[0].payload,
                dut.source[1].valid, dut.source[1].payload)
            outs = ((v0, p0), (v1, p1))
            assert not (v0 and v1)
            for k in (0, 1):
                if offered[k] is not None:
                    assert outs[k][0], f"output {k}: an offered beat was withdrawn"
                v, p = outs[k]
                beat = {n: int(p[n]) for n in ("data", "keep", "last", "error")} if v else None
                if v and first:
                    want[k].append(pending[0][0])
                    first = False
                if v and ready[k]:
                    got[k].append(beat)
                    offered[k] = None
                    pending[0][1].pop(0)
                    if beat["last"]:
                        pending.pop(0)
                        first = True
                elif v:
                    offered[k] = beat
            assert s_ready == (valid and ((v0 and ready[0]) or (v1 and ready[1]))) or not valid

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for k in (0, 1):
        assert [f for f, _ in beats_to_frames(got[k], W)] == want[k]
    assert want[0] and want[1] and sorted(want[0] + want[1]) == sorted(frames)
