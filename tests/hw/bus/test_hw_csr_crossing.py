# SPDX-License-Identifier: BSD-2-Clause
"""The CSR bus crossing (hw.bus.csr_crossing) on Amaranth's simulator, two unrelated clocks.

A master in the control domain issues seeded random reads and writes (random gaps); a
model CSR target in the datapath domain answers each after a random latency. Every access
must reach the target once, in order, with its address and data unchanged while it is
held, and every read must return what the target answered: the model's memory after all
earlier writes.
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import ClockDomain, Module, UnusedElaboratable
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig
from hw.bus.csr_crossing import CsrBusCrossing
from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop


def run_crossing(*, sync_period, ctrl_period, seed, accesses=60):
    rng = random.Random(seed)
    dut = CsrBusCrossing(master_domain="ctrl", target_domain="sync")
    top = Module()
    top.domains.sync = ClockDomain("sync")
    top.domains.ctrl = ClockDomain("ctrl")
    top.submodules.dut = dut
    ops = [(rng.random() < 0.5, rng.randrange(8), rng.getrandbits(32))
           for _ in range(accesses)]
    memory = {a: (a * 0x9E3779B1) & 0xFFFFFFFF for a in range(8)}
    expected_reads = []
    model = dict(memory)
    for write, addr, data in ops:
        if write:
            model[addr] = data
        else:
            expected_reads.append(model[addr])
    seen, reads = [], []

    async def master(ctx):
        bus = dut.bus
        for write, addr, data in ops:
            ctx.set(bus.addr, addr)
            ctx.set(bus.w_data, data)
            ctx.set(bus.w_stb if write else bus.r_stb, 1)
            for _ in range(200):
                await ctx.tick("ctrl")
                if ctx.get(bus.ack):
                    break
            else:
                raise AssertionError("no ack in 200 control clocks")
            if not write:
                reads.append(ctx.get(bus.r_data))
            # as the bridge: the strobe stays up in the ack's cycle, then the next
            # access follows at once or after a gap
            await ctx.tick("ctrl")
            ctx.set(bus.w_stb, 0)
            ctx.set(bus.r_stb, 0)
            gap = rng.randrange(0, 3)
            if gap:
                await ctx.tick("ctrl").repeat(gap)

    async def target(ctx):
        t = dut.target
        held, wait = None, 0
        while True:
            await ctx.tick("sync")
            ctx.set(t.ack, 0)
            strobe = (ctx.get(t.r_stb), ctx.get(t.w_stb))
            if held is None:
                assert strobe != (1, 1)
                if any(strobe):
                    held = (bool(strobe[1]), ctx.get(t.addr), ctx.get(t.w_data))
                    wait = rng.randrange(0, 5)
                continue
            current = (bool(strobe[1]), ctx.get(t.addr), ctx.get(t.w_data))
            assert any(strobe) and current == held, f"access {held} not held: {current}"
            if wait:
                wait -= 1
                continue
            write, addr, data = held
            seen.append((write, addr, data if write else None))
            if write:
                memory[addr] = data
            else:
                ctx.set(t.r_data, memory[addr])
            ctx.set(t.ack, 1)
            held = None

    sim = Simulator(top)
    sim.add_clock(sync_period, domain="sync", phase=rng.random() * sync_period)
    sim.add_clock(ctrl_period, domain="ctrl", phase=rng.random() * ctrl_period)
    sim.add_testbench(master)
    sim.add_testbench(target, background=True)
    sim.run()
    assert seen == [(w, a, d if w else None) for w, a, d in ops]
    assert reads == expected_reads


@pytest.mark.parametrize("sync_period, ctrl_period", [
    (6.4e-9, 10e-9),       # the datapath faster (156.25 MHz against 100 MHz)
    (10e-9, 6.4e-9),       # the control clock faster
    (8e-9, 8e-9),          # one frequency, a random phase apart
    (3e-9, 23e-9),         # far apart either way: an answer must never find the
    (23e-9, 3e-9),         # answer crossing still busy with the one before
])
@pytest.mark.parametrize("seed", [1, 2])
def test_accesses_cross_in_order_and_reads_answer(sync_period, ctrl_period, seed):
    run_crossing(sync_period=sync_period, ctrl_period=ctrl_period, seed=seed)


def test_one_domain_refused():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="two domains"):
            CsrBusCrossing(master_domain="sync", target_domain="sync")
        gc.collect()


def test_two_clock_export_ports():
    """The two-clock export declares ``clk``, ``ctrl_clk`` and one ``rst`` for both domains
    (the one-clock export's ``clk``/``rst`` are its ``sync`` domain's, made at conversion)."""
    config = LdaConfig(banks=2, rows=16, thresholds=(0, 2))
    with warnings.catch_warnings():  # signatures only, never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        top = AxisTop(MeasurementCore(config=config, data_width=8, control_domain="ctrl"))
        assert {"clk", "ctrl_clk", "rst"} <= set(top.signature.members)
        assert top.control_domain == "ctrl"
        with pytest.raises(ValueError, match="control_domain"):
            MeasurementCore(config=config, data_width=8, control_domain="not a name")
        del top
        gc.collect()
