# SPDX-License-Identifier: BSD-2-Clause
"""hw.counters.frozen_read_share.FrozenReadShare: the bus has priority on the frozen read port and
each answer goes, READ_LATENCY cycles later, to whoever asked."""

from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig
from hw.counters.counter_bank import CounterBank
from hw.counters.frozen_read_share import FrozenReadShare

LATENCY = CounterBank.READ_LATENCY


def test_bus_first_and_answers_routed_to_the_asker():
    dut = FrozenReadShare(config=LdaConfig(rows=64))
    seen = []

    async def tb(ctx):
        # cycle 0: both read; the bus wins the port and the exporter is held off
        ctx.set(dut.bus.en, 1)
        ctx.set(dut.bus.addr, 5)
        ctx.set(dut.exporter.en, 1)
        ctx.set(dut.exporter.addr, 9)
        assert ctx.get(dut.exporter_hold) == 1
        assert ctx.get(dut.bank.en) == 1 and ctx.get(dut.bank.addr) == 5
        await ctx.tick()
        # cycle 1: only the exporter reads
        ctx.set(dut.bus.en, 0)
        assert ctx.get(dut.exporter_hold) == 0
        assert ctx.get(dut.bank.en) == 1 and ctx.get(dut.bank.addr) == 9
        await ctx.tick()
        ctx.set(dut.exporter.en, 0)
        assert ctx.get(dut.bank.en) == 0
        # the bank answers each request READ_LATENCY cycles after it
        for cycle in range(2, LATENCY + 3):
            answering = cycle - LATENCY in (0, 1)
            ctx.set(dut.bank.valid, int(answering))
            ctx.set(dut.bank.data.count, 100 + cycle if answering else 0)
            ctx.set(dut.bank.error, int(cycle == LATENCY + 1))
            if ctx.get(dut.bus.valid):
                seen.append(("bus", cycle, ctx.get(dut.bus.data.count),
                             ctx.get(dut.bus.error)))
            if ctx.get(dut.exporter.valid):
                seen.append(("exporter", cycle, ctx.get(dut.exporter.data.count),
                             ctx.get(dut.exporter.error)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    assert seen == [("bus", LATENCY, 100 + LATENCY, 0),
                    ("exporter", LATENCY + 1, 101 + LATENCY, 1)]
