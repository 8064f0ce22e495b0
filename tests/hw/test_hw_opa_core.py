# SPDX-License-Identifier: BSD-2-Clause
"""hw.opa_core.OpaCore on Amaranth's simulator with the host driver: the driver
discovers the OPA configuration from CONFIG (rows from dim0, groups from dim1) and reads
three intervals' snapshots through the CSR window; each equals the golden model's words
(:func:`host_sw.model.opa.opa_synopsis`), passes the integrity check, and carries the
interval's packets, sequence number and CONFIG_ID."""

import numpy as np
from amaranth.sim import Simulator

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.control_frame import IntervalFlags
from host_sw.model.opa import opa_synopsis
from hw.opa_core import OpaCore
from sim_tb.amaranth_host import SimulatedHost


def test_driver_reads_opa_snapshots_equal_to_golden():
    config = OpaConfig(groups=8, rows=3)
    rng = np.random.default_rng(5)
    intervals = [rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2)
                 + rng.integers(0, 2, n, dtype=np.uint64) for n in (50, 23)]
    intervals[1][:4] = intervals[1][0] ^ np.arange(4, dtype=np.uint64)   # one group, back to back
    dut = OpaCore(config=config, bridge_timeout=400)
    host = SimulatedHost(dut, timeout_cycles=4000)
    out = {}

    async def feed(ctx, packets):
        for p in packets:
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, int(p))
            await ctx.tick()
        ctx.set(dut.valid, 0)

    async def main(ctx):
        device = await host.connect(ctx, None)          # discovered from CONFIG
        out["discovered"] = device.config
        await host.call(ctx, device.program)                # writes CONFIG_ID
        snaps = []
        for packets in intervals:
            await feed(ctx, packets)
            await host.call(ctx, device.swap)
            snaps.append(await host.call(ctx, device.read_snapshot, release=True, poll=0))
        out["snaps"] = snaps

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(main)
    sim.run()
    assert out["discovered"] == config
    for k, (snap, packets) in enumerate(zip(out["snaps"], intervals)):
        assert snap.synopsis.words() == opa_synopsis(config, packets).words()
        assert snap.integrity_problem is None
        assert (snap.seq, snap.packets) == (k, len(packets))
        if k == 0:      # began before the host programmed CONFIG_ID
            assert snap.flags == IntervalFlags.CONFIG_CHANGED and snap.config_id == 0
            assert not snap.valid
        else:
            assert snap.config_id == config.config_id and not snap.notes and snap.valid
