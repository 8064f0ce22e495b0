# SPDX-License-Identifier: BSD-2-Clause
"""The host driver's way into an Amaranth simulation (:mod:`sim_tb.lib.amaranth_host`,
:mod:`sim_tb.lib.sim_transport`) on stand-in byte ports, without a core: the host thread runs
in lockstep (no simulated time passes while host code runs), errors cross between the
host thread and the testbench, and a bridge that does not answer or does not listen is
a transport timeout of the driver, counted in clocks. The whole core behind these is
tested in ``tests/test_hw_core*.py``."""

import time

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import LdaConfig
from host_sw.device.driver import Device
from host_sw.device.transport_base import TransportTimeout
from sim_tb.lib.amaranth_host import HostThread, SimulatedHost
from sim_tb.lib.amaranth_streams import simulate


class SilentBridge(wiring.Component):
    """Byte ports of a bridge that takes every byte (or none) and never answers."""

    bus_rx: In(stream.Signature(8))
    bus_tx: Out(stream.Signature(8))

    def __init__(self, *, listening: bool):
        self.listening = listening
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += self.bus_rx.ready.eq(int(self.listening))
        return m


class Cycles:
    def __init__(self):
        self.count = 0

    async def run(self, ctx):
        while True:
            await ctx.tick()
            self.count += 1


@pytest.mark.parametrize("listening", [True, False], ids=["silent", "deaf"])
def test_unanswered_commands_are_transport_timeouts_in_clocks(listening):
    dut = SilentBridge(listening=listening)
    host = SimulatedHost(dut, timeout_cycles=50)
    clock = Cycles()
    seen = {}

    async def main(ctx):
        start = clock.count
        with pytest.raises(TransportTimeout) as error:
            await host.connect(ctx, LdaConfig())
        seen["cycles"] = clock.count - start
        seen["message"] = str(error.value)

    simulate(dut, main, clock.run)
    # one 11-byte checked read command (command, length, address, tag, CRC-32): the bytes
    # (or the first byte's wait), then 50 idle clocks
    assert 50 <= seen["cycles"] <= 65, seen
    assert "core" in seen["message"]


def test_host_thread_is_in_lockstep_and_passes_errors_both_ways():
    dut = SilentBridge(listening=True)
    thread = HostThread()
    clock = Cycles()
    seen = {}

    async def wait_cycles(ctx, n):
        await ctx.tick().repeat(n)
        return n

    async def fail(ctx):
        raise KeyError("from the testbench")

    def host_code():
        t = clock.count
        time.sleep(0.05)                        # the simulation does not run meanwhile
        seen["while_sleeping"] = clock.count - t
        seen["waited"] = thread.resume(wait_cycles)(7)
        seen["after_resume"] = clock.count - t
        try:
            thread.resume(fail)()
        except KeyError as e:
            seen["error_in_host"] = str(e)
        raise ValueError("from the host")

    async def main(ctx):
        with pytest.raises(ValueError, match="from the host"):
            await thread.call(ctx, host_code)
        with pytest.raises(RuntimeError, match="outside HostThread.call"):
            thread.resume(wait_cycles)(1)
        seen["next_call"] = await thread.call(ctx, lambda: 42)

    simulate(dut, main, clock.run)
    assert seen == {"while_sleeping": 0, "waited": 7, "after_resume": 7,
                    "error_in_host": "'from the testbench'", "next_call": 42}


def test_device_on_a_core_without_a_host_thread_is_refused():
    """Host code must run through the host thread (the simulator would deadlock)."""
    dut = SilentBridge(listening=True)
    host = SimulatedHost(dut)
    seen = {}

    async def main(ctx):
        with pytest.raises(RuntimeError, match="outside HostThread.call"):
            Device(host.transport)
        seen["done"] = True

    simulate(dut, main)
    assert seen == {"done": True}
