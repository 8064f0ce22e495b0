# SPDX-License-Identifier: BSD-2-Clause
"""cocotb testbenches of the exported core (see sim_tb/runner.py)."""
