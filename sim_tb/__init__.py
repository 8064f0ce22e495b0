# SPDX-License-Identifier: BSD-2-Clause
"""Simulation test benches of the exported Verilog (``docs/DESIGN.md``, "Testing").

* :mod:`sim_tb.lib` — the shared test library: runner, Verilator build, cocotb bench,
  frames, scoreboard, host-driver transports and socket bridge, Amaranth stream drivers;
* :mod:`sim_tb.benches` — one ``test_<dut>.py`` per design under test, each both the
  cocotb test module and its pytest entry;
* :mod:`sim_tb.demo` — the two-device simulation and the demo (``python -m sim_tb.demo``);
* :mod:`sim_tb.board` — the board twin (a board top under cocotb, host over a socket);
* ``data/`` and ``models/`` — the stand-in core, a pcap, the ECP5 cell models.
"""
