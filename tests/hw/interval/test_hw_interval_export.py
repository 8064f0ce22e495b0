# SPDX-License-Identifier: BSD-2-Clause
"""Interval control, marker frames and the exporter (issue 4), with the frame merger
between them as in the core, on Amaranth's simulator: gateware frames equal
host_sw.contracts.frames.control_frame's builders byte for byte and parse/reassemble on the host; data
frames are never corrupted, dropped or reordered; marker-receive acceptance, rejection and sequence gaps; time-mode boundaries; a
marker-send device feeding a marker-receive device. Data widths 8 and 64, random
backpressure, and the stream rules checked on every output."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.frames.control_frame import (
    MarkerFrame, build_marker, build_synopsis_frames, parse_control_frame, reassemble,
)
from host_sw.contracts.synopsis import Synopsis
from hw.inband.marker_source import MarkerFrameSource
from hw.counters.counter_bank import CounterBank
from hw.inband.exporter import Exporter
from hw.frames.frame import beats_to_frames
from hw.interval.interval_control import (
    MODE_MANUAL, MODE_MARKER_RECEIVE, MODE_MARKER_SEND, MODE_TIME, RECEIVE_LATENCY,
    IntervalControl, IntervalTimer,
)
from hw.frames.frame_merger import FrameMerger
from hw.frames.timebase import Timebase
from host_sw.contracts.siphash import key_to_int
from sim_tb.lib.amaranth_streams import FakeFrozenCopy, Sink, Source, simulate, wait_until

SRC_MAC = 0x020000000001
DST_MAC = 0x020000000002
OTHER_MAC = 0x02000000BEEF


# -- marker frames -------------------------------------------------------------------------

@pytest.mark.parametrize("data_width", [8, 24, 64, 128])
def test_marker_frames_equal_build_marker(data_width):
    config = LdaConfig()
    rng = random.Random(data_width)
    dut = MarkerFrameSource(config=config, data_width=data_width)
    sink = Sink(dut.source, data_width, rng, p_ready=0.6)
    key = bytes(range(16))
    # The last two are authenticated (the tag under the key; SPEC §6's vector is one).
    requests = [(0, 0, 0, None),
                (0x01020304, 0x1122334455667788, int(IntervalFlags.OVERRUN), None),
                (0xFFFFFFFF, (1 << 64) - 1, 0x87, key),
                (0x01020304, 0x1122334455667788, int(IntervalFlags.OVERRUN), key)]

    async def main(ctx):
        ctx.set(dut.src_mac, SRC_MAC)
        ctx.set(dut.dst_mac, DST_MAC)
        ctx.set(dut.config_id, config.config_id)
        for seq, ts, flags, k in requests:
            ctx.set(dut.key, 0 if k is None else key_to_int(k))
            ctx.set(dut.auth, k is not None)
            ctx.set(dut.request.valid, 1)
            ctx.set(dut.request.payload, {"seq": seq, "timestamp": ts, "flags": flags})
            while True:
                _, _, ready = await ctx.tick().sample(dut.request.ready)
                if ready:
                    break
            ctx.set(dut.request.valid, 0)
        await wait_until(ctx, lambda: len(sink.frames()) == len(requests), 2000, "markers")

    simulate(dut, main, sink.run)
    frames = sink.frames()
    for frame, (seq, ts, flags, k) in zip(frames, requests):
        assert frame == build_marker(config, seq=seq, timestamp=ts, src_mac=SRC_MAC,
                                     dst_mac=DST_MAC, flags=flags, key=k)
    parsed = parse_control_frame(frames[1], expected=config)
    assert isinstance(parsed, MarkerFrame)
    assert (parsed.seq, parsed.timestamp, parsed.flags) == (0x01020304, 0x1122334455667788,
                                                             IntervalFlags.OVERRUN)
    assert len(frames) == len(requests)


# -- exporter ------------------------------------------------------------------------------

def random_synopsis(config, rng):
    words = [rng.getrandbits(config.layout.width) for _ in range(config.buckets)]
    synopsis = Synopsis.from_words(config, words)
    assert list(synopsis.words()) == words
    return synopsis, words


EXPORT_CASES = [
    # (config, data_width, mtu): small MTUs split the words over several frames, the last
    # one short
    (LdaConfig(banks=2, rows=8, thresholds=(0, 3)), 8, 34 + 12 * 5),      # 5/frame, 4 frames
    (LdaConfig(banks=2, rows=8, thresholds=(0, 3)), 64, 34 + 12 * 5),
    (RdaConfig(banks=2, buckets_per_bank=8), 64, 34 + 20 * 3),            # 20-byte words
]


@pytest.mark.parametrize("config,data_width,mtu", EXPORT_CASES)
def test_exported_frames_reassemble_under_backpressure(config, data_width, mtu):
    rng = random.Random(data_width * 7 + mtu)
    synopsis, words = random_synopsis(config, rng)
    dut = Exporter(config=config, data_width=data_width, mtu=mtu)
    assert dut.frame_count > 2
    memory = FakeFrozenCopy(dut.frozen, words)
    inband = Sink(dut.inband, data_width, random.Random(1), p_ready=0.5)
    host = Sink(dut.host, data_width, random.Random(2), p_ready=0.8)
    pulses = {"done": 0, "release": 0}
    exports = [dict(seq=7, flags=int(IntervalFlags.TIME_MODE | IntervalFlags.OVERRUN),
                    timestamp=0x1122334455667788, inband=1, host=1, auto_release=1, role=1),
               dict(seq=8, flags=0, timestamp=5, inband=0, host=1, auto_release=0, role=2)]

    async def main(ctx):
        ctx.set(dut.src_mac, SRC_MAC)
        ctx.set(dut.dst_mac, DST_MAC)
        ctx.set(dut.config_id, config.config_id)
        for e in exports:
            ctx.set(dut.seq, e["seq"])
            ctx.set(dut.flags, e["flags"])
            ctx.set(dut.timestamp, e["timestamp"])
            ctx.set(dut.role, e["role"])
            ctx.set(dut.to_inband, e["inband"])
            ctx.set(dut.to_host, e["host"])
            ctx.set(dut.auto_release, e["auto_release"])
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for _ in range(100_000):
                _, _, busy, done, release = await ctx.tick().sample(
                    dut.busy, dut.done, dut.release)
                pulses["done"] += done
                pulses["release"] += release
                if done:
                    break
            assert not ctx.get(dut.busy)
            assert not ctx.get(dut.read_error)
        assert ctx.get(dut.frames) == 2 * dut.frame_count

    async def bus_reads(ctx):       # the bus's counter-window reads take the port
        hold_rng = random.Random(9)
        while True:
            ctx.set(dut.read_hold, hold_rng.random() < 0.2)
            await ctx.tick()

    simulate(dut, main, memory.run, inband.run, host.run, bus_reads)
    assert pulses == {"done": 2, "release": 1}
    assert memory.reads == 2 * config.buckets
    first = exports[0]
    expected = build_synopsis_frames(synopsis, seq=first["seq"], src_mac=SRC_MAC,
                                     dst_mac=DST_MAC, flags=first["flags"],
                                     timestamp=first["timestamp"], mtu=mtu, role=1)
    assert len(expected) == dut.frame_count
    assert inband.frames() == expected
    host_frames = host.frames()
    assert host_frames[:len(expected)] == expected
    second = build_synopsis_frames(synopsis, seq=8, src_mac=SRC_MAC, dst_mac=DST_MAC,
                                   flags=0, timestamp=5, mtu=mtu, role=2)
    assert host_frames[len(expected):] == second
    got = reassemble(host_frames[len(expected):], config)
    assert got.seq == 8 and list(got.synopsis.words()) == words and got.role == 2
    got = reassemble(inband.frames(), config)
    assert got.flags == IntervalFlags.TIME_MODE | IntervalFlags.OVERRUN
    assert list(got.synopsis.words()) == words


def test_exporter_frames_have_no_gaps_at_64_bits():
    """With the port always ready, a frame's beats leave on consecutive clocks (a MAC
    behind the port must not underflow); default MTU, three frames."""
    config = LdaConfig(banks=1, rows=256, thresholds=(0,))
    rng = random.Random(3)
    synopsis, words = random_synopsis(config, rng)
    dut = Exporter(config=config, data_width=64)
    memory = FakeFrozenCopy(dut.frozen, words)
    host = Sink(dut.host, 64, rng, p_ready=1.0)

    async def main(ctx):
        ctx.set(dut.src_mac, SRC_MAC)
        ctx.set(dut.dst_mac, DST_MAC)
        ctx.set(dut.config_id, config.config_id)
        ctx.set(dut.to_host, 1)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await wait_until(ctx, lambda: ctx.get(dut.done), 5000, "done")

    simulate(dut, main, memory.run, host.run)
    assert dut.frame_count == 3
    assert host.frames() == build_synopsis_frames(synopsis, seq=0, src_mac=SRC_MAC,
                                                  dst_mac=DST_MAC)
    for cycles in host.frame_cycles():
        assert cycles == list(range(cycles[0], cycles[0] + len(cycles)))


def test_exporter_rejects_bad_parameters():
    with pytest.raises(ValueError, match="data_width"):
        Exporter(config=LdaConfig(), data_width=12)
    with pytest.raises(ValueError, match="MTU"):
        Exporter(config=LdaConfig(), data_width=64, mtu=40)
    with pytest.raises(ValueError, match="config"):
        Exporter(config=object(), data_width=64)


# -- interval control: marker receive --------------------------------------------------------

def _marker(config, seq, *, src=SRC_MAC, timestamp=None, config_id=None, version=None,
            key=None):
    frame = bytearray(build_marker(config, seq=seq, timestamp=1000 + seq if timestamp is None
                                   else timestamp, src_mac=src, dst_mac=DST_MAC, key=key))
    if config_id is not None:
        frame[22:26] = config_id.to_bytes(4, "big")
    if version is not None:
        frame[14] = version
    return bytes(frame)


@pytest.mark.parametrize("data_width", [8, 64])
def test_marker_receive_accepts_only_the_configured_sender(data_width):
    config = LdaConfig()
    rng = random.Random(data_width)
    data_frame = bytes(rng.randbytes(12)) + b"\x08\x00\x45" + rng.randbytes(60)
    chunk = build_synopsis_frames(Synopsis.from_words(
        LdaConfig(banks=1, rows=2, thresholds=(0,)), [1, 2]), seq=0, src_mac=SRC_MAC,
        dst_mac=DST_MAC)[0]
    tampered = bytearray(_marker(config, 1))
    tampered[47] ^= 0x01                                         # the timestamp's last byte
    frames = [
        (data_frame, False, None),
        (_marker(config, 0), False, ("accept", 1, 0)),
        (_marker(config, 1, src=OTHER_MAC), False, ("reject",)),
        (_marker(config, 1, config_id=config.config_id ^ 1), False, ("reject",)),
        (_marker(config, 1, version=1), False, ("reject",)),
        (_marker(config, 1), True, ("reject",)),                 # errored
        (_marker(config, 1)[:40], False, ("reject",)),           # truncated header: runt
        (_marker(config, 1)[:48], False, ("reject",)),           # the 48-byte runt
        (_marker(config, 1)[:56], False, ("reject",)),           # header + tag, no padding
        (bytes(tampered), False, ("reject",)),                   # the tag does not verify
        (data_frame, False, None), (data_frame, False, None),
        (_marker(config, 1, key=bytes(16)), False, ("reject",)),     # authenticated
        (chunk, False, None),                                    # not a marker: ignored
        (data_frame, False, None),
        (_marker(config, 1), False, ("accept", 2, 0)),
        (data_frame, False, None), (data_frame, False, None),    # the check's time
        (_marker(config, 0), False, ("reject",)),                # old: replayed
        (data_frame, False, None), (data_frame, False, None),
        (_marker(config, 1), False, ("reject",)),                # the last one again
        (data_frame, False, None), (data_frame, False, None),
        (_marker(config, 5), False, ("accept", 6, int(IntervalFlags.SEQUENCE_GAP))),
        (data_frame, False, None), (data_frame, False, None),
        (_marker(config, 6, timestamp=(1 << 64) - 1), False, ("accept", 7, 0)),
    ]
    dut = IntervalControl(data_width=data_width)
    src = Source(dut.watch, data_width, rng, p_valid=0.6)
    src.queue = [(f, e) for f, e, _ in frames]
    boundaries = []

    async def main(ctx):
        ctx.set(dut.mode, MODE_MARKER_RECEIVE)
        ctx.set(dut.config_id, config.config_id)
        ctx.set(dut.marker_src_mac, SRC_MAC)
        for cycle in range(8000):
            _, _, b, seq, flags, ts = await ctx.tick().sample(
                dut.boundary, dut.boundary_seq, dut.boundary_flags, dut.boundary_timestamp)
            if b:
                boundaries.append((cycle, seq, flags, ts))
        # Every status counter: 8 header/length rejections (3 of them runts), 1 bad tag,
        # 2 replays; the interval number never went back.
        assert ctx.get(dut.markers_accepted) == 4
        assert ctx.get(dut.markers_rejected) == 11
        assert ctx.get(dut.markers_runt) == 3
        assert ctx.get(dut.markers_bad_tag) == 1
        assert ctx.get(dut.markers_replayed) == 2
        assert ctx.get(dut.sequence_gaps) == 1
        assert ctx.get(dut.markers_sent) == 0
        assert ctx.get(dut.seq) == 7

    async def stalls(ctx):          # the watched stream's consumer stalls at random
        stall_rng = random.Random(11)
        while True:
            ctx.set(dut.watch.ready, stall_rng.random() < 0.7)
            await ctx.tick()

    simulate(dut, main, src.run, stalls)
    expected = [(f, exp) for f, _, exp in frames if exp and exp[0] == "accept"]
    assert [(seq, flags) for _, seq, flags, _ in boundaries] == [(e[1], e[2])
                                                                 for _, e in expected]
    assert [ts for *_, ts in boundaries] == [1000, 1001, 1005, (1 << 64) - 1]
    # Each boundary pulses RECEIVE_LATENCY cycles after its marker's EOF transfer.
    accepted_eofs = [c for c, (_, _, exp) in zip(src.eof_cycles, frames)
                     if exp and exp[0] == "accept"]
    assert [c for c, *_ in boundaries] == [c + RECEIVE_LATENCY for c in accepted_eofs]


def test_marker_receive_authenticated_and_busy():
    """Authenticated mode (AUTH_MODE.enable, AUTH_KEY): only markers tagged under the key
    are taken; a marker whose check would start while the previous one's is running is
    ignored and counted (the documented rule); every counter asserted."""
    config = LdaConfig()
    key = bytes(range(16))
    rng = random.Random(1)
    data_frame = bytes(rng.randbytes(12)) + b"\x08\x00\x45" + rng.randbytes(60)
    frames = [_marker(config, 0), data_frame, _marker(config, 0, key=bytes(range(1, 17))),
              *[data_frame] * 5,
              _marker(config, 0, key=key), _marker(config, 1, key=key),   # back to back
              *[data_frame] * 5, _marker(config, 1, key=key)]
    dut = IntervalControl(data_width=64)
    src = Source(dut.watch, 64, rng, p_valid=1.0)
    src.queue = [(f, False) for f in frames]
    boundaries = []

    async def main(ctx):
        ctx.set(dut.mode, MODE_MARKER_RECEIVE)
        ctx.set(dut.config_id, config.config_id)
        ctx.set(dut.marker_src_mac, SRC_MAC)
        ctx.set(dut.key, key_to_int(key))
        ctx.set(dut.auth, 1)
        ctx.set(dut.watch.ready, 1)
        for _ in range(400):
            _, _, b, seq = await ctx.tick().sample(dut.boundary, dut.boundary_seq)
            if b:
                boundaries.append(seq)
        assert ctx.get(dut.markers_accepted) == 2
        assert ctx.get(dut.markers_rejected) == 3     # not authenticated, other key, busy
        assert ctx.get(dut.markers_bad_tag) == 1
        assert ctx.get(dut.markers_runt) == ctx.get(dut.markers_replayed) == 0

    simulate(dut, main, src.run)
    assert boundaries == [1, 2]


# -- interval control: time mode, manual -----------------------------------------------------

def test_time_mode_boundaries_at_the_right_ticks():
    dut = IntervalControl(data_width=8)
    events = []

    async def main(ctx):
        ctx.set(dut.interval_start, 40)
        ctx.set(dut.interval_ticks, 30)
        ctx.set(dut.mode, MODE_TIME)
        for now in range(400):
            ctx.set(dut.now, now)
            if now == 200:                      # t0 in the past: resume at the interval
                ctx.set(dut.interval_start, 15)  # now lies in (index 6: 195..225)
                ctx.set(dut.rearm, 1)
            if now == 201:
                ctx.set(dut.rearm, 0)
            if now == 300:                      # back to manual: CONTROL.swap only
                ctx.set(dut.mode, MODE_MANUAL)
            if now in (320, 330):
                ctx.set(dut.swap, 1)
            if now in (321, 331):
                ctx.set(dut.swap, 0)
            _, _, b, seq, flags, ts = await ctx.tick().sample(
                dut.boundary, dut.boundary_seq, dut.boundary_flags, dut.boundary_timestamp)
            if b:
                events.append((now, seq, flags, ts))

    simulate(dut, main)
    time_mode = int(IntervalFlags.TIME_MODE)
    timed = [e for e in events if e[0] < 300]
    assert [(seq, flags, ts) for _, seq, flags, ts in timed] == (
        [(i, time_mode, 40 + 30 * i) for i in range(6)]          # 40 .. 190
        + [(i, time_mode, 15 + 30 * i) for i in (6, 7, 8, 9)])    # 195, 225, 255, 285
    for now, _, _, ts in timed:
        if ts == 195:       # after the rearm (taken two cycles later): 2 cycles per
            assert 200 < now <= 200 + 6 + 2 * 6     # skipped interval
        else:
            assert 1 <= now - ts <= 4
    manual = [e for e in events if e[0] >= 300]
    assert [(seq, flags) for _, seq, flags, _ in manual] == [(10, 0), (11, 0)]
    assert [now for now, *_ in manual] == [321, 331]


def test_time_mode_without_interval_length_has_no_boundaries():
    dut = IntervalControl(data_width=8)
    seen = []

    async def main(ctx):
        ctx.set(dut.mode, MODE_TIME)
        for now in range(200):
            ctx.set(dut.now, now)
            _, _, b = await ctx.tick().sample(dut.boundary)
            seen.append(b)

    simulate(dut, main)
    assert not any(seen)


class _TimerFromRegisters(wiring.Component):
    """The timer behind registers of δ and t0, as the core's configuration copies feed it
    (a synthesis harness only)."""

    def __init__(self):
        self.timer = IntervalTimer()
        super().__init__({"ticks": In(64), "start": In(64), "now": In(64),
                          "enable": In(1), "rearm": In(1),
                          "tick": Out(1), "index": Out(32), "at": Out(64)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.timer = timer = self.timer
        # (after synthesis these registers' nets carry the timer's port names)
        ticks, start = Signal(64), Signal(64)
        m.d.sync += [ticks.eq(self.ticks), start.eq(self.start)]
        m.d.comb += [timer.ticks.eq(ticks), timer.start.eq(start),
                     timer.now.eq(self.now), timer.enable.eq(self.enable),
                     timer.rearm.eq(self.rearm), self.tick.eq(timer.tick),
                     self.index.eq(timer.index), self.at.eq(timer.at)]
        return m


def test_timer_schedule_adds_registers_of_its_own(tmp_path):
    """After ``synth_ecp5``: the schedule's 64-bit additions start at the timer's own
    copies of δ and t0, not at the configuration's registers (whose net into the carry
    chain was the two-clock LDA core's datapath critical path on two placements)."""
    from tests.hw.ecp5_netlist import fan_in_registers, registers_of, synthesized

    module = synthesized(_TimerFromRegisters(), tmp_path)
    config = registers_of(module, "timer.ticks") | registers_of(module, "timer.start")
    schedule = registers_of(module, "after_next") | registers_of(module, "next_at")
    assert config and schedule
    assert not fan_in_registers(module, schedule) & config


# -- marker send → marker receive ----------------------------------------------------------

class _SenderReceiver(wiring.Component):
    """Sender (interval control in marker-send mode, marker source, frame merger on the
    data path) whose merged stream a receiver's interval control watches (the merger's
    watch copy, as in the core)."""

    def __init__(self, config, data_width):
        self.config, self.data_width = config, data_width
        self.sender = IntervalControl(data_width=data_width)
        self.receiver = IntervalControl(data_width=data_width)
        self.markers = MarkerFrameSource(config=config, data_width=data_width)
        self.merger = FrameMerger(data_width=data_width, inserts=1)
        self.timebase = Timebase()
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.sender = s = self.sender
        m.submodules.receiver = r = self.receiver
        m.submodules.markers = mk = self.markers
        m.submodules.merger = ins = self.merger
        m.submodules.timebase = tb = self.timebase
        wiring.connect(m, s.marker, mk.request)
        wiring.connect(m, mk.source, ins.insert[0])
        m.d.comb += [
            s.now.eq(tb.now), r.now.eq(tb.now),
            s.marker_sent.eq(ins.inserted_sof[0]),
            s.config_id.eq(self.config.config_id), r.config_id.eq(self.config.config_id),
            mk.config_id.eq(self.config.config_id), mk.src_mac.eq(SRC_MAC),
            mk.dst_mac.eq(DST_MAC), r.marker_src_mac.eq(SRC_MAC),
            r.watch.valid.eq(ins.watch_valid), r.watch.ready.eq(1),
            r.watch.payload.eq(ins.watch),
        ]
        return m


async def _watch_marker_ends(ctx, dut, sofs, eofs):
    """Cycles (from 0) of the markers' first / last beats in the merger's watch copy."""
    cycle = 0
    async for _, _, sof, eof in ctx.tick().sample(dut.merger.inserted_sof,
                                                   dut.merger.inserted_eof):
        if sof:
            sofs.append(cycle)
        if eof:
            eofs.append(cycle)
        cycle += 1


@pytest.mark.parametrize("data_width", [8, 64])
def test_marker_send_to_marker_receive(data_width):
    config = LdaConfig()
    rng = random.Random(5 + data_width)
    dut = _SenderReceiver(config, data_width)
    data = [(bytes([0xDA]) + rng.randbytes(rng.randrange(59, 120)), False)
            for _ in range(30)]
    src = Source(dut.merger.sink, data_width, random.Random(1), p_valid=0.8)
    src.queue = list(data)
    sink = Sink(dut.merger.source, data_width, random.Random(2), p_ready=0.7)
    sender_b, receiver_b, triggers = [], [], []
    marker_sofs, marker_eofs = [], []

    async def watch(ctx):
        await _watch_marker_ends(ctx, dut, marker_sofs, marker_eofs)

    async def main(ctx):
        s, r = dut.sender, dut.receiver
        ctx.set(s.mode, MODE_MARKER_SEND)
        ctx.set(r.mode, MODE_MARKER_RECEIVE)
        ctx.set(s.ending_flags, int(IntervalFlags.OVERRUN))
        for cycle in range(5000):
            trigger = cycle in (100, 700, 1500)
            ctx.set(s.swap, trigger)
            _, _, now, sb, sseq, sts, rb, rseq, rflags, rts = await ctx.tick().sample(
                dut.timebase.now, s.boundary, s.boundary_seq, s.boundary_timestamp,
                r.boundary, r.boundary_seq, r.boundary_flags, r.boundary_timestamp)
            if trigger:
                triggers.append(now)
            if sb:
                sender_b.append((cycle, sseq, sts))
            if rb:
                receiver_b.append((cycle, rseq, rflags, rts))
        assert ctx.get(s.markers_sent) == 3
        assert ctx.get(r.markers_accepted) == 3
        assert ctx.get(r.markers_rejected) == 0
        assert ctx.get(r.sequence_gaps) == 0

    simulate(dut, main, src.run, sink.run, watch)
    out = sink.frames()
    assert [f for f in out if f[0] == 0xDA] == [f for f, _ in data]
    markers = [f for f in out if f[0] != 0xDA]
    # The marker carries the interval that ends, the timebase at the trigger and the
    # ending interval's flags; byte for byte build_marker's frame.
    assert markers == [build_marker(config, seq=i, timestamp=triggers[i],
                                    src_mac=SRC_MAC, dst_mac=DST_MAC,
                                    flags=IntervalFlags.OVERRUN) for i in range(3)]
    assert [(seq, ts) for _, seq, ts in sender_b] == [(i + 1, triggers[i])
                                                      for i in range(3)]
    assert [(seq, flags, ts) for _, seq, flags, ts in receiver_b] == [
        (i + 1, 0, triggers[i]) for i in range(3)]
    # The sender's boundary follows its marker's first beat (in the watch copy, which the
    # core's tap sees later) by one cycle, so the swap falls between the data frames the
    # marker falls between; the receiver's follows the marker's last beat by
    # RECEIVE_LATENCY.
    assert len(marker_sofs) == len(marker_eofs) == 3
    assert [c for c, *_ in sender_b] == [c + 1 for c in marker_sofs]
    assert [c for c, *_ in receiver_b] == [c + RECEIVE_LATENCY for c in marker_eofs]


def test_marker_send_timer_schedule():
    """Marker send with the interval timer: a marker at each t0 + i·δ, stamped with it,
    sequence numbers counting; the receiver follows."""
    config = LdaConfig()
    dut = _SenderReceiver(config, 64)
    sink = Sink(dut.merger.source, 64, random.Random(4), p_ready=0.8)
    sender_b, receiver_b = [], []

    async def main(ctx):
        s, r = dut.sender, dut.receiver
        ctx.set(s.interval_start, 50)
        ctx.set(s.interval_ticks, 200)
        ctx.set(s.mode, MODE_MARKER_SEND)
        ctx.set(r.mode, MODE_MARKER_RECEIVE)
        for _ in range(760):
            _, _, sb, sseq, sts, rb, rseq, rts = await ctx.tick().sample(
                s.boundary, s.boundary_seq, s.boundary_timestamp,
                r.boundary, r.boundary_seq, r.boundary_timestamp)
            if sb:
                sender_b.append((sseq, sts))
            if rb:
                receiver_b.append((rseq, rts))

    simulate(dut, main, sink.run)
    assert sink.frames() == [build_marker(config, seq=i, timestamp=50 + 200 * i,
                                          src_mac=SRC_MAC, dst_mac=DST_MAC)
                             for i in range(4)]
    assert sender_b == receiver_b == [(i + 1, 50 + 200 * i) for i in range(4)]


def test_exporter_without_ports_and_with_read_errors():
    """No port enabled: nothing is sent, done (and release if asked) still pulse. A copy
    that is not frozen (the port answers error): read_error, zero words."""
    config = LdaConfig(banks=1, rows=4, thresholds=(0,))
    dut = Exporter(config=config, data_width=64)
    host = Sink(dut.host, 64, random.Random(0))
    seen = {"release": 0}

    async def errors(ctx):
        pipe = [False] * (CounterBank.READ_LATENCY - 1)
        async for _, _, en in ctx.tick().sample(dut.frozen.en):
            pipe.append(bool(en))
            out = pipe.pop(0)
            ctx.set(dut.frozen.valid, out)
            ctx.set(dut.frozen.error, out)

    async def main(ctx):
        ctx.set(dut.config_id, config.config_id)
        ctx.set(dut.auto_release, 1)
        ctx.set(dut.start, 1)
        _, _, busy = await ctx.tick().sample(dut.busy)
        ctx.set(dut.start, 0)
        _, _, done, release, busy = await ctx.tick().sample(dut.done, dut.release, dut.busy)
        assert (done, release, busy) == (1, 1, 0)
        ctx.set(dut.to_host, 1)
        ctx.set(dut.auto_release, 0)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(500):
            _, _, done, release = await ctx.tick().sample(dut.done, dut.release)
            seen["release"] += release
            if done:
                break
        assert ctx.get(dut.read_error) == 1
        assert ctx.get(dut.frames) == 1

    simulate(dut, main, errors, host.run)
    assert seen["release"] == 0
    assert host.frames() == build_synopsis_frames(Synopsis.from_words(config, [0] * 4),
                                                  seq=0, src_mac=0, dst_mac=0)


class _SenderPath(wiring.Component):
    """The sender's data path as the top wires it: data, markers and export frames →
    frame merger → out, with the interval control, marker source and exporter; a
    receiver's interval control watches the merger's watch copy."""

    def __init__(self, config, data_width, mtu):
        self.config = config
        self.sender = IntervalControl(data_width=data_width)
        self.receiver = IntervalControl(data_width=data_width)
        self.markers = MarkerFrameSource(config=config, data_width=data_width)
        self.merger = FrameMerger(data_width=data_width, inserts=2)
        self.exporter = Exporter(config=config, data_width=data_width, mtu=mtu)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        s, r, mk = self.sender, self.receiver, self.markers
        merger, ex = self.merger, self.exporter
        for name, block in (("sender", s), ("receiver", r), ("markers", mk),
                            ("merger", merger), ("exporter", ex)):
            m.submodules[name] = block
        wiring.connect(m, s.marker, mk.request)
        wiring.connect(m, mk.source, merger.insert[0])
        wiring.connect(m, ex.inband, merger.insert[1])
        cid = self.config.config_id
        m.d.comb += [
            s.marker_sent.eq(merger.inserted_sof[0]),
            mk.config_id.eq(cid), mk.src_mac.eq(SRC_MAC), mk.dst_mac.eq(DST_MAC),
            ex.config_id.eq(cid), ex.src_mac.eq(SRC_MAC), ex.dst_mac.eq(DST_MAC),
            ex.to_inband.eq(1), ex.host.ready.eq(1),
            r.config_id.eq(cid), r.marker_src_mac.eq(SRC_MAC),
            r.watch.valid.eq(merger.watch_valid), r.watch.ready.eq(1),
            r.watch.payload.eq(merger.watch),
        ]
        return m


def test_sender_path_markers_exports_and_data_together():
    config = LdaConfig(banks=2, rows=8, thresholds=(0, 3))
    mtu = 34 + 12 * 5
    rng = random.Random(21)
    synopsis, words = random_synopsis(config, rng)
    dut = _SenderPath(config, 64, mtu)
    data = [(bytes([0xDA]) + rng.randbytes(rng.randrange(59, 200)), rng.random() < 0.1)
            for _ in range(40)]
    src = Source(dut.merger.sink, 64, random.Random(1), p_valid=0.9)
    src.queue = list(data)
    sink = Sink(dut.merger.source, 64, random.Random(2), p_ready=0.7)
    memory = FakeFrozenCopy(dut.exporter.frozen, words)
    receiver_seqs = []

    async def main(ctx):
        s, r, ex = dut.sender, dut.receiver, dut.exporter
        ctx.set(s.mode, MODE_MARKER_SEND)
        ctx.set(r.mode, MODE_MARKER_RECEIVE)
        for cycle in range(3000):
            ctx.set(s.swap, cycle in (50, 900))
            ctx.set(ex.start, cycle == 300)
            ctx.set(ex.seq, 0)
            _, _, rb, rseq = await ctx.tick().sample(r.boundary, r.boundary_seq)
            if rb:
                receiver_seqs.append(rseq)
        assert ctx.get(ex.frames) == ex.frame_count
        assert ctx.get(r.markers_accepted) == 2 and ctx.get(r.markers_rejected) == 0

    simulate(dut, main, src.run, sink.run, memory.run)
    out = beats_to_frames([b for _, b in sink.beats], 64)
    assert [f for f in out if f[0][0] == 0xDA] == data
    control = [f for f, _ in out if f[0] != 0xDA]
    markers = [f for f in control if f[15] == 1]
    chunks = [f for f in control if f[15] == 2]
    assert [parse_control_frame(f, expected=config).seq for f in markers] == [0, 1]
    assert chunks == build_synopsis_frames(synopsis, seq=0, src_mac=SRC_MAC,
                                           dst_mac=DST_MAC, mtu=mtu)
    assert list(reassemble(chunks, config).synopsis.words()) == words
    assert receiver_seqs == [1, 2]
    # Export frames went out while data was waiting: they were interleaved with data.
    kinds = [0 if f[0] == 0xDA else f[15] for f, _ in out]
    first, last = kinds.index(2), len(kinds) - 1 - kinds[::-1].index(2)
    assert 0 in kinds[first:last]
