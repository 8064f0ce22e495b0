# SPDX-License-Identifier: BSD-2-Clause
"""A port trace of the exported core for comparing simulators (docs/SIMULATION.md,
"Icarus and Verilator put every frame in the same interval").

At every rising edge it writes one line to ``PORT_TRACE`` (default
``/tmp/port_trace.txt``): the cycle, the handshake ports as read at ``RisingEdge`` and
again at ``ReadOnly``, ``bus_rx_tdata``, ``s_axis_tdata`` and ``m_axis_tdata``; meanwhile
bursts are offered under the ``both`` and ``random`` pause cases with a host swap 0–60
clocks behind each, and each interval's FROZEN_PACKETS is logged (``PORTS``/``INTERVAL``
lines). Run it under each simulator with the same ``LDA_SIM_SEED`` and ``diff`` the
files::

    LDA_SIM_SEED=7 PORT_TRACE=/tmp/trace_icarus.txt LDA_SIM=icarus python -c \\
      "from sim_tb.lib.runner import CoreParams, run_core_tests; \\
       run_core_tests(CoreParams(kind='lda', data_width=64), 'sim_tb.benches.port_trace')"
"""

import os

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim_tb.lib.core_harness import CoreHarness, read_frozen_info
from sim_tb.lib.frames import min_size_burst, random_frames
from sim_tb.lib.tb import pauses_by_name

PORTS = ["s_axis_tvalid", "s_axis_tready", "s_axis_tlast", "m_axis_tvalid", "m_axis_tready",
         "m_axis_tlast", "bus_rx_tvalid", "bus_rx_tready", "bus_tx_tvalid", "bus_tx_tready"]


async def _trace(tb, out):
    dut = tb.dut
    while True:
        await RisingEdge(dut.clk)
        cycle = tb.now_cycle() if tb.t_ref is not None else -1
        edge = "".join(str(getattr(dut, p).value) for p in PORTS)
        rx = str(dut.bus_rx_tdata.value)
        await ReadOnly()
        settled = "".join(str(getattr(dut, p).value) for p in PORTS)
        out.write(f"{cycle} {edge} {settled} {rx} {dut.s_axis_tdata.value} "
                  f"{dut.m_axis_tdata.value}\n")


@cocotb.test(timeout_time=4000, timeout_unit="ms")
async def port_trace(dut):
    """The trace, with host swaps while bursts still enter under pauses."""
    with open(os.environ.get("PORT_TRACE", "/tmp/port_trace.txt"), "w") as out:
        tb = CoreHarness(dut)
        tracer = cocotb.start_soon(_trace(tb, out))
        await tb.start(calibrate=False)
        intervals = []
        for pauses in ("both", "random"):
            idle, backpressure = pauses_by_name(pauses, 3)
            tb.set_idle_generator(idle)
            tb.set_backpressure_generator(backpressure)
            for behind in (0, 3, 7, 15, 30, 45, 60):
                frames = min_size_burst(tb.rng, 6) + random_frames(tb.rng, 4, max_size=200)
                tb.send_nowait(frames)
                await ClockCycles(dut.clk, behind)
                await tb.host(tb.device.swap)
                await tb.receive(len(frames))
                await tb.monitored(len(frames))
                await tb.wait_status("frozen_ready", 1)
                info = await tb.host(read_frozen_info, tb.device)
                await tb.release_and_wait()
                intervals.append((pauses, behind, info["frozen_packets"]))
            tb.set_idle_generator(None)
            tb.set_backpressure_generator(None)
        tracer.cancel()
    tb.log.info("PORTS %s", " ".join(PORTS))
    for row in intervals:
        tb.log.info("INTERVAL pauses=%s swap_behind=%d frozen_packets=%d", *row)
