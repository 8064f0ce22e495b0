# SPDX-License-Identifier: BSD-2-Clause
"""cocotb test of two exported OPA cores (``hw.lda_pipeline`` of kind ``opa``, one
bitstream): a sender core whose OPA_RECORD_CONTROL says "sender", a channel that loses a
few frames and delays the others by a wandering amount (a queue: the order is kept), and
a receiver core whose OPA_RECORD_CONTROL says "receiver". Both stream their per-packet
record frames in-band (``hw.opa.records`` through ``hw.opa.opa_path``'s merger insert); the
sender's records and its in-band synopsis export cross the channel and leave the
receiver's output beside the receiver's own records. After one interval:

(a) both cores' OPA words, read over their buses, equal :func:`host_sw.model.golden_opa.
    opa_synopsis` of the packets each counted, word for word;
(b) every record frame of the interval equals, byte for byte,
    :func:`host_sw.contracts.opa.records.build_record_frames` of the golden records —
    group and send tick at the sender (Rice-coded, lossless), packet hash and arrival
    tick at the receiver (Rice-coded, lossless: the whole hash and the arrival difference) —
    and the streamers' counters (OPA_RECORDS_FRAMES/DROPPED/MERGED) agree;
(c) :mod:`host_sw.estimators.opa.export` on the receiver's output stream (the sender's
    words and records, the receiver's records) gives a valid interval, and the recovery
    gives every recovered packet its true delay in ticks;
(d) ``ldactl watch --records`` (in-process, over both cores' socket bridges, the
    receiver's output stream written as a pcap) reads the interval's words from both
    cores and prints the same estimate as (c), every delay of its ``--delays-out`` the
    true one.

This file is both the cocotb test module and the pytest module: ``test_opa_sender_to_receiver``
at the bottom exports the OPA core (:data:`sim_tb.lib.runner.OPA_PARAMS`) and runs the
cocotb test above on it twice in the two-core top of
:func:`sim_tb.demo.two_device.write_wrapper` (ports ``snd_*`` / ``rcv_*``); the channel is
:class:`sim_tb.demo.two_device_wire.Wire`.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level for the OPA kind,
whose record frames need both points.

Ticks: both cores count the same clock from the same reset and a tap stamps a frame at
a fixed number of clocks before its SOF leaves the core, so one constant maps a SOF
cycle at either ``m_axis`` to the tick in its record. The test takes it from the
sender's first record; every other record of both points must then be exact.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles

from host_sw.contracts.frames.frame_format import TYPE_SYNOPSIS
from host_sw.contracts.opa.records import (TYPE_OPA_RECORDS, Point, build_record_frames,
                                           parse_record_frame)
from host_sw.estimators.opa.recovery import recover_pair
from host_sw.estimators.opa.export import opa_export_records, read_export
from host_sw.model.golden_lda_rda_lds import Hashers, hash_frames
from host_sw.model.golden_opa import PacketRecords, opa_synopsis
from host_sw.model.pcap import write_pcap
from host_sw.model.traffic import synthetic_trace

from sim_tb.demo.cocotb_two_device import HOST_OPTIONS, SimulatedCore, start_pair
from sim_tb.demo.two_device import run_pair_bench
from sim_tb.demo.two_device_wire import Wire, wandering_delays
from sim_tb.lib.core_harness import ldactl_while_simulating
from sim_tb.lib.runner import OPA_PARAMS, CoreParams
from sim_tb.lib.tb import start_clocks
from sim_tb.lib.socket_bridge import SocketBridge
from sim_tb.lib.verilator_build import verilator_env

SENDER_MAC = 0x02_00_00_00_00_01
RECEIVER_MAC = 0x02_00_00_00_00_02
HOST_MAC = 0x02_00_00_00_00_0F
FRAMES = 400
LOSS = 0.02
#: The interval of the traffic: two boundaries clear both copies before it.
SEQ = 2


async def _start(dut, config, snd: SimulatedCore, rcv: SimulatedCore):
    """Reset; per core its MACs and record control, then two boundaries (both copies
    cleared; the record control applies from the first)."""
    macs = {snd.name: (SENDER_MAC, RECEIVER_MAC, 0), rcv.name: (RECEIVER_MAC, HOST_MAC, 1)}

    async def setup(core, device):
        mac, dst, receiver = macs[core.name]
        await core.call(device.set_intervals, local_mac=mac, export_dst_mac=dst)
        # both points' records Rice-coded, lossless (docs/SPEC.md §8.7)
        await core.call(device.write, "opa_record_control", enable=1, receiver=receiver,
                        rice=1, shift=0, record_groups=0)
    await start_pair(dut, config, (snd, rcv), setup=setup)
    # the sender's next frozen copy leaves in-band too (the host's words for (c))
    await snd.call(snd.device.set_intervals, local_mac=SENDER_MAC,
                   export_dst_mac=RECEIVER_MAC, export_inband=True)


def _interval_frames(frames, src: int, ftype: int, seq: int):
    return [f for f in frames if int.from_bytes(f[6:12], "big") == src and f[15] == ftype
            and int.from_bytes(f[18:22], "big") == seq]


def _check_records(config, got, point, *, packet, ticks, src, dst):
    """(b): the interval's record frames of one point equal the builder's."""
    want = build_record_frames(config, point, seq=SEQ, packet=packet, timestamps=ticks,
                               src_mac=src.to_bytes(6, "big"),
                               dst_mac=dst.to_bytes(6, "big"),
                               rice=True)
    assert len(got) == len(want), f"{point}: {len(got)} record frames, golden {len(want)}"
    for k, (a, b) in enumerate(zip(got, want)):
        if a != b:
            pa, pb = parse_record_frame(a, config), parse_record_frame(b, config)
            bad = [j for j, (x, y) in enumerate(zip(pa.timestamps, pb.timestamps)) if x != y]
            at = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a),
                                                                                len(b)))
            raise AssertionError(
                f"{point} record frame {k} differs from byte {at} on (lengths {len(a)}, "
                f"{len(b)}); records with other ticks: {bad[:5]}; keys equal: "
                f"{np.array_equal(pa.keys, pb.keys)}")


async def _watch(dut, snd: SimulatedCore, rcv: SimulatedCore, frames_out, folder: Path):
    """(d): ``ldactl watch --records`` in a thread, the cores serving its bus commands
    through their socket bridges; its exit code, JSON rows and delay rows."""
    tap, delays = folder / "tap.pcap", folder / "delays.jsonl"
    write_pcap(tap, frames_out, np.arange(len(frames_out)) * 1000)
    tasks = []
    for core in (snd, rcv):
        core.bridge = SocketBridge(name=core.name)
        tasks.append(cocotb.start_soon(core.serve(dut.clk)))
    argv = ["watch", "--sender", snd.bridge.url + HOST_OPTIONS, "--receiver",
            rcv.bridge.url + HOST_OPTIONS, "--intervals", "1", "--json", "--records",
            str(tap), "--records-wait", "10", "--delays-out", str(delays)]
    try:
        rc, text = await ldactl_while_simulating(dut.clk, argv)
    finally:
        for core, task in zip((snd, rcv), tasks):
            task.cancel()
            core.bridge.close()
    rows = [json.loads(line) for line in text.splitlines()]
    return rc, rows, [json.loads(x) for x in delays.read_text().splitlines()]


async def _run_interval(dut, params, config):
    """The traffic of one interval through the lossy queue between the two cores, then a
    boundary at both; returns the two cores, the frames, their drops, the wire (SOF
    cycles), the control frames leaving the receiver, both cores' snapshots and record
    streamers' counters."""
    snd, rcv = SimulatedCore(dut, "snd", "sender"), SimulatedCore(dut, "rcv", "receiver")
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    frames = synthetic_trace(packets=FRAMES, flows=40, frame_bytes="imix",
                             window_bytes=config.window_bytes,
                             seed=int(rng.integers(1 << 30))).frames()
    gaps = np.rint(rng.exponential(20.0, FRAMES)).astype(np.int64)
    drops = rng.random(FRAMES) < LOSS
    drops[int(rng.integers(FRAMES // 2))] = True       # at least one loss, whatever the seed
    delays = wandering_delays(rng, FRAMES, start=200, step=30.0, low=20, high=900)
    wire = Wire(dut, params.data_width, frames, gaps, drops, delays,
                control_delay=lambda r: int(r.integers(20, 40)), rng=rng)
    out: list[tuple[bytes, int]] = []
    wire.on_receiver_control = lambda frame, sof: out.append((frame, sof))
    wire.watch_outputs = True
    cocotb.start_soon(wire.run())
    await _start(dut, config, snd, rcv)
    wire.release_upto = FRAMES
    await wire.wait_idle()
    await ClockCycles(dut.clk, 200)
    for core in (snd, rcv):
        await core.call(core.device.swap)
        await core.wait_status(dut.clk, "frozen_ready", 1)
    await ClockCycles(dut.clk, 400)      # the LAST frames, the sender's export
    await wire.wait_idle()
    words = {core.name: (await core.call(core.device.read_snapshot, release=False, poll=0))
             for core in (snd, rcv)}
    counters = {core.name: {n: await core.call(core.device.read, f"opa_records_{n}")
                            for n in ("frames", "dropped", "merged")} for core in (snd, rcv)}
    return (snd, rcv), frames, drops, wire, [f for f, _ in out], words, counters


def _check_record_frames(config, wire, frames_out, counters, packet, sent, arrived):
    """(b) the record frames of both points, byte for byte, and the streamers'
    counters; returns the two points' record frames of the interval."""
    s_frames = _interval_frames(frames_out, SENDER_MAC, TYPE_OPA_RECORDS, SEQ)
    r_frames = _interval_frames(frames_out, RECEIVER_MAC, TYPE_OPA_RECORDS, SEQ)
    assert s_frames and r_frames, "no record frames of the interval"
    first = parse_record_frame(s_frames[0], config)
    offset = int(first.timestamps[0]) - int(wire.snd_sof[sent[0]])
    send_ticks = wire.snd_sof[sent] + offset
    recv_ticks = wire.rcv_sof[arrived] + offset
    _check_records(config, s_frames, Point.SENDER, packet=packet[sent], ticks=send_ticks,
                   src=SENDER_MAC, dst=RECEIVER_MAC)
    _check_records(config, r_frames, Point.RECEIVER, packet=packet[arrived],
                   ticks=recv_ticks, src=RECEIVER_MAC, dst=HOST_MAC)
    for name, mine in (("sender", s_frames), ("receiver", r_frames)):
        c = counters[name]
        assert c["dropped"] == 0 and c["merged"] == 0, (name, c)
        # every record frame since reset: the interval's and interval 1's empty LAST one
        assert c["frames"] == len(mine) + 1, (name, c, len(mine))
    return s_frames, r_frames


def _check_recovery(config, wire, frames_out, drops, sent, arrived):
    """(c) the host's export decoding and the recovery: every recovered delay exact;
    returns the interval's record, the recovery and the true delays."""
    mine_s = [f for f in frames_out if int.from_bytes(f[6:12], "big") == SENDER_MAC
              and f[15] in (TYPE_SYNOPSIS, TYPE_OPA_RECORDS)]
    mine_r = [f for f in frames_out if int.from_bytes(f[6:12], "big") == RECEIVER_MAC]
    s_export = read_export(mine_s, np.zeros(len(mine_s)), config, "sender")
    r_export = read_export(mine_r, np.zeros(len(mine_r)), config, "receiver")
    (record,) = opa_export_records(s_export, r_export, config)
    assert record.valid and record.interval == SEQ, record.notes
    assert record.estimate["sent"] == len(sent), record.estimate
    assert record.estimate["received"] == len(arrived), record.estimate
    s_rec, r_rec = s_export.records[SEQ], r_export.records[SEQ]
    gbits = config.groups.bit_length() - 1
    result = recover_pair(
        s_export.synopses[SEQ].synopsis,
        PacketRecords(np.asarray(s_rec.keys, np.uint64) << np.uint64(64 - gbits),
                      np.asarray(s_rec.timestamps, np.int64)),
        PacketRecords(np.asarray(r_rec.keys, np.uint64),
                      np.asarray(r_rec.timestamps, np.int64)))
    true = (wire.rcv_sof[arrived] - wire.snd_sof[arrived]).astype(np.int64)
    assert result.recovered.sum() >= 0.5 * len(arrived), (
        f"only {int(result.recovered.sum())} of {len(arrived)} delays recovered")
    assert np.array_equal(result.delays[result.recovered], true[result.recovered]), \
        "a recovered delay differs from the true one"
    assert result.lost == int(drops[sent].sum()) or result.unrecovered_groups, (
        result.lost, int(drops[sent].sum()))
    return record, result, true


@cocotb.test()
async def records_through_a_lossy_queue(dut):
    params = CoreParams.from_env()
    config = params.config()
    start_clocks(dut, 10)           # and ctrl_clk, on a two-clock core
    (snd, rcv), frames, drops, wire, frames_out, words, counters = await _run_interval(
        dut, params, config)
    assert wire.mismatches == 0, "a data frame was altered on its way"
    hashes = hash_frames(config, frames, hashers=Hashers(config))
    counted = np.asarray(hashes.counted, bool)
    sent = np.flatnonzero(counted)                       # send order = input order
    arrived = sent[~drops[sent]]
    arrived = arrived[np.argsort(wire.rcv_sof[arrived], kind="stable")]
    assert len(arrived) < len(sent) and len(sent) > FRAMES // 2, (len(sent), len(arrived))
    packet = np.asarray(hashes.packet, np.uint64)

    # (a) the OPA words of both points
    for name, idx in (("sender", sent), ("receiver", arrived)):
        golden = opa_synopsis(config, packet[idx])
        snap = words[name]
        assert snap.seq == SEQ and snap.packets == len(idx), (name, snap.seq, snap.packets)
        assert snap.synopsis.words() == golden.words(), f"{name}: words differ from golden"
    s_frames, r_frames = _check_record_frames(config, wire, frames_out, counters, packet,
                                              sent, arrived)
    record, result, true = _check_recovery(config, wire, frames_out, drops, sent, arrived)

    # (d) ldactl watch on both cores, the receiver's output as its --records
    with tempfile.TemporaryDirectory() as folder:
        rc, rows, delays = await _watch(dut, snd, rcv, frames_out, Path(folder))
    assert rc == 0 and len(rows) == 1, (rc, rows)
    (row,) = rows
    assert row["valid"] and row["interval"] == SEQ, row["notes"]
    for key in ("sent", "received", "lost", "reordered", "samples", "p50", "p90", "p99",
                "p99.9", "max"):
        assert row["estimate"][key] == record.estimate[key], (key, row["estimate"][key])
    got = np.array([d["delay_ns"] for d in delays]) / config.tick_ns
    assert len(delays) == row["estimate"]["samples"] > 0
    assert np.array_equal(got, true[[d["packet"] for d in delays]]), \
        "a delay of ldactl watch differs from the true one"
    dut._log.info("%d sent, %d received; record frames: sender %d, receiver %d; %d of %d "
                  "delays recovered, all exact (%d..%d ticks); ldactl watch: p50 %s, p99 %s, "
                  "max %s ns, lost %s", len(sent), len(arrived), len(s_frames),
                  len(r_frames), int(result.recovered.sum()), len(arrived), int(true.min()),
                  int(true.max()), row["estimate"]["p50"], row["estimate"]["p99"],
                  row["estimate"]["max"], row["estimate"]["lost"])


# pytest: export the OPA core, put it twice in the two-core top, run the cocotb test above

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]


@pytest.mark.parametrize("params", OPA_PARAMS, ids=lambda p: p.param_id)
def test_opa_sender_to_receiver(params):
    results = run_pair_bench(params, __name__, "opa_pair")
    assert "records_through_a_lossy_queue" in results.tests, sorted(results.tests)
