# SPDX-License-Identifier: BSD-2-Clause
"""The shared test library of the simulation benches (:mod:`sim_tb.lib.runner` builds and
runs them); it imports none of :mod:`sim_tb.benches`, :mod:`sim_tb.demo`,
:mod:`sim_tb.board`."""
