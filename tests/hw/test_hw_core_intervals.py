# SPDX-License-Identifier: BSD-2-Clause
"""Interval control and export wired into the whole core (hw.lda_pipeline.MeasurementCore), on
Amaranth's simulator: a sender core in marker-send mode feeding a receiver core in
marker-receive mode through a lossy channel (both devices' intervals equal host_sw.model.golden_lda_rda_lds
for the frames each saw, with matching sequence numbers; a spoofed marker is rejected; a
dropped marker flags SEQUENCE_GAP; the sender's in-band export reassembles to its
intervals); time-mode boundaries, overrun when not released, and the host export port.
Everything is driven through the UARTBone bus by the host driver itself
(host_sw.device.driver.Device, through sim_tb.lib.amaranth_host)."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.frames.frame_format import (
    ControlConfigMismatch, IntervalFlags, UnauthenticatedFrameError,
)
from host_sw.contracts.frames.control_frame import (
    MarkerFrame, SynopsisChunk, build_marker, parse_control_frame, reassemble,
)
from host_sw.contracts.siphash import key_to_int
from host_sw.model.golden_lda_rda_lds import hash_frames, update
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, default_masks
from hw.frames.frame import beats_to_frames, frame_to_beats
from hw.lda_pipeline import MeasurementCore
from sim_tb.lib.amaranth_host import SimulatedHost
from sim_tb.lib.amaranth_streams import simulate, wait_until

KEY = bytes(range(16))
SRC_MAC = 0x020000000001
DST_MAC = 0x020000000002
OTHER_MAC = 0x02000000BEEF
BEAT_KEYS = ("data", "keep", "last", "error")
W = 64
#: A 16-byte header window (the default masks cut to it) keeps the hasher, and the
#: simulation, small.
WINDOW = {"window_bytes": 16, **{f"mask_{name}": mask.as_int()
                                 for name, mask in default_masks(16).items()}}


def data_frame(rng, length=None):
    """An IPv4 or IPv6 frame whose first byte (0xDA) tells it from control frames."""
    length = length or rng.randrange(60, 110)
    body = bytearray(rng.randbytes(length))
    body[0] = 0xDA
    v6 = rng.random() < 0.4
    body[12:14] = (0x86DD if v6 else 0x0800).to_bytes(2, "big")
    body[14] = ((6 if v6 else 4) << 4) | (body[14] & 0xF)
    return bytes(body)


def is_control(frame):
    return int.from_bytes(frame[12:14], "big") == ETHERTYPE_CONTROL


def golden(config, frames_with_sof):
    """host_sw.model.golden_lda_rda_lds of ``[(frame, sof_cycle)]`` (the timebase counts cycles)."""
    frames = [f for f, _ in frames_with_sof]
    stamps = np.array([t for _, t in frames_with_sof], dtype=np.uint64)
    return update(config, hash_frames(config, frames, [False] * len(frames)), stamps)


class Clock:
    """Cycle count shared by the testbenches (equals each core's timebase)."""

    def __init__(self):
        self.cycle = 0

    async def run(self, ctx):
        while True:
            await ctx.tick()
            self.cycle += 1


class FrameSource:
    """Feeds a core's ``s_axis``: frames from ``queue`` (optionally not before a given
    cycle); records each frame with the cycle of its SOF transfer."""

    def __init__(self, port, clock):
        self.port, self.clock = port, clock
        self.queue = []            # (frame, not_before_cycle)
        self.sent = []             # (frame, sof_cycle)

    async def run(self, ctx):
        port, beats = self.port, []
        while True:
            if not beats and self.queue and self.queue[0][1] <= self.clock.cycle:
                frame, _ = self.queue.pop(0)
                beats = [(frame, b) for b in frame_to_beats(frame, W)]
                first = True
            ctx.set(port.valid, bool(beats))
            if beats:
                ctx.set(port.payload, beats[0][1])
            cycle = self.clock.cycle
            _, _, ready = await ctx.tick().sample(port.ready)
            if beats and ready:
                frame, beat = beats.pop(0)
                if first:
                    self.sent.append((frame, cycle))
                    first = False

    def idle(self):
        return not self.queue


class FrameSink:
    """Takes a frame stream (always ready) and collects whole frames; ``on_frame`` is
    called with each."""

    def __init__(self, port, on_frame=None):
        self.port, self.on_frame = port, on_frame
        self.frames = []

    async def run(self, ctx):
        ctx.set(self.port.ready, 1)
        beats = []
        while True:
            _, _, valid, payload = await ctx.tick().sample(self.port.valid, self.port.payload)
            if valid:
                beats.append({k: int(payload[k]) for k in BEAT_KEYS})
                if beats[-1]["last"]:
                    (frame, _), = beats_to_frames(beats, W)
                    beats = []
                    self.frames.append(frame)
                    if self.on_frame:
                        self.on_frame(frame)


def read_frozen(device, names):
    """Host code: the named registers of the frozen interval, then its counters (not
    released)."""
    values = [device.read(name) for name in names]
    return values + [Synopsis.from_words(device.config, device.read_counter_words())]


# -- two devices: marker send → lossy channel → marker receive -----------------------------

def test_marker_send_to_marker_receive_with_loss_spoofing_and_inband_export():
    config = LdaConfig(banks=2, rows=8, thresholds=(0, 2), **WINDOW)
    sender = MeasurementCore(config=config, data_width=W, bridge_timeout_cycles=64)
    receiver = MeasurementCore(config=config, data_width=W, bridge_timeout_cycles=64)
    top = Module()
    top.submodules.sender = sender
    top.submodules.receiver = receiver
    rng = random.Random(7)
    clock = Clock()
    s_src = FrameSource(sender.s_axis, clock)
    r_src = FrameSource(receiver.s_axis, clock)
    s_host = SimulatedHost(sender, name="sender")
    r_host = SimulatedHost(receiver, name="receiver")
    dropped = []

    def channel(frame):
        """Sender output → receiver input: drops marker seq 1 and every 5th data frame."""
        if is_control(frame):
            parsed = parse_control_frame(frame)
            if isinstance(parsed, MarkerFrame) and parsed.seq == 1:
                dropped.append(frame)
                return
        elif len([f for f in s_out.frames if not is_control(f)]) % 5 == 0:
            dropped.append(frame)
            return
        r_src.queue.append((frame, 0))

    s_out = FrameSink(sender.m_axis, channel)
    r_out = FrameSink(receiver.m_axis)
    spoof = build_marker(config, seq=1, timestamp=123, src_mac=OTHER_MAC.to_bytes(6, "big"),
                         dst_mac=DST_MAC.to_bytes(6, "big"))
    frozen = []      # receiver: (seq, flags, timestamp, synopsis) per frozen interval
    status = {}

    async def main(ctx):
        s_dev = await s_host.connect(ctx, config)
        r_dev = await r_host.connect(ctx, config)
        for host, device in ((s_host, s_dev), (r_host, r_dev)):
            await host.call(ctx, device.write, "config_id", config.config_id)
        await s_host.call(ctx, s_dev.set_intervals, mode="marker-send", export_inband=True,
                          auto_release=True, local_mac=SRC_MAC, export_dst_mac=DST_MAC)
        await r_host.call(ctx, r_dev.set_intervals, mode="marker-receive",
                          marker_src_mac=SRC_MAC)
        chunk_frames = sender.export_frame_count

        def exported(seq):
            return [f for f in s_out.frames if is_control(f)
                    and isinstance(parse_control_frame(f), SynopsisChunk)
                    and parse_control_frame(f).seq == seq]

        for interval in range(4):
            for k in range(8):
                s_src.queue.append((data_frame(rng), 0))
                if interval == 1 and k == 3:
                    await wait_until(ctx, s_src.idle, 2000, "sender frames")
                    r_src.queue.append((spoof, 0))
            await wait_until(ctx, lambda: s_src.idle() and r_src.idle(), 3000, "frames")
            await ctx.tick().repeat(30)
            await s_host.call(ctx, s_dev.swap)
            await wait_until(ctx, lambda: len(exported(interval)) == chunk_frames, 5000,
                             f"the sender's export of interval {interval}")
            if interval in (0, 2, 3):       # marker 1 is dropped: no receiver boundary
                await r_host.wait_status(ctx, r_dev, "frozen_ready", 1, gap_cycles=20)
                frozen.append(tuple(await r_host.call(ctx, read_frozen, r_dev, (
                    "frozen_seq", "frozen_flags", "frozen_timestamp"))))
                await r_host.call(ctx, r_dev.release)
                await r_host.wait_status(ctx, r_dev, "other_clean", 1, gap_cycles=20)
        for name in ("markers_accepted", "markers_rejected", "sequence_gaps",
                     "interval_seq", "overruns"):
            status["r_" + name] = await r_host.call(ctx, r_dev.read, name)
        for name in ("markers_sent", "export_frames", "interval_seq", "overruns",
                     "frames_control", "frames_seen"):
            status["s_" + name] = await s_host.call(ctx, s_dev.read, name)

    simulate(top, main, clock.run, s_src.run, r_src.run, s_out.run, r_out.run)

    # Data frames pass both devices unaltered and in order (minus the channel's drops).
    s_data = [f for f, _ in s_src.sent]
    assert [f for f in s_out.frames if not is_control(f)] == s_data
    assert r_out.frames == [f for f, _ in r_src.sent]

    # The sender: intervals split by its markers; each exported in-band, reassembling to
    # the golden model of its data frames, stamped with its marker's timestamp.
    markers = [parse_control_frame(f) for f in s_out.frames
               if is_control(f) and f[15] == 1]
    assert [mk.seq for mk in markers] == [0, 1, 2, 3]
    interval_of, n_markers = [], 0
    for f in s_out.frames:
        if is_control(f):
            n_markers += f[15] == 1
        else:
            interval_of.append(n_markers)
    flags0 = IntervalFlags.CONFIG_CHANGED          # CONFIG_ID written in interval 0
    for k, marker in enumerate(markers):
        mine = [s for s, i in zip(s_src.sent, interval_of) if i == k]
        chunks = [f for f in s_out.frames if is_control(f) and f[15] == 2
                  and parse_control_frame(f).seq == k]
        parsed = [parse_control_frame(f) for f in chunks]
        assert [c.chunk_index for c in parsed] == list(range(len(chunks)))
        assert [w for c in parsed for w in c.words] == list(golden(config, mine).words())
        assert {(c.seq, c.timestamp, c.flags, c.src_mac) for c in parsed} == {
            (k, marker.timestamp, marker.flags, SRC_MAC.to_bytes(6, "big"))}
        assert marker.flags == (flags0 if k == 0 else 0)
        if k == 0:
            # interval 0 began before CONFIG_ID was written: stamped 0, rejected by the
            # host's parser for this configuration
            assert {c.config_id for c in parsed} == {0}
            with pytest.raises(ControlConfigMismatch):
                reassemble(chunks, config)
        else:
            snap = reassemble(chunks, config)
            assert snap.synopsis == golden(config, mine)
            assert (snap.seq, snap.timestamp, snap.flags) == (k, marker.timestamp, 0)
    assert status["s_markers_sent"] == 4 and status["s_interval_seq"] == 4
    assert status["s_export_frames"] == 4 * sender.export_frame_count
    assert status["s_overruns"] == 0
    assert status["s_frames_control"] == 4 + 4 * sender.export_frame_count
    # its own markers and chunks pass its tap too (docs/CORE_INTERFACE.md)
    assert status["s_frames_seen"] == len(s_data) + status["s_frames_control"]

    # The receiver: intervals split by the markers it accepted (not the spoof, and marker
    # 1 never arrived): 0, then 1 (sender's 1 and 2 together, SEQUENCE_GAP), then 3.
    assert len(dropped) >= 5 and any(f[15:16] == b"\x01" for f in dropped)
    accepted = [parse_control_frame(f) for f, _ in r_src.sent
                if is_control(f) and f[15] == 1 and f[6:12] == SRC_MAC.to_bytes(6, "big")]
    assert [mk.seq for mk in accepted] == [0, 2, 3]
    seen, n = [[], [], []], 0
    for f, sof in r_src.sent:
        if is_control(f):
            if f[15] == 1 and f[6:12] == SRC_MAC.to_bytes(6, "big"):
                n += 1
        elif n < 3:
            seen[n].append((f, sof))
    assert [(seq, flags) for seq, flags, _, _ in frozen] == [
        (0, flags0), (1, IntervalFlags.SEQUENCE_GAP), (3, 0)]
    for (seq, flags, timestamp, synopsis), mine, marker in zip(frozen, seen, accepted):
        assert synopsis == golden(config, mine)
        assert timestamp == marker.timestamp
        assert synopsis.count.sum() >= 4
    # matching sequence numbers: the receiver's interval 3 is the sender's interval 3
    assert frozen[2][0] == markers[3].seq and frozen[2][2] == markers[3].timestamp
    assert status["r_markers_accepted"] == 3
    assert status["r_markers_rejected"] == 1
    assert status["r_sequence_gaps"] == 1
    assert status["r_interval_seq"] == 4 and status["r_overruns"] == 0


# -- one device: time mode, overrun, host export -------------------------------------------

def test_time_mode_boundaries_overrun_and_host_export():
    config = LdaConfig(banks=2, rows=4, thresholds=(0, 2), **WINDOW)
    core = MeasurementCore(config=config, data_width=W, bridge_timeout_cycles=64)
    clock = Clock()
    src = FrameSource(core.s_axis, clock)
    out = FrameSink(core.m_axis)
    host = FrameSink(core.host_export)
    link = SimulatedHost(core)
    t0, delta = 1500, 1500
    boundaries = [t0 + i * delta for i in range(3)]
    rng = random.Random(11)
    # A frame every ~60 cycles, none starting close to a boundary tick.
    t = 400
    while t < boundaries[-1] + 300:
        if all(not (b - 30 <= t <= b + 30) for b in boundaries):
            src.queue.append((data_frame(rng), t))
        t += rng.randrange(40, 80)
    results = {}

    async def main(ctx):
        device = await link.connect(ctx, config)
        await link.call(ctx, device.write, "config_id", config.config_id)
        # Authenticated mode: the exports are tagged under AUTH_KEY, which reads as 0.
        await link.call(ctx, device.write, "auth_key", key_to_int(KEY), verify=False)
        await link.call(ctx, device.write, "auth_mode", enable=1)
        results["auth_key"] = await link.call(ctx, device.read, "auth_key")
        await link.call(ctx, device.set_intervals, mode="time", ticks=delta, start=t0,
                       export_host=True, local_mac=SRC_MAC, export_dst_mac=DST_MAC)
        assert clock.cycle < t0 - 100
        results["seq_before"] = await link.call(ctx, device.read, "interval_seq")
        # Boundary 0 at t0 freezes the interval since reset.
        await wait_until(ctx, lambda: clock.cycle > t0 + 50, 5000, "t0")
        await link.wait_status(ctx, device, "frozen_ready", 1, gap_cycles=20)
        results["first"] = await link.call(ctx, read_frozen, device, (
            "frozen_seq", "frozen_flags", "frozen_timestamp", "interval_seq"))
        # Not released: boundary 1 is an overrun.
        await wait_until(ctx, lambda: clock.cycle > boundaries[1] + 50, 5000, "boundary 1")
        results["overrun"] = [await link.call(ctx, device.read, n) for n in
                              ("overruns", "interval_seq", "frozen_seq")]
        await link.call(ctx, device.release)
        await link.wait_status(ctx, device, "other_clean", 1, gap_cycles=20)
        await wait_until(ctx, lambda: clock.cycle > boundaries[2] + 50, 5000, "boundary 2")
        await link.wait_status(ctx, device, "frozen_ready", 1, gap_cycles=20)
        results["second"] = await link.call(ctx, read_frozen, device, (
            "frozen_seq", "frozen_flags", "frozen_timestamp", "interval_seq"))
        results["status"] = await link.call(ctx, device.read, "status")
        await wait_until(ctx, lambda: len(host.frames) == 2 * core.export_frame_count,
                         3000, "host export")
        results["export_frames"] = await link.call(ctx, device.read, "export_frames")

    simulate(core, main, clock.run, src.run, out.run, host.run)

    assert out.frames == [f for f, _ in src.sent]          # nothing inserted in-band
    assert results["seq_before"] == 0
    first = [s for s in src.sent if s[1] < boundaries[0]]
    second = [s for s in src.sent if boundaries[0] <= s[1] < boundaries[2]]
    assert len(first) >= 10 and len(second) >= 20
    time_mode = IntervalFlags.TIME_MODE
    seq, flags, ts, iseq, synopsis = results["first"]
    # CONFIG_ID was written in the interval since reset
    assert (seq, flags, ts, iseq) == (0, time_mode | IntervalFlags.CONFIG_CHANGED,
                                      boundaries[0], 0)
    assert synopsis == golden(config, first)
    assert results["overrun"] == [1, 1, 0]
    seq, flags, ts, iseq, synopsis = results["second"]
    assert (seq, flags, ts, iseq) == (0, time_mode | IntervalFlags.OVERRUN, boundaries[2], 2)
    assert synopsis == golden(config, second)
    assert core.regmap["status"].decode(results["status"])["frozen_overrun"] == 1
    # The host export port carried both frozen intervals, equal to the bus readout.
    per = core.export_frame_count
    assert results["export_frames"] == 2 * per
    # The interval since reset began before CONFIG_ID was written: its frames carry
    # config ID 0 (and CONFIG_CHANGED), which the host's parser rejects for this config.
    assert results["auth_key"] == 0                         # write-only
    first_chunks = [parse_control_frame(f, key=KEY) for f in host.frames[:per]]
    assert [(c.seq, c.config_id, c.flags, c.timestamp) for c in first_chunks] == [
        (0, 0, time_mode | IntervalFlags.CONFIG_CHANGED, boundaries[0])] * per
    assert [w for c in first_chunks for w in c.words] == list(results["first"][4].words())
    with pytest.raises(ControlConfigMismatch):
        reassemble(host.frames[:per], config, key=KEY)
    with pytest.raises(UnauthenticatedFrameError):          # keyed: not without the key
        reassemble(host.frames[per:], config)
    snap = reassemble(host.frames[per:], config, key=KEY)
    assert snap.synopsis == results["second"][4]
    assert (snap.seq, snap.flags, snap.timestamp) == (
        0, time_mode | IntervalFlags.OVERRUN, boundaries[2])
