# SPDX-License-Identifier: BSD-2-Clause
"""cocotb tests of the exported OPA sender words (:class:`hw.opa.cah.OpaCah`) under a real
HDL simulator, and their pytest entry:

* ``words_equal_golden``: a packet stream with back-to-back packets of one group (A,A,A
  and A,B,A) and idle gaps, then every group's word read back and compared with the
  golden model (:func:`host_sw.model.golden_opa.opa_synopsis`) word for word;
* ``intervals_equal_golden``: the double-buffered block (``double_buffered=True``) over
  two intervals, the second's packets right behind the swap, each frozen copy read back
  and compared with the golden model word for word, with its check value and packet
  total.

This file is both the cocotb test module and the pytest module: each pytest function at
the bottom exports its block and runs its one cocotb test on it; the configuration comes
from the environment (``OPA_GROUPS``, ``OPA_ROWS``). One configuration (the
Amaranth-simulator test in ``tests/hw/opa/test_hw_opa_cah.py`` covers k = 2 too), to keep
the suite short.
"""

import os

import cocotb
import numpy as np
import pytest
from amaranth.back import verilog
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from host_sw.contracts.check_value import words_check
from host_sw.contracts.config import OpaConfig
from host_sw.model.golden_opa import opa_synopsis
from hw.opa.cah import OpaCah
from sim_tb.lib.ecp5_cells import ecp5_model_sources
from sim_tb.lib.runner import BUILD_ROOT, ecp5_models_missing, run_cocotb

#: Edges from the last packet to its B write, with margin (the block's ``latency``).
_DRAIN = 32


def stream(config: OpaConfig, seed: int = 5, n: int = 120):
    """The packets (hashes) and idle gaps of the test: a fixed prefix of one-group runs,
    then random groups."""
    rng = np.random.default_rng(seed)
    gb = config.groups.bit_length() - 1
    groups = np.concatenate([[0, 0, 0, 1, 0, 1, 0, 2, 2, 1, 0, 1],
                             rng.integers(0, config.groups, n)]) % config.groups
    low = rng.integers(0, 2 ** (64 - gb), len(groups), dtype=np.uint64)
    packets = (groups.astype(np.uint64) << np.uint64(64 - gb)) | low if gb else low
    return packets, rng.random(len(packets)) < 0.15


async def feed(dut, packets, gaps):
    """Drive ``packets`` (hashes) into ``valid``/``packet_hash``, one per clock, with an
    idle clock before each packet whose ``gaps`` entry is true."""
    for p, gap in zip(packets, gaps):
        if gap:
            dut.valid.value = 0
            await RisingEdge(dut.clk)
        dut.valid.value = 1
        dut.packet_hash.value = int(p)
        await RisingEdge(dut.clk)
    dut.valid.value = 0


@cocotb.test()
async def words_equal_golden(dut):
    config = OpaConfig(groups=int(os.environ.get("OPA_GROUPS", "8")),
                       rows=int(os.environ.get("OPA_ROWS", "4")))
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    dut.valid.value = 0
    dut.read_en.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    packets, gaps = stream(config)
    await feed(dut, packets, gaps)
    for _ in range(_DRAIN):
        await RisingEdge(dut.clk)
    words = []
    for g in range(config.groups):
        dut.read_addr.value = g
        dut.read_en.value = 1
        await RisingEdge(dut.clk)
        dut.read_en.value = 0
        for _ in range(OpaCah.READ_LATENCY):
            await RisingEdge(dut.clk)
        assert dut.read_valid.value == 1
        words.append(int(dut.read_data.value))
    expected = opa_synopsis(config, packets).words()
    for g, (got, want) in enumerate(zip(words, expected)):
        assert got == want, f"group {g}: {got:#x} != golden {want:#x}"


# the double-buffered block over two intervals

#: Edges from the last packet until the copy is FROZEN, with margin (``latency`` plus
#: ``check_cycles`` of the block, for up to 32 groups).
_FREEZE = 96


async def _ticks(dut, n):
    for _ in range(n):
        await RisingEdge(dut.clk)


async def _pulse(dut, name):
    getattr(dut, name).value = 1
    await RisingEdge(dut.clk)
    getattr(dut, name).value = 0


async def _read_frozen(dut, config):
    words = []
    for g in range(config.groups):
        dut.read_addr.value = g
        dut.read_en.value = 1
        await RisingEdge(dut.clk)
        dut.read_en.value = 0
        await _ticks(dut, OpaCah.READ_LATENCY)
        assert dut.read_valid.value == 1 and dut.read_error.value == 0
        words.append(int(dut.read_data.value))
    return words, int(dut.frozen_check.value), int(dut.frozen_updates.value)


@cocotb.test()
async def intervals_equal_golden(dut):
    config = OpaConfig(groups=int(os.environ.get("OPA_GROUPS", "8")),
                       rows=int(os.environ.get("OPA_ROWS", "4")))
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    for name in ("valid", "read_en", "swap", "release"):
        getattr(dut, name).value = 0
    await _ticks(dut, 2)
    dut.rst.value = 0
    await _ticks(dut, config.groups + 2)            # the clearing sweep after reset
    assert dut.sweeping.value == 0 and dut.other_clean.value == 1
    intervals = [stream(config, seed=6, n=60), stream(config, seed=7, n=40)]
    await feed(dut, *intervals[0])
    await _pulse(dut, "swap")
    await feed(dut, *intervals[1])                  # right behind the swap
    await _ticks(dut, _FREEZE)
    got = [await _read_frozen(dut, config)]
    await _pulse(dut, "release")
    await _ticks(dut, config.groups + 4)
    assert dut.other_clean.value == 1
    await _pulse(dut, "swap")
    await _ticks(dut, _FREEZE)
    assert dut.frozen_ready.value == 1
    got.append(await _read_frozen(dut, config))
    for k, ((words, check, updates), (packets, _)) in enumerate(zip(got, intervals)):
        want = opa_synopsis(config, packets).words()
        for g, (a, b) in enumerate(zip(words, want)):
            assert a == b, f"interval {k} group {g}: {a:#x} != golden {b:#x}"
        assert check == words_check(config, want), f"interval {k}: check value"
        assert updates == len(packets), f"interval {k}: {updates} updates"


# pytest: export each block and run its cocotb test on it

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("groups, rows", [(8, 4)])
def test_opa_cah_words_equal_golden(groups, rows):
    build = BUILD_ROOT / f"opa-cah-g{groups}-k{rows}"
    build.mkdir(parents=True, exist_ok=True)
    source = build / "opa_cah.v"
    source.write_text(verilog.convert(OpaCah(config=OpaConfig(groups=groups, rows=rows)),
                                      name="opa_cah"))
    results = run_cocotb(sources=[source], toplevel="opa_cah", build_dir=build,
                         test_module=__name__, testcase="words_equal_golden", seed=1,
                         extra_env={"OPA_GROUPS": str(groups), "OPA_ROWS": str(rows)})
    assert len(results.tests) == 1 and not results.failed


@pytest.mark.parametrize("memory", ["generic", "ecp5"])
def test_opa_double_buffered_intervals_equal_golden(memory):
    """Also the ECP5 build (DP16KD copies, each partial product a MULT18X18D with its
    output register) under the primitives' behavioural models."""
    missing = ecp5_models_missing() if memory == "ecp5" else ""
    if missing:
        pytest.skip("ECP5 simulation models unavailable: " + missing)
    groups, rows = 8, 3
    build = BUILD_ROOT / f"opa-double-g{groups}-k{rows}-{memory}"
    build.mkdir(parents=True, exist_ok=True)
    source = build / "opa_double.v"
    core = OpaCah(config=OpaConfig(groups=groups, rows=rows), double_buffered=True,
                  memory=memory)
    source.write_text(verilog.convert(core, name="opa_double"))
    models = ecp5_model_sources(build) if memory == "ecp5" else []
    results = run_cocotb(sources=[source, *models], toplevel="opa_double", build_dir=build,
                         test_module=__name__, testcase="intervals_equal_golden", seed=1,
                         extra_env={"OPA_GROUPS": str(groups), "OPA_ROWS": str(rows)})
    assert len(results.tests) == 1 and not results.failed
