// SPDX-License-Identifier: BSD-2-Clause
// Stand-in for the exported MeasurementCore, used only to test the cocotb infrastructure
// (runner, AXI-Stream source/sink, pause generators, byte-stream driver) without the
// real core: the same top-level ports, a one-register AXI-Stream pipeline stage, and the
// bus byte stream looped back (bus_rx -> bus_tx).
`default_nettype none
module standin_core #(parameter DATA_WIDTH = 64) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire [DATA_WIDTH-1:0]   s_axis_tdata,
    input  wire [DATA_WIDTH/8-1:0] s_axis_tkeep,
    input  wire                    s_axis_tlast,
    input  wire                    s_axis_tuser,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    output reg  [DATA_WIDTH-1:0]   m_axis_tdata,
    output reg  [DATA_WIDTH/8-1:0] m_axis_tkeep,
    output reg                     m_axis_tlast,
    output reg                     m_axis_tuser,
    output reg                     m_axis_tvalid = 1'b0,
    input  wire                    m_axis_tready,
    input  wire [7:0]              bus_rx_tdata,
    input  wire                    bus_rx_tvalid,
    output wire                    bus_rx_tready,
    output wire [7:0]              bus_tx_tdata,
    output wire                    bus_tx_tvalid,
    input  wire                    bus_tx_tready
);
    assign s_axis_tready = !m_axis_tvalid || m_axis_tready;
    always @(posedge clk) begin
        if (rst) begin
            m_axis_tvalid <= 1'b0;
        end else if (s_axis_tready) begin
            m_axis_tvalid <= s_axis_tvalid;
            m_axis_tdata  <= s_axis_tdata;
            m_axis_tkeep  <= s_axis_tkeep;
            m_axis_tlast  <= s_axis_tlast;
            m_axis_tuser  <= s_axis_tuser;
        end
    end
    assign bus_tx_tdata  = bus_rx_tdata;
    assign bus_tx_tvalid = bus_rx_tvalid;
    assign bus_rx_tready = bus_tx_tready;
endmodule
`default_nettype wire
