# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the two-device harness (:mod:`sim_tb.demo.two_device`).

One test, :func:`two_devices`, on the generated ``two_device_top`` (a sender and a
receiver core). It

1. resets both cores, programs their run-time registers (thresholds, masks, CONFIG_ID)
   from the configuration, swaps and releases twice on both (after the clearing sweep) and
   calibrates the constant ``timestamp − SOF cycle at m_axis`` from a few frames offered
   to the sender (both cores have the same logic, clock and reset: the same constant);
2. puts the sender in marker-send mode (its interval timer ends an interval every
   ``params.interval_ticks`` clocks with a marker frame, and streams the frozen copy
   in-band as synopsis chunk frames) and the receiver in marker-receive mode (a marker
   from the sender ends its interval): from here on the *devices* decide the boundaries;
3. opens a :class:`sim_tb.lib.socket_bridge.SocketBridge` per device and writes their URLs
   to ``ports.json``; a coroutine per device plays the host's commands into the core's
   ``bus_rx`` and sends ``bus_tx`` back;
4. offers the traffic (:func:`host_sw.model.traffic.synthetic_trace`, exponential gaps)
   and moves every frame leaving the sender — data, markers, export chunks — through the
   channel (:mod:`sim_tb.demo.two_device_wire`); the control frames leaving the receiver go
   to ``inband.jsonl`` (hex, with their cycle), the host's capture of the receiver's
   output stream;
5. for each interval the sender's marker closed, once its frames have left the receiver
   or were lost, writes the ground truth to ``truth.jsonl``: frames sent/received/lost,
   the true mean and standard deviation (population) of the delays of the frames both
   points saw, ``(receiver SOF − sender SOF) × tick_ns``, and the golden model's synopses
   of both points (:func:`sim_tb.lib.scoreboard.expected_synopsis`) as counter words;
6. keeps running (traffic stopped after the last interval) until the host writes
   ``host_done`` in the work folder, or ``host_wait_s`` seconds of wall time pass.

``params.mode == "harness"`` keeps the earlier fallback (the harness pauses the
traffic, drains the channel and swaps both devices itself); ``ldactl watch``'s test uses
it for manual-mode reading.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time

from host_sw.device.driver import Device
from host_sw.model.impairments import DelayDistribution, LossModel
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.traffic import synthetic_trace

from sim_tb.demo.two_device import (
    HOST_DONE_FILE, INBAND_FILE, PORTS_FILE, TRUTH_FILE, TwoDeviceParams,
)
from sim_tb.demo.two_device_wire import Wire
from sim_tb.lib.frames import OfferedFrame
from sim_tb.lib.scoreboard import expected_synopsis
from sim_tb.lib.sim_transport import BusTimeout
from sim_tb.lib.socket_bridge import SocketBridge
from sim_tb.lib.uartbone_driver import ByteStreamPort, run_host, simulation_transport

log = logging.getLogger("cocotb.two_device")

#: Frames offered to the sender to calibrate the timestamp offset.
CALIBRATION_FRAMES = 8
#: Transport options in the published URLs: a simulated core answers a 255-word burst in
#: a second or two of wall time on an idle machine (one bus byte per simulated clock, more
#: per counter word), beyond the 1 s default, and ten times that on a loaded one; a host
#: that gives up and retries queues another burst behind the late one.
HOST_OPTIONS = "?timeout=60"
#: MAC addresses of the sender's markers and exports (locally administered).
SENDER_MAC = 0x02_00_00_00_00_01
RECEIVER_MAC = 0x02_00_00_00_00_02


class SimulatedCore:
    """One core of the pair: its bus port, shared by the harness — the host driver
    (:class:`host_sw.device.driver.Device`) on a simulation transport, run in bridge
    threads — and the host behind the socket bridge (one whole command at a time: the
    port's lock)."""

    def __init__(self, dut, prefix: str, name: str):
        self.name = name
        # a two-clock core's bus runs on the shared control clock (ByteStreamPort)
        clocks = {n: getattr(dut, n) for n in ("clk", "ctrl_clk") if hasattr(dut, n)}
        ports = SimpleNamespace(**clocks, **{
            f"bus_{d}_{s}": getattr(dut, f"{prefix}_bus_{d}_{s}")
            for d, sigs in (("rx", ("tdata", "tvalid", "tready")),
                            ("tx", ("tdata", "tvalid", "tready"))) for s in sigs})
        self.port = ByteStreamPort(ports)
        self.transport = simulation_transport(self.port, name=name)
        self.device: Device | None = None
        self.bridge: SocketBridge | None = None
        self.host_commands = 0
        self.bus_ns = 0.0          # simulated time spent on the host's commands

    async def connect(self, config) -> Device:
        """The harness's driver of this core (ID checked against ``config``)."""
        self.device = await run_host(Device, self.transport, config=config)
        return self.device

    async def call(self, method, *args, **kwargs):
        """Host code (a ``Device`` method) for the harness, between the host's commands."""
        return await run_host(method, *args, **kwargs)

    async def wait_status(self, clk, field: str, value: int = 1, *, polls: int = 200,
                          gap_cycles: int = 16) -> dict:
        """Poll STATUS (``gap_cycles`` clocks apart) until ``field`` equals ``value``."""
        for _ in range(polls):
            st = await self.call(self.device.status)
            if st[field] == value:
                return st
            await ClockCycles(clk, gap_cycles)
        raise AssertionError(f"{self.name}: STATUS.{field} did not become {value}: {st}")

    async def serve(self, clk):
        """Play the host's commands (from the bridge) into the core, forever."""
        while True:
            command = self.bridge.pop_command()
            if command is None:
                await ClockCycles(clk, 8)
                continue
            t0 = get_sim_time("ns")
            try:
                reply = await self.port.transact(command.data, command.reply_bytes,
                                                 timeout_cycles=20_000)
            except BusTimeout as e:
                log.warning("%s: host command %s: %s", self.name, command.data[:6].hex(), e)
                reply = b""
            if len(reply) < command.reply_bytes:
                log.warning("%s: host command %s: %d of %d reply bytes", self.name,
                            command.data[:6].hex(), len(reply), command.reply_bytes)
            self.host_commands += 1
            self.bus_ns += get_sim_time("ns") - t0
            self.bridge.send(reply)

    async def wait_clean(self, clk, deadline: float):
        """Poll STATUS (with gaps, so the host's reads get the bus) until the other
        copy is clean: the host has released the previous interval."""
        while True:
            st = await self.call(self.device.status)
            if st["other_clean"]:
                return st
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: the host did not release interval in "
                                   f"time (STATUS {st})")
            await ClockCycles(clk, 256)


def _draws(params: TwoDeviceParams, config):
    """Seeded traffic and channel draws: frames, gaps (clocks), drops, delays (clocks)."""
    n_total = params.offered_frames
    trace = synthetic_trace(packets=n_total, flows=max(16, n_total // 20),
                            frame_bytes=params.frame_bytes, window_bytes=config.window_bytes,
                            seed=params.seed)
    rng = np.random.default_rng(params.seed + 1)
    gaps = np.rint(rng.exponential(params.gap_ns / params.tick_ns, n_total)).astype(np.int64)
    drops = np.zeros(n_total, dtype=bool)
    loss = LossModel.parse(params.loss)
    for first in range(0, n_total, params.frames):  # the loss rate holds per block
        n = min(params.frames, n_total - first)
        drops[first:first + n] = np.asarray(loss.drops(n, rng), dtype=bool)
    delay = DelayDistribution.parse(params.delay)
    delays = np.rint(delay.sample_ns(n_total, rng) / params.tick_ns).astype(np.int64)

    def control_delay(r):
        return np.rint(delay.sample_ns(1, r)[0] / params.tick_ns)
    return trace.frames(), gaps, drops, delays, control_delay


async def start_pair(dut, config, cores, *, setup=None):
    """Reset, then per core: the harness's driver (ID checked against ``config``), the
    run-time registers (thresholds, masks, CONFIG_ID), ``await setup(core, device)`` if
    given (a bench's own registers, in force from the first boundary), the clearing
    sweep after reset waited for (STATUS.other_clean), then swap + release twice (the
    benches' interval numbering starts after these).
    The start of every two-core bench (this one, :mod:`sim_tb.benches.test_opa_pair`,
    :mod:`sim_tb.benches.test_rli_pair`). Two-clock cores (a ``ctrl_clk`` port): ``rst``
    is held for two edges of each clock too, and the bus waits until the control
    domain's reset synchroniser has let go (both cores release at the same edges: one
    ``clk``, one ``ctrl_clk`` and one ``rst``)."""
    dut.rst.value = 1
    await ClockCycles(dut.clk, 8)
    if hasattr(dut, "ctrl_clk"):
        await ClockCycles(dut.ctrl_clk, 2)
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 4)
    if hasattr(dut, "ctrl_clk"):
        await ClockCycles(dut.ctrl_clk, 3)
    for dev in cores:
        device = await dev.connect(config)
        ident = device.id_value
        assert ident == device.map.id_value, (
            f"{dev.name}: ID {ident:#010x} != register map ID {device.map.id_value:#010x}")
        await dev.call(device.program)              # thresholds, masks, CONFIG_ID
        if setup is not None:
            await setup(dev, device)
        await dev.wait_status(dut.clk, "other_clean", 1, polls=2000)
        for _ in range(2):
            await dev.call(device.swap)
            await dev.wait_status(dut.clk, "frozen_ready", 1)
            await dev.call(device.release)
            await dev.wait_status(dut.clk, "other_clean", 1, polls=2000)


async def _calibrate(dut, params, config, hashers, wire: Wire, snd, rcv) -> int:
    """``timestamp − SOF cycle at m_axis`` from a few frames through the sender; the
    sender's copy is checked against the golden model word for word."""
    cal_rng = np.random.default_rng(params.seed + 2)
    cal_trace = synthetic_trace(packets=CALIBRATION_FRAMES, flows=CALIBRATION_FRAMES,
                                frame_bytes=60, window_bytes=config.window_bytes,
                                seed=int(cal_rng.integers(1 << 30)))
    cal_frames = cal_trace.frames()
    wire.extra.extend(cal_frames)
    await wire.wait_idle()
    await ClockCycles(dut.clk, 64)
    for dev in (snd, rcv):
        await dev.call(dev.device.swap)
        await dev.wait_status(dut.clk, "frozen_ready", 1)
    got = (await snd.call(snd.device.read_snapshot, release=False, poll=0)).synopsis
    offered = [OfferedFrame(f) for f in cal_frames]
    zero = expected_synopsis(config, offered, wire.extra_sof, hashers)
    n_cal = int(zero.count.sum())
    assert n_cal > 0 and int(got.count.sum()) == n_cal, (
        f"calibration: device counted {int(got.count.sum())}, golden {n_cal}")
    diff = int(got.ts_sum.astype(object).sum()) - int(zero.ts_sum.astype(object).sum())
    assert diff % n_cal == 0, f"calibration: timestamp offsets differ ({diff}/{n_cal})"
    ts_offset = diff // n_cal
    expected = expected_synopsis(config, offered, [c + ts_offset for c in wire.extra_sof],
                                 hashers)
    assert got == expected, "calibration: the sender's copy differs from the golden model"
    for dev in (snd, rcv):
        await dev.call(dev.device.release)
        await dev.wait_status(dut.clk, "other_clean", 1, polls=2000)
    log.info("timestamp = SOF cycle at m_axis %+d", ts_offset)
    return ts_offset


async def _arm(params, wire: Wire, snd: SimulatedCore, rcv: SimulatedCore) -> int:
    """Marker-receive on the receiver, then marker-send with the interval timer (first
    boundary one interval from now) and the in-band export on the sender; returns the
    sequence number of the first interval."""
    wire.watch_outputs = True       # from now on the cores insert frames of their own
    seq = await snd.call(snd.device.read, "interval_seq")
    seq_r = await rcv.call(rcv.device.read, "interval_seq")
    assert seq == seq_r, f"sender interval {seq}, receiver {seq_r}"
    await rcv.call(rcv.device.set_intervals, mode="marker-receive",
                   marker_src_mac=SENDER_MAC)
    now = await snd.call(snd.device.read, "timebase")
    await snd.call(snd.device.set_intervals, mode="marker-send",
                   ticks=params.interval_ticks, start=now + params.interval_ticks,
                   export_inband=True,
                   local_mac=SENDER_MAC, export_dst_mac=RECEIVER_MAC)
    return seq


class Ground:
    """Writes the ground truth (``truth.jsonl``) and the receiver's control frames
    (``inband.jsonl``) as they happen."""

    def __init__(self, workdir: Path, config, hashers, params, frames, ts_offset):
        self.truth_path = workdir / TRUTH_FILE
        self.truth_path.write_text("")
        self.inband = (workdir / INBAND_FILE).open("w", buffering=1)
        self.config, self.hashers, self.params = config, hashers, params
        self.frames, self.ts_offset = frames, ts_offset
        self.count = 0

    def control(self, frame: bytes, cycle: int):
        self.inband.write(json.dumps({"cycle": cycle, "frame": frame.hex()}) + "\n")

    def interval(self, wire: Wire, seq: int, index, cycles) -> dict:
        idx = np.nonzero(wire.interval_of == seq)[0] if index is None else index
        record = interval_truth(self.config, self.hashers, self.params, seq, self.count,
                                [self.frames[i] for i in idx], wire.snd_sof[idx],
                                wire.rcv_sof[idx], self.ts_offset)
        record["cycles"] = list(cycles)
        self.count += 1
        self.write(record)
        log.info("interval seq %d: sent %d received %d, true mean %s ns", seq,
                 record["sent"], record["received"], record["true_mean_ns"])
        return record

    def write(self, record: dict):
        with self.truth_path.open("a") as f:
            f.write(json.dumps(record) + "\n")


async def _inband_intervals(dut, params, wire: Wire, ground: Ground, first_seq: int):
    """Offer traffic; write each interval's truth once the sender's marker has closed it
    and its frames have left the receiver (or were lost)."""
    wire.drop_markers = {first_seq + k for k in params.drop_markers}
    wire.release_upto = len(wire.frames)
    last = first_seq + params.intervals - 1
    start = wire.cycle
    for seq in range(first_seq, last + 1):
        while not (any(s == seq for s, _ in wire.markers) and wire.settled(seq)):
            if wire.next_send >= len(wire.frames) and wire.idle:
                raise AssertionError(f"the traffic ran out before the sender ended "
                                     f"interval {seq} (interval_ticks too long?)")
            await ClockCycles(dut.clk, 256)
        if seq == last:
            wire.release_upto = wire.next_send     # no more traffic
        end = next(c for s, c in wire.markers if s == seq)
        ground.interval(wire, seq, None, (start, end))
        start = end


async def _harness_intervals(dut, params, wire: Wire, ground: Ground, snd, rcv):
    """The fallback: the harness pauses the traffic, drains the channel and swaps both."""
    for k in range(params.intervals):
        first, end = k * params.frames, (k + 1) * params.frames
        seq = await snd.call(snd.device.read, "interval_seq")
        cycle0 = wire.cycle
        wire.release_upto = end
        await wire.wait_idle()
        await ClockCycles(dut.clk, 32)
        deadline = time.monotonic() + params.host_wait_s
        for dev in (snd, rcv):
            await dev.wait_clean(dut.clk, deadline)
        for dev in (snd, rcv):
            await dev.call(dev.device.swap)
        ground.interval(wire, seq, np.arange(first, end), (cycle0, wire.cycle))


async def _wait_host(dut, params, workdir: Path, snd, rcv):
    """Until the host says it is done (``host_done``), or ``host_wait_s`` of wall time."""
    deadline = time.monotonic() + params.host_wait_s
    done = workdir / HOST_DONE_FILE
    while not done.exists():
        if time.monotonic() > deadline:
            log.warning("the host did not finish within %g s", params.host_wait_s)
            return
        await ClockCycles(dut.clk, 1024)


@cocotb.test()
async def two_devices(dut):
    params = TwoDeviceParams.from_json(os.environ["LDA_TWO_DEVICE"])
    workdir = Path(os.environ["LDA_TWO_DEVICE_DIR"])
    config = params.config()
    hashers = Hashers(config)
    frames, gaps, drops, delays, control_delay = _draws(params, config)
    cocotb.start_soon(Clock(dut.clk, params.tick_ns, unit="ns").start())
    wire = Wire(dut, params.data_width, frames, gaps, drops, delays,
                control_delay=control_delay, rng=np.random.default_rng(params.seed + 3))
    snd = SimulatedCore(dut, "snd", "sender")
    rcv = SimulatedCore(dut, "rcv", "receiver")
    cocotb.start_soon(wire.run())
    await start_pair(dut, config, (snd, rcv))
    ts_offset = await _calibrate(dut, params, config, hashers, wire, snd, rcv)
    ground = Ground(workdir, config, hashers, params, frames, ts_offset)
    wire.on_receiver_control = ground.control
    inband = params.mode == "inband"
    first_seq = await _arm(params, wire, snd, rcv) if inband else None

    for dev in (snd, rcv):
        dev.bridge = SocketBridge(name=dev.name)
        cocotb.start_soon(dev.serve(dut.clk))
    (workdir / PORTS_FILE).write_text(json.dumps(
        {"sender": snd.bridge.url + HOST_OPTIONS, "receiver": rcv.bridge.url + HOST_OPTIONS,
         "pid": os.getpid(), "tick_ns": params.tick_ns, "config": config.to_dict(),
         "params": json.loads(params.to_json()), "ts_offset": ts_offset,
         "first_seq": first_seq, "inband": INBAND_FILE if inband else None}, indent=1))
    log.info("bridges: sender %s, receiver %s", snd.bridge.url, rcv.bridge.url)

    t_start = time.monotonic()
    try:
        if inband:
            await _inband_intervals(dut, params, wire, ground, first_seq)
            await _wait_host(dut, params, workdir, snd, rcv)
        else:
            await _harness_intervals(dut, params, wire, ground, snd, rcv)
            deadline = time.monotonic() + params.host_wait_s
            for dev in (snd, rcv):
                try:
                    await dev.wait_clean(dut.clk, deadline)
                except TimeoutError as e:
                    log.warning("%s", e)
        ground.write({"done": True, "intervals": params.intervals, "cycles": wire.cycle,
                      "wall_s": time.monotonic() - t_start,
                      "host_commands": {d.name: d.host_commands for d in (snd, rcv)},
                      "host_bus_clocks": {d.name: round(d.bus_ns / params.tick_ns)
                                          for d in (snd, rcv)},
                      "receiver_out": wire.receiver_out, "altered": wire.mismatches,
                      "markers": len(wire.markers), "dropped_markers": wire.dropped_markers,
                      "control_frames": wire.control_out})
    finally:
        for dev in (snd, rcv):
            dev.bridge.close()
    assert wire.mismatches == 0, f"{wire.mismatches} data frame(s) altered by a core"


def interval_truth(config, hashers, params, seq, index, frames, snd_sof, rcv_sof,
                   ts_offset) -> dict:
    """The ground truth and golden synopses of one interval."""
    seen = rcv_sof >= 0
    sent, received = len(frames), int(seen.sum())
    assert (snd_sof >= 0).all(), "a frame of the interval was not sent"
    delay_ticks = (rcv_sof[seen] - snd_sof[seen]).astype(np.float64)
    delays_ns = delay_ticks * params.tick_ns
    offered = [OfferedFrame(f) for f in frames]
    snd_syn = expected_synopsis(config, offered, snd_sof + ts_offset, hashers)
    rcv_syn = expected_synopsis(config, [o for o, s in zip(offered, seen) if s],
                                rcv_sof[seen] + ts_offset, hashers)
    return {"interval": int(seq), "index": index, "sent": sent, "received": received,
            "lost": sent - received,
            "loss_rate": (sent - received) / sent if sent else None,
            "true_mean_ns": float(delays_ns.mean()) if received else None,
            "true_std_ns": float(delays_ns.std()) if received else None,
            "delay_min_ns": float(delays_ns.min()) if received else None,
            "delay_max_ns": float(delays_ns.max()) if received else None,
            "golden_sender_words": [int(w) for w in snd_syn.words()],
            "golden_receiver_words": [int(w) for w in rcv_syn.words()]}
