# SPDX-License-Identifier: BSD-2-Clause
"""cocotb measurement module of ``python -m bench.sim_speed`` (not a correctness test;
figures in ``docs/BENCHMARKS.md``).

Two figures per run, written as JSON to ``LDA_SPEED_OUT``:

* ``raw``: simulated clock cycles per wall-clock second with only the clock running
  (``m_axis_tready`` and nothing else driven);
* ``traffic``: minimum-size (60-byte) frames offered back to back through the
  AXI-Stream source/sink/monitor: cycles per second, and the sustained input rate in
  beats per clock (1.0 = the core never stalls the input) and frames per clock.
"""

import json
import os
import time

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from sim_tb.lib.frames import min_size_burst
from sim_tb.lib.tb import CoreTB

RAW_CYCLES = int(os.environ.get("LDA_SPEED_RAW_CYCLES", "200000"))
FRAMES = int(os.environ.get("LDA_SPEED_FRAMES", "2000"))


@cocotb.test()
async def measure_speed(dut):
    tb = CoreTB(dut)
    await tb.reset()
    dut.m_axis_tready.value = 1
    start = time.perf_counter()
    await ClockCycles(dut.clk, RAW_CYCLES)
    raw_s = time.perf_counter() - start

    frames = min_size_burst(np.random.default_rng(1), FRAMES)
    c0 = tb.now_cycle()
    start = time.perf_counter()
    tb.send_nowait(frames)
    received = await tb.receive(len(frames))
    traffic_s = time.perf_counter() - start
    cycles = tb.now_cycle() - c0
    seen = await tb.monitored(len(frames))
    beats_per_frame = -(-60 // tb.bytes_per_beat)
    span = seen[-1][1] + seen[-1][0] - seen[0][1]
    for i, (sent, got) in enumerate(zip(frames, received)):
        tb.check_frame(sent, got, i)
    result = {
        "data_width": tb.data_width,
        "raw_cycles": RAW_CYCLES,
        "raw_cycles_per_s": RAW_CYCLES / raw_s,
        "traffic_frames": FRAMES,
        "traffic_cycles": cycles,
        "traffic_cycles_per_s": cycles / traffic_s,
        "traffic_frames_per_s": FRAMES / traffic_s,
        "input_beats_per_cycle": FRAMES * beats_per_frame / span,
        "frames_per_cycle": FRAMES / span,
    }
    tb.log.info("speed: %s", result)
    out = os.environ.get("LDA_SPEED_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=2)
