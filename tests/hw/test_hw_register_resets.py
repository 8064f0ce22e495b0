# SPDX-License-Identifier: BSD-2-Clause
"""Every readable register of a core, read over its bus right after reset on Amaranth's
simulator, equals the reset value the register map declares (so ``csr.json``, written
from the map, and docs/SPEC.md §7.1 state what a device really reads). One small core of
each kind; ``timebase`` is left out (volatile: it reads the live tick count)."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.contracts.hashing import default_masks
from hw.lda_pipeline import MeasurementCore
from sim_tb.lib.amaranth_host import SimulatedHost


def _window(n):
    return {"window_bytes": n, **{f"mask_{name}": mask.as_int()
                                  for name, mask in default_masks(n).items()}}


CONFIGS = {
    "lda": LdaConfig(banks=2, rows=8, thresholds=(0, 2), **_window(16)),
    "rda": RdaConfig(banks=2, buckets_per_bank=8, **_window(16)),
    "lds": LdsConfig(rows=2, cells=8, row_thresholds=(0, 1), **_window(16)),
    "opa": OpaConfig(groups=8, rows=3, **_window(16)),
    "rli": RliConfig(cells=8, digest_bits=8, buffer_packets=8, **_window(48)),
}


def _read_all(device, names):
    return {name: device.read(name) for name in names}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_registers_read_their_declared_reset_after_reset(kind):
    config = CONFIGS[kind]
    core = MeasurementCore(config=config, data_width=64, bridge_timeout_cycles=64)
    regmap = core.regmap
    names = [r.name for r in regmap if r.name != "timebase"]
    host = SimulatedHost(core)
    got = {}

    async def main(ctx):
        device = await host.connect(ctx, config)
        got.update(await host.call(ctx, _read_all, device, names))

    sim = Simulator(core)
    sim.add_clock(1e-8)
    sim.add_testbench(main)
    sim.run()
    declared = {name: regmap[name].reset for name in names}
    assert {n: hex(v) for n, v in got.items()} == {n: hex(v) for n, v in declared.items()}
    assert regmap["status"].decode(got["status"])["other_clean"] == 1
    assert regmap["status"].reset == 0x10                       # §7.1: other_clean
    json_fields = regmap.to_json_dict()["csr_fields"][f"{kind}_status"]["fields"]
    assert json_fields["other_clean"]["reset"] == 1             # csr.json says the same
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        gc.collect()
