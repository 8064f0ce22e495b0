# SPDX-License-Identifier: BSD-2-Clause
"""The header tap (hw.frames.header_tap): window capture with zero padding, classification with
host_sw.contracts.hashing.classify_frame semantics, timestamp and copy at SOF, swap ordering and
status counters, at data widths 8 and 64, with idle cycles and a stalled stream."""

import gc
import random
import warnings

import pytest
from amaranth.sim import Simulator

from host_sw.contracts.hashing import FrameClass, classify_frame, header_windows
from hw.frames.frame import beats_to_frames, frame_to_beats
from hw.frames.header_tap import HeaderTap
from hw.frames.timebase import Timebase


def ip_frame(rng, length, ethertype=0x0800, version=4):
    body = bytearray(rng.randbytes(length))
    body[12:14] = ethertype.to_bytes(2, "big")
    if length > 14:
        body[14] = (version << 4) | (body[14] & 0xF)
    return bytes(body)


def sample_frames(seed):
    rng = random.Random(seed)
    frames = [
        (ip_frame(rng, 64), False),                       # IPv4, exactly the window
        (ip_frame(rng, 60), False),                       # IPv4, shorter than the window
        (ip_frame(rng, 61, 0x86DD, 6), False),            # IPv6
        (ip_frame(rng, 200, 0x86DD, 6), False),
        (ip_frame(rng, 59), False),                       # runt
        (bytes([7]), False),                              # one byte: runt
        (ip_frame(rng, 13), False),                       # runt, no EtherType complete
        (ip_frame(rng, 100), True),                       # errored
        (ip_frame(rng, 30), True),                        # errored beats runt
        (ip_frame(rng, 70, 0x88B5, 1), False),            # control
        (ip_frame(rng, 70, 0x0806, 4), False),            # ARP: non-IP
        (ip_frame(rng, 70, 0x0800, 6), False),            # IPv4 type, version 6: non-IP
        (ip_frame(rng, 70, 0x86DD, 4), False),            # IPv6 type, version 4: non-IP
        (ip_frame(rng, 1500), False),
    ]
    for _ in range(6):
        frames.append((ip_frame(rng, rng.randrange(60, 130), rng.choice([0x0800, 0x86DD]),
                                rng.choice([4, 6])), rng.random() < 0.2))
    return frames


def run_tap(frames, data_width, *, seed, p_valid=0.7, p_ready=0.7, p_swap=0.1):
    rng = random.Random(seed)
    dut = HeaderTap(data_width=data_width, window_bytes=64, ts_bits=40)
    beats = [b for f, e in frames for b in frame_to_beats(f, data_width, error=e)]
    expected_sof = []          # (timestamp, copy) of each frame, at its SOF transfer
    events = []                # ("record", payload dict) / ("swap",) in output order
    transferred = []
    status = {}

    async def testbench(ctx):
        copy = 0
        cycle = 1000
        index = 0
        in_frame = False
        drain = 4
        while index < len(beats) or drain:
            if index >= len(beats):
                drain -= 1
            valid = index < len(beats) and rng.random() < p_valid
            ready = rng.random() < p_ready
            beat = beats[min(index, len(beats) - 1)]
            ctx.set(dut.watch.valid, valid)
            ctx.set(dut.watch.ready, ready)
            ctx.set(dut.watch.payload, beat if valid else {"data": 0, "keep": 0,
                                                           "last": 0, "error": 0})
            ctx.set(dut.now, cycle)
            swap = False
            if ctx.get(dut.boundary_ok) and rng.random() < p_swap:
                swap = True
                copy ^= 1
            ctx.set(dut.swap, swap)
            ctx.set(dut.copy, copy)
            if valid and ready:
                if not in_frame:
                    expected_sof.append((cycle, copy))
                in_frame = not beat["last"]
                transferred.append(beat)
                index += 1
            await ctx.tick()
            cycle += 1
            if ctx.get(dut.record.swap):
                events.append(("swap",))
            if ctx.get(dut.record.valid):
                p = dut.record.payload
                events.append(("record", {
                    "window": ctx.get(p.window).to_bytes(64, "little"),
                    "frame_class": ctx.get(p.frame_class),
                    "timestamp": ctx.get(p.timestamp), "copy": ctx.get(p.copy)}))
        for name in ("frames", "counted", "errored", "runt", "non_ip", "control"):
            status[name] = ctx.get(getattr(dut.status, name))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return transferred, expected_sof, events, status


@pytest.mark.parametrize("data_width", [8, 16, 64, 512])
def test_tap_records_match_host_contract(data_width):
    frames = sample_frames(data_width)
    transferred, sof, events, status = run_tap(frames, data_width, seed=data_width)
    assert beats_to_frames(transferred, data_width) == frames
    records = [e[1] for e in events if e[0] == "record"]
    assert len(records) == len(frames)
    windows = header_windows([f for f, _ in frames], 64)
    for k, ((frame, error), rec) in enumerate(zip(frames, records)):
        assert rec["window"] == windows[k].tobytes(), f"frame {k}"
        assert rec["frame_class"] == classify_frame(frame, error=error), f"frame {k}"
        assert (rec["timestamp"], rec["copy"]) == sof[k], f"frame {k}"
    classes = [classify_frame(f, error=e) for f, e in frames]
    assert status == {
        "frames": len(frames),
        "counted": sum(c in (FrameClass.IPV4, FrameClass.IPV6) for c in classes),
        "errored": classes.count(FrameClass.ERRORED),
        "runt": classes.count(FrameClass.RUNT),
        "non_ip": classes.count(FrameClass.NON_IP),
        "control": classes.count(FrameClass.CONTROL),
    }
    assert status["runt"] >= 3 and status["non_ip"] >= 3 and status["control"] == 1


@pytest.mark.parametrize("data_width", [8, 64])
def test_swap_is_ordered_with_records(data_width):
    """Every record after a swap flag carries the new copy, every one before it the old."""
    rng = random.Random(3)
    frames = [(ip_frame(rng, rng.randrange(60, 90)), False) for _ in range(30)]
    _, _, events, _ = run_tap(frames, data_width, seed=11, p_valid=0.9, p_ready=0.9,
                              p_swap=0.3)
    copy, swaps = 0, 0
    for event in events:
        if event[0] == "swap":
            copy ^= 1
            swaps += 1
        else:
            assert event[1]["copy"] == copy
    assert swaps >= 3
    assert sum(e[0] == "record" for e in events) == len(frames)


def test_back_to_back_full_rate():
    """Frames back to back with valid and ready always high: one record per frame."""
    rng = random.Random(5)
    frames = [(ip_frame(rng, 64), False) for _ in range(8)]
    _, sof, events, status = run_tap(frames, 64, seed=1, p_valid=1.0, p_ready=1.0,
                                     p_swap=0.0)
    records = [e[1] for e in events if e[0] == "record"]
    assert len(records) == 8 and status["counted"] == 8
    # SOFs 8 cycles apart (8 beats per 64-byte frame at 64 bits)
    assert [t for t, _ in sof] == [sof[0][0] + 8 * k for k in range(8)]


def test_rejects_bad_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # the half-built objects are never used
        with pytest.raises(ValueError, match="data_width"):
            HeaderTap(data_width=12, window_bytes=64, ts_bits=40)
        with pytest.raises(ValueError, match="window_bytes"):
            HeaderTap(data_width=8, window_bytes=8, ts_bits=40)
        gc.collect()


@pytest.mark.parametrize("width", [16, 64])
def test_timebase_counts_across_the_halves_and_sets(width):
    dut = Timebase(width=width)
    half = width // 2
    start = (1 << half) - 3                       # the low half wraps after 3 ticks
    on_wrap = (5 << half) | ((1 << half) - 1)
    seen = []

    async def testbench(ctx):
        ctx.set(dut.set, 1)
        ctx.set(dut.set_value, start)
        await ctx.tick()
        ctx.set(dut.set, 0)
        for _ in range(6):
            seen.append(ctx.get(dut.now))
            await ctx.tick()
        ctx.set(dut.set, 1)
        ctx.set(dut.set_value, (1 << width) - 2)  # the whole counter wraps
        await ctx.tick()
        ctx.set(dut.set, 0)
        for _ in range(3):
            seen.append(ctx.get(dut.now))
            await ctx.tick()
        ctx.set(dut.set, 1)
        ctx.set(dut.set_value, on_wrap)           # set onto the low half's last value
        await ctx.tick()
        ctx.set(dut.set, 0)
        for _ in range(3):
            seen.append(ctx.get(dut.now))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    top = (1 << width) - 1
    assert seen == ([start + k for k in range(6)] + [top - 1, top, 0]
                    + [on_wrap, 6 << half, (6 << half) + 1])
