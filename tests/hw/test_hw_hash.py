# SPDX-License-Identifier: BSD-2-Clause
"""The pipelined H3 hasher (hw.hash_h3) equals host_sw.contracts.hashing / host_sw.model.golden_lda_rda_lds bit for bit:
packet hash with IPv4 and IPv6 masks, RDA bucket hashes, the LDA/LDS field hash, LDS flow
and offset hashes."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.model.golden_lda_rda_lds import Hashers, hash_windows
from host_sw.contracts.hashing import H3, FrameClass, HashPurpose, h3_rows
from host_sw.contracts.hash_fields import field_hash
from hw.hash_h3 import COMPACT_HASH_FAN_IN, HASH_FAN_IN, H3Pipeline, PacketHasher
from hw.kinds import kind_gateware


def run_hasher(config, windows, classes, masks, *, gaps=(), fan_in=HASH_FAN_IN):
    """Feed one window per clock (idle cycles at the indices in ``gaps``) and collect
    every valid output."""
    dut = PacketHasher(config=config, fan_in=fan_in)
    outputs = []

    async def testbench(ctx):
        for name, value in masks.items():
            ctx.set(getattr(dut, name), value)
        schedule = []
        for i in range(len(windows)):
            if i in gaps:
                schedule.append(None)
            schedule.append(i)
        for item in schedule + [None] * (dut.latency + 2):
            if item is None:
                ctx.set(dut.record.valid, 0)
            else:
                ctx.set(dut.record.valid, 1)
                ctx.set(dut.record.payload.window,
                        int.from_bytes(windows[item].tobytes(), "little"))
                ctx.set(dut.record.payload.frame_class, int(classes[item]))
                ctx.set(dut.record.payload.timestamp, item * 7 + 3)
                ctx.set(dut.record.payload.copy, item & 1)
            await ctx.tick()
            if ctx.get(dut.hashed.valid):
                p = dut.hashed.payload
                out = {"packet": ctx.get(p.packet_hash), "timestamp": ctx.get(p.timestamp),
                       "copy": ctx.get(p.copy), "counted": ctx.get(p.counted)}
                if isinstance(config, RdaConfig):
                    out["bucket"] = [ctx.get(p.bucket_hash[l]) for l in range(config.banks)]
                if isinstance(config, LdsConfig):
                    out["flow"] = [ctx.get(p.flow_hash[r]) for r in range(config.rows)]
                    out["offset"] = [ctx.get(p.offset_hash[r]) for r in range(config.rows)]
                if not isinstance(config, RdaConfig):
                    out["field"] = ctx.get(p.field_hash)
                outputs.append(out)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return dut, outputs


def random_masks(rng, window_bytes, names):
    return {n: int.from_bytes(rng.bytes(window_bytes // 8), "little") for n in names}


@pytest.mark.parametrize("out_bits,in_bytes", [(64, 64), (32, 8), (5, 2)])
def test_h3_pipeline_matches_reference(out_bits, in_bytes):
    rng = np.random.default_rng(out_bits + in_bytes)
    ref = H3(seed=12345, purpose=HashPurpose.PACKET, in_bytes=in_bytes, out_bits=out_bits)
    dut = H3Pipeline(rows=h3_rows(12345, HashPurpose.PACKET, 0, in_bytes * 8, out_bits),
                     out_bits=out_bits)
    inputs = rng.integers(0, 256, size=(20, in_bytes), dtype=np.uint8)
    got = []

    async def testbench(ctx):
        for k in range(len(inputs) + dut.latency):
            if k < len(inputs):
                ctx.set(dut.data, int.from_bytes(inputs[k].tobytes(), "little"))
            await ctx.tick()
            if k + 1 >= dut.latency:
                got.append(ctx.get(dut.hash))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert got[:len(inputs)] == [ref.scalar(bytes(row)) for row in inputs]
    # one register stage per fan_in-fold widening of the input slices (nibbles, then
    # 16 bits, ...) until one slice covers the input
    stages, span = 1, dut.fan_in
    while span < in_bytes * 8:
        stages, span = stages + 1, span * dut.fan_in
    assert dut.latency == stages
    assert dut.latency == {64: 5, 8: 3, 2: 2}[in_bytes]


@pytest.mark.parametrize("config", [
    LdaConfig(seed=0xC0FFEE),
    RdaConfig(seed=77, banks=3, buckets_per_bank=1000),
    LdsConfig(seed=5, rows=2, cells=100, vlda_cells=4, row_thresholds=(0, 1)),
], ids=["lda", "rda", "lds"])
@pytest.mark.parametrize("fan_in", [HASH_FAN_IN, COMPACT_HASH_FAN_IN])
def test_hasher_matches_golden_random_windows_and_masks(config, fan_in):
    """Both builds of the trees (the fast clock's and the boards' compact one) give the
    contract's hashes; the compact one in fewer cycles."""
    rng = np.random.default_rng(config.seed)
    w = config.window_bytes
    n = 24
    windows = rng.integers(0, 256, size=(n, w), dtype=np.uint8)
    classes = rng.choice([FrameClass.IPV4, FrameClass.IPV6, FrameClass.NON_IP,
                          FrameClass.RUNT], size=n)
    names = ["mask_packet_ipv4", "mask_packet_ipv6"]
    if isinstance(config, LdsConfig):
        names += ["mask_flow_ipv4", "mask_flow_ipv6"]
    masks = random_masks(rng, w, names)
    config = config.replace(**masks)         # the golden model takes the same masks
    dut, out = run_hasher(config, windows, classes, masks, gaps={3, 4, 10}, fan_in=fan_in)
    assert len(out) == n
    # a 64-byte window: five tree stages at fan-in 4, two at 32 (+ 1 behind the S-box)
    assert dut.latency == {HASH_FAN_IN: 12, COMPACT_HASH_FAN_IN: 8}[fan_in]

    counted = np.isin(classes, [FrameClass.IPV4, FrameClass.IPV6])
    golden = hash_windows(config, windows, np.where(counted, classes, FrameClass.IPV4))
    assert [o["packet"] for o in out] == [int(x) for x in golden.packet]
    assert [o["counted"] for o in out] == [int(c) for c in counted]
    assert [o["timestamp"] for o in out] == [i * 7 + 3 for i in range(n)]
    assert [o["copy"] for o in out] == [i & 1 for i in range(n)]
    if isinstance(config, RdaConfig):
        hashers = Hashers(config)
        for l in range(config.banks):
            expect = hashers.rda_bucket[l].of_u64(golden.packet)
            assert [o["bucket"][l] for o in out] == [int(x) for x in expect]
    if isinstance(config, LdsConfig):
        offsets = Hashers(config).lds_offset_hashes(golden.packet)
        for r in range(config.rows):
            assert [o["flow"][r] for o in out] == [int(x) for x in golden.flow[r]]
            assert [o["offset"][r] for o in out] == [int(x) for x in offsets[r]]
    if not isinstance(config, RdaConfig):
        # the field hash's bits the kind reads (the others are not built: 0)
        used = kind_gateware(config).field_bits(config)
        expect = field_hash(golden.packet, config.seed) & np.uint64(used)
        assert [o["field"] for o in out] == [int(x) for x in expect]


def test_default_masks_ipv4_and_ipv6_differ_in_hardware():
    """With the default masks, IPv4 and IPv6 classes of one window hash differently
    (the class picks the mask), each matching its golden hash."""
    config = LdaConfig()
    rng = np.random.default_rng(1)
    windows = np.repeat(rng.integers(0, 256, size=(1, 64), dtype=np.uint8), 2, axis=0)
    classes = np.array([FrameClass.IPV4, FrameClass.IPV6])
    masks = {"mask_packet_ipv4": config.mask_packet_ipv4,
             "mask_packet_ipv6": config.mask_packet_ipv6}
    _, out = run_hasher(config, windows, classes, masks)
    golden = hash_windows(config, windows, classes)
    assert [o["packet"] for o in out] == [int(x) for x in golden.packet]
    assert out[0]["packet"] != out[1]["packet"]
