# SPDX-License-Identifier: BSD-2-Clause
"""A clock domain's reset (:func:`hw.backends.reset_synchronizer`): asserted at once,
released two edges of the domain's clock later, and on ECP5 carried by a DCCA onto the
global network — in the exported two-clock core, the board tops and the synthesis
harness alike."""

import re
import shutil
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.hdl import ClockDomain, ClockSignal, Fragment, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

from bench.synth_harness import RegisteredHarness
from host_sw.contracts.config import LdaConfig
from hw.backends import reset_synchronizer
from hw.backends.ecp5 import Ecp5ResetSynchronizer
from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop
from sim_tb.lib.ecp5_cells import DCCA_MODEL
from sim_tb.lib.runner import BUILD_ROOT


class _CountingDomain(wiring.Component):
    """A counter in domain ``sync`` whose reset comes from ``arst`` through the reset
    synchroniser of ``kind``."""

    arst: In(1)
    clk: In(1)
    count: Out(8)
    rst: Out(1)

    def __init__(self, kind):
        self.kind = kind
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.domains += ClockDomain("sync")
        m.d.comb += [ClockSignal("sync").eq(self.clk), self.rst.eq(ResetSignal("sync"))]
        m.submodules.reset_sync = reset_synchronizer(self.arst, domain="sync", kind=self.kind)
        m.d.sync += self.count.eq(self.count + 1)
        return m


def test_each_family_has_its_synchroniser_and_an_unknown_one_is_refused():
    generic = reset_synchronizer(Signal(), domain="sync", kind="generic")
    ecp5 = reset_synchronizer(Signal(), domain="ctrl", kind="ecp5")
    assert isinstance(generic, ResetSynchronizer)
    assert isinstance(ecp5, Ecp5ResetSynchronizer)
    for made in (generic, ecp5):
        Fragment.get(made, None)
    with pytest.raises(ValueError, match="generic, ecp5"):
        reset_synchronizer(Signal(), domain="sync", kind="ice40")


def _dccas(text):
    return re.findall(r"DCCA \w+ \((.*?)\);", text, re.S)


def test_the_ecp5_reset_of_a_domain_is_the_dcca_output_of_the_synchronised_reset():
    text = verilog.convert(_CountingDomain("ecp5"), name="top")
    (ports,) = _dccas(text)
    assert re.search(r"\.CLKI\(sync_rst_synced\)", ports)
    assert re.search(r"\.CE\(1'h1\)", ports)
    # the domain's reset (the synchroniser module's ``rst`` port, the counter's reset in
    # the top) is the buffer's output, not the synchroniser's last stage
    assert re.search(r"\.CLKO\(rst\)", ports)
    assert re.search(r"\.rst\(rst\)", text) and "if (rst) begin" in text
    assert not _dccas(verilog.convert(_CountingDomain("generic"), name="top"))


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed")
def test_the_ecp5_reset_asserts_at_once_and_releases_two_clock_edges_later():
    folder = BUILD_ROOT / "reset_synchronizer"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dut.v").write_text(verilog.convert(_CountingDomain("ecp5"), name="dut"))
    (folder / "tb.v").write_text("""
`timescale 1ns / 1ps
module tb;
  reg arst = 0, clk = 0; wire [7:0] count; wire rst; integer out;
  dut dut(.arst(arst), .clk(clk), .count(count), .rst(rst));
  task edge_; begin #5 clk = 1; #5 clk = 0; end endtask
  initial begin
    out = $fopen("trace.txt", "w");
    repeat (5) edge_;
    #3 arst = 1; #1 $fwrite(out, "%0d %0d\\n", rst, count);   // no edge yet: asserted
    edge_; $fwrite(out, "%0d %0d\\n", rst, count);            // the counter is reset
    #3 arst = 0;
    edge_; $fwrite(out, "%0d %0d\\n", rst, count);
    edge_; $fwrite(out, "%0d %0d\\n", rst, count);            // released at this edge
    edge_; $fwrite(out, "%0d %0d\\n", rst, count);
    edge_; $fwrite(out, "%0d %0d\\n", rst, count);
    $fclose(out); $finish;
  end
endmodule
""")
    subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", "tb.v", "dut.v", str(DCCA_MODEL)],
                   cwd=folder, check=True, capture_output=True)
    subprocess.run(["vvp", "-n", "sim.vvp"], cwd=folder, check=True, capture_output=True)
    trace = [tuple(map(int, line.split()))
             for line in (folder / "trace.txt").read_text().splitlines()]
    assert trace[0][0] == 1                 # asserted between edges, asynchronously
    assert trace[1] == (1, 0)
    assert trace[2] == (1, 0)               # one edge after the release: still in reset
    assert trace[3] == (0, 0)               # two edges: released
    assert trace[4:] == [(0, 1), (0, 2)]


def _core(memory):
    return MeasurementCore(config=LdaConfig(banks=2, rows=8, thresholds=(0, 2)),
                           data_width=64, memory=memory, control_domain="ctrl",
                           bridge_timeout_cycles=64)


@pytest.mark.parametrize("memory, dccas", [("ecp5", 2), ("generic", 0)])
def test_the_exported_two_clock_core_buffers_its_resets_on_ecp5_only(memory, dccas):
    text = verilog.convert(AxisTop(_core(memory)), name="lda_core")
    found = _dccas(text)
    assert len(found) == dccas
    if dccas:
        assert sorted(re.search(r"\.CLKI\((\w+)\)", p).group(1) for p in found) == \
            ["ctrl_rst_synced", "sync_rst_synced"]


def test_the_synthesis_harness_resets_as_an_ecp5_board_does():
    text = verilog.convert(RegisteredHarness(_core("ecp5"), control_domain="ctrl",
                                             control_ports=("bus_rx", "bus_tx")),
                           name="top")
    assert len(_dccas(text)) == 2
    generic = verilog.convert(RegisteredHarness(_core("ecp5"), family="generic"), name="top")
    assert not _dccas(generic)
