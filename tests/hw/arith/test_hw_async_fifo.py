# SPDX-License-Identifier: BSD-2-Clause
"""The registered-flag clock-crossing FIFO (hw.arith.async_fifo) on Amaranth's simulator,
two unrelated clocks (each side faster, random phase): entries written with random gaps
and read with random stalls arrive each once, in order, unchanged, also when the writer
finds the FIFO full; a full FIFO empties one entry a read clock and fills one entry a
write clock; the write domain's reset empties it."""

import random

import pytest
from amaranth.hdl import ClockDomain, Const, Module
from amaranth.sim import Simulator
from hw.arith.async_fifo import RegisteredAsyncFIFO, gray_decode, gray_encode
from tests.hw.two_clocks import run_two_clocks


def _top(depth, width=16):
    dut = RegisteredAsyncFIFO(width=width, depth=depth, w_domain="wr", r_domain="rd")
    top = Module()
    wr = ClockDomain("wr", async_reset=True)
    top.domains += [wr, ClockDomain("rd")]
    top.submodules.dut = dut
    return top, dut, wr


@pytest.mark.parametrize("depth,w_ns,r_ns,seed", [
    (4, 5.0, 8.0, 1), (16, 9.0, 4.0, 2), (2, 6.0, 6.0, 3), (8, 4.0, 13.0, 4),
    (32, 7.0, 3.0, 5)])
def test_entries_cross_once_in_order(depth, w_ns, r_ns, seed):
    rng = random.Random(seed)
    top, dut, _ = _top(depth)
    entries = [rng.getrandbits(16) for _ in range(12 * depth + 20)]
    got, full_seen = [], [0]

    async def writer(ctx):
        for entry in entries:
            while True:
                ctx.set(dut.w_data, entry)
                full_seen[0] += not ctx.get(dut.w_rdy)
                if ctx.get(dut.w_rdy) and rng.random() < 0.7:
                    ctx.set(dut.w_en, 1)
                    await ctx.tick("wr")
                    ctx.set(dut.w_en, 0)
                    ctx.set(dut.w_data, rng.getrandbits(16))      # changes at once
                    break
                ctx.set(dut.w_en, 0)
                await ctx.tick("wr")

    async def reader(ctx):
        stall = 0
        for _ in range(100 * len(entries)):          # a bound, so a lost entry fails
            if len(got) == len(entries):
                break
            if ctx.get(dut.r_rdy) and stall == 0:
                got.append(ctx.get(dut.r_data))
                ctx.set(dut.r_en, 1)
                stall = rng.choice([0, 0, 0, 2, 5 * depth])  # sometimes let them pile up
            else:
                ctx.set(dut.r_en, 0)
                stall = max(0, stall - 1)
            await ctx.tick("rd")
        ctx.set(dut.r_en, 0)

    run_two_clocks(top, w_domain="wr", w_ns=w_ns, r_domain="rd", r_ns=r_ns,
                   r_phase=rng.random(), main=reader, background=[writer])
    assert got == entries
    assert full_seen[0] > 0            # the writer was held back: the depth was reached


@pytest.mark.parametrize("w_ns,r_ns", [(5.0, 8.0), (8.0, 5.0)])
def test_a_run_of_transfers_moves_one_entry_a_clock(w_ns, r_ns):
    """Written with ``w_en`` held, the FIFO takes ``depth`` entries on consecutive write
    clocks; read with ``r_en`` held, it gives them on consecutive read clocks."""
    depth = 8
    top, dut, _ = _top(depth)
    taken, given = [], []

    async def writer(ctx):
        while not ctx.get(dut.w_rdy):                 # a clock after start-up
            await ctx.tick("wr")
        ctx.set(dut.w_en, 1)
        for k in range(3 * depth):
            ctx.set(dut.w_data, k)
            if ctx.get(dut.w_rdy):
                taken.append(k)
            else:
                break
            await ctx.tick("wr")
        ctx.set(dut.w_en, 0)

    async def reader(ctx):
        for _ in range(20):                           # the entries settle, unread
            await ctx.tick("rd")
        ctx.set(dut.r_en, 1)
        for _ in range(depth + 2):
            given.append(ctx.get(dut.r_data) if ctx.get(dut.r_rdy) else None)
            await ctx.tick("rd")

    run_two_clocks(top, w_domain="wr", w_ns=w_ns, r_domain="rd", r_ns=r_ns, r_phase=0.37,
                   main=reader, background=[writer])
    assert taken == list(range(depth))                # full after depth writes, no gap
    assert given == list(range(depth)) + [None, None]


def test_the_write_domain_reset_empties_it():
    top, dut, wr = _top(8)
    got = []

    async def writer(ctx):
        ctx.set(dut.w_en, 1)
        for k in range(5):                            # five entries, then a reset
            ctx.set(dut.w_data, 100 + k)
            await ctx.tick("wr")
        ctx.set(dut.w_en, 0)
        for _ in range(10):
            await ctx.tick("wr")
        ctx.set(wr.rst, 1)
        assert not ctx.get(dut.w_rdy)                 # low while in reset
        await ctx.delay(15e-9)                        # three write clocks
        ctx.set(wr.rst, 0)
        for _ in range(10):
            await ctx.tick("wr")
        ctx.set(dut.w_en, 1)
        for k in range(3):
            ctx.set(dut.w_data, 200 + k)
            while not ctx.get(dut.w_rdy):
                await ctx.tick("wr")
            await ctx.tick("wr")
        ctx.set(dut.w_en, 0)

    async def reader(ctx):
        for _ in range(60):                           # nothing read until after the reset
            await ctx.tick("rd")
        ctx.set(dut.r_en, 1)
        for _ in range(40):
            if ctx.get(dut.r_rdy):
                got.append(ctx.get(dut.r_data))
            await ctx.tick("rd")

    run_two_clocks(top, w_domain="wr", w_ns=5.0, r_domain="rd", r_ns=7.0, r_phase=0.5,
                   main=reader, background=[writer])
    assert got == [200, 201, 202]


def test_gray_code_round_trip():
    sim = Simulator(Module())
    codes = []

    async def bench(ctx):
        for v in range(64):
            code = ctx.get(gray_encode(Const(v, 6)))
            codes.append(code)
            assert ctx.get(gray_decode(Const(code, 6))) == v
    sim.add_testbench(bench)
    sim.run()
    # successive codes differ in exactly one bit, wrapping round
    assert all(bin(a ^ b).count("1") == 1 for a, b in zip(codes, codes[1:] + codes[:1]))


def test_depth_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        RegisteredAsyncFIFO(width=8, depth=6, w_domain="a", r_domain="b")
    with pytest.raises(ValueError, match="power of two"):
        RegisteredAsyncFIFO(width=8, depth=1, w_domain="a", r_domain="b")
