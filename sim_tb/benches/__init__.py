# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb benches, one ``test_<dut>.py`` per design under test: its cocotb tests and
the pytest functions that export the design and run them, in one module (cocotb's
simulator imports it by its dotted name and runs the ``@cocotb.test`` coroutines, named
without pytest's ``test`` prefix; pytest collects the ``test_*`` functions)."""
