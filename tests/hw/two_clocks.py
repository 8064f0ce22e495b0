# SPDX-License-Identifier: BSD-2-Clause
"""The crossings' Amaranth simulations on two unrelated clocks: a writer clock and a
reader clock with a phase of its own, background testbenches and the one that ends the
run."""

from amaranth.sim import Simulator

__all__ = ["run_two_clocks"]


def run_two_clocks(top, *, w_domain, w_ns, r_domain, r_ns, r_phase, main, background=()):
    """Simulate ``top`` with ``w_domain`` clocked every ``w_ns`` and ``r_domain`` every
    ``r_ns`` ns, shifted by ``r_phase`` (a fraction of its period); run the testbenches
    ``background`` in the background until ``main`` returns."""
    sim = Simulator(top)
    sim.add_clock(w_ns * 1e-9, domain=w_domain)
    sim.add_clock(r_ns * 1e-9, domain=r_domain, phase=r_phase * r_ns * 1e-9)
    for bench in background:
        sim.add_testbench(bench, background=True)
    sim.add_testbench(main)
    sim.run()
