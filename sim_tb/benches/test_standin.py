# SPDX-License-Identifier: BSD-2-Clause
"""cocotb tests of the testbench infrastructure itself, on ``sim_tb/data/standin_core.v``
(a one-register AXI-Stream stage with the core's ports and the bus bytes looped back).

They prove the pieces the core's testbenches rely on — frame source/sink/monitor under
the pause matrix, tuser on the last beat, start-of-frame cycles, the byte-stream port —
without depending on the real core. Run by ``sim_tb/test_infra.py``; the second test
level of ``docs/DESIGN.md`` ("Testing").
"""

import random

import cocotb
import numpy as np

from sim_tb.frames import bad_frames, min_size_burst, random_frames
from sim_tb.tb import PAUSE_CASES, CoreTB, pauses_by_name


def _frames(seed):
    rng = np.random.default_rng(seed)
    frames = random_frames(rng, 12, max_size=300) + bad_frames(rng) + min_size_burst(rng, 8)
    random.Random(seed).shuffle(frames)
    return frames


@cocotb.test()
@cocotb.parametrize(pauses=PAUSE_CASES)
async def passthrough_matrix(dut, pauses):
    tb = CoreTB(dut)
    await tb.reset()
    idle, backpressure = pauses_by_name(pauses, cocotb.RANDOM_SEED)
    tb.set_idle_generator(idle)
    tb.set_backpressure_generator(backpressure)
    frames = _frames(cocotb.RANDOM_SEED)
    await tb.send(frames)
    received = await tb.receive(len(frames), timeout_cycles=200_000)
    for i, (sent, got) in enumerate(zip(frames, received)):
        tb.check_frame(sent, got, i)
    seen = await tb.monitored(len(frames))
    sofs = [c for _, c in seen]
    assert sofs == sorted(sofs) and len(set(sofs)) == len(sofs)
    if pauses == "none":
        # back to back: each SOF follows the previous frame's last beat
        for (beats, c), (_, c_next) in zip(seen, seen[1:]):
            assert c_next == c + beats, (c, beats, c_next)


@cocotb.test()
async def byte_port_loopback(dut):
    tb = CoreTB(dut)
    await tb.reset()
    payload = bytes(range(256)) + b"\x00\xff"
    echoed = await tb.bus_port.transact(payload, len(payload))
    assert echoed == payload
    assert await tb.bus_port.drain(20) == b""


@cocotb.test()
async def detects_corruption(dut):
    """The checker must fail on a changed byte (tests that can fail)."""
    tb = CoreTB(dut)
    await tb.reset()
    frames = _frames(3)[:3]
    await tb.send(frames)
    got = await tb.receive(3)
    wrong = type(frames[0])(frames[0].data[:-1] + bytes([frames[0].data[-1] ^ 1]))
    try:
        tb.check_frame(wrong, got[0], 0)
    except AssertionError:
        pass
    else:
        raise AssertionError("check_frame accepted a corrupted frame")
