# SPDX-License-Identifier: BSD-2-Clause
"""The clearing sweep after reset (``hw.counters.copy_control``), on Amaranth's simulator: block
RAM keeps its contents over a reset, so a reset that is not a power-up must not leave
counts behind. Both copies are filled, the domain is reset (``rst`` high for one edge),
and then the copy control, the counter bank and the OPA words show the sweep (both copies
CLEARING, a swap refused, ``sweeping`` for exactly ``depth`` clocks) and both copies,
frozen in turn, read all zero with the check value of zeros."""

import numpy as np
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from host_sw.contracts.check_value import words_check
from host_sw.contracts.config import LdaConfig, OpaConfig
from host_sw.model.golden_opa import opa_synopsis
from hw.counters.copy_control import CopyControl, CopyState
from hw.counters.counter_bank import CounterBank
from hw.opa.cah import OpaCah

LDA = LdaConfig(banks=2, rows=8, thresholds=(0, 1))


def simulate(dut, bench):
    """Run ``bench(ctx, rst)`` on ``dut`` in a ``sync`` domain whose reset it drives."""
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        await bench(ctx, cd.rst)

    sim.add_testbench(testbench)
    sim.run()


async def reset(ctx, rst):
    ctx.set(rst, 1)
    await ctx.tick()
    ctx.set(rst, 0)


async def sweep_cycles(ctx, dut, refuse=None):
    """Clocks until ``dut.sweeping`` falls; on each, both copies are CLEARING
    (``refuse(ctx)``: a swap there is refused)."""
    cycles = 0
    while ctx.get(dut.sweeping):
        if refuse is not None:
            await refuse(ctx)
        else:
            await ctx.tick()
        cycles += 1
    return cycles



async def swap_until_frozen(ctx, dut):
    """Swap (refused would be a failure) and wait until the copy that ends is FROZEN."""
    ctx.set(dut.swap, 1)
    assert not ctx.get(dut.swap_refused)
    await ctx.tick()
    ctx.set(dut.swap, 0)
    while not ctx.get(dut.frozen_ready):
        await ctx.tick()

def test_copy_control_reset_while_frozen_sweeps_both_copies():
    depth = 5
    dut = CopyControl(depth=depth, drain_cycles=1, flush=2)

    async def bench(ctx, rst):
        assert await sweep_cycles(ctx, dut) == depth         # power-up: the same sweep
        ctx.set(dut.swap, 1)
        await ctx.tick()
        ctx.set(dut.swap, 0)
        while not ctx.get(dut.frozen):
            await ctx.tick()
        assert ctx.get(dut.active) == 1
        await reset(ctx, rst)
        addrs = []
        while ctx.get(dut.sweeping):
            assert (ctx.get(dut.active), ctx.get(dut.other), ctx.get(dut.other_clean),
                    ctx.get(dut.clearing), ctx.get(dut.clearing_copy)) == (
                0, CopyState.CLEARING, 0, 1, 0b11)
            addrs.append(ctx.get(dut.clear_addr))
            ctx.set(dut.swap, 1)                             # ignored: not CLEAN
            await ctx.tick()
            ctx.set(dut.swap, 0)
        assert addrs == list(range(depth))
        assert (ctx.get(dut.active), ctx.get(dut.other), ctx.get(dut.other_clean),
                ctx.get(dut.clearing), ctx.get(dut.clearing_copy)) == (
            0, CopyState.CLEAN, 1, 0, 0)

    simulate(dut, bench)


def test_counter_bank_reset_clears_both_copies():
    """Every word of both copies counted (copy 0 FROZEN, copy 1 ACTIVE), then a reset:
    after the sweep each copy, frozen in turn, reads all zero."""
    dut = CounterBank(config=LDA, drain_cycles=1, memory="generic")
    lanes, depth = dut.lanes, dut.depth
    zeros = [0] * (lanes * depth)

    async def update_every_word(ctx, copy):
        for addr in range(depth):
            ctx.set(dut.update.valid, 1)
            ctx.set(dut.update.copy, copy)
            ctx.set(dut.update.timestamp, 1000 + addr)
            ctx.set(dut.update.lane_enable, (1 << lanes) - 1)
            for lane in range(lanes):
                ctx.set(dut.update.lane_address[lane], addr)
            await ctx.tick()
        ctx.set(dut.update.valid, 0)

    async def read_all(ctx):
        words = []
        for index in range(lanes * depth):
            ctx.set(dut.frozen.en, 1)
            ctx.set(dut.frozen.addr, index)
            await ctx.tick()
            ctx.set(dut.frozen.en, 0)
            await ctx.tick().repeat(CounterBank.READ_LATENCY - 1)
            assert ctx.get(dut.frozen.valid) and not ctx.get(dut.frozen.error)
            words.append(ctx.get(dut.frozen.data.as_value()))
        return words

    async def release(ctx):
        ctx.set(dut.release, 1)
        await ctx.tick()
        ctx.set(dut.release, 0)
        while not ctx.get(dut.other_clean):
            await ctx.tick()

    async def refuse(ctx):
        assert [ctx.get(dut.copy_state[k]) for k in range(2)] == [CopyState.CLEARING] * 2
        ctx.set(dut.swap, 1)
        assert ctx.get(dut.swap_refused)
        await ctx.tick()
        ctx.set(dut.swap, 0)

    async def bench(ctx, rst):
        assert await sweep_cycles(ctx, dut) == depth         # power-up
        await update_every_word(ctx, 0)
        await swap_until_frozen(ctx, dut)
        before = await read_all(ctx)
        assert all(w != 0 for w in before)                   # copy 0 holds counts
        await update_every_word(ctx, 1)                      # copy 1 ACTIVE with counts
        await ctx.tick().repeat(CounterBank.UPDATE_LATENCY + 1)
        await reset(ctx, rst)
        assert await sweep_cycles(ctx, dut, refuse) == depth
        assert ctx.get(dut.other_clean) and ctx.get(dut.active_copy) == 0
        for copy in (0, 1):
            await swap_until_frozen(ctx, dut)
            assert ctx.get(dut.frozen_copy) == copy
            assert await read_all(ctx) == zeros, f"copy {copy} not cleared by the reset"
            assert ctx.get(dut.frozen_check) == words_check(LDA, zeros)
            assert ctx.get(dut.frozen_updates) == 0
            await release(ctx)

    simulate(dut, bench)


def test_opa_words_reset_clears_both_copies():
    """The double-buffered OPA words: packets in both copies, reset, and each copy,
    frozen in turn, equals the golden words of no packet."""
    config = OpaConfig(groups=4, rows=3)
    rng = np.random.default_rng(5)
    dut = OpaCah(config=config, double_buffered=True)
    empty = opa_synopsis(config, np.zeros(0, dtype=np.uint64)).words()

    async def feed(ctx, n):
        for p in rng.integers(0, 2**63, n, dtype=np.uint64):
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, int(p))
            await ctx.tick()
        ctx.set(dut.valid, 0)

    async def read_all(ctx):
        words = []
        for g in range(config.groups):
            ctx.set(dut.read_addr, g)
            ctx.set(dut.read_en, 1)
            await ctx.tick()
            ctx.set(dut.read_en, 0)
            await ctx.tick().repeat(dut.READ_LATENCY - 1)
            assert ctx.get(dut.read_valid) and not ctx.get(dut.read_error)
            words.append(ctx.get(dut.read_data))
        return words

    async def bench(ctx, rst):
        assert await sweep_cycles(ctx, dut) == config.groups
        await feed(ctx, 40)
        await swap_until_frozen(ctx, dut)
        assert await read_all(ctx) != empty                  # copy 0 holds counts
        await feed(ctx, 40)
        await ctx.tick().repeat(dut.latency + 2)
        await reset(ctx, rst)
        assert await sweep_cycles(ctx, dut) == config.groups
        for copy in (0, 1):
            await swap_until_frozen(ctx, dut)
            assert ctx.get(dut.active_copy) == 1 - copy
            assert await read_all(ctx) == empty, f"copy {copy} not cleared by the reset"
            assert ctx.get(dut.frozen_check) == words_check(config, empty)
            assert ctx.get(dut.frozen_updates) == 0
            ctx.set(dut.release, 1)
            await ctx.tick()
            ctx.set(dut.release, 0)
            while not ctx.get(dut.other_clean):
                await ctx.tick()

    simulate(dut, bench)
