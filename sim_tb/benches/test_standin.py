# SPDX-License-Identifier: BSD-2-Clause
"""cocotb tests of the testbench infrastructure itself, on ``sim_tb/data/standin_core.v``
(a one-register AXI-Stream stage with the core's ports and the bus bytes looped back), and
their pytest entry (no gateware needed).

They prove the pieces the core's testbenches rely on — the runner, frame
source/sink/monitor under the pause matrix, tuser on the last beat, start-of-frame cycles,
the byte-stream port — without depending on the real core. This file is both the cocotb
test module and the pytest module: the ``test_*`` functions at the bottom run the cocotb
tests above on the stand-in core, and :mod:`sim_tb.benches.failing`'s always-failing test
to prove that a failing cocotb test fails the pytest test.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level's own tests, so a
failure of a core test points at the core, not at :mod:`sim_tb.lib.runner` or
:mod:`sim_tb.lib.tb`.
"""

import random

import cocotb
import numpy as np
import pytest

from sim_tb.lib.frames import bad_frames, min_size_burst, random_frames
from sim_tb.lib.runner import BUILD_ROOT, REPO, SimFailure, run_cocotb, waves_enabled
from sim_tb.lib.verilator_build import RUNTIME_OBJECTS, runtime_store, verilator_env
from sim_tb.lib.tb import PAUSE_CASES, CoreTB, pauses_by_name


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


# pytest: run the cocotb tests above on the stand-in core

STANDIN = REPO / "sim_tb" / "data" / "standin_core.v"

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("data_width", [8, 64])
def test_standin_infrastructure(data_width):
    results = run_cocotb(sources=[STANDIN], toplevel="standin_core",
                         build_dir=BUILD_ROOT / f"standin-w{data_width}",
                         test_module=__name__,
                         parameters={"DATA_WIDTH": data_width}, seed=1)
    assert len(results.tests) >= 6


def test_runner_reports_failures():
    """A failing cocotb test must fail the pytest test (here: a module whose one test
    raises)."""
    with pytest.raises(SimFailure):
        run_cocotb(sources=[STANDIN], toplevel="standin_core",
                   build_dir=BUILD_ROOT / "standin-fail", test_module="sim_tb.benches.failing",
                   parameters={"DATA_WIDTH": 8}, seed=1)


@pytest.mark.skipif(verilator_env() is None, reason="no verilator installed")
def test_verilator_builds_share_the_runtime_objects(tmp_path):
    """A Verilator build links the run-time objects the first build compiled
    (:func:`sim_tb.lib.verilator_build.runtime_store`) instead of compiling them again,
    and the model still passes the stand-in's tests."""
    builds = []
    for data_width in (8, 64):
        results = run_cocotb(sources=[STANDIN], toplevel="standin_core",
                             build_dir=tmp_path / f"w{data_width}", test_module=__name__,
                             parameters={"DATA_WIDTH": data_width}, seed=1,
                             simulator="verilator", testcase=["byte_port_loopback"])
        assert "byte_port_loopback" in results.tests, sorted(results.tests)
        builds.append(next((tmp_path / f"w{data_width}").glob("verilator-standin_core-*")))
    store = runtime_store(BUILD_ROOT, waves_enabled())
    log = (builds[1] / "build.log").read_text()
    for name in RUNTIME_OBJECTS:
        assert f"-o {name}" not in log, f"{name} compiled again: {builds[1] / 'build.log'}"
        assert (builds[1] / name).read_bytes() == (store / name).read_bytes(), name
