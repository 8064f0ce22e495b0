# SPDX-License-Identifier: BSD-2-Clause
"""Where the OPA core's record frames leave (OPA_RECORD_CONTROL.to_export), on Amaranth's
simulator with the host driver: with ``to_export`` set, the interval's record frames come
out of ``host_export`` — equal, byte for byte, to
:func:`host_sw.contracts.opa.records.build_record_frames` of the counted packets and their
ticks — and ``m_axis`` carries the data frames only; with it clear, the reverse. A
16-byte header window and 16 frames keep the simulation small (all records in the
interval's one LAST frame, sent after the traffic)."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.opa.records import (TYPE_OPA_RECORDS, Point, build_record_frames,
                                           parse_record_frame)
from host_sw.model.golden_lda_rda_lds import hash_frames
from hw.frames.frame import beats_to_frames
from sim_tb.lib.amaranth_host import SimulatedHost
from tests.hw.opa.test_hw_opa_core import WINDOW
from tests.hw.test_hw_core import CoreTraffic, mixed_frames

SRC_MAC = 0x02_00_00_00_00_01
DST_MAC = 0x02_00_00_00_00_02


def _is_record_frame(frame: bytes) -> bool:
    return (int.from_bytes(frame[12:14], "big") == ETHERTYPE_CONTROL
            and frame[15] == TYPE_OPA_RECORDS)


def _run(to_export: int):
    """One interval of traffic recorded at the sender point; returns the bench, the
    frames out of ``m_axis`` and of ``host_export``."""
    config = OpaConfig(groups=8, rows=3, **WINDOW)
    bench = CoreTraffic(config, 64, seed=21)
    host = SimulatedHost(bench.dut)
    export_beats = []
    rng = random.Random(22)
    frames = mixed_frames(rng, 16)

    async def export_sink(ctx):
        port = bench.dut.host_export
        while True:
            ready = rng.random() < 0.7                  # back-pressure on the export port
            ctx.set(port.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(port.valid, port.payload)
            if valid and ready:
                export_beats.append({k: int(payload[k]) for k in
                                     ("data", "keep", "last", "error")})

    async def main(ctx):
        device = await host.connect(ctx, config)
        # the fewest bus writes (the bridge's bytes are most of the simulation): the
        # masks are the reset ones; no read-back
        for name, value in (("config_id", config.config_id), ("local_mac", SRC_MAC),
                            ("export_dst_mac", DST_MAC)):
            await host.call(ctx, device.write, name, value, verify=False)
        await host.call(ctx, device.write, "opa_record_control", enable=1, receiver=0,
                        rice=1, shift=0, record_groups=0, to_export=to_export,
                        verify=False)
        await host.call(ctx, device.swap)               # interval 1 records from here
        await host.wait_status(ctx, device, "frozen_ready", 1, gap_cycles=20)
        await host.call(ctx, device.release)
        bench.to_send += frames
        await bench.wait_frames_done(ctx, len(frames))
        await host.call(ctx, device.swap)               # interval 1 ends: its LAST frame
        sent = len(bench.out_beats) + len(export_beats)
        await ctx.tick().repeat(200)
        while len(bench.out_beats) + len(export_beats) != sent:   # until the ports rest
            sent = len(bench.out_beats) + len(export_beats)
            await ctx.tick().repeat(100)

    sim = Simulator(bench.dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench.source, background=True)
    sim.add_testbench(bench.sink, background=True)
    sim.add_testbench(export_sink, background=True)
    sim.add_testbench(main)
    sim.run()
    out = [f for f, _ in beats_to_frames([b for _, b in bench.out_beats], 64)]
    export = [f for f, _ in beats_to_frames(export_beats, 64)]
    return bench, out, export


def _golden(bench, got):
    """The contract's record frames of interval 1: the counted packets' hashes, their
    ticks the input SOF cycles plus the one offset the first record shows."""
    config = bench.config
    hashes = hash_frames(config, [f for f, _, _ in bench.sent], [e for _, e, _ in bench.sent])
    sof = np.array([t for _, _, t in bench.sent], dtype=np.int64)[hashes.counted]
    first = parse_record_frame(got[0], config)
    offset = int(first.timestamps[0]) - int(sof[0])
    return build_record_frames(config, Point.SENDER, seq=1, packet=hashes.packet[hashes.counted],
                               timestamps=(sof + offset).astype(np.uint64),
                               src_mac=SRC_MAC.to_bytes(6, "big"),
                               dst_mac=DST_MAC.to_bytes(6, "big"), rice=True)


@pytest.mark.parametrize("to_export", [1, 0], ids=["export", "stream"])
def test_record_frames_leave_where_the_register_says(to_export):
    bench, out, export = _run(to_export)
    data_out = [f for f in out if not _is_record_frame(f)]
    assert data_out == [f for f, _, _ in bench.sent]    # the data frames, unaltered
    records_out = [f for f in out if _is_record_frame(f)]
    records_export = [f for f in export if _is_record_frame(f)]
    got, none = (records_export, records_out) if to_export else (records_out,
                                                                 records_export)
    assert got, "no record frames where the register sends them"
    assert none == []
    assert len(export) == len(records_export)           # nothing else (export_host off)
    assert got == _golden(bench, got)
    assert int(hash_frames(bench.config, [f for f, _, _ in bench.sent]).counted.sum()) >= 8
