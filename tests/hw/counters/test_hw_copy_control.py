# SPDX-License-Identifier: BSD-2-Clause
"""The counter copies' life cycle (``hw.counters.copy_control.CopyControl``) on its own:
the sweep over both copies after reset, then CLEAN → ACTIVE / DRAINING → FROZEN →
CLEARING → CLEAN, with its timing."""

from amaranth.sim import Simulator

from hw.counters.copy_control import CopyControl, CopyState

DEPTH, DRAIN, FLUSH = 4, 2, 6


def test_copy_life_cycle():
    dut = CopyControl(depth=DEPTH, drain_cycles=DRAIN, flush=FLUSH)

    def state(ctx):
        return (ctx.get(dut.active), ctx.get(dut.other), ctx.get(dut.other_clean),
                ctx.get(dut.draining), ctx.get(dut.frozen), ctx.get(dut.clearing))

    async def tb(ctx):
        # reset: the sweep over both copies (block RAM survives a reset), then CLEAN
        swept = []
        while ctx.get(dut.sweeping):
            assert state(ctx) == (0, CopyState.CLEARING, 0, 0, 0, 1)
            assert ctx.get(dut.clearing_copy) == 0b11
            swept.append(ctx.get(dut.clear_addr))
            await ctx.tick()
        assert swept == list(range(DEPTH))
        assert state(ctx) == (0, CopyState.CLEAN, 1, 0, 0, 0)
        assert ctx.get(dut.clearing_copy) == 0
        ctx.set(dut.release, 1)                       # ignored unless FROZEN
        await ctx.tick()
        ctx.set(dut.release, 0)
        assert state(ctx) == (0, CopyState.CLEAN, 1, 0, 0, 0)
        ctx.set(dut.swap, 1)
        await ctx.tick()
        ctx.set(dut.swap, 0)
        assert state(ctx) == (1, CopyState.DRAINING, 0, 1, 0, 0)
        open_cycles, cycles = 0, 1
        while not ctx.get(dut.frozen):
            open_cycles += ctx.get(dut.drain_open)
            await ctx.tick()
            cycles += 1
        # FROZEN drain_cycles + flush + 2 cycles after the swap cycle; requests for the
        # old copy are accepted for drain_cycles cycles after the swap cycle.
        assert cycles == DRAIN + FLUSH + 2 and open_cycles == DRAIN
        assert state(ctx) == (1, CopyState.FROZEN, 0, 0, 1, 0)
        ctx.set(dut.swap, 1)                          # refused: the other copy is not CLEAN
        await ctx.tick()
        ctx.set(dut.swap, 0)
        assert state(ctx) == (1, CopyState.FROZEN, 0, 0, 1, 0)
        ctx.set(dut.release, 1)
        await ctx.tick()
        ctx.set(dut.release, 0)
        cleared = []
        while ctx.get(dut.clearing):
            assert ctx.get(dut.other) == CopyState.CLEARING
            assert ctx.get(dut.clearing_copy) == 0b01  # copy 0, the inactive one
            cleared.append(ctx.get(dut.clear_addr))
            await ctx.tick()
        assert cleared == list(range(DEPTH))
        assert state(ctx) == (1, CopyState.CLEAN, 1, 0, 0, 0)
        assert ctx.get(dut.clearing_copy) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


def test_check_holds_the_copy_draining_until_done():
    """With ``check``, the drained copy waits in DRAINING (``checking``) for
    ``check_done``; ``check_start`` pulses once, when the flush is over."""
    dut = CopyControl(depth=DEPTH, drain_cycles=DRAIN, flush=FLUSH, check=True)

    async def tb(ctx):
        await ctx.tick().repeat(DEPTH)                # the sweep after reset
        assert ctx.get(dut.other_clean)
        ctx.set(dut.swap, 1)
        await ctx.tick()
        ctx.set(dut.swap, 0)
        starts, cycles = [], 1
        for _ in range(DRAIN + FLUSH + 20):
            if ctx.get(dut.check_start):
                starts.append(cycles)
            assert not ctx.get(dut.frozen)
            await ctx.tick()
            cycles += 1
        assert starts == [DRAIN + FLUSH + 1]
        assert ctx.get(dut.checking) and ctx.get(dut.other) == CopyState.DRAINING
        assert not ctx.get(dut.drain_open)
        ctx.set(dut.check_done, 1)
        await ctx.tick()
        ctx.set(dut.check_done, 0)
        assert ctx.get(dut.frozen) and not ctx.get(dut.checking)
        assert ctx.get(dut.other) == CopyState.FROZEN

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
