# SPDX-License-Identifier: BSD-2-Clause
"""A clock domain's reset (:func:`hw.backends.reset_synchronizer`): asserted at once,
released two edges of the domain's clock later, and on ECP5 carried by a DCCA onto the
global network to flip-flops' resets alone (:func:`hw.backends.clock_domain`) — in the
exported two-clock core, the board tops and the synthesis harness alike."""

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
from hw.backends import ASYNC_RESET, clock_domain, reset_synchronizer
from hw.backends.ecp5 import Ecp5ResetSynchronizer
from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop
from sim_tb.lib.ecp5_cells import DCCA_MODEL
from sim_tb.lib.runner import BUILD_ROOT
from tests.hw.ecp5_netlist import synthesized


class _CountingDomain(wiring.Component):
    """A counter in domain ``sync`` (made by :func:`clock_domain` of ``kind``, or with
    ``async_reset`` if given) whose reset comes from ``arst`` through the reset
    synchroniser of ``kind``; ``clear`` zeroes it (a register's own clear, which Yosys
    merges into a synchronous reset)."""

    arst: In(1)
    clk: In(1)
    clear: In(1)
    count: Out(8)
    rst: Out(1)

    def __init__(self, kind, *, async_reset=None):
        self.kind = kind
        self.async_reset = async_reset
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        if self.async_reset is None:
            m.domains += clock_domain("sync", kind=self.kind)
        else:
            m.domains += ClockDomain("sync", async_reset=self.async_reset)
        m.d.comb += [ClockSignal("sync").eq(self.clk), self.rst.eq(ResetSignal("sync"))]
        m.submodules.reset_sync = reset_synchronizer(self.arst, domain="sync", kind=self.kind)
        with m.If(self.clear):
            m.d.sync += self.count.eq(0)
        with m.Else():
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
    assert clock_domain("ctrl", kind="ecp5").async_reset
    assert not clock_domain("sync", kind="generic").async_reset
    assert set(ASYNC_RESET) == {"generic", "ecp5"}
    with pytest.raises(ValueError, match="generic, ecp5"):
        clock_domain("sync", kind="ice40")


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
    assert re.search(r"\.rst\(rst\)", text) and "posedge rst" in text
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
  dut dut(.arst(arst), .clk(clk), .clear(1'b0), .count(count), .rst(rst));
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
    assert trace[0] == (1, 0)               # asserted between edges: the counter at once
    assert trace[1] == (1, 0)
    assert trace[2] == (1, 0)               # one edge after the release: still in reset
    assert trace[3] == (0, 0)               # two edges: released
    assert trace[4:] == [(0, 1), (0, 2)]


def _global_reset_loads(top, tmp_path):
    """``(cell type, port)`` of every load of the DCCA's output after ``synth_ecp5``."""
    cells = synthesized(top, tmp_path)["cells"]
    (dcca,) = (c for c in cells.values() if c["type"] == "DCCA")
    (net,) = dcca["connections"]["CLKO"]
    return sorted((c["type"], port) for c in cells.values()
                  for port, bits in c["connections"].items()
                  if c["port_directions"][port] == "input" and net in bits)


def test_the_ecp5_global_reset_drives_flip_flop_resets_alone(tmp_path):
    """nextpnr routes every load of a global with locked paths from the global's branch;
    a LUT input among them took fabric routing the RLI core needed (one placement could
    not reach the reset's own DCCA input). With the ECP5 domain's asynchronous reset the
    counter's clear stays out of the reset: the global's loads are the counter's eight
    flip-flops' LSR pins. A synchronous reset merges the clear into LUT inputs."""
    assert _global_reset_loads(_CountingDomain("ecp5"), tmp_path) == [("TRELLIS_FF", "LSR")] * 8
    merged = _global_reset_loads(_CountingDomain("ecp5", async_reset=False), tmp_path)
    assert any(cell == "LUT4" for cell, _ in merged)


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
    # docs/CORE_INTERFACE.md, "Reset": the ECP5 export's registers reset at once
    domains = Fragment.get(AxisTop(_core(memory)), None).domains
    assert {name: domains[name].async_reset for name in ("sync", "ctrl")} == \
        {"sync": bool(dccas), "ctrl": bool(dccas)}


def test_the_synthesis_harness_resets_as_an_ecp5_board_does():
    text = verilog.convert(RegisteredHarness(_core("ecp5"), control_domain="ctrl",
                                             control_ports=("bus_rx", "bus_tx")),
                           name="top")
    assert len(_dccas(text)) == 2
    generic = verilog.convert(RegisteredHarness(_core("ecp5"), family="generic"), name="top")
    assert not _dccas(generic)
