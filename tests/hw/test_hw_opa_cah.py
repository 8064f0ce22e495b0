# SPDX-License-Identifier: BSD-2-Clause
"""hw.opa_cah.OpaCah on Amaranth's simulator: after a packet stream with runs of one
group back to back (A,A,A / A,B,A,B), every group's word equals the golden model's
(:func:`host_sw.model.opa.opa_synopsis`) word for word."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import OpaConfig
from host_sw.model.opa import opa_synopsis
from hw.opa_cah import OpaCah


def _packets(config, rng, n):
    gb = config.groups.bit_length() - 1
    groups = np.concatenate([[0, 0, 0, 1, 0, 1, 0, 2, 2], rng.integers(0, config.groups, n)])
    low = rng.integers(0, 2 ** (64 - gb), len(groups), dtype=np.uint64)
    return (groups.astype(np.uint64) << np.uint64(64 - gb)) | low


@pytest.mark.parametrize("config", [OpaConfig(groups=4, rows=4), OpaConfig(groups=8, rows=2)],
                         ids=["g4k4", "g8k2"])
def test_words_equal_golden(config):
    rng = np.random.default_rng(config.groups)
    packets = _packets(config, rng, 60)
    gaps = rng.random(len(packets)) < 0.2
    dut = OpaCah(config=config)
    words = {}

    async def bench(ctx):
        for p, gap in zip(packets, gaps):
            if gap:
                ctx.set(dut.valid, 0)
                await ctx.tick()
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, int(p))
            await ctx.tick()
        ctx.set(dut.valid, 0)
        for _ in range(dut.latency + 2):
            await ctx.tick()
        for g in range(config.groups):
            ctx.set(dut.read_addr, g)
            ctx.set(dut.read_en, 1)
            await ctx.tick()
            ctx.set(dut.read_en, 0)
            assert not ctx.get(dut.read_valid)
            await ctx.tick()
            assert ctx.get(dut.read_valid)
            words[g] = ctx.get(dut.read_data)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    expected = opa_synopsis(config, packets).words()
    assert [words[g] for g in range(config.groups)] == expected


def test_rejects_other_configs():
    from host_sw.contracts.config import LdaConfig
    with pytest.raises(TypeError, match="OpaConfig"):
        OpaCah(config=LdaConfig())
