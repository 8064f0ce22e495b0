# SPDX-License-Identifier: BSD-2-Clause
"""The two-device simulation (:mod:`sim_tb.demo.two_device`: a sender and a receiver core
and a channel in one HDL simulation, each device on a socket bridge) and the demo that
reads it (:mod:`sim_tb.demo.demo`, ``python -m sim_tb.demo``). The OPA and RLI pair
benches run on the same two-core top."""
