# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the two-device harness (:mod:`sim_tb.two_device`).

One test, :func:`two_devices`, on the generated ``two_device_top`` (a sender and a
receiver core). It

1. resets both cores, programs their run-time registers (thresholds, masks, CONFIG_ID)
   from the configuration, clears both copies of both (swap + release twice) and
   calibrates the constant ``timestamp − SOF cycle`` from a few frames offered to the
   sender (both cores have the same logic, clock and reset: the same constant);
2. opens a :class:`sim_tb.socket_bridge.SocketBridge` per device and writes their URLs
   to ``ports.json``; from then on a coroutine per device plays the host's commands into
   the core's ``bus_rx`` and sends ``bus_tx`` back;
3. for each interval: plays its frames into the sender (synthetic trace of
   :func:`host_sw.model.traffic.synthetic_trace`, real headers, exponential gaps), moves each
   frame leaving the sender through the channel (delay in whole clocks from the
   :class:`~host_sw.model.channel.DelayDistribution`, drops from the
   :class:`~host_sw.model.channel.LossModel`, FIFO: a frame never overtakes the one before
   it) into the receiver, then ends the interval as described in
   :mod:`sim_tb.two_device` (source stopped, channel empty, previous interval released
   by the host, CONTROL.swap on both);
4. writes the interval's ground truth to ``truth.jsonl``: frames sent/received/lost,
   the true mean and standard deviation (population) of the delays of the frames seen
   by both points, ``(receiver SOF cycle − sender SOF cycle) × tick_ns``, and the golden
   model's synopses of both points (:func:`sim_tb.scoreboard.expected_synopsis` with the
   calibrated timestamps) as counter words;
5. keeps serving the bridges until the host has released the last interval.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from host_sw.device.driver import Device
from host_sw.model.channel import DelayDistribution, LossModel
from host_sw.model.golden import Hashers
from host_sw.model.traffic import synthetic_trace

from sim_tb.frames import OfferedFrame
from sim_tb.scoreboard import expected_synopsis
from sim_tb.socket_bridge import SocketBridge
from sim_tb.two_device import PORTS_FILE, TRUTH_FILE, TwoDeviceParams
from sim_tb.uartbone_driver import BusTimeout, ByteStreamPort, run_host, simulation_transport

log = logging.getLogger("cocotb.two_device")

#: Frames offered to the sender to calibrate the timestamp offset.
CALIBRATION_FRAMES = 8
#: Transport options in the published URLs: a simulated core answers a 255-word burst in
#: a second or two of wall time on an idle machine (one bus byte per simulated clock, more
#: per counter word), beyond the 1 s default, and ten times that on a loaded one; a host
#: that gives up and retries queues another burst behind the late one.
HOST_OPTIONS = "?timeout=60"
#: Clocks per step of the wire while nothing is queued or in flight.
IDLE_STEP = 16


class SimulatedCore:
    """One core of the pair: its bus port, shared by the harness — the host driver
    (:class:`host_sw.device.driver.Device`) on a simulation transport, run in bridge
    threads — and the host behind the socket bridge (one whole command at a time: the
    port's lock)."""

    def __init__(self, dut, prefix: str, name: str):
        self.name = name
        ports = SimpleNamespace(clk=dut.clk, **{
            f"bus_{d}_{s}": getattr(dut, f"{prefix}_bus_{d}_{s}")
            for d, sigs in (("rx", ("tdata", "tvalid", "tready")),
                            ("tx", ("tdata", "tvalid", "tready"))) for s in sigs})
        self.port = ByteStreamPort(ports)
        self.transport = simulation_transport(self.port, name=name)
        self.device: Device | None = None
        self.bridge: SocketBridge | None = None
        self.host_commands = 0

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


class AxisDriver:
    """Drives one ``s_axis`` port from a queue of frames (byte lane 0 first)."""

    def __init__(self, dut, prefix: str, data_width: int):
        self.valid = getattr(dut, f"{prefix}_s_axis_tvalid")
        self.ready = getattr(dut, f"{prefix}_s_axis_tready")
        self.data = getattr(dut, f"{prefix}_s_axis_tdata")
        self.keep = getattr(dut, f"{prefix}_s_axis_tkeep")
        self.last = getattr(dut, f"{prefix}_s_axis_tlast")
        self.user = getattr(dut, f"{prefix}_s_axis_tuser")
        self.bytes_per_beat = data_width // 8
        for s in (self.valid, self.data, self.keep, self.last, self.user):
            s.setimmediatevalue(0)
        self.beats: list | None = None
        self.index = -1
        self.beat = 0

    def load(self, index: int, frame: bytes):
        n = self.bytes_per_beat
        self.beats = []
        for off in range(0, len(frame), n):
            chunk = frame[off:off + n]
            self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                               int(off + n >= len(frame))))
        self.index, self.beat = index, 0
        self._drive()

    def _drive(self):
        data, keep, last = self.beats[self.beat]
        self.data.value = data
        self.keep.value = keep
        self.last.value = last
        self.valid.value = 1

    @property
    def busy(self) -> bool:
        return self.beats is not None

    def sample(self) -> tuple[bool, bool]:
        """After a rising edge: (SOF transferred, frame finished)."""
        if self.beats is None or not self.ready.value:
            return False, False
        sof = self.beat == 0
        self.beat += 1
        if self.beat == len(self.beats):
            self.beats = None
            self.valid.value = 0
            return sof, True
        self._drive()
        return sof, False


class Wire:
    """Traffic source, sender output, channel and receiver input, one clock at a time."""

    def __init__(self, dut, params: TwoDeviceParams, frames: list[bytes],
                 gaps: np.ndarray, drops: np.ndarray, delays: np.ndarray):
        self.dut = dut
        self.frames = frames
        self.gaps = gaps
        self.drops = drops
        self.delays = delays
        self.snd = AxisDriver(dut, "snd", params.data_width)
        self.rcv = AxisDriver(dut, "rcv", params.data_width)
        dut.snd_m_axis_tready.setimmediatevalue(1)
        dut.rcv_m_axis_tready.setimmediatevalue(1)
        self.cycle = 0
        self.release_upto = 0      # the source may send frames below this index
        self.next_send = 0
        self.earliest = 0
        self.exited = 0            # frames that left the sender (FIFO: frame index)
        self.channel: deque = deque()
        self.snd_sof = np.full(len(frames), -1, dtype=np.int64)
        self.rcv_sof = np.full(len(frames), -1, dtype=np.int64)
        self.receiver_out = 0
        self.extra: deque = deque()  # calibration frames for the sender only
        self.extra_sof: list[int] = []
        self.extra_out = 0

    @property
    def idle(self) -> bool:
        """Nothing queued or in flight up to ``release_upto``."""
        return (self.next_send >= self.release_upto and not self.snd.busy
                and self.exited >= self.next_send and not self.channel
                and not self.rcv.busy and not self.extra
                and self.extra_out == len(self.extra_sof))

    async def run(self):
        dut = self.dut
        clk = dut.clk
        snd_m_valid, snd_m_last = dut.snd_m_axis_tvalid, dut.snd_m_axis_tlast
        rcv_m_valid, rcv_m_last = dut.rcv_m_axis_tvalid, dut.rcv_m_axis_tlast
        while True:
            if self.idle:
                # nothing queued or in flight: step in blocks (the simulator runs much
                # faster without a Python callback every clock)
                await ClockCycles(clk, IDLE_STEP)
                self.cycle += IDLE_STEP
                continue
            if not self.snd.busy:
                if self.extra:
                    self.snd.load(-1, self.extra.popleft())
                elif self.next_send < self.release_upto and self.cycle >= self.earliest:
                    self.snd.load(self.next_send, self.frames[self.next_send])
            if not self.rcv.busy and self.channel and self.channel[0][1] <= self.cycle:
                i, _ = self.channel.popleft()
                self.rcv.load(i, self.frames[i])
            await RisingEdge(clk)
            self.cycle += 1
            c = self.cycle
            idx = self.snd.index
            sof, done = self.snd.sample()
            if sof:
                if idx >= 0:
                    self.snd_sof[idx] = c
                else:
                    self.extra_sof.append(c)
            if done and idx >= 0:
                self.next_send = idx + 1
                if self.next_send < len(self.gaps):
                    self.earliest = c + int(self.gaps[self.next_send])
            idx = self.rcv.index
            sof, _ = self.rcv.sample()
            if sof:
                self.rcv_sof[idx] = c
            if snd_m_valid.value and snd_m_last.value:
                if self.extra_out < len(self.extra_sof):
                    self.extra_out += 1   # a calibration frame: sunk
                else:
                    i = self.exited
                    self.exited += 1
                    if not self.drops[i]:
                        due = c + int(self.delays[i])
                        if self.channel:  # FIFO: never before the frame ahead
                            due = max(due, self.channel[-1][1])
                        self.channel.append((i, due))
            if rcv_m_valid.value and rcv_m_last.value:
                self.receiver_out += 1

    async def wait_idle(self, step: int = 16):
        while not self.idle:
            await ClockCycles(self.dut.clk, step)


@cocotb.test()
async def two_devices(dut):
    params = TwoDeviceParams.from_json(os.environ["LDA_TWO_DEVICE"])
    workdir = Path(os.environ["LDA_TWO_DEVICE_DIR"])
    config = params.config()
    hashers = Hashers(config)
    n_total = params.intervals * params.frames

    # -- traffic and channel draws (seeded) ----------------------------------------------
    trace = synthetic_trace(packets=n_total, flows=max(16, n_total // 20),
                            frame_bytes=params.frame_bytes, window_bytes=config.window_bytes,
                            seed=params.seed)
    frames = trace.frames()
    rng = np.random.default_rng(params.seed + 1)
    gaps = np.rint(rng.exponential(params.gap_ns / params.tick_ns, n_total)).astype(np.int64)
    drops = np.zeros(n_total, dtype=bool)
    loss = LossModel.parse(params.loss)
    delay = DelayDistribution.parse(params.delay)
    for k in range(params.intervals):  # the loss rate holds per interval
        sl = slice(k * params.frames, (k + 1) * params.frames)
        drops[sl] = np.asarray(loss.drops(params.frames, rng), dtype=bool)
    delays = np.rint(delay.sample_ns(n_total, rng) / params.tick_ns).astype(np.int64)

    # -- clock, reset, devices -----------------------------------------------------------
    cocotb.start_soon(Clock(dut.clk, params.tick_ns, unit="ns").start())
    wire = Wire(dut, params, frames, gaps, drops, delays)
    snd = SimulatedCore(dut, "snd", "sender")
    rcv = SimulatedCore(dut, "rcv", "receiver")
    dut.rst.value = 1
    await ClockCycles(dut.clk, 8)
    dut.rst.value = 0
    cocotb.start_soon(wire.run())
    await ClockCycles(dut.clk, 4)

    for dev in (snd, rcv):
        device = await dev.connect(config)
        ident = device.id_value
        assert ident == device.map.id_value, (
            f"{dev.name}: ID {ident:#010x} != register map ID {device.map.id_value:#010x}")
        await dev.call(device.program)              # thresholds, masks, CONFIG_ID
        for _ in range(2):  # clear both copies (memories keep their contents over rst)
            await dev.call(device.swap)
            await dev.wait_status(dut.clk, "frozen_ready", 1)
            await dev.call(device.release)
            await dev.wait_status(dut.clk, "other_clean", 1, polls=2000)

    # -- calibration: timestamp = SOF cycle + offset (same for both cores) ---------------
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
    log.info("timestamp = SOF cycle %+d", ts_offset)

    # -- bridges -------------------------------------------------------------------------
    for dev in (snd, rcv):
        dev.bridge = SocketBridge(name=dev.name)
        cocotb.start_soon(dev.serve(dut.clk))
    truth_path = workdir / TRUTH_FILE
    truth_path.write_text("")
    (workdir / PORTS_FILE).write_text(json.dumps(
        {"sender": snd.bridge.url + HOST_OPTIONS, "receiver": rcv.bridge.url + HOST_OPTIONS,
         "pid": os.getpid(),
         "tick_ns": params.tick_ns, "config": config.to_dict(),
         "params": json.loads(params.to_json()), "ts_offset": ts_offset}, indent=1))
    log.info("bridges: sender %s, receiver %s", snd.bridge.url, rcv.bridge.url)

    # -- intervals -----------------------------------------------------------------------
    t_start = time.monotonic()
    try:
        for k in range(params.intervals):
            first, end = k * params.frames, (k + 1) * params.frames
            seq = await snd.call(snd.device.read, "interval_seq")
            seq_r = await rcv.call(rcv.device.read, "interval_seq")
            assert seq == seq_r, f"sender interval {seq}, receiver {seq_r}"
            cycle0 = wire.cycle
            wire.release_upto = end
            await wire.wait_idle()
            await ClockCycles(dut.clk, 32)
            deadline = time.monotonic() + params.host_wait_s
            for dev in (snd, rcv):
                await dev.wait_clean(dut.clk, deadline)
            for dev in (snd, rcv):
                await dev.call(dev.device.swap)
            sl = slice(first, end)
            record = interval_truth(config, hashers, params, seq, k, frames[sl],
                                    wire.snd_sof[sl], wire.rcv_sof[sl], ts_offset)
            record["cycles"] = [cycle0, wire.cycle]
            with truth_path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            log.info("interval %d (seq %d): sent %d received %d, true mean %.2f ns",
                     k, seq, record["sent"], record["received"], record["true_mean_ns"])
        deadline = time.monotonic() + params.host_wait_s
        for dev in (snd, rcv):
            try:
                await dev.wait_clean(dut.clk, deadline)
            except TimeoutError as e:
                log.warning("%s", e)
        done = {"done": True, "intervals": params.intervals, "cycles": wire.cycle,
                "wall_s": time.monotonic() - t_start,
                "host_commands": {d.name: d.host_commands for d in (snd, rcv)},
                "receiver_out": wire.receiver_out}
        with truth_path.open("a") as f:
            f.write(json.dumps(done) + "\n")
    finally:
        for dev in (snd, rcv):
            dev.bridge.close()


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
            "loss_rate": (sent - received) / sent,
            "true_mean_ns": float(delays_ns.mean()) if received else None,
            "true_std_ns": float(delays_ns.std()) if received else None,
            "delay_min_ns": float(delays_ns.min()) if received else None,
            "delay_max_ns": float(delays_ns.max()) if received else None,
            "golden_sender_words": [int(w) for w in snd_syn.words()],
            "golden_receiver_words": [int(w) for w in rcv_syn.words()]}
