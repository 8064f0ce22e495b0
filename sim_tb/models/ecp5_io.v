// SPDX-License-Identifier: BSD-2-Clause
// Behavioural models of the Lattice ECP5 I/O primitives a board top instantiates
// (amaranth's ECP5 platform: IB, OBZ, IDDRX1F, ODDRX1F, FD1S3AX, OFS1P3DX; the board
// tops' RGMII delays: DELAYG), for the board testbenches (sim_tb/board/board_sim.py).
//
// Written here because Yosys ships these cells only as empty (* blackbox *) modules
// (share/ecp5/cells_bb.v) and the rest of its ECP5 library does not compile in
// Icarus 11 (see sim_tb/lib/ecp5_cells.py). Semantics from Lattice TN1265 (ECP5 high-speed
// I/O) and the ECP5 family data sheet:
//  * IDDRX1F: D is sampled at SCLK's rising and falling edges; at the next rising edge
//    Q0 shows the rising-edge sample and Q1 the falling-edge sample that followed it.
//  * ODDRX1F: D0 and D1 are registered at SCLK's rising edge; Q shows D0 while SCLK is
//    high and D1 while it is low (so a clock output driven with D0=1, D1=0 is
//    edge-aligned with the data, as RGMII wants before the PHY's own delay).
//  * DELAYG: a fixed input/output delay of DEL_VALUE taps of about 25 ps.
`timescale 1ns / 1ps

module IB (input I, output O);
  assign O = I;
endmodule

module OB (input I, output O);
  assign O = I;
endmodule

module OBZ (input I, input T, output O);
  assign O = T ? 1'bz : I;
endmodule

module FD1S3AX (input CK, input D, output reg Q);
  parameter GSR = "ENABLED";
  initial Q = 1'b0;
  always @(posedge CK) Q <= D;
endmodule

module OFS1P3DX (input SCLK, input SP, input CD, input D, output reg Q);
  parameter GSR = "ENABLED";
  initial Q = 1'b0;
  always @(posedge SCLK or posedge CD)
    if (CD) Q <= 1'b0;
    else if (SP) Q <= D;
endmodule

module IFS1P3DX (input SCLK, input SP, input CD, input D, output reg Q);
  parameter GSR = "ENABLED";
  initial Q = 1'b0;
  always @(posedge SCLK or posedge CD)
    if (CD) Q <= 1'b0;
    else if (SP) Q <= D;
endmodule

module IDDRX1F (input D, input SCLK, input RST, output reg Q0, output reg Q1);
  parameter GSR = "ENABLED";
  reg rise = 1'b0, fall = 1'b0;
  initial begin Q0 = 1'b0; Q1 = 1'b0; end
  always @(posedge SCLK) begin
    Q0 <= rise;
    Q1 <= fall;
    rise <= D;
  end
  always @(negedge SCLK) fall <= D;
endmodule

module ODDRX1F (input SCLK, input RST, input D0, input D1, output Q);
  parameter GSR = "ENABLED";
  reg q0 = 1'b0, q1 = 1'b0;
  always @(posedge SCLK) begin
    q0 <= D0;
    q1 <= D1;
  end
  assign Q = SCLK ? q0 : q1;
endmodule

module DELAYG (input A, output Z);
  parameter DEL_MODE = "USER_DEFINED";
  parameter DEL_VALUE = 0;
  assign #(DEL_VALUE * 0.025) Z = A;
endmodule
