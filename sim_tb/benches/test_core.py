# SPDX-License-Identifier: BSD-2-Clause
"""cocotb tests of the exported core (``hw.lda_pipeline``), one parameter set per run, and
their pytest entry.

This file is both the cocotb test module (the ``@cocotb.test`` coroutines, run by the
simulator's Python) and the pytest module (the ``test_*`` functions at the bottom): each
pytest function exports the core for a :class:`sim_tb.lib.runner.CoreParams`, passes it in
``LDA_SIM_PARAMS`` and runs this module's cocotb tests on it. Synopsis kind {LDA, RDA,
LDS} × data width {8, 64}, each exported and built in its own folder
(``build/sim/<param-id>/``), plus the hazard test at 512 bits, where a minimum-size frame
is a single beat, so consecutive frames update the same counter on consecutive clocks (the
read-modify-write forwarding path through the whole core). A failing cocotb test fails the
pytest test with the names and messages of the failures
(:class:`sim_tb.lib.runner.SimFailure`).

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level, the exported Verilog
under cocotb (:mod:`sim_tb.lib.runner` builds and runs it).

What is checked (``DESIGN.md`` figures and ``gateware.md`` contracts):

* pass-through: every frame out equals the frame in, in order, ``tuser`` on the last beat
  kept, under the {no pause, cycle pause}² matrix plus seeded random pauses; the
  latency is fixed when nothing pauses;
* counters: after a swap, the frozen copy read by the host driver
  (:class:`host_sw.device.driver.Device`, the one that talks to a board) through the
  UARTBone bridge equals
  :func:`host_sw.model.golden_lda_rda_lds.update` of the same frames word for word, timestamps being the
  timebase at each frame's SOF (monitor SOF cycle + an offset calibrated once per test
  from a single frame);
* hazard: thousands of consecutive frames updating the same counter(s);
* swaps: many intervals under back-to-back traffic — each interval holds a contiguous
  run of frames, equal word for word to the golden synopsis of that run, and the
  intervals add up to every frame offered; an overrun when the host does not release;
* bad frames (errored, runt, truncated header, non-IP, control): not counted, counted in
  the status counters, and the pipeline keeps running;
* a pcap file's frames; the bus itself (ID register, exact reply lengths);
* reset: a reset mid-interval leaves no stale counts in either copy (the clearing sweep,
  ``s_axis_tready`` low for exactly the copy depth in clocks);
* the swap boundary: a frame offered just before a host swap counts in the interval the
  design implies, to the clock (the same under Icarus and Verilator);
* the host export (``exported_intervals``, run only when selected by name, as the
  gate-level run and, with ``LDA_SLOW=1``, ``test_exported_intervals_two_clocks`` on the
  two-clock core do):
  the interval timer's intervals leave as chunk frames on ``m_axis_export``, each equal
  word for word to the golden synopsis of its run.

The harness (bench, host driver, golden model) is :mod:`sim_tb.lib.core_harness`.
``LDA_SIM_LONG=1`` multiplies the frame counts.
"""

from __future__ import annotations

import importlib.util
import os
import random

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSink

from host_sw.contracts.check_value import check_value
from host_sw.contracts.frames.control_frame import parse_control_frame, reassemble
from host_sw.contracts.hashing import MIN_FRAME_BYTES, FrameClass
from host_sw.device.driver import Device

from hw.counters.bank_layout import lane_geometry
from hw.lda_pipeline import MeasurementCore
from sim_tb.lib.core_harness import (LONG, SCALE, TIMEOUT_MS, CoreHarness, frozen_info,
                                     golden_header, golden_identity, read_frozen_info,
                                     sized)
from sim_tb.lib.frames import (
    bad_frames, min_size_burst, random_frames, read_pcap, same_bucket_frames,
)
from sim_tb.lib.runner import (DEFAULT_PARAMS, KINDS, LDA_W8, REPO, SLOW_PARAMS, CoreParams,
                               ecp5_models_missing, run_core_tests)
from sim_tb.lib.scoreboard import counted_mask, synopsis_difference
from sim_tb.lib.tb import PAUSE_CASES, RESET_SYNC_EDGES, pauses_by_name, random_pause
from sim_tb.lib.uartbone_driver import simulation_transport
from sim_tb.lib.verilator_build import verilator_env

PCAP = REPO / "sim_tb" / "data" / "mixed_small.pcap"


#: In the simulator's process: whether the core under test runs its bus bridge on its own
#: control clock (``CoreParams.control_domain == "ctrl"``, :data:`sim_tb.lib.runner.DEFAULT_PARAMS`).
#: ``swap_boundary`` pins a swap command's last byte to a datapath clock, which a byte on
#: an unrelated clock, its access crossing through two synchronisers, does not have: it
#: runs on the one-clock cores only (the 8-bit LDA core in the default suite).
TWO_CLOCKS = getattr(CoreParams.from_env(), "control_domain", "sync") != "sync"


def _passthrough_frames(tb, with_jumbo: bool):
    """Mixed frames sized so that a run costs about the same at every data width."""
    rng = tb.rng
    max_size = 1518 if tb.bytes_per_beat >= 8 else 400
    frames = (random_frames(rng, sized(tb, 8, 3), max_size=max_size)
              + min_size_burst(rng, sized(tb, 6, 2)) + bad_frames(rng))
    if with_jumbo:
        frames += random_frames(rng, 1, jumbo_fraction=1.0)
    random.Random(int(rng.integers(1 << 30))).shuffle(frames)
    return frames


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
@cocotb.parametrize(pauses=PAUSE_CASES)
async def passthrough(dut, pauses):
    """Frames out equal frames in, in order, under the pause matrix; fixed latency when
    nothing pauses."""
    tb = CoreHarness(dut)
    await tb.start(calibrate=False)
    idle, backpressure = pauses_by_name(pauses, cocotb.RANDOM_SEED)
    tb.set_idle_generator(idle)
    tb.set_backpressure_generator(backpressure)
    frames = _passthrough_frames(tb, with_jumbo=pauses == "none")
    tb.send_nowait(frames)
    received = await tb.receive(len(frames))
    seen = await tb.monitored(len(frames))
    for i, (sent, got) in enumerate(zip(frames, received)):
        tb.check_frame(sent, got, i)
    assert tb.sink.empty()
    if pauses == "none":
        latencies = {tb.cycle_of(got.sim_time_start) - sof
                     for got, (_, sof) in zip(received, seen)}
        assert len(latencies) == 1, f"pass-through latency varies: {sorted(latencies)}"
        tb.log.info("pass-through latency %d cycles", latencies.pop())
        # back to back: no idle beat was inserted by the core
        for (beats, c), (_, c_next) in zip(seen, seen[1:]):
            assert c_next == c + beats, f"the core stalled the input ({c}+{beats} != {c_next})"


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
@cocotb.parametrize(pauses=["none", "random"])
async def counters_match_golden(dut, pauses):
    """Random IPv4/IPv6 UDP/TCP frames plus bad frames: frozen copy == golden model,
    status counters == frame classes."""
    tb = CoreHarness(dut)
    await tb.start()
    idle, backpressure = pauses_by_name(pauses, cocotb.RANDOM_SEED + 5)
    tb.set_idle_generator(idle)
    tb.set_backpressure_generator(backpressure)
    frames = (random_frames(tb.rng, sized(tb, 24, 6),
                            max_size=1518 if tb.bytes_per_beat >= 8 else 300)
              + min_size_burst(tb.rng, sized(tb, 12, 3)) + bad_frames(tb.rng))
    random.Random(int(tb.rng.integers(1 << 30))).shuffle(frames)
    before = await tb.status_counters()
    sofs = await tb.offer(frames)
    snapshot = await tb.end_interval()
    info = frozen_info(snapshot)
    await tb.check_frozen(frames, sofs, "random frames", snapshot)
    assert info["frozen_packets"] == int(counted_mask(frames).sum()), info
    await tb.check_status_moved(before, frames)
    await tb.release_and_wait()


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def same_counter_hazard(dut):
    """Consecutive minimum-size frames updating the same counter(s), back to back: 600
    at 512 bits, where each frame is one beat and the counter bank sees an update of the
    same address every clock (the read-modify-write forwarding path, a few clocks deep);
    fewer at 8 and 64 bits (``LDA_SIM_LONG=1``: ten times more)."""
    tb = CoreHarness(dut)
    await tb.start()
    count = sized(tb, 250, 40, single_beat=600)
    frames = same_bucket_frames(tb.config, tb.rng, count)
    sofs = await tb.offer(frames, check=False)
    snapshot = await tb.end_interval()
    got = await tb.check_frozen(frames, sofs, "same-bucket frames", snapshot)
    lanes = 1 if tb.config.kind == "lda" else tb.config.shape[0]
    if tb.config.kind == "lds":  # rows whose threshold is above 0 sample only some frames
        assert int(got.count.max()) == count
    else:
        assert int(got.count.sum()) == count * lanes
    assert int(np.count_nonzero(got.count)) == lanes
    await tb.release_and_wait()


async def _swaps_under_traffic(tb, swaps: int, per_interval: int):
    """Back-to-back minimum-size frames (bad frames among the last ones) while the host
    ends ``swaps`` intervals at random times, then one more after the traffic; returns
    the frames, their SOF cycles and each interval's frozen info and synopsis."""
    frames = min_size_burst(tb.rng, swaps * per_interval + per_interval)
    frames += [f for f in bad_frames(tb.rng)]
    random.Random(3).shuffle(frames[-40:])
    tb.send_nowait(frames)
    receiver = cocotb.start_soon(tb.receive(len(frames)))
    monitor = cocotb.start_soon(tb.monitored(len(frames)))
    beats = per_interval * (-(-60 // tb.bytes_per_beat))
    rng = random.Random(cocotb.RANDOM_SEED)
    intervals = []
    for _ in range(swaps):
        await tb.cycles(rng.randrange(beats // 2, beats))
        snapshot = await tb.end_interval()
        intervals.append((frozen_info(snapshot), snapshot.synopsis))
        await tb.release_and_wait()
    received = await receiver
    seen = await monitor
    for i, (sent, got) in enumerate(zip(frames, received)):
        tb.check_frame(sent, got, i)
    snapshot = await tb.end_interval()
    intervals.append((frozen_info(snapshot), snapshot.synopsis))
    await tb.release_and_wait()
    return frames, [c for _, c in seen], intervals


async def _overrun(tb):
    """Two boundaries without a release in between: the second is refused (OVERRUNS
    counts it) and leaves the frozen copy untouched; the interval that saw it is flagged
    OVERRUN, the next one is not."""
    more = min_size_burst(tb.rng, 8)
    sofs_a = await tb.offer(more[:4])
    info_a = await tb.freeze()                      # freezes; not released
    sofs_b = await tb.offer(more[4:])
    overruns_before = (await tb.status_counters())["overruns"]
    await tb.host(tb.device.swap)                   # must be refused: overrun
    await tb.cycles(50)
    counters = await tb.status_counters()
    assert counters["overruns"] == overruns_before + 1, counters
    st = await tb.host(tb.device.status)
    assert st["frozen_ready"] == 1 and st["other_clean"] == 0, st
    # the frozen copy is untouched by the refused boundary
    await tb.check_frozen(more[:4], sofs_a, "frozen copy after an overrun")
    assert (await tb.host(read_frozen_info, tb.device))["frozen_seq"] == info_a["frozen_seq"]
    await tb.release_and_wait()
    snapshot_b = await tb.end_interval()
    info_b = frozen_info(snapshot_b)
    st = await tb.host(tb.device.status)
    assert st["frozen_overrun"] == 1, f"the interval that saw an overrun is not flagged: {st}"
    await tb.check_frozen(more[4:], sofs_b, "interval after an overrun", snapshot_b)
    await tb.release_and_wait()
    info_c = await tb.freeze()
    st = await tb.host(tb.device.status)
    assert st["frozen_overrun"] == 0, f"overrun flag stuck: {st}"
    assert info_c["frozen_packets"] == 0
    await tb.release_and_wait()
    assert info_b["frozen_seq"] > info_a["frozen_seq"]


def _check_contiguous_intervals(tb, frames, sofs, intervals, identity):
    """Every frame in exactly one interval: the intervals are contiguous runs of the
    frames, each equal word for word to the golden synopsis of its run, numbered one
    after another."""
    counted = counted_mask(frames)
    start = 0
    seqs = []
    for k, (info, syn) in enumerate(intervals):
        n_counted = info["frozen_packets"]
        # the run of frames holding the next n_counted counted frames (uncounted frames
        # at a boundary change no counter, so either side is right for them)
        end = start
        c = 0
        while end < len(frames) and c < n_counted:
            c += int(counted[end])
            end += 1
        assert c == n_counted, f"interval {k} counts {n_counted}, only {c} frames left"
        if k == len(intervals) - 1:
            end = len(frames)
        expected = tb.golden(frames[start:end], sofs[start:end])
        diff = synopsis_difference(expected, syn)
        assert not diff, f"interval {k} (frames {start}..{end - 1}) differs:\n{diff}"
        header = golden_header(info["header"], tb.config.config_id, n_counted, **identity)
        assert info["header"] == header, (k, info["header"], header)
        assert info["frozen_check"] == check_value(tb.config, expected.words(), header), k
        seqs.append(info["frozen_seq"])
        start = end
    total = sum(info["frozen_packets"] for info, _ in intervals)
    assert total == int(counted.sum()), f"intervals hold {total} of {int(counted.sum())}"
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"sequence numbers {seqs}"


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def interval_swaps(dut):
    """Many swaps under back-to-back minimum-size traffic: every frame in exactly one
    interval, each interval a contiguous run equal to the golden synopsis of that run;
    then an overrun when the host does not release."""
    tb = CoreHarness(dut)
    await tb.start()
    frames, sofs, intervals = await _swaps_under_traffic(
        tb, swaps=6 * SCALE, per_interval=sized(tb, 40, 8) // SCALE)
    await _overrun(tb)
    _check_contiguous_intervals(tb, frames, sofs, intervals,
                                await tb.host(golden_identity, tb.device))


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def bad_frames_not_counted(dut):
    """Errored, runt, truncated-header, non-IP and control frames between good frames:
    only the good ones are counted, every class in its status counter, and the core
    keeps running (the good frames after them are counted)."""
    tb = CoreHarness(dut)
    await tb.start()
    tb.set_idle_generator(random_pause(cocotb.RANDOM_SEED + 9, 0.2))
    frames = []
    for _ in range(sized(tb, 2, 1)):
        frames += bad_frames(tb.rng) + min_size_burst(tb.rng, 3)
    frames += min_size_burst(tb.rng, 3)
    before = await tb.status_counters()
    sofs = await tb.offer(frames)
    snapshot = await tb.end_interval()
    info = frozen_info(snapshot)
    got = await tb.check_frozen(frames, sofs, "bad frames among good", snapshot)
    good = [f for f in frames if f.frame_class in (FrameClass.IPV4, FrameClass.IPV6)]
    assert info["frozen_packets"] == len(good)
    assert int(got.count.max()) >= 1
    await tb.check_status_moved(before, frames)
    await tb.release_and_wait()


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def pcap_frames(dut):
    """The frames of a pcap file (sim_tb/data/mixed_small.pcap): pass-through and
    counters."""
    tb = CoreHarness(dut)
    await tb.start()
    frames = read_pcap(PCAP)
    if tb.bytes_per_beat < 8 and not LONG:
        frames = frames[::2]
    sofs = await tb.offer(frames)
    snapshot = await tb.end_interval()
    await tb.check_frozen(frames, sofs, "pcap frames", snapshot)
    await tb.release_and_wait()


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def bus_protocol(dut):
    """The bridge answers exactly length × 4 bytes, reads the static CONFIG register as
    the map says, returns zero for unmapped addresses, and TIMEBASE counts clocks."""
    tb = CoreHarness(dut)
    await tb.start(calibrate=False)
    device = tb.device
    regmap = device.map
    cfg = regmap["config"]
    assert await tb.host(device.read, "config") == cfg.reset
    version = regmap["version"]
    assert await tb.host(device.read, "version") == version.reset
    # a burst over several registers, then nothing more on bus_tx
    n = regmap["status"].address + 1
    words = await tb.host(device.transport.read_words, 0, n)
    assert len(words) == n and words[0] == regmap.id_value
    assert await tb.bus_port.drain(64) == b"", "the bridge sent more than length × 4 bytes"
    # fixed-address read repeats one register
    assert await tb.host(device.transport.read_words, regmap["id"].address, 3,
                         incrementing=False) == \
        [regmap.id_value] * 3
    # unmapped address between the registers and the window
    last = max(r.address + r.words for r in regmap)
    if last < regmap.window.address:
        assert await tb.host(device.transport.read_words, last, 1) == [0]
    # TIMEBASE: set, then read back a value that advanced by a plausible number of clocks
    await tb.host(device.write, "timebase", 1 << 40)
    t1 = await tb.host(device.read, "timebase")
    await tb.cycles(1000)
    t2 = await tb.host(device.read, "timebase")
    assert (1 << 40) < t1 < (1 << 40) + 5000, hex(t1)
    assert 1000 <= t2 - t1 < 5000, (t1, t2)
    # the window reads zeros with no frozen copy
    st = await tb.host(device.status)
    assert st["frozen_ready"] == 0, st


async def _sweep_cycles(tb) -> int:
    """Reset (:meth:`CoreTB.reset`); returns the number of rising edges of ``clk`` with
    ``rst`` low after which ``s_axis_tready`` rises (the core holds its input while its
    clearing sweep runs over both copies)."""
    dut = tb.dut
    await tb.reset()
    edges = tb.reset_edges                  # edges with rst low when tb.reset returns
    while True:
        await ReadOnly()
        ready = dut.s_axis_tready.value == 1
        await RisingEdge(dut.clk)
        if ready:
            return edges
        edges += 1


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def reset_mid_interval(dut):
    """A reset that is not a power-up leaves no stale counts: both copies hold counts
    (copy 0 frozen, copy 1 active with frames still in the tap's delay line), the core is
    reset, and the next two intervals (one in each copy) equal the golden model of the
    frames offered after the reset alone, with no swap/release between reset and the
    first interval. The core takes no frame until its sweep has cleared both copies: for
    the depth of a copy in clocks after its reset ends, which on a two-clock core is
    :data:`sim_tb.lib.tb.RESET_SYNC_EDGES` edges of ``clk`` after ``rst`` falls (its
    reset synchroniser)."""
    tb = CoreHarness(dut)
    await tb.start()
    n = sized(tb, 16, 4)
    await tb.offer(min_size_burst(tb.rng, n))
    await tb.freeze()                       # copy 0 FROZEN, copy 1 ACTIVE
    await tb.offer(random_frames(tb.rng, n, max_size=300))
    held = await _sweep_cycles(tb)          # ... reset right behind the last frame out
    depth = lane_geometry(tb.config)[1]
    # s_axis_tready rises after the depth-th edge with the datapath out of reset (the
    # sweep's length); one clock: from the first edge with rst low
    want = depth + (RESET_SYNC_EDGES if tb.two_clocks else 0)
    assert held == want, (f"s_axis_tready low for {held} clocks after reset, expected "
                          f"{want} (depth {depth})")
    st = await tb.wait_status("other_clean", 1)
    assert st["active_copy"] == 0 and st["frozen_ready"] == 0, st
    for copy in (0, 1):
        frames = min_size_burst(tb.rng, n) + random_frames(tb.rng, n, max_size=300)
        sofs = await tb.offer(frames)
        snapshot = await tb.end_interval()
        await tb.check_frozen(frames, sofs, f"interval {copy} after reset", snapshot)
        assert snapshot.seq == copy, f"FROZEN_SEQ {snapshot.seq} after reset"
        await tb.release_and_wait()


#: The interval timer's length (clocks) and the number of intervals of
#: :func:`exported_intervals`: an interval outlasts its predecessor's export (the 8-bit
#: core's 128 words leave as chunk frames in about 1 200 clocks) and clearing.
EXPORT_TICKS = 4000
EXPORT_INTERVALS = 4


def _reassembled_intervals(config, received: list[bytes]) -> list:
    """The export frames received so far, reassembled per interval in the order they left
    (complete intervals only)."""
    runs: list[list] = []
    for frame in received:
        chunk = parse_control_frame(frame, expected=config)
        if chunk.chunk_index == 0:
            runs.append([])
        runs[-1].append(chunk)
    return [reassemble(chunks, config) for chunks in runs
            if len(chunks) == chunks[0].chunk_count]


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms", skip=True)
async def exported_intervals(dut):
    """The interval timer ends :data:`EXPORT_INTERVALS` intervals under traffic (minimum-size
    bursts, random frames, bad frames; some hundreds of frames), each frozen copy leaves as
    synopsis chunk frames on ``m_axis_export`` (host export, auto release); reassembled,
    the intervals are contiguous runs of the frames, each equal word for word to the
    golden synopsis of its run (timestamps included), flagged valid, numbered one after
    another. Skipped unless selected by name (the gate-level run,
    ``sim_tb/benches/test_gate_level.py``): some 20 000 clocks."""
    tb = CoreHarness(dut)
    await tb.start()
    export = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_export"), dut.clk, dut.rst)
    ticks = EXPORT_TICKS
    now = await tb.host(tb.device.read, "timebase")
    await tb.host(tb.device.set_intervals, mode="time", ticks=ticks, start=now + ticks,
                  export_host=True, auto_release=True)
    # about EXPORT_INTERVALS - 1 intervals of traffic, the last interval's end after it
    beats = (EXPORT_INTERVALS - 1) * ticks
    frames = []
    while sum(-(-max(len(f.data), 60) // tb.bytes_per_beat) for f in frames) < beats:
        frames += (min_size_burst(tb.rng, 20) + random_frames(tb.rng, 4, max_size=300)
                   + bad_frames(tb.rng)[:3])
    sofs = await tb.offer(frames)
    counted = counted_mask(frames)
    received, intervals = [], []
    for _ in range(4 * EXPORT_INTERVALS):      # until the last frame's interval is out
        await tb.cycles(ticks // 2)
        while not export.empty():
            received.append(bytes((await export.recv()).tdata))
        intervals = _reassembled_intervals(tb.config, received)
        if sum(int(r.synopsis.count.sum()) for r in intervals) == counted.sum():
            break
    seqs = [r.seq for r in intervals]
    assert len(seqs) >= EXPORT_INTERVALS - 1, f"only {len(seqs)} intervals exported"
    # the first interval keeps the number it began with; the timer's count from 0
    assert seqs[1:] == list(range(seqs[1], seqs[1] + len(seqs) - 1)), f"numbers {seqs}"
    start = 0
    for k, got in enumerate(intervals):
        n = int(got.synopsis.count.sum())
        end = start + int(np.searchsorted(np.cumsum(counted[start:]), n, side="left")) + 1 \
            if n else start
        expected = tb.golden(frames[start:end], sofs[start:end])
        diff = synopsis_difference(expected, got.synopsis)
        assert not diff, f"interval {k} (seq {got.seq}, frames {start}..{end - 1}) " \
                         f"differs:\n{diff}"
        assert got.valid, f"interval {k} (seq {got.seq}) flags {got.flags!r}"
        start = end
    assert not counted[start:].any(), f"frames {start}.. in no exported interval"
    tb.log.info("%d frames (%d counted) in %d exported intervals %s", len(frames),
                int(counted.sum()), len(intervals),
                [int(r.synopsis.count.sum()) for r in intervals])


#: The last clock, counted from a frame's SOF transfer on ``s_axis``, at which the last
#: byte of a host's CONTROL.swap command may enter ``bus_rx`` for the frame to count in
#: the new interval: the tap sees the SOF ``1 + MeasurementCore.TAP_WATCH_DELAY`` clocks after
#: its transfer, and the command's write needs 8 clocks to make the swap pending at the
#: ledger (bridge write strobe, CSR bank, interval control, ledger's request register).
SWAP_BOUNDARY = 1 + MeasurementCore.TAP_WATCH_DELAY - 8


def swap_boundary_clock(frame_bytes: int, bytes_per_beat: int) -> int:
    """:data:`SWAP_BOUNDARY` for a frame of ``frame_bytes``: a clock earlier when the
    frame is one beat, whose SOF beat is also its last: the tap takes no boundary in the
    cycle before a frame's last beat reaches it (``tap_idle`` in
    :func:`hw.frames.tap_watch.wire_tap_watch`), so a swap pending in that cycle waits
    until after the frame (measured: at 512 bits the command's last byte 42 clocks after
    the SOF leaves the frame in the old interval, at 41 in the new one)."""
    return SWAP_BOUNDARY - (1 if frame_bytes <= bytes_per_beat else 0)


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms", skip=TWO_CLOCKS)
async def swap_boundary(dut):
    """A frame offered just before a host swap: it counts in the new interval when the
    swap command's last byte enters at most :data:`SWAP_BOUNDARY` clocks after the
    frame's SOF (it is still in the tap's delay line when the swap becomes pending),
    in the old one a clock later, under either simulator (the pytest entry runs it under
    Icarus and Verilator). Where the frame is one beat (512 bits) the boundary is a clock
    earlier (:func:`swap_boundary_clock`)."""
    tb = CoreHarness(dut)
    await tb.start(calibrate=False)
    # plain UARTBone: a write executes on its last byte and has no reply, so the host
    # call ends with the byte the boundary is timed from (the checked framing adds the
    # request's CRC check and the acknowledgement, not the design's timing pinned here)
    plain = await tb.host(Device, simulation_transport(tb.bus_port, framing="plain"),
                          config=tb.config)
    t0 = tb.now_cycle()
    await tb.host(plain.swap)
    command = tb.now_cycle() - t0                       # edges up to its last byte
    await tb.wait_status("frozen_ready", 1)
    await tb.release_and_wait()
    boundary = swap_boundary_clock(MIN_FRAME_BYTES, tb.bytes_per_beat)
    for late in (0, 1):
        await tb.settle()
        tb.send_nowait(min_size_burst(tb.rng, 1))
        while not (dut.s_axis_tvalid.value == 1 and dut.s_axis_tready.value == 1):
            await RisingEdge(dut.clk)                   # sampled as the SOF monitor does
        sof = tb.now_cycle()
        await tb.cycles(boundary + late - command)
        await tb.host(plain.swap)
        assert tb.now_cycle() - sof == boundary + late, (tb.now_cycle(), sof)
        await tb.receive(1)
        assert [c for _, c in await tb.monitored(1)] == [sof]
        await tb.wait_status("frozen_ready", 1)
        packets = (await tb.host(read_frozen_info, tb.device))["frozen_packets"]
        assert packets == late, (
            f"swap command's last byte {boundary + late} clocks after the SOF: "
            f"{packets} frames in the old interval, expected {late}")
        await tb.release_and_wait()
        await tb.settle()
        assert (await tb.freeze())["frozen_packets"] == 1 - late
        await tb.release_and_wait()


# pytest: export the core for each parameter set and run the cocotb tests above on it

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(importlib.util.find_spec("hw.lda_pipeline") is None,
                       reason="hw/lda_pipeline.py (the core's top) does not exist yet"),
]

only_slow = pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")
#: The single-beat hazard where the default suite has no full set at 512 bits: LDA's, and
#: RDA's on the generic memory (the default suite runs RDA's at 512 bits on the ECP5
#: memory, whose forwarding around the block RAM's two-edge read is the longer path, and
#: LDS's on the generic one: :data:`sim_tb.lib.runner.DEFAULT_PARAMS`). ``LDA_SLOW=1`` only.
SINGLE_BEAT_PARAMS = [p for p in (CoreParams(kind=k, data_width=512) for k in KINDS)
                      if not any(d.kind == p.kind and d.data_width == p.data_width
                                 and d.memory == p.memory for d in DEFAULT_PARAMS)]
ECP5_MISSING = ecp5_models_missing()


def _core_param(params, *marks):
    """A set as a pytest parameter with ``marks``: skipped, with the reason, when it needs
    the ECP5 models and they are not installed."""
    if params.memory == "ecp5" and ECP5_MISSING:
        marks += (pytest.mark.skip(reason="ECP5 simulation models unavailable: "
                                   + ECP5_MISSING),)
    return pytest.param(params, marks=list(marks))


@pytest.mark.parametrize("params", [
    *map(_core_param, DEFAULT_PARAMS),
    *(_core_param(p, pytest.mark.slow, only_slow) for p in SLOW_PARAMS)],
    ids=lambda p: p.param_id)
def test_core(params):
    results = run_core_tests(params, __name__)
    assert len(results.tests) >= 10, sorted(results.tests)


@pytest.mark.slow
@only_slow
@pytest.mark.parametrize("params", SINGLE_BEAT_PARAMS, ids=lambda p: p.param_id)
def test_core_single_beat_hazard(params):
    results = run_core_tests(params, __name__,
                             testcase=["same_counter_hazard", "passthrough/pauses=0",
                                       "passthrough/pauses=4"])
    assert {"same_counter_hazard", "passthrough/pauses=0",
            "passthrough/pauses=4"} <= set(results.tests), sorted(results.tests)


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_swap_boundary_same_in_both_simulators(simulator):
    """A frame offered just before a host swap lands in the same interval under Icarus
    and Verilator, at the clock the design implies (:func:`swap_boundary`). The 8-bit LDA
    core (:data:`sim_tb.lib.runner.LDA_W8`): the gate-level netlist's
    (``sim_tb/benches/test_gate_level.py``), so the three simulations of the pinned case
    run one design; Verilator's build is ``test_core``'s.
    (``test_core`` runs ``swap_boundary`` and ``reset_mid_interval`` on every core too.)"""
    if simulator == "verilator" and verilator_env() is None:
        pytest.skip("no verilator installed")
    results = run_core_tests(LDA_W8, __name__, testcase=["swap_boundary"],
                             simulator=simulator)
    assert "swap_boundary" in results.tests, sorted(results.tests)


@pytest.mark.slow
@only_slow
def test_exported_intervals_two_clocks():
    """The host export of the two-clock core (the exporter and its SipHash tagger on
    ``ctrl_clk``, its frames crossing into ``clk``, ``hw/inband/exporter_crossing.py``):
    :func:`exported_intervals` on the default suite's ``ctrl`` LDA core, whose ``test_core``
    run skips it. ``LDA_SLOW=1`` (some ten minutes: the suite's budget); the default suite
    checks the crossing in ``tests/hw/inband/test_hw_exporter_crossing.py``."""
    params = next(p for p in DEFAULT_PARAMS if p.control_domain != "sync" and p.kind == "lda")
    results = run_core_tests(params, __name__, testcase=["exported_intervals"])
    assert "exported_intervals" in results.tests, sorted(results.tests)
