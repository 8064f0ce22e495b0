# SPDX-License-Identifier: BSD-2-Clause
"""The board twin: a board top as its bitstream is built, under cocotb with PHY and UART
models (:mod:`sim_tb.board.cocotb_board`), its host side and socket bridge started by
:mod:`sim_tb.board.board_sim`."""
