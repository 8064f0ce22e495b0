# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb testbench object for the exported core (and for its stand-in).

Where it sits (``DESIGN.md``): it plays the wire on both sides of the pass-through
("frames in" → core → "frames out") and the host on the bus side. Modelled on
cocotbext-axi's own ``TB``: it starts the clock, attaches an
:class:`~cocotbext.axi.AxiStreamSource` to ``s_axis``, an
:class:`~cocotbext.axi.AxiStreamSink` to ``m_axis`` and a light :class:`SofMonitor` to
``s_axis`` (each frame's start-of-frame cycle, hence its timestamp), drives reset, and installs idle
(source) and backpressure (sink) pause generators. ``tuser`` carries the frame error
flag, set on the last beat only.

The pause generators of the standard matrix are :func:`cycle_pause` (cocotbext-axi's
``[1, 1, 1, 0]``) and :func:`random_pause` (seeded).
"""

from __future__ import annotations

import itertools
import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotb.queue import Queue
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from .frames import OfferedFrame
from .uartbone_driver import ByteStreamPort

__all__ = ["CoreTB", "TWO_CLOCK_PS", "RESET_SYNC_EDGES", "start_clocks", "cycle_pause",
           "random_pause", "PAUSE_MATRIX", "PAUSE_CASES", "pauses_by_name", "to_axis_frame"]

CLOCK_NS = 4  # 250 MHz
#: A two-clock core's clocks (``ctrl_clk`` present): the datapath at 156.25 MHz (the 10 GbE
#: clock) and the control clock at 100 MHz, started at a random phase (seeded) against it.
TWO_CLOCK_PS = (6400, 10000)
#: A two-clock core's reset synchronisers (``hw.verilog_export.AxisTop``) release each
#: domain's reset at this edge of its clock after ``rst`` falls; a one-clock core's
#: synchronous ``rst`` is off at the first edge.
RESET_SYNC_EDGES = 2


def start_clocks(dut, clock_ns: float = CLOCK_NS, log: logging.Logger | None = None) -> float:
    """Start the DUT's clocks; returns the period of ``clk`` in ns. A DUT with a control
    clock (``ctrl_clk``: a core exported with ``--control-domain ctrl``, or a top holding
    such cores) runs on :data:`TWO_CLOCK_PS`: two unrelated clocks, the control clock's
    first edge at a random time (seeded by ``cocotb.RANDOM_SEED``); otherwise ``clk``
    runs at ``clock_ns``."""
    if not hasattr(dut, "ctrl_clk"):
        Clock(dut.clk, clock_ns, unit="ns").start()
        return clock_ns
    Clock(dut.clk, TWO_CLOCK_PS[0], unit="ps").start()
    phase = random.Random(cocotb.RANDOM_SEED).randrange(1, TWO_CLOCK_PS[1])
    (log or logging.getLogger("cocotb.tb")).info(
        "clocks: clk %d ps, ctrl_clk %d ps from %d ps", *TWO_CLOCK_PS, phase)

    async def start_ctrl_clock():
        await Timer(phase, unit="ps")
        Clock(dut.ctrl_clk, TWO_CLOCK_PS[1], unit="ps").start()
    cocotb.start_soon(start_ctrl_clock())
    return TWO_CLOCK_PS[0] / 1000


def cycle_pause():
    """cocotbext-axi's standard pause pattern: paused 3 cycles of 4."""
    return itertools.cycle([1, 1, 1, 0])


def random_pause(seed: int, probability: float = 0.3):
    """A seeded random pause pattern (paused with ``probability`` each cycle)."""
    def generator():
        rng = random.Random(seed)
        while True:
            yield int(rng.random() < probability)
    return generator


#: The {no pause, cycle pause}² matrix by name: (idle generator, backpressure generator).
PAUSE_MATRIX = {"none": (None, None), "backpressure": (None, cycle_pause),
                "idle": (cycle_pause, None), "both": (cycle_pause, cycle_pause)}


def pauses_by_name(name: str, seed: int = 1):
    """The (idle, backpressure) generator factories of a pause-matrix entry or
    ``random`` (seeded random pauses on both sides)."""
    if name == "random":
        return random_pause(seed), random_pause(seed + 1)
    return PAUSE_MATRIX[name]


#: Names of the standard pause cases: the matrix plus seeded random pauses.
PAUSE_CASES = [*PAUSE_MATRIX, "random"]


def to_axis_frame(frame: OfferedFrame) -> AxiStreamFrame:
    """The AXI-Stream frame for an offered frame: ``tuser`` is 1 only on the last byte
    (so only on the last beat) of an errored frame."""
    n = len(frame.data)
    if n == 0:
        raise ValueError("an AXI-Stream frame needs at least one byte")
    return AxiStreamFrame(frame.data, tuser=[0] * (n - 1) + [int(frame.error)])


class SofMonitor:
    """A light monitor of one AXI-Stream port's transfers (``tvalid``, ``tready``,
    ``tlast`` only — no data): per frame, its start-of-frame sim time and its beat
    count. Cheaper than :class:`~cocotbext.axi.AxiStreamMonitor` when only frame
    boundaries are needed."""

    def __init__(self, dut, prefix: str):
        self.clk = dut.clk
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.last = getattr(dut, f"{prefix}_tlast")
        self.queue = Queue()
        self.task = None

    def start(self):
        if self.task is None:
            self.task = cocotb.start_soon(self._run())

    async def _run(self):
        edge = RisingEdge(self.clk)
        sof, beats = None, 0
        valid, ready, last = self.valid, self.ready, self.last
        while True:
            await edge
            if valid.value == 1 and ready.value == 1:
                if sof is None:
                    sof, beats = get_sim_time(), 0
                beats += 1
                if last.value == 1:
                    self.queue.put_nowait((sof, beats))
                    sof = None

    async def recv(self):
        """``(sof_sim_time, beats)`` of the next complete frame."""
        return await self.queue.get()


class CoreTB:
    """Clock, reset, frame source/sink/monitor and the bus byte port of the DUT.

    Parameters
    ----------
    dut :
        The cocotb handle of the top level (ports of ``gateware.md``).
    clock_ns : int
        Clock period. A core with a control clock (``ctrl_clk``; exported with
        ``--control-domain ctrl``) runs on :data:`TWO_CLOCK_PS` instead: two unrelated
        clocks, the control clock's first edge at a random time (seeded by
        ``cocotb.RANDOM_SEED``); its ``rst`` resets both.
    quiet : bool
        Silence cocotbext-axi's per-frame INFO logging (it costs a lot of time with
        thousands of frames).
    """

    def __init__(self, dut, *, clock_ns: int = CLOCK_NS, quiet: bool = True):
        self.dut = dut
        self.log = logging.getLogger("cocotb.tb")
        self.log.setLevel(logging.INFO)
        self.two_clocks = hasattr(dut, "ctrl_clk")
        # Hold reset from the start: cocotbext-axi starts its drivers when it sees reset
        # low, and before the first reset the DUT's ready outputs may still be X/Z.
        dut.rst.setimmediatevalue(1)
        dut.m_axis_tready.setimmediatevalue(0)
        if hasattr(dut, "m_axis_export_tready"):  # the core's export stream: always taken
            dut.m_axis_export_tready.setimmediatevalue(1)
        self.clock_ns = start_clocks(dut, clock_ns, self.log)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk,
                                      dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.input_monitor = SofMonitor(dut, "s_axis")
        if quiet:
            for drv in (self.source, self.sink):
                drv.log.setLevel(logging.WARNING)
        self.bus_port = ByteStreamPort(dut)
        self.data_width = len(dut.s_axis_tdata)
        self.bytes_per_beat = self.data_width // 8
        self.period_steps = None
        self.t_ref = None
        #: rising edges of ``clk`` with ``rst`` low when :meth:`reset` returns
        self.reset_edges = None

    # -- stimulus control ----------------------------------------------------------------
    def set_idle_generator(self, generator=None):
        """Pause the source (input idle cycles) from a generator factory, or stop."""
        self.source.set_pause_generator(generator() if generator else None)

    def set_backpressure_generator(self, generator=None):
        """Pause the sink (``m_axis_tready`` low) from a generator factory, or stop."""
        self.sink.set_pause_generator(generator() if generator else None)

    async def reset(self):
        """Synchronous reset for 2 cycles (held since construction); afterwards :attr:`t_ref` is the sim time of
        the first edge after reset (cycle 0 of :meth:`cycle_of`). A two-clock core's reset
        is held for two edges of each clock and waited out through its synchronisers."""
        self.dut.rst.value = 1
        if self.two_clocks:          # rst resets both domains: two edges of each clock
            await RisingEdge(self.dut.ctrl_clk)
            await RisingEdge(self.dut.ctrl_clk)
        await RisingEdge(self.dut.clk)
        await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        edges = 0                    # edges of clk with rst low
        if self.two_clocks:
            # each domain's reset synchroniser releases it at the second edge of its clock
            # after rst falls; the bridge may show bus_rx_tready while still in reset. The
            # datapath's cycle 0 is a fixed count of its own edges after rst fell (which
            # was at one of them), whatever the control clock's phase: the timestamps'
            # offset from the SOF cycles is then the same after every reset.
            async def control_reset():
                await ClockCycles(self.dut.ctrl_clk, 3)

            control = cocotb.start_soon(control_reset())
            await ClockCycles(self.dut.clk, 8)     # 51.2 ns > 3 control clocks + phase
            assert control.done(), "the control domain's reset outlasted 8 datapath clocks"
            edges += 8
        await RisingEdge(self.dut.clk)
        t0 = get_sim_time()
        await RisingEdge(self.dut.clk)
        self.period_steps = get_sim_time() - t0
        self.t_ref = t0
        self.reset_edges = edges + 2
        self.input_monitor.start()

    def cycle_of(self, sim_time: int) -> int:
        """Clock cycle number (since :attr:`t_ref`) of a sim time taken at a rising
        edge (e.g. a monitored frame's ``sim_time_start``)."""
        return (sim_time - self.t_ref) // self.period_steps

    def now_cycle(self) -> int:
        return self.cycle_of(get_sim_time())

    async def cycles(self, n: int):
        await ClockCycles(self.dut.clk, n)

    # -- frames --------------------------------------------------------------------------
    async def send(self, frames):
        """Queue frames on the source (returns once they are queued)."""
        for frame in frames:
            await self.source.send(to_axis_frame(frame))

    def send_nowait(self, frames):
        for frame in frames:
            self.source.send_nowait(to_axis_frame(frame))

    async def receive(self, count: int, *, timeout_cycles: int | None = None):
        """``count`` frames from the sink (compacted: bytes with tkeep 0 removed)."""
        out = []
        for _ in range(count):
            if timeout_cycles is None:
                out.append(await self.sink.recv())
            else:
                out.append(await with_timeout(self.sink.recv(),
                                              timeout_cycles * self.clock_ns, "ns"))
        return out

    async def monitored(self, count: int):
        """The next ``count`` frames seen on ``s_axis`` by the input monitor: list of
        ``(beats, sof_cycle)``."""
        out = []
        for _ in range(count):
            sof, beats = await self.input_monitor.recv()
            out.append((beats, self.cycle_of(sof)))
        return out

    def check_frame(self, sent: OfferedFrame, received: AxiStreamFrame, index: int):
        """Assert ``received`` equals ``sent``: bytes, and ``tuser`` set exactly on the
        last beat when the frame is errored."""
        data = bytes(received.tdata)
        assert data == sent.data, (
            f"frame {index}: {len(data)} bytes out, {len(sent.data)} in; first difference "
            f"at byte {next((i for i, (a, b) in enumerate(zip(data, sent.data)) if a != b), min(len(data), len(sent.data)))}")
        tuser = list(received.tuser) if isinstance(received.tuser, list) else (
            [int(received.tuser)] * len(data))
        last_beat = len(data) % self.bytes_per_beat or self.bytes_per_beat
        expected = [0] * (len(data) - last_beat) + [int(sent.error)] * last_beat
        assert tuser == expected, f"frame {index}: tuser {tuser[-16:]} != {expected[-16:]}"
