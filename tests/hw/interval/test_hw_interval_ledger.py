# SPDX-License-Identifier: BSD-2-Clause
"""hw.interval.interval_ledger.IntervalLedger: swap / overrun decision and per-copy interval status.

Each test drives the ledger's inputs cycle by cycle with the Amaranth simulator and checks
the values the core's status registers and exporter read: the swap pulse and the copy,
INTERVAL_SEQ, OVERRUNS, and each copy's sequence number, flags, timestamp, packet count
and CONFIG_ID.
"""

from amaranth.sim import Simulator

from host_sw.contracts.frames.frame_format import IntervalFlags
from hw.interval.interval_ledger import IntervalLedger

TIME_MODE = int(IntervalFlags.TIME_MODE)
SEQUENCE_GAP = int(IntervalFlags.SEQUENCE_GAP)
OVERRUN = int(IntervalFlags.OVERRUN)
CONFIG_CHANGED = int(IntervalFlags.CONFIG_CHANGED)


def run(testbench):
    dut = IntervalLedger()
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def tb(ctx):
        await testbench(ctx, dut)

    sim.add_testbench(tb)
    sim.run()


async def request(ctx, dut, seq, flags, timestamp):
    """One boundary request pulse (one cycle)."""
    ctx.set(dut.request, 1)
    ctx.set(dut.request_data.seq, seq)
    ctx.set(dut.request_data.flags, flags)
    ctx.set(dut.request_data.timestamp, timestamp)
    await ctx.tick()
    ctx.set(dut.request, 0)


async def wait_swap(ctx, dut, limit=10):
    """Cycles until ``swap`` is 1 (checked before each edge); None if it never is."""
    for cycle in range(limit):
        if ctx.get(dut.swap):
            return cycle
        await ctx.tick()
    return None


async def status_of(ctx, dut, copy):
    ctx.set(dut.frozen_copy, copy)
    frozen = dut.frozen
    return {name: ctx.get(getattr(frozen, name))
            for name in ("seq", "flags", "timestamp", "packets", "config_id")}


def test_reset_state():
    async def tb(ctx, dut):
        assert ctx.get(dut.copy) == 0 and ctx.get(dut.swap) == 0
        assert ctx.get(dut.interval_seq) == 0 and ctx.get(dut.overruns) == 0
        assert await status_of(ctx, dut, 0) == dict(seq=0, flags=0, timestamp=0, packets=0,
                                                    config_id=0)
    run(tb)


def test_swap_sets_sequence_flags_timestamp_per_copy():
    async def tb(ctx, dut):
        ctx.set(dut.frame_idle, 1)
        ctx.set(dut.other_clean, 1)
        ctx.set(dut.config_id, 0xC0FFEE01)
        await request(ctx, dut, seq=7, flags=TIME_MODE, timestamp=123_456_789_012)
        # registered request (1) → pending (1) → the swap in the next cycle
        assert await wait_swap(ctx, dut) == 1
        assert ctx.get(dut.copy) == 1           # a frame starting now takes the new copy
        await ctx.tick()
        assert ctx.get(dut.swap) == 0 and ctx.get(dut.copy) == 1
        await ctx.tick()                        # the bookkeeping, one cycle later
        assert ctx.get(dut.interval_seq) == 7 and ctx.get(dut.overruns) == 0
        ended = await status_of(ctx, dut, 0)
        assert ended == dict(seq=0, flags=TIME_MODE, timestamp=123_456_789_012, packets=0,
                             config_id=0)
        begun = await status_of(ctx, dut, 1)
        assert begun == dict(seq=7, flags=0, timestamp=0, packets=0, config_id=0xC0FFEE01)
        assert ctx.get(dut.ending_flags) == 0
    run(tb)


def test_no_boundary_while_frame_open_or_swap_in_flight():
    async def tb(ctx, dut):
        ctx.set(dut.other_clean, 1)
        ctx.set(dut.frame_idle, 0)
        await request(ctx, dut, seq=1, flags=0, timestamp=10)
        assert await wait_swap(ctx, dut, limit=6) is None
        ctx.set(dut.frame_idle, 1)
        assert await wait_swap(ctx, dut) == 0
        await ctx.tick()
        # the swap is in flight until it arrives at the counter bank
        await request(ctx, dut, seq=2, flags=0, timestamp=20)
        assert await wait_swap(ctx, dut, limit=6) is None
        assert ctx.get(dut.interval_seq) == 1
        ctx.set(dut.swap_arrived, 1)
        await ctx.tick()
        ctx.set(dut.swap_arrived, 0)
        assert await wait_swap(ctx, dut) == 0
        assert ctx.get(dut.copy) == 0           # back to copy 0
        await ctx.tick().repeat(2)
        assert ctx.get(dut.interval_seq) == 2
        assert (await status_of(ctx, dut, 0))["seq"] == 2
        assert (await status_of(ctx, dut, 1))["timestamp"] == 20
    run(tb)


def test_requests_before_the_boundary_merge():
    async def tb(ctx, dut):
        ctx.set(dut.other_clean, 1)
        ctx.set(dut.frame_idle, 0)
        await request(ctx, dut, seq=3, flags=TIME_MODE, timestamp=30)
        await ctx.tick().repeat(2)
        await request(ctx, dut, seq=4, flags=SEQUENCE_GAP, timestamp=40)
        await ctx.tick().repeat(2)
        ctx.set(dut.frame_idle, 1)
        assert await wait_swap(ctx, dut) == 0
        await ctx.tick().repeat(2)
        assert ctx.get(dut.interval_seq) == 4
        assert await status_of(ctx, dut, 0) == dict(
            seq=0, flags=TIME_MODE | SEQUENCE_GAP, timestamp=40, packets=0, config_id=0)
        assert (await status_of(ctx, dut, 1))["seq"] == 4
    run(tb)


def test_overrun_keeps_copy_counts_and_flags():
    async def tb(ctx, dut):
        ctx.set(dut.frame_idle, 1)
        ctx.set(dut.other_clean, 0)
        await request(ctx, dut, seq=5, flags=TIME_MODE, timestamp=50)
        assert await wait_swap(ctx, dut, limit=6) is None
        assert ctx.get(dut.copy) == 0
        assert ctx.get(dut.overruns) == 1
        assert ctx.get(dut.interval_seq) == 5   # aligned by sequence number all the same
        assert ctx.get(dut.ending_flags) == OVERRUN | TIME_MODE
        current = await status_of(ctx, dut, 0)
        assert current == dict(seq=0, flags=OVERRUN | TIME_MODE, timestamp=0, packets=0,
                               config_id=0)
        # a second overrun counts again; then a swap carries the flags to the ended copy
        await request(ctx, dut, seq=6, flags=0, timestamp=60)
        await ctx.tick().repeat(4)
        assert ctx.get(dut.overruns) == 2 and ctx.get(dut.interval_seq) == 6
        ctx.set(dut.other_clean, 1)
        await request(ctx, dut, seq=7, flags=0, timestamp=70)
        assert await wait_swap(ctx, dut) == 1
        await ctx.tick().repeat(2)
        assert ctx.get(dut.overruns) == 2 and ctx.get(dut.interval_seq) == 7
        ended = await status_of(ctx, dut, 0)
        assert ended["flags"] == OVERRUN | TIME_MODE and ended["timestamp"] == 70
    run(tb)


def test_packets_counted_per_copy_and_reset_on_swap():
    async def tb(ctx, dut):
        ctx.set(dut.frame_idle, 1)
        ctx.set(dut.other_clean, 1)
        ctx.set(dut.counted, 1)
        ctx.set(dut.counted_copy, 0)
        await ctx.tick().repeat(3)
        ctx.set(dut.counted_copy, 1)
        await ctx.tick().repeat(2)
        ctx.set(dut.counted, 0)
        assert (await status_of(ctx, dut, 0))["packets"] == 3
        assert (await status_of(ctx, dut, 1))["packets"] == 2
        await request(ctx, dut, seq=1, flags=0, timestamp=0)
        assert await wait_swap(ctx, dut) == 1
        await ctx.tick().repeat(2)
        # the new interval (copy 1) starts from zero; the ended one keeps its count
        assert (await status_of(ctx, dut, 1))["packets"] == 0
        assert (await status_of(ctx, dut, 0))["packets"] == 3
    run(tb)


def test_config_id_change_flags_the_current_interval():
    async def tb(ctx, dut):
        ctx.set(dut.config_id, 0x11)
        await ctx.tick().repeat(2)
        ctx.set(dut.config_id, 0x22)
        ctx.set(dut.config_id_written, 1)
        await ctx.tick()
        ctx.set(dut.config_id_written, 0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.ending_flags) == CONFIG_CHANGED
        # rewriting the same value flags nothing new (after a swap clears the flags)
        ctx.set(dut.frame_idle, 1)
        ctx.set(dut.other_clean, 1)
        await request(ctx, dut, seq=1, flags=0, timestamp=0)
        assert await wait_swap(ctx, dut) == 1
        await ctx.tick().repeat(2)
        assert (await status_of(ctx, dut, 0))["flags"] == CONFIG_CHANGED
        assert (await status_of(ctx, dut, 1))["config_id"] == 0x22
        ctx.set(dut.config_id_written, 1)
        await ctx.tick()
        ctx.set(dut.config_id_written, 0)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.ending_flags) == 0
    run(tb)
