# SPDX-License-Identifier: BSD-2-Clause
"""The whole core (hw.lda_pipeline.MeasurementCore) on Amaranth's simulator: frames pass through
bit-exact, in order, with a fixed latency and honoured backpressure; the counters and
status read over the UARTBone byte stream by the host driver (host_sw.device.driver.Device,
through sim_tb.lib.amaranth_host) equal host_sw.model.golden_lda_rda_lds; swap / overrun / release
control. Small cores, short header windows where the kind allows (24 bytes for LDA's
packet hash, 40 for RDA's, the IPv4 five-tuple's end; LDS's flow key needs the whole
IPv6 one: the hasher is most of a small core, and of its simulation) and a few dozen
frames, to stay quick."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.model.golden_lda_rda_lds import hash_frames, update
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import FrameClass, classify_frame, default_masks
from host_sw.contracts.regmap import register_map
from hw.frames.frame import beats_to_frames, frame_to_beats
from hw.hash_h3 import COMPACT_HASH_FAN_IN, HASH_FAN_IN
from hw.lda_pipeline import PASSTHROUGH_LATENCY, MeasurementCore
from sim_tb.lib.amaranth_host import SimulatedHost


def make_frame(rng, length, ethertype=0x0800, version=4):
    body = bytearray(rng.randbytes(length))
    body[12:14] = ethertype.to_bytes(2, "big")
    if length > 14:
        body[14] = (version << 4) | (body[14] & 0xF)
    return bytes(body)


def mixed_frames(rng, n):
    frames = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.55:
            frames.append((make_frame(rng, rng.randrange(60, 100)), False))
        elif kind < 0.8:
            frames.append((make_frame(rng, rng.randrange(60, 100), 0x86DD, 6), False))
        elif kind < 0.87:
            frames.append((make_frame(rng, rng.randrange(20, 60)), False))          # runt
        elif kind < 0.94:
            frames.append((make_frame(rng, 64, 0x0806), False))                   # non-IP
        else:
            frames.append((make_frame(rng, 80), True))                            # errored
    return frames


class CoreTraffic:
    """The frame side of one MeasurementCore on the simulator: a frame source and a frame sink
    (background testbenches) and the golden model of what was sent. Its bus is reached by
    the host driver (:class:`sim_tb.lib.amaranth_host.SimulatedHost`)."""

    def __init__(self, config, data_width, *, seed, hash_fan_in=HASH_FAN_IN,
                 compact_reads=False):
        self.config = config
        self.data_width = data_width
        self.dut = MeasurementCore(config=config, data_width=data_width, bridge_timeout_cycles=64,
                                   hash_fan_in=hash_fan_in, compact_reads=compact_reads)
        self.rng = random.Random(seed)
        self.to_send = []          # (frame, error) queue for the source
        self.sent = []             # (frame, error, sof_cycle) in input order
        self.in_beats = []         # (cycle, beat) transferred on s_axis
        self.out_beats = []        # (cycle, beat) transferred on m_axis
        self.p_valid = 0.8
        self.p_ready = 1.0
        self.sink_ready_seen_low = False

    # -- background testbenches ----------------------------------------------------------
    async def source(self, ctx):
        dut, cycle, beats, in_frame, sof = self.dut, 0, [], False, None
        while True:
            if not beats and self.to_send:
                frame, error = self.to_send.pop(0)
                beats = [(frame, error, b) for b in frame_to_beats(frame, self.data_width,
                                                                   error=error)]
            valid = bool(beats) and self.rng.random() < self.p_valid
            ctx.set(dut.s_axis.valid, valid)
            if beats:
                ctx.set(dut.s_axis.payload, beats[0][2])
            _, _, ready = await ctx.tick().sample(dut.s_axis.ready)
            if valid and ready:
                frame, error, beat = beats.pop(0)
                if not in_frame:
                    sof = cycle
                in_frame = not beat["last"]
                if beat["last"]:
                    self.sent.append((frame, error, sof))
                self.in_beats.append((cycle, beat))
            cycle += 1

    async def sink(self, ctx):
        dut, cycle = self.dut, 0
        while True:
            ready = self.rng.random() < self.p_ready
            ctx.set(dut.m_axis.ready, ready)
            _, _, valid, payload, s_ready = await ctx.tick().sample(
                dut.m_axis.valid, dut.m_axis.payload, dut.s_axis.ready)
            if valid and ready:
                self.out_beats.append((cycle, {k: int(payload[k]) for k in
                                               ("data", "keep", "last", "error")}))
            if not s_ready:
                self.sink_ready_seen_low = True
            cycle += 1

    # -- main testbench helpers ----------------------------------------------------------
    async def wait_frames_done(self, ctx, count):
        while len(self.sent) < count or len(self.out_beats) < len(self.in_beats):
            await ctx.tick()
        await ctx.tick().repeat(self.dut.measurement_latency + 12)

    def run(self, main):
        sim = Simulator(self.dut)
        sim.add_clock(1e-8)
        sim.add_testbench(self.source, background=True)
        sim.add_testbench(self.sink, background=True)
        sim.add_testbench(main)
        sim.run()

    def golden(self, sent):
        frames = [f for f, _, _ in sent]
        errors = [e for _, e, _ in sent]
        hashes = hash_frames(self.config, frames, errors)
        stamps = np.array([t for _, _, t in sent], dtype=np.uint64)
        return update(self.config, hashes, stamps)


def end_interval(device):
    """Host code: CONTROL.swap, wait for the frozen copy, read its counters (not
    released)."""
    device.swap()
    device.wait_frozen(poll=0)
    return Synopsis.from_words(device.config, device.read_counter_words())


def check_passthrough(bench, latency_checked_beats):
    """Bit-exact and in order; the first ``latency_checked_beats`` beats (sent with the
    sink always ready) left exactly PASSTHROUGH_LATENCY cycles after they entered."""
    ins = [b for _, b in bench.in_beats]
    outs = [b for _, b in bench.out_beats]
    assert outs == ins
    assert [f for f, _ in beats_to_frames(outs, bench.data_width)] == [
        f for f, _, _ in bench.sent]
    for (t_in, _), (t_out, _) in zip(bench.in_beats[:latency_checked_beats],
                                     bench.out_beats[:latency_checked_beats]):
        assert t_out - t_in == PASSTHROUGH_LATENCY


def test_lda_core_counters_status_and_passthrough():
    config = LdaConfig(banks=2, rows=16, thresholds=(0, 2), window_bytes=24)
    bench = CoreTraffic(config, 64, seed=1)
    host = SimulatedHost(bench.dut)
    rng = random.Random(2)
    first = mixed_frames(rng, 24)
    second = mixed_frames(rng, 12)
    results = {}

    def read_registers(device, names):
        return {name: device.read(name) for name in names}

    async def main(ctx):
        device = await host.connect(ctx, config)
        # s_axis.ready is low for the clearing sweep after reset; from its end on, only
        # backpressure may lower it.
        await host.wait_status(ctx, device, "other_clean", 1)
        bench.sink_ready_seen_low = False
        # Interval 0: no backpressure (latency check), then a stalling sink.
        bench.to_send += first[:12]
        await bench.wait_frames_done(ctx, 12)
        results["latency_beats"] = len(bench.in_beats)
        results["ready_low_before"] = bench.sink_ready_seen_low
        bench.p_ready = 0.5
        bench.to_send += first[12:]
        await bench.wait_frames_done(ctx, 24)
        results["status0"] = await host.call(ctx, device.status)
        # stamped into interval 1
        await host.call(ctx, device.write, "config_id", 0xC0DE1234)
        results["interval0"] = await host.call(ctx, end_interval, device)
        results["sent0"] = list(bench.sent)
        results.update(await host.call(ctx, read_registers, device, (
            "frozen_seq", "frozen_packets", "interval_seq", "overruns", "frames_seen",
            "frames_counted", "frames_errored", "frames_runt", "frames_non_ip",
            "frames_control")))
        results["status1"] = await host.call(ctx, device.status)

        # Interval 1 runs while copy 0 stays frozen: a second swap is an overrun.
        bench.to_send += second
        await host.call(ctx, device.swap)
        await bench.wait_frames_done(ctx, 36)
        results["overruns"] = await host.call(ctx, device.read, "overruns")
        results["status2"] = await host.call(ctx, device.status)
        # Release copy 0, wait until it is clean, swap: interval 1 freezes, flagged.
        await host.call(ctx, device.release)
        await host.wait_status(ctx, device, "other_clean", 1, polls=50)
        results["interval1"] = await host.call(ctx, end_interval, device)
        results["status3"] = await host.call(ctx, device.status)
        registers = await host.call(ctx, read_registers, device, (
            "frozen_seq", "interval_seq", "frozen_packets", "frozen_config_id"))
        for name, value in registers.items():
            results[name + "1"] = value

    bench.run(main)

    check_passthrough(bench, results["latency_beats"])
    assert not results["ready_low_before"]            # no backpressure: ready stays high
    assert bench.sink_ready_seen_low                   # the stalling sink pushed back

    sent0 = results["sent0"]
    sent1 = bench.sent[len(sent0):]
    assert len(sent0) == 24 and len(sent1) == 12
    golden0 = bench.golden(sent0)
    assert results["interval0"] == golden0
    assert golden0.count.sum() >= 5                    # the test does count something
    classes = [classify_frame(f, error=e) for f, e, _ in sent0]
    counted = sum(c in (FrameClass.IPV4, FrameClass.IPV6) for c in classes)
    assert results["frozen_packets"] == counted
    assert results["frames_seen"] == 24
    assert results["frames_counted"] == counted
    assert results["frames_errored"] == classes.count(FrameClass.ERRORED)
    assert results["frames_runt"] == classes.count(FrameClass.RUNT)
    assert results["frames_non_ip"] == classes.count(FrameClass.NON_IP)
    assert results["frames_control"] == 0
    assert results["status0"]["active_copy"] == 0 and results["status0"]["other_clean"] == 1
    assert results["status1"] == {"active_copy": 1, "frozen_ready": 1, "clearing": 0,
                                  "frozen_overrun": 0, "other_clean": 0}
    assert (results["frozen_seq"], results["interval_seq"]) == (0, 1)

    assert results["overruns"] == 1
    assert results["status2"]["active_copy"] == 1      # the overrun did not swap
    assert results["interval1"] == bench.golden(sent1)
    assert results["status3"]["frozen_overrun"] == 1 and results["status3"]["active_copy"] == 0
    assert (results["frozen_seq1"], results["interval_seq1"]) == (1, 3)
    assert results["frozen_config_id1"] == 0xC0DE1234
    assert results["frozen_packets1"] == sum(
        classify_frame(f, error=e) in (FrameClass.IPV4, FrameClass.IPV6) for f, e, _ in sent1)


@pytest.mark.parametrize("config,data_width,compact", [
    (RdaConfig(banks=2, buckets_per_bank=12, window_bytes=40), 8, False),
    (LdsConfig(rows=2, cells=10, vlda_cells=3, row_thresholds=(0, 1)), 32, False),
    (LdsConfig(rows=2, cells=10, vlda_cells=3, row_thresholds=(0, 1)), 32, True),
], ids=["rda-w8", "lds-w32", "lds-w32-compact"])
def test_rda_lds_core_counters(config, data_width, compact):
    """The counters equal the golden model's; also with the boards' compact hasher
    (``hash_fan_in``), whose shorter latency the core's boundaries follow, and compact
    CSR reads (``compact_reads``), whose reads the driver makes."""
    bench = CoreTraffic(config, data_width, seed=3,
                        hash_fan_in=COMPACT_HASH_FAN_IN if compact else HASH_FAN_IN,
                        compact_reads=compact)
    host = SimulatedHost(bench.dut)
    bench.p_ready = 0.7
    frames = mixed_frames(random.Random(4), 14)
    results = {}

    async def main(ctx):
        device = await host.connect(ctx, config)
        bench.to_send += frames
        await bench.wait_frames_done(ctx, len(frames))
        results["counters"] = await host.call(ctx, end_interval, device)

    bench.run(main)
    check_passthrough(bench, 0)
    golden = bench.golden(bench.sent)
    assert results["counters"] == golden
    assert golden.count.sum() >= 5


def test_export_writes_lda_core_with_axis_ports_and_csr_files(tmp_path, capsys):
    from hw.lda_pipeline import main
    out = tmp_path / "lda_core.v"
    assert main(["--synopsis", "lda", "--banks", "2", "--rows", "16", "--thresholds", "0,3",
                 "--window-bytes", "16", "--data-width", "16", "-o", str(out)]) == 0
    text = out.read_text()
    header = text[text.index("module lda_core("):].split(");", 1)[0]
    ports = {p.strip() for p in header.split("(", 1)[1].split(",")}
    assert ports == {
        "clk", "rst",
        "s_axis_tdata", "s_axis_tkeep", "s_axis_tlast", "s_axis_tuser", "s_axis_tvalid",
        "s_axis_tready", "m_axis_tdata", "m_axis_tkeep", "m_axis_tlast", "m_axis_tuser",
        "m_axis_tvalid", "m_axis_tready", "bus_rx_tdata", "bus_rx_tvalid", "bus_rx_tready",
        "bus_tx_tdata", "bus_tx_tvalid", "bus_tx_tready",
        "m_axis_export_tdata", "m_axis_export_tkeep", "m_axis_export_tlast",
        "m_axis_export_tuser", "m_axis_export_tvalid", "m_axis_export_tready"}
    assert "input [15:0] s_axis_tdata;" in text and "output [1:0] m_axis_tkeep;" in text
    masks = {f"mask_{name}": mask.as_int() for name, mask in default_masks(16).items()}
    regmap = register_map(LdaConfig(banks=2, rows=16, thresholds=(0, 3), window_bytes=16,
                                    **masks), data_width=16)
    assert (tmp_path / "csr.csv").read_text() == regmap.csr_csv()
    assert (tmp_path / "csr.json").read_text() == regmap.csr_json()
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "pass-through latency 1 cycle" in printed


@pytest.mark.parametrize("p_valid,p_ready", [(1.0, 1.0), (1.0, 0.3), (0.5, 0.5), (0.3, 1.0)])
def test_passthrough_register_slice(p_valid, p_ready):
    """The register slice alone: every beat out, in order, unaltered; 1 cycle latency
    whenever the output is ready; ready is high whenever the skid register is empty."""
    from hw.frames.frame import RegisterSlice
    dut = RegisterSlice(data_width=16)
    rng = random.Random(int(p_valid * 10 + p_ready * 100))
    beats = [{"data": rng.randrange(1 << 16), "keep": rng.choice([1, 3]),
              "last": rng.randrange(2), "error": rng.randrange(2)} for _ in range(300)]
    got, latencies = [], []

    async def testbench(ctx):
        index, cycle, sent_at = 0, 0, []
        while len(got) < len(beats) and cycle < 5000:
            valid = index < len(beats) and rng.random() < p_valid
            ready = rng.random() < p_ready
            ctx.set(dut.sink.valid, valid)
            ctx.set(dut.sink.payload, beats[min(index, len(beats) - 1)])
            ctx.set(dut.source.ready, ready)
            _, _, s_ready, o_valid, o_payload = await ctx.tick().sample(
                dut.sink.ready, dut.source.valid, dut.source.payload)
            if o_valid and ready:
                got.append({k: int(o_payload[k]) for k in ("data", "keep", "last", "error")})
                latencies.append(cycle - sent_at[len(got) - 1])
            if valid and s_ready:
                sent_at.append(cycle)
                index += 1
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert got == beats
    assert min(latencies) == PASSTHROUGH_LATENCY
    if p_ready == 1.0:
        assert set(latencies) == {PASSTHROUGH_LATENCY}


def test_design_doc_states_the_default_cores_latencies():
    """docs/DESIGN.md, "The core's latencies": the watch delay and each kind's measurement
    latency are the default cores' (the export prints the same figures)."""
    import re
    from pathlib import Path

    from host_sw.contracts.config_args import config_from_args, default_config_namespace

    text = (Path(__file__).resolve().parents[2] / "docs" / "DESIGN.md").read_text()
    section = text.split("## The core's latencies", 1)[1].split("\n## ", 1)[0]
    section = " ".join(section.split())
    latency = {kind: MeasurementCore(config=config_from_args(
        default_config_namespace(synopsis=kind)), data_width=64).measurement_latency
        for kind in ("lda", "rda", "lds", "opa", "rli")}
    assert latency["lda"] == latency["rda"] == latency["lds"]
    stated = re.search(r"(\d+) cycles for LDA, RDA and LDS, (\d+) for OPA, (\d+) for RLI",
                       section)
    assert stated and tuple(map(int, stated.groups())) == (
        latency["lda"], latency["opa"], latency["rli"])
    assert f"`RECEIVE_LATENCY` + 1 = {MeasurementCore.TAP_WATCH_DELAY}" in section


def test_core_compact_reads_must_be_a_bool():
    with pytest.raises(ValueError, match="compact_reads must be a bool"):
        MeasurementCore(config=LdaConfig(), compact_reads="yes")


def test_export_builds_the_options_it_is_given(monkeypatch, capsys):
    """``--hash-fan-in`` and ``--compact-reads`` reach the exported core."""
    from hw import verilog_export
    from hw.lda_pipeline import main
    cores = []
    monkeypatch.setattr(verilog_export, "export_verilog",
                        lambda core, output, name: cores.append(core) or [output])
    assert main(["--synopsis", "lda", "--hash-fan-in", str(COMPACT_HASH_FAN_IN),
                 "--compact-reads"]) == 0
    assert main(["--synopsis", "lda"]) == 0
    assert [(c.hash_fan_in, c.compact_reads) for c in cores] == [(COMPACT_HASH_FAN_IN, True),
                                                              (HASH_FAN_IN, False)]
