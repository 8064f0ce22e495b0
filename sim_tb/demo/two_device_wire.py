# SPDX-License-Identifier: BSD-2-Clause
"""The wire of the two-device harness: traffic source, sender output, channel, receiver
input and output, one clock at a time (cocotb side of :mod:`sim_tb.demo.two_device`).

Where it sits (``docs/DEMO.md``, "How the harness works"): traffic → ``snd_s_axis`` →
sender core → ``snd_m_axis`` → channel (delay, loss, FIFO) → ``rcv_s_axis`` → receiver
core → ``rcv_m_axis``. Both cores' outputs are captured beat by beat, so the harness
knows every frame's SOF cycle where each core's tap saw it (the tap watches the core's
output merger, a fixed number of clocks before ``m_axis``), and which frames are
control frames (EtherType 0x88B5): the sender's markers and in-band export chunks travel
through the same channel (delayed like data, dropped only when asked to) and out of the
receiver, where they are handed to :attr:`Wire.on_receiver_control`.

The sender decides the interval boundaries (marker-send mode): a data frame belongs to
the interval of the next marker that leaves the sender after it (:attr:`Wire.interval_of`,
filled when that marker passes). Nothing here ends an interval.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge

from host_sw.contracts.frames.frame_format import TYPE_MARKER
from host_sw.contracts.hashing import ETHERTYPE_CONTROL

__all__ = ["AxisDriver", "OutputCapture", "Wire", "is_control", "IDLE_STEP"]

#: Clocks per step of the wire while nothing is queued or in flight.
IDLE_STEP = 16


def wandering_delays(rng, n: int, *, start: float, step: float, low: int,
                     high: int) -> np.ndarray:
    """Per data frame a delay in clocks that wanders (a queue filling and draining): a
    random walk from ``start`` with normal steps of deviation ``step``, held in
    [``low``, ``high``]."""
    level = np.clip(np.cumsum(rng.normal(0.0, step, n)) + start, low, high)
    return np.rint(level).astype(np.int64)


def is_control(frame: bytes) -> bool:
    return len(frame) >= 16 and int.from_bytes(frame[12:14], "big") == ETHERTYPE_CONTROL


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
            s.value = 0
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


class OutputCapture:
    """Collects one ``m_axis`` port's frames (``tready`` held high): bytes and SOF cycle."""

    def __init__(self, dut, prefix: str, data_width: int):
        self.valid = getattr(dut, f"{prefix}_m_axis_tvalid")
        self.data = getattr(dut, f"{prefix}_m_axis_tdata")
        self.keep = getattr(dut, f"{prefix}_m_axis_tkeep")
        self.last = getattr(dut, f"{prefix}_m_axis_tlast")
        getattr(dut, f"{prefix}_m_axis_tready").value = 1
        self.bytes_per_beat = data_width // 8
        self.parts: list[bytes] = []
        self.sof = -1

    def sample(self, cycle: int) -> tuple[bytes, int] | None:
        """After a rising edge: the finished frame and its SOF cycle, or ``None``."""
        if not self.valid.value:
            return None
        if not self.parts:
            self.sof = cycle
        keep = int(self.keep.value)
        n = keep.bit_length() if keep else self.bytes_per_beat
        self.parts.append(int(self.data.value).to_bytes(self.bytes_per_beat, "little")[:n])
        if not self.last.value:
            return None
        frame = b"".join(self.parts)
        self.parts = []
        return frame, self.sof


class Wire:
    """Traffic source, both cores' outputs, channel and receiver input, per clock.

    ``frames``/``gaps``/``drops``/``delays`` are per data frame (index = send order);
    ``control_delay(rng)`` draws a control frame's channel delay in clocks;
    ``drop_markers`` are marker sequence numbers the channel loses (to show how a lost
    marker is handled).
    """

    def __init__(self, dut, data_width: int, frames: list[bytes], gaps: np.ndarray,
                 drops: np.ndarray, delays: np.ndarray, *, control_delay, rng,
                 drop_markers=()):
        self.dut = dut
        self.frames = frames
        self.gaps, self.drops, self.delays = gaps, drops, delays
        self.control_delay, self.rng = control_delay, rng
        self.drop_markers = set(drop_markers)
        self.snd = AxisDriver(dut, "snd", data_width)
        self.rcv = AxisDriver(dut, "rcv", data_width)
        self.snd_out = OutputCapture(dut, "snd", data_width)
        self.rcv_out = OutputCapture(dut, "rcv", data_width)
        self.cycle = 0
        self.release_upto = 0      # the source may send frames below this index
        self.next_send = 0
        self.earliest = 0
        self.exited = 0            # data frames that left the sender (FIFO: frame index)
        self.channel: deque = deque()     # (frame index or -1, bytes, due cycle)
        self.rcv_pending: deque = deque()  # data frame indices inside the receiver
        n = len(frames)
        self.snd_sof = np.full(n, -1, dtype=np.int64)    # SOF cycle at the sender's m_axis
        self.rcv_sof = np.full(n, -1, dtype=np.int64)    # … at the receiver's m_axis
        self.interval_of = np.full(n, -1, dtype=np.int64)
        self.unassigned: list[int] = []   # data frames out of the sender since the marker
        self.markers: list[tuple[int, int]] = []   # (seq, cycle) leaving the sender
        self.dropped_markers: list[int] = []
        self.control_out = 0       # control frames out of the sender
        self.mismatches = 0        # data frames altered by the sender or the receiver
        self.receiver_out = 0
        self.on_receiver_control = None   # callback(frame, cycle)
        self.extra: deque = deque()  # calibration frames for the sender only
        self.extra_sof: list[int] = []   # their SOF cycles at the sender's m_axis
        self.extra_sent = 0
        #: Once the cores insert frames of their own (markers, exports), every clock is
        #: watched, idle or not.
        self.watch_outputs = False

    @property
    def idle(self) -> bool:
        """Nothing queued or in flight up to ``release_upto``."""
        return (self.next_send >= self.release_upto and not self.snd.busy
                and self.exited >= self.next_send and not self.channel
                and not self.rcv.busy and not self.rcv_pending and not self.extra
                and len(self.extra_sof) == self.extra_sent
                and not self.snd_out.parts and not self.rcv_out.parts)

    async def run(self):
        clk = self.dut.clk
        while True:
            if self.idle and not self.watch_outputs:
                # nothing queued or in flight: step in blocks (the simulator runs much
                # faster without a Python callback every clock)
                await ClockCycles(clk, IDLE_STEP)
                self.cycle += IDLE_STEP
                continue
            self._load()
            await RisingEdge(clk)
            self.cycle += 1
            self._step(self.cycle)

    def _load(self):
        if not self.snd.busy:
            if self.extra:
                self.snd.load(-1, self.extra.popleft())
                self.extra_sent += 1
            elif self.next_send < self.release_upto and self.cycle >= self.earliest:
                self.snd.load(self.next_send, self.frames[self.next_send])
        if not self.rcv.busy and self.channel and self.channel[0][2] <= self.cycle:
            i, frame, _ = self.channel.popleft()
            if i >= 0:
                self.rcv_pending.append(i)
            self.rcv.load(i, frame)

    def _step(self, c: int):
        idx = self.snd.index
        _, done = self.snd.sample()
        if done and idx >= 0:
            self.next_send = idx + 1
            if self.next_send < len(self.gaps):
                self.earliest = c + int(self.gaps[self.next_send])
        self.rcv.sample()
        out = self.snd_out.sample(c)
        if out is not None:
            self._sender_output(*out)
        out = self.rcv_out.sample(c)
        if out is not None:
            self._receiver_output(*out)

    def _enqueue(self, index: int, frame: bytes, due: int):
        if self.channel:  # FIFO: never before the frame ahead
            due = max(due, self.channel[-1][2])
        self.channel.append((index, frame, due))

    def _sender_output(self, frame: bytes, sof: int):
        if is_control(frame):
            self.control_out += 1
            if frame[15] == TYPE_MARKER:
                seq = int.from_bytes(frame[18:22], "big")
                self.markers.append((seq, sof))
                for i in self.unassigned:
                    self.interval_of[i] = seq
                self.unassigned = []
                if seq in self.drop_markers:
                    self.dropped_markers.append(seq)
                    return
            self._enqueue(-1, frame, sof + int(self.control_delay(self.rng)))
            return
        if len(self.extra_sof) < self.extra_sent:
            self.extra_sof.append(sof)      # a calibration frame: sunk
            return
        i = self.exited
        self.exited += 1
        self.snd_sof[i] = sof
        self.unassigned.append(i)
        self.mismatches += frame != self.frames[i]
        if not self.drops[i]:
            self._enqueue(i, frame, sof + int(self.delays[i]))

    def _receiver_output(self, frame: bytes, sof: int):
        self.receiver_out += 1
        if is_control(frame):
            if self.on_receiver_control is not None:
                self.on_receiver_control(frame, sof)
            return
        i = self.rcv_pending.popleft()
        self.rcv_sof[i] = sof
        self.mismatches += frame != self.frames[i]

    def settled(self, seq: int) -> bool:
        """Every data frame of the sender's interval ``seq`` has left the receiver or was
        lost in the channel."""
        mine = self.interval_of == seq
        return bool(np.all((self.rcv_sof[mine] >= 0) | self.drops[mine]))

    async def wait_idle(self, step: int = 16):
        while not self.idle:
            await ClockCycles(self.dut.clk, step)
