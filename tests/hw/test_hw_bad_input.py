# SPDX-License-Identifier: BSD-2-Clause
"""Bad input into the whole core (hw.lda_pipeline.MeasurementCore) on Amaranth's simulator, the
tests that stay (issue 11, item 7).

* Frame lengths swept around the limits, as verilog-ethernet's tests sweep theirs: every
  length from 1 to 70 bytes (around the 60-byte runt limit and the end of the 16-byte
  header window, :class:`hw.frames.header_tap.HeaderTap`'s only length bound), standard and
  jumbo sizes up to 9018 bytes (the tap has no upper limit: past the window it only counts
  the frame), error-flagged frames (``error`` on the last beat), non-IP frames, IPv4
  EtherType with the wrong IP version, and control-EtherType frames, in a shuffled order
  with idle cycles and backpressure. Every status counter equals
  :func:`host_sw.contracts.hashing.classify_frame`'s count, the pass-through output
  equals the input frame for frame (error flags included), and the frozen copy equals
  :mod:`host_sw.model.golden_lda_rda_lds`.
* Random noise into the UARTBone bridge (random bytes, partial commands, gaps shorter and
  longer than the half-command timeout), a pause longer than the timeout, then valid
  commands through the host driver: every register holds what the host wrote before the
  noise, and the bridge answered the noise's read commands byte for byte as
  :func:`host_sw.contracts.uartbone.take_command` parses them. The noise never holds a
  complete write command (one would be a legitimate write): complete writes are turned
  into reads before it is sent, and it ends with a half write aimed at CONFIG_ID (the
  case of issue 11 where the host's next command was executed as its tail).

The host side is :class:`host_sw.device.driver.Device` through
:class:`sim_tb.lib.amaranth_host.SimulatedHost`, as in ``tests/hw/test_hw_core.py``.
"""

import random

import numpy as np
import pytest

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.hashing import (
    ETHERTYPE_CONTROL, ETHERTYPE_IPV4, ETHERTYPE_IPV6, FrameClass, classify_frame,
    default_masks,
)
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.uartbone import (
    CHECKED_COMMANDS, CMD_READ_FIXED, CMD_READ_INCR, CMD_WRITE_INCR, COMMAND_HEADER_BYTES,
    READ_COMMANDS, WRITE_COMMANDS, command_extent, take_command,
)
from host_sw.model.golden_lda_rda_lds import hash_frames, update
from hw.frames.frame import beats_to_frames
from hw.lda_pipeline import MeasurementCore
from sim_tb.lib.amaranth_host import SimulatedHost
from sim_tb.lib.amaranth_streams import Sink, Source, simulate, wait_until

#: A 16-byte header window (the default masks cut to it) keeps the hasher, and the
#: simulation, small; the sweep then crosses the window's end (16) and the runt limit (60).
CONFIG = LdaConfig(banks=2, rows=16, thresholds=(0, 2), window_bytes=16,
                   **{f"mask_{name}": mask.as_int()
                      for name, mask in default_masks(16).items()})
ETHERTYPE_ARP = 0x0806
#: The bridge's half-command timeout in these tests (clocks): short, so pauses are short.
BRIDGE_TIMEOUT = 200


# -- frame-length sweep -------------------------------------------------------------------

def frame_of(rng, length, ethertype=ETHERTYPE_IPV4, version=4):
    """``length`` random bytes with ``ethertype`` at bytes 12-13 and ``version`` in the
    high nibble of byte 14 (as far as the frame reaches)."""
    body = bytearray(rng.randbytes(max(length, 15)))
    body[12:14] = ethertype.to_bytes(2, "big")
    body[14] = (version << 4) | (body[14] & 0xF)
    return bytes(body[:length])


def sweep_frames(rng, large):
    """(frame, error) pairs: every length 1..70 (IPv4), the classes around the runt limit
    and the window end, and large frames: one of 300 bytes, more than 255 beats at 8 bits
    (``large`` 0: every byte is a simulated clock there), 1518 and 1514..1522 of every
    class (1), and two 9018-byte jumbo frames (2)."""
    frames = [(frame_of(rng, n), False) for n in range(1, 71)]
    edges = (1, 13, 14, 15, 16, 17, 59, 60, 61, 64)
    frames += [(frame_of(rng, n, ETHERTYPE_IPV6, 6), False) for n in (16, 59, 60, 61, 65)]
    frames += [(frame_of(rng, n), True) for n in edges]                    # errored
    frames += [(frame_of(rng, n, ETHERTYPE_IPV6, 6), True) for n in (60, 64)]
    frames += [(frame_of(rng, n, ETHERTYPE_ARP), False) for n in (14, 59, 60, 61, 64)]
    frames += [(frame_of(rng, 60, ETHERTYPE_IPV4, 6), False),                # wrong version
               (frame_of(rng, 64, ETHERTYPE_IPV6, 4), False)]
    frames += [(frame_of(rng, n, ETHERTYPE_CONTROL), False) for n in edges]  # control
    if large == 0:
        frames.append((frame_of(rng, 300), False))
    if large >= 1:
        frames += [(frame_of(rng, n), False) for n in (1514, 1518, 1522)]
        frames += [(frame_of(rng, 1522, ETHERTYPE_IPV6, 6), False),
                   (frame_of(rng, 1522), True), (frame_of(rng, 1522, ETHERTYPE_CONTROL), False),
                   (frame_of(rng, 1522, ETHERTYPE_ARP), False)]
    if large >= 2:
        frames += [(frame_of(rng, 9018), False), (frame_of(rng, 9018), True)]
    rng.shuffle(frames)
    return frames


def expected_status(frames):
    """The six tap counters from host_sw.contracts.hashing.classify_frame."""
    classes = [classify_frame(f, error=e) for f, e in frames]
    return {
        "frames_seen": len(frames),
        "frames_counted": sum(c in (FrameClass.IPV4, FrameClass.IPV6) for c in classes),
        "frames_errored": classes.count(FrameClass.ERRORED),
        "frames_runt": classes.count(FrameClass.RUNT),
        "frames_non_ip": classes.count(FrameClass.NON_IP),
        "frames_control": classes.count(FrameClass.CONTROL),
    }


def end_interval(device):
    """Host code: the status counters, then swap and read the frozen copy (not released),
    and its header registers."""
    counters = device.status_counters()
    device.swap()
    device.wait_frozen(poll=0)
    synopsis = Synopsis.from_words(device.config, device.read_counter_words())
    return counters, synopsis, device.read("frozen_packets"), device.read("frozen_seq")


@pytest.mark.parametrize("data_width,large", [(8, 0), (32, 1), (64, 2)],
                         ids=["w8", "w32", "w64-jumbo"])
def test_frame_length_sweep_counters_passthrough_and_golden(data_width, large):
    rng = random.Random(data_width)
    frames = sweep_frames(rng, large)
    core = MeasurementCore(config=CONFIG, data_width=data_width,
                   bridge_timeout_cycles=BRIDGE_TIMEOUT)
    host = SimulatedHost(core)
    source = Source(core.s_axis, data_width, random.Random(1), p_valid=0.8)
    sink = Sink(core.m_axis, data_width, random.Random(2), p_ready=0.7)
    results = {}

    async def main(ctx):
        device = await host.connect(ctx, CONFIG)
        source.queue += frames
        await wait_until(ctx, lambda: len(source.eof_cycles) == len(frames),
                         len(frames) * 64 + sum(len(f) for f, _ in frames) * 4, "the frames in")
        beats = sum(-(-len(f) // (data_width // 8)) for f, _ in frames)
        await wait_until(ctx, lambda: len(sink.beats) >= beats, 1000, "the frames out")
        await ctx.tick().repeat(core.measurement_latency + 12)
        results["end"] = await host.call(ctx, end_interval, device)

    simulate(core, main, source.run, sink.run)

    # Pass-through: every frame out, in order, unaltered, its error flag with it.
    assert beats_to_frames([b for _, b in sink.beats], data_width) == frames
    counters, synopsis, frozen_packets, frozen_seq = results["end"]
    expected = expected_status(frames)
    assert {name: counters[name] for name in expected} == expected
    assert expected["frames_counted"] > 10 and all(expected.values())   # every class seen
    assert counters["overruns"] == 0 and counters["export_frames"] == 0
    assert counters["markers_sent"] == 0 and counters["markers_accepted"] == 0
    assert (frozen_packets, frozen_seq) == (expected["frames_counted"], 0)
    stamps = np.array(source.sof_cycles, dtype=np.uint64)
    golden = update(CONFIG, hash_frames(CONFIG, [f for f, _ in frames],
                                        [e for _, e in frames]), stamps)
    assert synopsis == golden
    assert golden.count.sum() > 0


# -- noise into the bridge ------------------------------------------------------------------

def parse_segment(segment):
    """The bridge's view of bytes arriving without a pause longer than its timeout: the
    complete commands as (offset, cmd, length), and the trailing partial command."""
    commands, i = [], 0
    while i < len(segment):
        if segment[i] not in WRITE_COMMANDS + READ_COMMANDS + CHECKED_COMMANDS:
            i += 1
            continue
        if i + COMMAND_HEADER_BYTES > len(segment):
            break
        cmd, length = segment[i], segment[i + 1]
        need = command_extent(segment[i:])[0]
        if i + need > len(segment):
            break
        commands.append((i, cmd, length))
        i += need
    return commands


def checked_reply_bytes(segment):
    """Reply bytes of the checked commands of ``segment`` the bridge executes (random
    bytes practically never carry a right CRC-32, but the count is exact)."""
    total = 0
    for i, cmd, length in parse_segment(segment):
        if cmd in CHECKED_COMMANDS:
            command = take_command(bytearray(segment[i:]))
            if command.executes:
                total += len(command.reply([0] * length))
    return total


def without_writes(segment):
    """``segment`` with every complete write command of non-zero length turned into a
    read (the first one, then parse again), so the noise writes nothing; a write of length
    0 is a documented no-op and stays."""
    segment = bytearray(segment)
    while True:
        writes = [(i, cmd) for i, cmd, length in parse_segment(segment)
                  if cmd in WRITE_COMMANDS and length]
        if not writes:
            return bytes(segment)
        i, cmd = writes[0]
        segment[i] = CMD_READ_INCR if cmd == CMD_WRITE_INCR else CMD_READ_FIXED


def noise_plan(rng, config_id_address):
    """Noise segments (each sent without long gaps) and the reply bytes they must draw.

    A segment is random bytes, sometimes with a command header (or a prefix of one) put in
    to make partial commands likely; the last segment is a write to CONFIG_ID that lacks
    one data byte (after a pause, so the bridge surely takes it as a command)."""
    segments = []
    for _ in range(rng.randrange(3, 5)):
        body = bytearray(rng.randbytes(rng.randrange(20, 100)))
        for _ in range(rng.randrange(0, 3)):
            cmd = rng.choice(WRITE_COMMANDS + READ_COMMANDS)
            header = bytes((cmd, rng.randrange(0, 8))) + rng.randbytes(4)
            at = rng.randrange(len(body) + 1)
            body[at:at] = header[:rng.randrange(1, len(header) + 1)]
        segments.append(without_writes(body))
    tail = bytes((CMD_WRITE_INCR, 1)) + config_id_address.to_bytes(4, "big") + b"\xA5\x5A\xC3"
    segments.append(tail)
    reply_bytes = sum(4 * length for s in segments
                      for _, cmd, length in parse_segment(s) if cmd in READ_COMMANDS)
    reply_bytes += sum(checked_reply_bytes(s) for s in segments)
    return segments, reply_bytes


async def send_noise(ctx, core, rng, segments, timeout):
    """Play the segments into ``bus_rx`` (stream rules: valid holds until taken; gaps up
    to ``timeout // 2`` clocks inside a segment) with ``bus_tx`` always ready; after each
    segment wait until ``bus_tx`` has been silent for longer than ``timeout``. Returns the
    reply bytes."""
    rx, tx = core.bus_rx, core.bus_tx
    replies = bytearray()
    ctx.set(tx.ready, 1)

    async def tick():
        _, _, taken, valid, data = await ctx.tick().sample(rx.ready, tx.valid, tx.payload)
        if valid:
            replies.append(data)
        return taken, valid

    for segment in segments:
        for byte in segment:
            if rng.random() < 0.1:
                ctx.set(rx.valid, 0)
                for _ in range(rng.randrange(1, timeout // 2)):
                    await tick()
            ctx.set(rx.valid, 1)
            ctx.set(rx.payload, byte)
            for _ in range(20 * timeout):
                taken, _ = await tick()
                if taken:
                    break
            else:
                raise AssertionError("bus_rx stopped taking bytes")
        ctx.set(rx.valid, 0)
        quiet = 0
        while quiet <= timeout + 20:
            _, valid = await tick()
            quiet = 0 if valid else quiet + 1
    ctx.set(tx.ready, 0)
    return bytes(replies)


def registers_to_write(rng, device):
    """Random values for the run-time registers (interval mode stays manual)."""
    values = {name: rng.getrandbits(device.map[name].width)
              for name in ("config_id", "interval_ticks", "interval_start", "local_mac",
                           "export_dst_mac", "marker_src_mac", "masks", "thresholds")}
    for name in ("local_mac", "export_dst_mac", "marker_src_mac"):
        values[name] &= (1 << 48) - 1
    values["thresholds"] = device.map["thresholds"].encode(
        bank0=rng.randrange(64), bank1=rng.randrange(64))
    masks = device.map["masks"]
    values["masks"] = masks.encode(**{f.name: rng.getrandbits(f.width) for f in masks.fields})
    values["interval_mode"] = device.map["interval_mode"].encode(
        mode=0, export_inband=rng.randrange(2), export_host=rng.randrange(2),
        auto_release=rng.randrange(2))
    return values


def write_all(device, values):
    for name, value in values.items():
        device.write(name, value)              # read back and compared by the driver


def read_all(device, names):
    return {name: device.read(name) for name in names}


@pytest.mark.parametrize("seed", range(3))
def test_bridge_noise_then_pause_leaves_registers_as_written(seed):
    rng = random.Random(100 + seed)
    core = MeasurementCore(config=CONFIG, data_width=64, bridge_timeout_cycles=BRIDGE_TIMEOUT)
    host = SimulatedHost(core)
    results = {}

    async def main(ctx):
        device = await host.connect(ctx, CONFIG)
        values = registers_to_write(rng, device)
        await host.call(ctx, write_all, device, values)
        segments, results["reply_expected"] = noise_plan(
            rng, device.map["config_id"].address)
        results["replies"] = await send_noise(ctx, core, rng, segments, BRIDGE_TIMEOUT)
        results["values"] = values
        results["after"] = await host.call(ctx, read_all, device, values)
        results["counters"] = await host.call(ctx, device.status_counters)
        results["interval_seq"] = await host.call(ctx, device.read, "interval_seq")
        # and the bridge still takes writes
        await host.call(ctx, device.write, "config_id", 0x600DF00D)
        results["config_id"] = await host.call(ctx, device.read, "config_id")

    simulate(core, main)

    assert results["after"] == results["values"]
    assert len(results["replies"]) == results["reply_expected"]
    assert results["interval_seq"] == 0                # no CONTROL.swap was formed
    assert set(results["counters"].values()) == {0}
    assert results["config_id"] == 0x600DF00D
