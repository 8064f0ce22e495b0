# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb benches, one ``test_<dut>.py`` per design under test: its cocotb tests and
the pytest functions that export the design and run them, in one module (cocotb's
simulator imports it by its dotted name, pytest collects its ``test_*`` functions)."""
