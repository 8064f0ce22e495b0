# SPDX-License-Identifier: BSD-2-Clause
"""The gateware's kind table (``hw.kinds``) and the counter RAM backends
(``hw.backends``)."""

import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from host_sw.contracts.config import CONFIG_CLASSES, LdaConfig, LdsConfig, OpaConfig, RdaConfig
from host_sw.contracts.hashing import HashPurpose
from hw.backends import COUNTER_RAMS, counter_ram
from hw.backends.ecp5 import DP16KD_MAX_DEPTH
from hw.backends.ecp5 import Ecp5CounterRam
from hw.kinds import KINDS, kind_gateware
from hw.measurement_path import PATHS


def test_every_configuration_kind_has_an_entry():
    # RLI's row is the counter bank of hw.rli.receiver (its core's path is
    # hw.rli.rli_path); OPA's row gives its path's geometry (hw.opa.opa_path).
    with_gateware = {k for k, c in CONFIG_CLASSES.items() if c.has_gateware}
    assert with_gateware <= set(KINDS) <= set(CONFIG_CLASSES)
    # every kind with gateware has a measurement path in the core, and only those
    assert set(PATHS) == with_gateware


@pytest.mark.parametrize("config", [LdaConfig(banks=3, rows=8, thresholds=(0, 1, 2)),
                                    RdaConfig(banks=3, buckets_per_bank=5),
                                    LdsConfig(rows=2, cells=6, row_thresholds=(0, 0))],
                         ids=lambda c: c.kind)
def test_kind_facts(config):
    kind = kind_gateware(config)
    lanes, depth = kind.lane_geometry(config)
    assert lanes * depth == config.buckets
    expected = {"lda": ((1, 24), {HashPurpose.FIELD: 1}, ("thresholds", 3)),
                "rda": ((3, 5), {HashPurpose.RDA_BUCKET: 3}, None),
                "lds": ((2, 6), {HashPurpose.LDS_FLOW: 2, HashPurpose.FIELD: 1,
                                 HashPurpose.LDS_OFFSET: 2}, ("row_thresholds", 2))}
    assert (kind.lane_geometry(config), kind.hashes(config), kind.thresholds(config)) \
        == expected[config.kind]
    # the field-hash bits each kind's selection reads: the sampling word F[63:32] and
    # the LDA row bits / the LDS digest bits; none for RDA
    expected_bits = {"lda": 0xFFFFFFFF_00000007, "rda": 0, "lds": 0xFFFFFFFF_FFFFFFFF}
    assert kind.field_bits(config) == expected_bits[config.kind]


def test_opa_row_has_no_bucket_selection():
    config = OpaConfig(groups=32, rows=3)
    kind = kind_gateware(config)
    assert (kind.lane_geometry(config), kind.hashes(config), kind.thresholds(config)) \
        == ((1, 32), {}, None)
    with pytest.raises(ValueError, match="hw.opa.opa_path"):
        kind.select(None, config, None, None, None, None)


def test_kind_gateware_rejects_other_objects():
    with pytest.raises(ValueError, match="config must be one of the configurations"):
        kind_gateware({"kind": "lda"})


def test_generic_counter_ram_reads_two_edges_after_the_address():
    ram = counter_ram(width=12, depth=10, kind="generic")

    async def tb(ctx):
        ctx.set(ram.w_en, 1)
        for a in range(10):
            ctx.set(ram.w_addr, a)
            ctx.set(ram.w_data, 100 + a)
            await ctx.tick()
        ctx.set(ram.w_en, 0)
        ctx.set(ram.r_addr, 7)
        await ctx.tick()
        ctx.set(ram.r_addr, 3)
        await ctx.tick()
        assert ctx.get(ram.r_data) == 107
        await ctx.tick()
        assert ctx.get(ram.r_data) == 103

    sim = Simulator(ram)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


def test_ecp5_counter_ram_blocks():
    assert set(COUNTER_RAMS) == {"generic", "ecp5"}
    text = rtlil.convert(Ecp5CounterRam(width=20, depth=3000), name="ram")
    # 3000 words: the x4 mode (4096 deep), 5 blocks side by side
    assert text.count("cell \\DP16KD ") == 5
    assert text.count("parameter \\DATA_WIDTH_B 4") == 5
    with pytest.raises(ValueError, match="kind must be one of generic, ecp5"):
        counter_ram(width=8, depth=8, kind="bram")
    assert DP16KD_MAX_DEPTH == 16384
